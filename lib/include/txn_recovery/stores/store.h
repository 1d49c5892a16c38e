// Store: everything the recovery engine needs from a database, and nothing more.
//
// The engine is written against this interface so that it can be unit-tested against an
// in-memory store, crash-tested through a fault-injecting wrapper, and run against
// MongoDB through libmongoc (mongo_store.h). Every write is a *single-document*
// conditional update or a multi-document update/delete whose every per-document effect is
// idempotent: that is what makes each recovery step safe to repeat after a crash.
//
// Filters and updates are the small algebra of filter.h, with MongoDB's semantics; both
// backends implement exactly it.
//
// Thread-safety: implementations must be safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "txn_recovery/base/document.h"
#include "txn_recovery/base/filter.h"
#include "txn_recovery/base/status.h"

namespace txn_recovery {

struct FindOptions {
  std::optional<std::string> sort_ascending_by;  // a path; absent = natural order
  std::int64_t limit = 0;                        // 0 = no limit
  std::int32_t batch_size = 0;                   // 0 = server default
  // Empty: whole documents. Otherwise only these paths (and _id) are returned, as a
  // MongoDB inclusion projection does: a sweep that selects its share reads ids alone.
  std::vector<std::string> projection;
  // Empty: the server's planner chooses. Otherwise the keys of the index the server must
  // read (MongoDB's `hint`); an index with exactly these keys must exist, or the server
  // refuses the read. Stores without indexes ignore it.
  std::vector<std::pair<std::string, int>> hint;
};

// A secondary index: its key paths in order, each 1 (ascending) or -1 (descending).
struct IndexSpec {
  std::vector<std::pair<std::string, int>> keys;
  std::string name;  // empty when creating: the server's conventional "path_1_path_1"
  // Only documents that have the first key are in it (partialFilterExpression {<key>:
  // {$exists: true}}): an index a server reads for "the key exists" (the quarantine) where a
  // plain one is read whole. Not `sparse`: DocumentDB's planner combines a sparse index
  // into a query for "the key is absent" and reads all of it.
  bool only_where_present = false;
  // The keys are read as one ordered key, so that an equality on the first and a range of
  // the next is one range of the index ({state: "done", lastModified: {$gte: A, $lt: B}}).
  // Every compound index of mongod is. DocumentDB keeps one tree per key unless the index is
  // created with `enableOrderedIndex` (then a range on the second key walks every document
  // that has it, the whole history): MongoStore asks for it, and reads it back, on a server
  // that takes it; on one that refuses the option every compound index is ordered.
  bool ordered = false;
  // Reads name this index in a hint (FindOptions::hint): only an index with exactly these
  // keys serves it, not a longer one that starts with them.
  bool hinted = false;

  // "{state: 1, lastModified: 1}", "{recovery.quarantine: 1} where present"
  std::string ToString() const;
  // True if an index with the keys of `existing` serves every query this one is meant for:
  // `existing` starts with exactly these keys in this order and direction (MongoDB can use
  // a prefix of a compound index), and holds only documents with the first key if this one
  // does (a plain index is read whole for "the key exists").
  bool ServedBy(const IndexSpec& existing) const;
};

// One single-document update of a batch (Store::UpdateEach).
struct UpdateRequest {
  Filter filter;
  Update update;
};

struct WriteResult {
  std::int64_t matched = 0;
  std::int64_t modified = 0;  // for deletes: the number deleted
};

// The result of Store::UpdateEach.
struct BulkResult {
  // Summed over the requests the server accepted.
  std::int64_t matched = 0;
  std::int64_t modified = 0;
  // The requests the server refused (a document it will not write, say), by their index in
  // the request list, with its reason. A refused request changed nothing; every other
  // request was applied or matched nothing.
  std::vector<std::pair<std::size_t, Status>> refused;
};

// A forward-only stream of documents. Not thread-safe; owned by one caller.
class Cursor {
 public:
  virtual ~Cursor() = default;
  // Fetches the next document into *doc. Returns OK with *has_doc=false at the end.
  virtual Status Next(Document* doc, bool* has_doc) = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // The database server's current wall-clock time. Transaction ages are measured against
  // this, never against the local host's clock.
  virtual Status ServerTime(DateTime* now) = 0;

  // Streams the documents matching `filter`. The cursor holds at most one batch in memory.
  // Documents modified while the cursor is open may be seen once, twice or not at all; the
  // engine tolerates all three.
  virtual Status Find(const Namespace& ns, const Filter& filter, const FindOptions& options,
                      std::unique_ptr<Cursor>* cursor) = 0;

  // Convenience: the first matching document, if any.
  virtual Status FindOne(const Namespace& ns, const Filter& filter, std::optional<Document>* doc);

  // The number of matching documents. The default counts through Find.
  virtual Status Count(const Namespace& ns, const Filter& filter, std::int64_t* count);

  // Atomically updates at most one matching document.
  virtual Status UpdateOne(const Namespace& ns, const Filter& filter, const Update& update,
                           WriteResult* result) = 0;

  // Updates every matching document (each one atomically; the set as a whole is not).
  virtual Status UpdateMany(const Namespace& ns, const Filter& filter, const Update& update,
                            WriteResult* result) = 0;

  // Atomically updates at most one matching document and returns it as it is after the
  // update (nullopt if nothing matched).
  virtual Status FindOneAndUpdate(const Namespace& ns, const Filter& filter, const Update& update,
                                  std::optional<Document>* after) = 0;

  // Deletes every matching document.
  virtual Status DeleteMany(const Namespace& ns, const Filter& filter, WriteResult* result) = 0;

  // Inserts documents (used by tests, the demo and benchmarks; the engine never inserts).
  virtual Status InsertMany(const Namespace& ns, const std::vector<Document>& docs) = 0;

  // Applies each request as UpdateOne would, independently and in any order (MongoDB: one
  // unordered bulk write, a single round trip). `result` sums what the accepted requests
  // matched and modified; which one matched is not reported, so a caller that needs to
  // know reads the documents back. A request the server refuses on its own (the document
  // cannot take the update) is listed in result->refused and does not stop the others.
  // The returned Status is an error only when the bulk as a whole failed (the database
  // unreachable, say): then some requests may have been applied and others not (each one
  // entirely or not at all), so every request must be safe to repeat.
  // The default issues the requests one by one through UpdateOne.
  virtual Status UpdateEach(const Namespace& ns, const std::vector<UpdateRequest>& requests,
                            BulkResult* result);

  // The names of the collections of `database` (views and `system.*` excluded), sorted;
  // empty when the database does not exist. `propose` reads a database through it.
  // The default answers InvalidArgument: a store that cannot list its collections.
  virtual Status ListCollections(const std::string& database, std::vector<std::string>* names);
  // Up to `size` documents of the collection, chosen at random by the server (MongoDB's
  // `$sample`, which mongod and DocumentDB both answer), so that a proposal reads a
  // collection's variety rather than its oldest documents. The default reads the first
  // `size` documents in natural order.
  virtual Status Sample(const Namespace& ns, std::int64_t size, std::vector<Document>* docs);

  // Drops a collection (absent: OK). Only `rehearse` drops, and only the scratch
  // collections it created. The default answers InvalidArgument.
  virtual Status DropCollection(const Namespace& ns);

  // The indexes of a collection, the _id index included; empty (and OK) when the
  // collection does not exist.
  virtual Status ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) = 0;
  // Creates the indexes that do not exist yet (creating the collection if needed); an
  // index that already exists with the same keys is not an error.
  virtual Status CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) = 0;

  // What crossed the wire since the store was opened, for stores that talk to a server
  // (benchmarks, `sweep --json`). False when the store keeps no such counters.
  struct WireStats {
    std::int64_t round_trips = 0;         // commands sent (find, getMore, update, ...)
    std::int64_t documents_returned = 0;  // documents the server sent back in replies
  };
  virtual bool GetWireStats(WireStats* /*stats*/) const { return false; }
};

}  // namespace txn_recovery
