// MongoStore's writes: one update, many, a bulk of single-document updates, deletes and
// inserts.
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "stores/mongo_impl.h"

namespace txn_recovery {
namespace {

using mongo::CollectionPtr;
using mongo::GetCollection;
using mongo::PooledClient;
using mongo::Reply;
using mongo::ReplyInt;

using UpdateFn = bool (*)(mongoc_collection_t*, const bson_t*, const bson_t*, const bson_t*,
                          bson_t*, bson_error_t*);

// A write the server gave up as the loser of a lock conflict (WriteConflict, 112: DocumentDB
// answers so when PostgreSQL picks the command as a deadlock victim, possibly with part of
// it applied; docs/compatibility.md): every write of the engine is harmless to repeat, so
// it is sent again, up to three times, after a short random pause that lets the winner
// finish. A deadlock is the server's to break, not a failure of a transaction; a count
// that then says less than was changed makes the engine read back, as for any bulk.
bool WriteConflictToRetry(const bson_error_t& error, int attempt) {
  constexpr int kRetries = 3;
  if (attempt >= kRetries || error.code != 112 ||
      (error.domain != MONGOC_ERROR_SERVER && error.domain != MONGOC_ERROR_QUERY))
    return false;
  thread_local std::minstd_rand jitter(std::random_device{}());
  std::this_thread::sleep_for(std::chrono::milliseconds(1 + jitter() % (10U << attempt)));
  return true;
}

Status RunUpdate(MongoStore::Impl* impl, UpdateFn fn, const char* what, const Namespace& ns,
                 const Filter& filter, const Update& update, WriteResult* result) {
  auto query = mongo::NewBson();
  auto doc = mongo::NewBson();
  if (Status s = impl->Query(filter, query.get()); !s.ok()) return s;
  if (Status s = mongo::UpdateToBson(update, doc.get()); !s.ok()) return s;
  PooledClient client;
  if (Status s = impl->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  bool failed = false;
  for (int attempt = 0;; ++attempt) {
    bson_reinit(reply.get());
    failed = !fn(coll.get(), query.get(), doc.get(), nullptr, reply.get(), &error);
    if (!failed || !WriteConflictToRetry(error, attempt)) break;
  }
  if (failed) {
    if (impl->SwitchToDaemonClock(error.message)) {
      coll.reset();
      client = PooledClient();  // back to the pool before the retry takes one
      return RunUpdate(impl, fn, what, ns, filter, update, result);
    }
    return mongo::StatusFromBsonError(error, std::string(what) + " on " + ns.ToString());
  }
  result->matched = ReplyInt(reply.get(), "matchedCount");
  result->modified = ReplyInt(reply.get(), "modifiedCount");
  return Status::Ok();
}

}  // namespace

Status MongoStore::UpdateOne(const Namespace& ns, const Filter& filter, const Update& update,
                             WriteResult* result) {
  return RunUpdate(impl_.get(), &mongoc_collection_update_one, "updateOne", ns, filter, update,
                   result);
}

Status MongoStore::UpdateMany(const Namespace& ns, const Filter& filter, const Update& update,
                              WriteResult* result) {
  return RunUpdate(impl_.get(), &mongoc_collection_update_many, "updateMany", ns, filter, update,
                   result);
}

Status MongoStore::FindOneAndUpdate(const Namespace& ns, const Filter& filter, const Update& update,
                                    std::optional<Document>* after) {
  auto query = mongo::NewBson();
  auto doc = mongo::NewBson();
  if (Status s = impl_->Query(filter, query.get()); !s.ok()) return s;
  if (Status s = mongo::UpdateToBson(update, doc.get()); !s.ok()) return s;
  mongo::FindAndModifyOptsPtr opts(mongoc_find_and_modify_opts_new());
  mongoc_find_and_modify_opts_set_update(opts.get(), doc.get());
  mongoc_find_and_modify_opts_set_flags(opts.get(), MONGOC_FIND_AND_MODIFY_RETURN_NEW);
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  if (!mongoc_collection_find_and_modify_with_opts(coll.get(), query.get(), opts.get(), reply.get(),
                                                   &error)) {
    if (impl_->SwitchToDaemonClock(error.message)) {
      coll.reset();
      client = PooledClient();  // back to the pool before the retry takes one
      return FindOneAndUpdate(ns, filter, update, after);
    }
    return mongo::StatusFromBsonError(error, "findAndModify on " + ns.ToString());
  }
  after->reset();
  bson_iter_t it;
  if (bson_iter_init_find(&it, reply.get(), "value") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    Value v = mongo::ValueFromIter(&it);
    *after = std::move(*v.as_document());
  }
  return Status::Ok();
}

Status MongoStore::DeleteMany(const Namespace& ns, const Filter& filter, WriteResult* result) {
  auto query = mongo::NewBson();
  if (Status s = impl_->Query(filter, query.get()); !s.ok()) return s;
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  if (!mongoc_collection_delete_many(coll.get(), query.get(), nullptr, reply.get(), &error))
    return mongo::StatusFromBsonError(error, "deleteMany on " + ns.ToString());
  result->matched = result->modified = ReplyInt(reply.get(), "deletedCount");
  return Status::Ok();
}

Status MongoStore::InsertMany(const Namespace& ns, const std::vector<Document>& docs) {
  if (docs.empty()) return Status::Ok();
  std::vector<mongo::BsonPtr> owned;
  // A plain array: a vector<const bson_t*> would drop bson_t's alignment attribute.
  auto ptrs = std::make_unique<const bson_t*[]>(docs.size());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    owned.push_back(mongo::NewBson());
    if (Status s = mongo::ToBson(docs[i], owned.back().get()); !s.ok()) return s;
    ptrs[i] = owned.back().get();
  }
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  if (!mongoc_collection_insert_many(coll.get(), ptrs.get(), docs.size(), nullptr, reply.get(),
                                     &error))
    return mongo::StatusFromBsonError(error, "insertMany on " + ns.ToString());
  return Status::Ok();
}

namespace {

// The requests an unordered bulk write's reply says the server refused (writeErrors), each
// with its index and message. False when the reply carries none.
bool RefusedRequests(const bson_t* reply, const Namespace& ns,
                     std::vector<std::pair<std::size_t, Status>>* refused) {
  bson_iter_t it, errors;
  if (!bson_iter_init_find(&it, reply, "writeErrors") || !BSON_ITER_HOLDS_ARRAY(&it) ||
      !bson_iter_recurse(&it, &errors))
    return false;
  while (bson_iter_next(&errors)) {
    bson_iter_t e;
    if (!BSON_ITER_HOLDS_DOCUMENT(&errors) || !bson_iter_recurse(&errors, &e)) continue;
    std::int64_t index = -1, code = 0;
    std::string message = "refused";
    while (bson_iter_next(&e)) {
      const char* key = bson_iter_key(&e);
      if (std::strcmp(key, "index") == 0 && BSON_ITER_HOLDS_NUMBER(&e)) {
        index = bson_iter_as_int64(&e);
      } else if (std::strcmp(key, "code") == 0 && BSON_ITER_HOLDS_NUMBER(&e)) {
        code = bson_iter_as_int64(&e);
      } else if (std::strcmp(key, "errmsg") == 0 && BSON_ITER_HOLDS_UTF8(&e)) {
        message = bson_iter_utf8(&e, nullptr);
      }
    }
    if (index < 0) continue;
    refused->emplace_back(
        static_cast<std::size_t>(index),
        Status::ServerError("update on " + ns.ToString() + " refused: " + RedactSecrets(message) +
                            " (code " + std::to_string(code) + ")"));
  }
  return !refused->empty();
}

// The indexes of `requests` in the order of the documents they name (their first equality,
// _id above all): two daemons' bulks over the same documents then take the server's row
// locks in one order, and a server that locks per document (DocumentDB on PostgreSQL)
// cannot deadlock them against each other (it did: code 112 after 15-25 s).
std::vector<std::size_t> LockOrder(const std::vector<UpdateRequest>& requests) {
  std::vector<std::size_t> order(requests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](std::size_t i) -> const Predicate* {
    const Predicate* first = nullptr;
    for (const Predicate& p : requests[i].filter.all()) {
      if (p.op != Predicate::Op::kEq) continue;
      if (p.path == "_id") return &p;
      if (first == nullptr) first = &p;
    }
    return first;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Predicate* ka = key(a);
    const Predicate* kb = key(b);
    if (ka == nullptr || kb == nullptr) return ka != nullptr && kb == nullptr;
    if (ka->path != kb->path) return ka->path < kb->path;
    return ka->value.ToString() < kb->value.ToString();
  });
  return order;
}

using BulkDocs = std::vector<std::pair<mongo::BsonPtr, mongo::BsonPtr>>;

// The filters and updates of `requests`, in `order`.
Status BulkDocsOf(MongoStore::Impl* impl, const std::vector<UpdateRequest>& requests,
                  const std::vector<std::size_t>& order, BulkDocs* docs) {
  docs->reserve(requests.size());
  for (std::size_t i : order) {
    const UpdateRequest& r = requests[i];
    docs->emplace_back(mongo::NewBson(), mongo::NewBson());
    if (Status s = impl->Query(r.filter, docs->back().first.get()); !s.ok()) return s;
    if (Status s = mongo::UpdateToBson(r.update, docs->back().second.get()); !s.ok()) return s;
  }
  return Status::Ok();
}

// Sends `docs` as one unordered bulk, again after a lost write conflict (WriteConflictToRetry).
// `*failed` when its last sending failed, `error` and `reply` saying why; an error when the
// driver would not even take a request into the bulk.
Status ExecuteBulk(mongoc_collection_t* coll, const BulkDocs& docs, const Namespace& ns,
                   bson_t* reply, bson_error_t* error, bool* failed) {
  auto opts = mongo::NewBson();
  bson_append_bool(opts.get(), "ordered", -1, false);
  for (int attempt = 0;; ++attempt) {
    mongo::BulkPtr bulk(mongoc_collection_create_bulk_operation_with_opts(coll, opts.get()));
    for (const auto& [query, update] : docs)
      if (!mongoc_bulk_operation_update_one_with_opts(bulk.get(), query.get(), update.get(),
                                                      nullptr, error))
        return mongo::StatusFromBsonError(*error, "bulk update on " + ns.ToString());
    bson_reinit(reply);
    *failed = mongoc_bulk_operation_execute(bulk.get(), reply, error) == 0;
    if (!*failed || !WriteConflictToRetry(*error, attempt)) return Status::Ok();
  }
}

// A bulk that failed. Unordered: the server went on past a request it refused. Those are
// the caller's to charge one by one (into result->refused, by the caller's index: `order`
// maps them back); a failure of the bulk itself (the network, a write concern that was not
// satisfied) is everybody's (the error returned).
Status RefusedOrFailed(const bson_error_t& error, bson_t* reply, const Namespace& ns,
                       const std::vector<std::size_t>& order, BulkResult* result) {
  Status s = mongo::StatusFromBsonError(error, "bulk update on " + ns.ToString());
  bson_iter_t it;
  const bool wc_error = bson_iter_init_find(&it, reply, "writeConcernErrors") &&
                        BSON_ITER_HOLDS_ARRAY(&it) && mongo::ArrayLength(&it) > 0;
  if (s.IsUnavailable() || wc_error || !RefusedRequests(reply, ns, &result->refused)) {
    result->refused.clear();
    return s;
  }
  for (auto& [i, why] : result->refused) i = i < order.size() ? order[i] : i;
  return Status::Ok();
}

// A refusal only for comparing with $$NOW.
bool RefusedForNow(const Status& why) {
  return why.message().find("$$NOW") != std::string::npos;
}

}  // namespace

Status MongoStore::UpdateEach(const Namespace& ns, const std::vector<UpdateRequest>& requests,
                              BulkResult* result) {
  *result = BulkResult{};
  if (requests.empty()) return Status::Ok();
  // Sent in lock order, not the caller's: the contract lets a bulk apply its requests in
  // any order; refusals are mapped back.
  const std::vector<std::size_t> order = LockOrder(requests);
  // Taken before the filters are built, which then compare on the estimate where a bulk
  // before this one was refused.
  std::unique_lock<std::mutex> asking = impl_->AskWhetherNowIsTaken(requests);
  BulkDocs docs;
  if (Status s = BulkDocsOf(impl_.get(), requests, order, &docs); !s.ok()) return s;
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  bool failed = false;
  if (Status s = ExecuteBulk(coll.get(), docs, ns, reply.get(), &error, &failed); !s.ok()) return s;
  if (failed)
    if (Status s = RefusedOrFailed(error, reply.get(), ns, order, result); !s.ok()) return s;
  result->matched = ReplyInt(reply.get(), "nMatched");
  result->modified = ReplyInt(reply.get(), "nModified");
  // Requests refused only for comparing with $$NOW: sent again, once, on the estimate.
  std::vector<UpdateRequest> again;
  std::vector<std::size_t> index;
  for (const auto& [i, why] : result->refused)
    if (RefusedForNow(why)) {
      again.push_back(requests[i]);
      index.push_back(i);
    }
  const bool switched = !again.empty() && impl_->SwitchToDaemonClock("$$NOW");
  impl_->Answered(&asking, switched || result->matched > 0);
  if (!switched) return Status::Ok();
  std::erase_if(result->refused, [](const auto& r) { return RefusedForNow(r.second); });
  coll.reset();
  client = PooledClient();  // back to the pool before the retry takes one
  BulkResult retried;
  if (Status s = UpdateEach(ns, again, &retried); !s.ok()) return s;
  result->matched += retried.matched;
  result->modified += retried.modified;
  for (auto& [i, why] : retried.refused) result->refused.emplace_back(index[i], std::move(why));
  return Status::Ok();
}

}  // namespace txn_recovery
