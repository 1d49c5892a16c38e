// FaultStore: a Store wrapper that simulates the daemon being killed (SIGKILL) after a
// given number of writes. Once "dead", every further call fails with Aborted and nothing
// more reaches the wrapped store, which is exactly what a killed process leaves behind.
#pragma once

#include <atomic>
#include <memory>

#include "txn_recovery/store.h"

namespace txn_recovery::testing {

class FaultStore final : public Store {
 public:
  explicit FaultStore(Store* base) : base_(base) {}

  // Lets `n` more writes through, then dies. Negative: never dies.
  void CrashAfterWrites(int n) { writes_left_ = n; }
  bool crashed() const { return crashed_; }
  int writes() const { return writes_; }

  Status ServerTime(DateTime* now) override {
    if (crashed_) return Dead();
    return base_->ServerTime(now);
  }
  Status Find(const Namespace& ns, const Filter& f, const FindOptions& o,
              std::unique_ptr<Cursor>* c) override {
    if (crashed_) return Dead();
    return base_->Find(ns, f, o, c);
  }
  Status Count(const Namespace& ns, const Filter& f, std::int64_t* n) override {
    if (crashed_) return Dead();
    return base_->Count(ns, f, n);
  }
  Status UpdateOne(const Namespace& ns, const Filter& f, const Update& u, WriteResult* r) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return base_->UpdateOne(ns, f, u, r);
  }
  Status UpdateMany(const Namespace& ns, const Filter& f, const Update& u,
                    WriteResult* r) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return base_->UpdateMany(ns, f, u, r);
  }
  Status FindOneAndUpdate(const Namespace& ns, const Filter& f, const Update& u,
                          std::optional<Document>* after) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return base_->FindOneAndUpdate(ns, f, u, after);
  }
  Status DeleteMany(const Namespace& ns, const Filter& f, WriteResult* r) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return base_->DeleteMany(ns, f, r);
  }
  Status InsertMany(const Namespace& ns, const std::vector<Document>& docs) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return base_->InsertMany(ns, docs);
  }
  // UpdateEach stays the default: one UpdateOne (one counted write) per request, so a
  // crash can fall between any two requests of a batch, as it can between two documents
  // of an unordered bulk write.
  Status ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) override {
    if (crashed_) return Dead();
    return base_->ListIndexes(ns, indexes);
  }
  Status CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return base_->CreateIndexes(ns, indexes);
  }

 private:
  static Status Dead() { return Status::Aborted("injected crash: the process is dead"); }
  Status BeforeWrite() {
    if (crashed_) return Dead();
    if (writes_left_ == 0) {
      crashed_ = true;
      return Dead();
    }
    if (writes_left_ > 0) --writes_left_;
    ++writes_;
    return Status::Ok();
  }

  Store* base_;
  std::atomic<int> writes_left_{-1};
  std::atomic<int> writes_{0};
  std::atomic<bool> crashed_{false};
};

}  // namespace txn_recovery::testing
