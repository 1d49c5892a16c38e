// MemoryStore: an in-memory Store with MongoDB's single-document atomicity, for unit tests
// of the engine. Each collection is a vector of documents in insertion order guarded by one
// mutex; every call is atomic with respect to every other. Server time comes from the
// injected Clock's wall time.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "txn_recovery/base/clock.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

class MemoryStore final : public Store {
 public:
  // `clock` must outlive the store.
  explicit MemoryStore(Clock* clock) : clock_(clock) {}

  Status ServerTime(DateTime* now) override;
  Status Find(const Namespace& ns, const Filter& filter, const FindOptions& options,
              std::unique_ptr<Cursor>* cursor) override;
  Status UpdateOne(const Namespace& ns, const Filter& filter, const Update& update,
                   WriteResult* result) override;
  Status UpdateMany(const Namespace& ns, const Filter& filter, const Update& update,
                    WriteResult* result) override;
  Status FindOneAndUpdate(const Namespace& ns, const Filter& filter, const Update& update,
                          std::optional<Document>* after) override;
  Status DeleteMany(const Namespace& ns, const Filter& filter, WriteResult* result) override;
  Status InsertMany(const Namespace& ns, const std::vector<Document>& docs) override;
  // Records the indexes (queries still scan): what the engine asked for can be checked.
  Status ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) override;
  Status CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) override;

  // Every collection that holds a document or an index.
  Status ListCollections(const std::string& database, std::vector<std::string>* names) override;

  Status DropCollection(const Namespace& ns) override;
  // A snapshot of a whole collection, in insertion order (tests).
  std::vector<Document> Dump(const Namespace& ns) const;

 private:
  std::vector<Document>& Collection(const Namespace& ns);  // requires mu_

  Clock* clock_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<Document>> collections_;
  std::map<std::string, std::vector<IndexSpec>> indexes_;  // by namespace, _id index first
};

}  // namespace txn_recovery
