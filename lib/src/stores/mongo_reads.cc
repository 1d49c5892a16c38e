// MongoStore's reads: finds (behind a cursor), counts, samples, read commands.
#include <algorithm>
#include <string>
#include <string_view>

#include "stores/mongo_impl.h"

namespace txn_recovery {
namespace {

using mongo::CollectionPtr;
using mongo::GetCollection;
using mongo::PooledClient;
using mongo::Reply;

// Owns everything a server-side cursor needs, destroyed cursor first, client last.
class MongoCursor final : public Cursor {
 public:
  MongoCursor(PooledClient client, CollectionPtr coll, mongo::CursorPtr cursor, std::string what)
      : client_(std::move(client)),
        coll_(std::move(coll)),
        cursor_(std::move(cursor)),
        what_(std::move(what)) {}
  ~MongoCursor() override {
    cursor_.reset();
    coll_.reset();
  }
  // Hands out `first` (a document already taken from the cursor) before the rest.
  void Peeked(Document first) { peeked_ = std::move(first); }
  // The cursor was found empty already (it must not be advanced again).
  void Exhausted() { exhausted_ = true; }
  Status Next(Document* doc, bool* has_doc) override {
    if (exhausted_) {
      *has_doc = false;
      return Status::Ok();
    }
    if (peeked_) {
      *doc = std::move(*peeked_);
      peeked_.reset();
      *has_doc = true;
      return Status::Ok();
    }
    const bson_t* b = nullptr;
    if (mongoc_cursor_next(cursor_.get(), &b)) {
      *doc = mongo::FromBson(b);
      *has_doc = true;
      return Status::Ok();
    }
    *has_doc = false;
    bson_error_t error;
    if (mongoc_cursor_error(cursor_.get(), &error)) return mongo::StatusFromBsonError(error, what_);
    return Status::Ok();
  }

 private:
  std::optional<Document> peeked_;
  bool exhausted_ = false;
  PooledClient client_;
  CollectionPtr coll_;
  mongo::CursorPtr cursor_;
  std::string what_;
};

// A server that has no index for a read's hint: mongod's BadValue "hint provided does not
// correspond to an existing index" (DocumentDB's words too).
bool RefusesHint(const bson_error_t& error) {
  const std::string_view message(error.message);
  return message.find("hint") != std::string_view::npos &&
         message.find("index") != std::string_view::npos;
}

// What the first batch of a find says before its cursor is handed out: hand it out (its
// first document in `first`, or `empty`; an error is the cursor's to report), or send the
// find again, on the estimate of the server's clock (the server refused $$NOW, and the
// store has switched) or without its hint (no such index).
enum class Peek { kHandOut, kAgainOnTheEstimate, kAgainWithoutHint };
Peek PeekFirstBatch(MongoStore::Impl* impl, mongoc_cursor_t* c, bool uses_server_clock, bool hinted,
                    std::optional<Document>* first, bool* empty) {
  const bson_t* b = nullptr;
  bson_error_t error;
  if (mongoc_cursor_next(c, &b)) {
    *first = mongo::FromBson(b);
  } else if (!mongoc_cursor_error(c, &error)) {
    *empty = true;
  } else if (uses_server_clock && impl->SwitchToDaemonClock(error.message)) {
    return Peek::kAgainOnTheEstimate;
  } else if (hinted && RefusesHint(error)) {
    return Peek::kAgainWithoutHint;
  }
  return Peek::kHandOut;
}

// {pipeline: [{$sample: {size}}]}
mongo::BsonPtr SamplePipeline(std::int64_t size) {
  auto pipeline = mongo::NewBson();
  bson_t stages, stage, sample;
  bson_append_array_begin(pipeline.get(), "pipeline", -1, &stages);
  bson_append_document_begin(&stages, "0", -1, &stage);
  bson_append_document_begin(&stage, "$sample", -1, &sample);
  bson_append_int64(&sample, "size", -1, size);
  bson_append_document_end(&stage, &sample);
  bson_append_document_end(&stages, &stage);
  bson_append_array_end(pipeline.get(), &stages);
  return pipeline;
}

}  // namespace

Status MongoStore::Find(const Namespace& ns, const Filter& filter, const FindOptions& options,
                        std::unique_ptr<Cursor>* cursor) {
  auto query = mongo::NewBson();
  if (Status s = impl_->Query(filter, query.get()); !s.ok()) return s;
  auto opts = mongo::NewBson();
  mongo::AppendFindOptions(options, opts.get());
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  mongo::CursorPtr c(
      mongoc_collection_find_with_opts(coll.get(), query.get(), opts.get(), nullptr));
  // A server that may refuse $$NOW answers the first batch before anything is handed out:
  // a refusal then switches to the estimate and the find is sent again.
  std::optional<Document> first;
  bool empty = false;
  // So does a read that names an index: one that does not exist (created by hand without
  // it, sweep.manage_indexes off) is read without the hint, as the planner chooses, rather
  // than failing every sweep; the missing index is warned about at start and by inspect.
  if ((filter.UsesServerClock() && impl_->server_clock == MongoOptions::ServerClock::kAuto) ||
      !options.hint.empty()) {
    const Peek peek = PeekFirstBatch(impl_.get(), c.get(), filter.UsesServerClock(),
                                     !options.hint.empty(), &first, &empty);
    if (peek != Peek::kHandOut) {
      c.reset();
      coll.reset();
      client = PooledClient();  // back to the pool before the retry takes one
      FindOptions again = options;
      if (peek == Peek::kAgainWithoutHint) again.hint.clear();
      return Find(ns, filter, again, cursor);
    }
  }
  auto mc = std::make_unique<MongoCursor>(std::move(client), std::move(coll), std::move(c),
                                          "find on " + ns.ToString());
  if (first) mc->Peeked(std::move(*first));
  if (empty) mc->Exhausted();
  *cursor = std::move(mc);
  return Status::Ok();
}

Status MongoStore::Count(const Namespace& ns, const Filter& filter, std::int64_t* count) {
  auto query = mongo::NewBson();
  if (Status s = impl_->Query(filter, query.get()); !s.ok()) return s;
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  std::int64_t n = mongoc_collection_count_documents(coll.get(), query.get(), nullptr, nullptr,
                                                     reply.get(), &error);
  if (n < 0 && impl_->SwitchToDaemonClock(error.message)) {
    coll.reset();
    client = PooledClient();  // back to the pool before the retry takes one
    return Count(ns, filter, count);
  }
  if (n < 0) return mongo::StatusFromBsonError(error, "count on " + ns.ToString());
  *count = n;
  return Status::Ok();
}

Status MongoStore::Sample(const Namespace& ns, std::int64_t size, std::vector<Document>* docs) {
  // The embedded test server (mongo-java-server) picks its sample with a random comparator,
  // which Java's sort refuses now and then ("Comparison method violates its general
  // contract!"): a refusal of the server's own is asked again, twice at most.
  Status s = SampleOnce(ns, size, docs);
  for (int attempt = 1; attempt < 3 && s.IsServerError(); ++attempt) s = SampleOnce(ns, size, docs);
  return s;
}

Status MongoStore::SampleOnce(const Namespace& ns, std::int64_t size, std::vector<Document>* docs) {
  docs->clear();
  const mongo::BsonPtr pipeline = SamplePipeline(size);
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  mongo::CursorPtr cursor(
      mongoc_collection_aggregate(coll.get(), MONGOC_QUERY_NONE, pipeline.get(), nullptr, nullptr));
  const bson_t* b = nullptr;
  while (mongoc_cursor_next(cursor.get(), &b)) docs->push_back(mongo::FromBson(b));
  bson_error_t error;
  if (mongoc_cursor_error(cursor.get(), &error))
    return mongo::StatusFromBsonError(error, "$sample on " + ns.ToString());
  return Status::Ok();
}

Status MongoStore::RunReadCommand(const std::string& database, const Document& command,
                                  Document* reply) {
  auto cmd = mongo::NewBson();
  if (Status s = mongo::ToBson(command, cmd.get()); !s.ok()) return s;
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  Reply out;
  bson_error_t error;
  const bool ok = mongoc_client_command_simple(client.get(), database.c_str(), cmd.get(), nullptr,
                                               out.get(), &error);
  if (!ok) return mongo::StatusFromBsonError(error, "command on " + database);
  *reply = mongo::FromBson(out.get());
  return Status::Ok();
}

}  // namespace txn_recovery
