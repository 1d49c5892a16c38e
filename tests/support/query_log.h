// What the daemon asks of the server, as the server would answer `explain` for it.
//
// An idle sweep must cost the server work bounded by the transactions that need it, not by
// the history the collection keeps (docs/state-machine.md, "What a sweep reads"). Round
// trips and documents returned stay flat while a server scans a whole index, so the proof
// is the server's own account: QueryLog records every read a Store is sent (the filters
// exactly as built, not retyped), and Explain (server_probe.h) asks the server how it would
// run each one. Tests and the benchmark use them; the library does not have them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "txn_recovery/stores/store.h"

namespace txn_recovery {

// One read a store was sent.
struct ReadQuery {
  enum class Kind { kFind, kCount };
  Kind kind = Kind::kFind;
  Namespace ns;
  Filter filter;
  FindOptions options;  // kFind only

  // "find on db.transactions {state: ..., ...}"
  std::string ToString() const;
};

// The server's account of one read (explain, "executionStats" verbosity).
struct QueryPlan {
  std::int64_t keys_examined = 0;  // index keys read
  std::int64_t docs_examined = 0;  // documents fetched and tested
  std::int64_t returned = 0;
  // Pages of the database's storage the read touched (PostgreSQL's shared buffers, hit or
  // read, as DocumentDB reports them), or -1 where the server does not say. The one measure
  // that grows with an index scan whose keys the server does not count (DocumentDB's bitmap
  // and RUM scans report 0 keys).
  std::int64_t blocks = -1;
  // The pages each index scan stage touched, in the plan's order (DocumentDB: one stage per
  // alternative of an $or): where a scan walks more of its index than its range, it shows
  // here even when the other alternatives hide it in the total.
  std::vector<std::int64_t> scan_blocks;
  bool collection_scan = false;      // some stage read the collection without an index
  std::vector<std::string> indexes;  // the names of the indexes the plan reads
  std::string summary;               // the stages, for a failure message
};

// A Store that forwards every call to `inner` and records each read (Find, FindOne, Count)
// it forwards. Thread-safe: workers may share it. Writes are forwarded unrecorded.
class QueryLog final : public Store {
 public:
  explicit QueryLog(Store* inner) : inner_(inner) {}

  // The reads recorded so far, in the order they were sent.
  std::vector<ReadQuery> reads() const;
  void Clear();

  Status ServerTime(DateTime* now) override { return inner_->ServerTime(now); }
  Status Find(const Namespace& ns, const Filter& filter, const FindOptions& options,
              std::unique_ptr<Cursor>* cursor) override;
  Status FindOne(const Namespace& ns, const Filter& filter, std::optional<Document>* doc) override;
  Status Count(const Namespace& ns, const Filter& filter, std::int64_t* count) override;
  Status UpdateOne(const Namespace& ns, const Filter& filter, const Update& update,
                   WriteResult* result) override {
    return inner_->UpdateOne(ns, filter, update, result);
  }
  Status UpdateMany(const Namespace& ns, const Filter& filter, const Update& update,
                    WriteResult* result) override {
    return inner_->UpdateMany(ns, filter, update, result);
  }
  Status FindOneAndUpdate(const Namespace& ns, const Filter& filter, const Update& update,
                          std::optional<Document>* after) override {
    return inner_->FindOneAndUpdate(ns, filter, update, after);
  }
  Status DeleteMany(const Namespace& ns, const Filter& filter, WriteResult* result) override {
    return inner_->DeleteMany(ns, filter, result);
  }
  Status InsertMany(const Namespace& ns, const std::vector<Document>& docs) override {
    return inner_->InsertMany(ns, docs);
  }
  Status UpdateEach(const Namespace& ns, const std::vector<UpdateRequest>& requests,
                    BulkResult* result) override {
    return inner_->UpdateEach(ns, requests, result);
  }
  Status ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) override {
    return inner_->ListIndexes(ns, indexes);
  }
  Status CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) override {
    return inner_->CreateIndexes(ns, indexes);
  }
  bool GetWireStats(WireStats* stats) const override { return inner_->GetWireStats(stats); }

 private:
  void Record(ReadQuery q);

  Store* inner_;
  mutable std::mutex mu_;
  std::vector<ReadQuery> reads_;  // guarded by mu_
};

}  // namespace txn_recovery
