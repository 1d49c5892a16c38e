#include "support/server_probe.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "stores/mongo_handles.h"

namespace txn_recovery {
namespace {

// Reads an explain reply, whatever its shape: mongod puts executionStats at the top for a
// find and under stages[0].$cursor for an aggregation, and its stages count "keysExamined";
// DocumentDB's gateway reports 0 keys in its totals and the real count in each index scan
// stage's "totalKeysExamined". So: the totals of every "executionStats" document, the keys
// of every index scan stage, whichever is larger; every stage's name and index anywhere.
// DocumentDB's stages also carry PostgreSQL's buffer counts, each stage's including those of
// the stages below it (EXPLAIN's BUFFERS): the largest of one stage is the read's.
struct ExplainReading {
  std::int64_t total_keys = 0;
  std::int64_t stage_keys = 0;
};

// The pages one explain document (a stage) says it touched, or -1 if it says nothing.
std::int64_t BlocksOf(const bson_t* doc) {
  std::int64_t blocks = -1;
  bson_iter_t it;
  for (const char* key : {"numBlocksFromCache", "numBlocksFromDisk"})
    if (bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_NUMBER(&it))
      blocks = std::max<std::int64_t>(blocks, 0) + bson_iter_as_int64(&it);
  return blocks;
}

// The stage `doc` is, if it names one: its name, whether it scans the collection, its pages.
std::string ReadStage(const bson_t* doc, QueryPlan* plan) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, "stage") || !BSON_ITER_HOLDS_UTF8(&it)) return "";
  std::string stage = bson_iter_utf8(&it, nullptr);
  if (stage == "COLLSCAN") plan->collection_scan = true;
  plan->blocks = std::max(plan->blocks, BlocksOf(doc));
  if (!plan->summary.empty()) plan->summary += ' ';
  plan->summary += stage;
  if (const std::int64_t blocks = BlocksOf(doc); blocks >= 0) {
    plan->summary.append("[").append(std::to_string(blocks)).append("]");
    if (stage == "IXSCAN") plan->scan_blocks.push_back(blocks);
  }
  return stage;
}

void ReadExplain(const bson_t* doc, QueryPlan* plan, ExplainReading* reading, bool in_stats,
                 bool in_planner = false) {
  // queryPlanner repeats the stages executionStats shows: read them once, as executed.
  const std::string stage = in_planner ? "" : ReadStage(doc, plan);
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return;
  while (bson_iter_next(&it)) {
    const std::string_view key = bson_iter_key(&it);
    if (BSON_ITER_HOLDS_NUMBER(&it)) {
      const std::int64_t n = bson_iter_as_int64(&it);
      if (in_stats && key == "totalKeysExamined") reading->total_keys += n;
      if (in_stats && key == "totalDocsExamined") plan->docs_examined += n;
      if (in_stats && key == "nReturned") plan->returned += n;
      if (stage == "IXSCAN" && key == "totalKeysExamined") reading->stage_keys += n;
    }
    if (!in_planner && BSON_ITER_HOLDS_UTF8(&it) && key == "indexName") {
      const std::string name = bson_iter_utf8(&it, nullptr);
      plan->summary.append("(").append(name).append(")");
      if (std::find(plan->indexes.begin(), plan->indexes.end(), name) == plan->indexes.end())
        plan->indexes.push_back(name);
    }
    if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
      std::uint32_t len = 0;
      const std::uint8_t* data = nullptr;
      if (BSON_ITER_HOLDS_DOCUMENT(&it))
        bson_iter_document(&it, &len, &data);
      else
        bson_iter_array(&it, &len, &data);
      bson_t child;
      // Only the statistics' own totals count: queryPlanner's plans carry none of the
      // execution, and the stages below the totals repeat them.
      if (data != nullptr && bson_init_static(&child, data, len))
        ReadExplain(&child, plan, reading, key == "executionStats",
                    in_planner || key == "queryPlanner");
    }
  }
}

// The filter as the store sends it: compared on the store's estimate of the server's clock
// (here a fresh reading of it) once the store has switched to it.
Status QueryOf(MongoStore* store, const Filter& filter, bson_t* out) {
  if (!filter.UsesServerClock() || store->server_clock() != MongoOptions::ServerClock::kDaemon)
    return mongo::FilterToBson(filter, out);
  DateTime now;
  if (Status s = store->ServerTime(&now); !s.ok()) return s;
  return mongo::FilterToBson(filter, out, &now);
}

// What mongoc_collection_count_documents sends.
void AppendCount(bson_t* command, const char* collection, const bson_t* filter) {
  bson_t pipeline, stage, group, sum, cursor;
  bson_append_utf8(command, "aggregate", -1, collection, -1);
  bson_append_array_begin(command, "pipeline", -1, &pipeline);
  bson_append_document_begin(&pipeline, "0", -1, &stage);
  bson_append_document(&stage, "$match", -1, filter);
  bson_append_document_end(&pipeline, &stage);
  bson_append_document_begin(&pipeline, "1", -1, &stage);
  bson_append_document_begin(&stage, "$group", -1, &group);
  bson_append_int32(&group, "_id", -1, 1);
  bson_append_document_begin(&group, "n", -1, &sum);
  bson_append_int32(&sum, "$sum", -1, 1);
  bson_append_document_end(&group, &sum);
  bson_append_document_end(&stage, &group);
  bson_append_document_end(&pipeline, &stage);
  bson_append_array_end(command, &pipeline);
  bson_append_document_begin(command, "cursor", -1, &cursor);
  bson_append_document_end(command, &cursor);
}

// What MongoStore::Find sends, but the batch size (the explain runs the read in one go).
void AppendFind(bson_t* command, const char* collection, const bson_t* filter,
                const FindOptions& options) {
  bson_append_utf8(command, "find", -1, collection, -1);
  bson_append_document(command, "filter", -1, filter);
  FindOptions sent = options;
  sent.batch_size = 0;
  mongo::AppendFindOptions(sent, command);
}

}  // namespace

Status Explain(MongoStore* store, const ReadQuery& query, QueryPlan* plan) {
  *plan = QueryPlan{};
  auto filter = mongo::NewBson();
  if (Status s = QueryOf(store, query.filter, filter.get()); !s.ok()) return s;
  auto command = mongo::NewBson();
  bson_t inner;
  bson_append_document_begin(command.get(), "explain", -1, &inner);
  if (query.kind == ReadQuery::Kind::kCount)
    AppendCount(&inner, query.ns.collection.c_str(), filter.get());
  else
    AppendFind(&inner, query.ns.collection.c_str(), filter.get(), query.options);
  bson_append_document_end(command.get(), &inner);
  bson_append_utf8(command.get(), "verbosity", -1, "executionStats", -1);
  // An explain with "executionStats" runs the read and writes nothing: a read command.
  Document reply;
  if (Status s = store->RunReadCommand(query.ns.database, mongo::FromBson(command.get()), &reply);
      !s.ok())
    return s.WithContext("explain of " + query.ToString());
  auto answer = mongo::NewBson();
  if (Status s = mongo::ToBson(reply, answer.get()); !s.ok()) return s;
  ExplainReading reading;
  ReadExplain(answer.get(), plan, &reading, false);
  plan->keys_examined = std::max(reading.total_keys, reading.stage_keys);
  plan->summary += " keys=" + std::to_string(plan->keys_examined) +
                   " docs=" + std::to_string(plan->docs_examined);
  if (plan->blocks >= 0) plan->summary += " blocks=" + std::to_string(plan->blocks);
  return Status::Ok();
}

Status DropDatabase(MongoStore* store, const std::string& database) {
  std::vector<std::string> collections;
  if (Status s = store->ListCollections(database, &collections); !s.ok()) return s;
  for (const std::string& collection : collections)
    if (Status s = store->DropCollection(Namespace{database, collection}); !s.ok()) return s;
  return Status::Ok();
}

}  // namespace txn_recovery
