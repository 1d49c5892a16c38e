// FaultStore: a Store wrapper that simulates the daemon being killed (SIGKILL) after a
// given number of writes. Once "dead", every further call fails with Aborted and nothing
// more reaches the wrapped store, which is exactly what a killed process leaves behind.
//
// It also stalls the daemon (SIGSTOP, a long pause, a slow network) at a chosen write, by
// advancing a ManualClock: either before the daemon checks its lease for that write (the
// stall falls after the previous write returned) or in flight (after the check, before the
// write reaches the server).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "txn_recovery/base/clock.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::testing {

class FaultStore final : public Store {
 public:
  explicit FaultStore(Store* base) : base_(base) {}

  // Lets `n` more writes through, then dies. Negative: never dies.
  void CrashAfterWrites(int n) { writes_left_ = n; }

  // Every update of the document `id` of `ns` is refused, as a server refuses a write it
  // cannot apply to one document (ServerError), while the others go through.
  void RefuseUpdatesOf(const Namespace& ns, const Value& id) {
    refused_ns_ = ns;
    refused_id_ = id;
  }

  enum class Stall {
    kBeforeCheck,  // once write `n - 1` has returned: the daemon checks its lease after it
    kInFlight,     // as write `n` arrives, already checked by the daemon, before the server
  };
  // Advances `clock` by `d` at the `n`-th write (1-based) counted from now; `before` is
  // called first (e.g. to snapshot the data as the daemon left it). One stall at a time.
  void StallAt(int n, Stall when, ManualClock* clock, std::chrono::milliseconds d,
               std::function<void()> before = nullptr) {
    stall_at_ = writes_ + n;
    stall_when_ = when;
    stall_clock_ = clock;
    stall_for_ = d;
    before_stall_ = std::move(before);
  }
  // Every find returns each document twice in a row, as a server's scan may when the
  // document is updated during it (DocumentDB does so readily).
  void RepeatEachDocument() { repeat_ = true; }
  // Every write's reply says it matched and changed nothing, though it was applied: a
  // reply that reports fewer changes than were made, without an error, as DocumentDB's did
  // once (a bulk of 50 updates: 38 applied, nModified 0, no writeErrors).
  void ReportNoChanges() { report_no_changes_ = true; }
  // The server's time as the daemon reads it (ServerTime) moves `d` further ahead: time
  // passes for the daemon without a test waiting for it on a real server, whose own clock
  // a test cannot move. The server's writes ($currentDate) keep its own clock.
  void ShiftServerTime(std::chrono::milliseconds d) { server_time_shift_ += d.count(); }
  bool crashed() const { return crashed_; }
  int writes() const { return writes_; }

  Status ServerTime(DateTime* now) override {
    if (crashed_) return Dead();
    Status s = base_->ServerTime(now);
    if (s.ok()) now->millis += server_time_shift_.load();
    return s;
  }
  Status Find(const Namespace& ns, const Filter& f, const FindOptions& o,
              std::unique_ptr<Cursor>* c) override {
    if (crashed_) return Dead();
    if (Status s = base_->Find(ns, f, o, c); !s.ok() || !repeat_) return s;
    *c = std::make_unique<Repeating>(std::move(*c));
    return Status::Ok();
  }
  Status Count(const Namespace& ns, const Filter& f, std::int64_t* n) override {
    if (crashed_) return Dead();
    return base_->Count(ns, f, n);
  }
  Status UpdateOne(const Namespace& ns, const Filter& f, const Update& u, WriteResult* r) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    if (Refused(ns, f)) return AfterWrite(RefusedStatus());
    return AfterWrite(Underreported(base_->UpdateOne(ns, f, u, r), r));
  }
  Status UpdateMany(const Namespace& ns, const Filter& f, const Update& u,
                    WriteResult* r) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return AfterWrite(Underreported(base_->UpdateMany(ns, f, u, r), r));
  }
  Status FindOneAndUpdate(const Namespace& ns, const Filter& f, const Update& u,
                          std::optional<Document>* after) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    if (Refused(ns, f)) return AfterWrite(RefusedStatus());
    return AfterWrite(base_->FindOneAndUpdate(ns, f, u, after));
  }
  Status DeleteMany(const Namespace& ns, const Filter& f, WriteResult* r) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return AfterWrite(Underreported(base_->DeleteMany(ns, f, r), r));
  }
  Status InsertMany(const Namespace& ns, const std::vector<Document>& docs) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return AfterWrite(base_->InsertMany(ns, docs));
  }
  // The default UpdateEach: one UpdateOne (one counted write) per request, so a crash or an
  // in-flight stall can fall between any two requests of a batch, as it can between two
  // documents of an unordered bulk write. A stall before the daemon's check waits for the
  // bulk to return: the daemon checks its lease once per bulk, before sending it.
  Status UpdateEach(const Namespace& ns, const std::vector<UpdateRequest>& requests,
                    BulkResult* result) override {
    in_bulk_ = true;
    Status s = Store::UpdateEach(ns, requests, result);
    in_bulk_ = false;
    if (report_no_changes_) result->matched = result->modified = 0;
    return AfterWrite(std::move(s));
  }
  Status ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) override {
    if (crashed_) return Dead();
    return base_->ListIndexes(ns, indexes);
  }
  Status CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) override {
    if (Status s = BeforeWrite(); !s.ok()) return s;
    return AfterWrite(base_->CreateIndexes(ns, indexes));
  }

 private:
  class Repeating final : public Cursor {
   public:
    explicit Repeating(std::unique_ptr<Cursor> base) : base_(std::move(base)) {}
    Status Next(Document* doc, bool* has) override {
      if (again_) {
        *doc = *again_;
        again_.reset();
        *has = true;
        return Status::Ok();
      }
      if (Status s = base_->Next(doc, has); !s.ok() || !*has) return s;
      again_ = *doc;
      return Status::Ok();
    }

   private:
    std::unique_ptr<Cursor> base_;
    std::optional<Document> again_;
  };
  bool repeat_ = false;
  bool report_no_changes_ = false;
  Status Underreported(Status s, WriteResult* r) const {
    if (report_no_changes_) *r = WriteResult{};
    return s;
  }
  static Status Dead() { return Status::Aborted("injected crash: the process is dead"); }
  bool Refused(const Namespace& ns, const Filter& f) const {
    if (!refused_id_ || !(ns == refused_ns_)) return false;
    for (const Predicate& p : f.all())
      if (p.op == Predicate::Op::kEq && p.path == "_id" && p.value == *refused_id_) return true;
    return false;
  }
  Status RefusedStatus() const {
    return Status::ServerError("injected: the server refuses to update " + refused_id_->ToString() +
                               " in " + refused_ns_.ToString());
  }
  Status BeforeWrite() {
    if (crashed_) return Dead();
    if (writes_left_ == 0) {
      crashed_ = true;
      return Dead();
    }
    if (writes_left_ > 0) --writes_left_;
    ++writes_;
    if (writes_ == stall_at_ && stall_when_ == Stall::kInFlight) DoStall();
    if (writes_ + 1 == stall_at_ && stall_when_ == Stall::kBeforeCheck) stall_next_ = true;
    return Status::Ok();
  }
  // Called by each write method once the wrapped store has answered.
  Status AfterWrite(Status s) {
    if (stall_next_ && !in_bulk_) {
      stall_next_ = false;
      DoStall();
    }
    return s;
  }
  void DoStall() {
    if (before_stall_) before_stall_();
    if (stall_clock_ != nullptr) stall_clock_->Advance(stall_for_);
    stall_at_ = -1;
  }

  Store* base_;
  std::atomic<int> writes_left_{-1};
  std::atomic<int> writes_{0};
  std::atomic<bool> crashed_{false};
  std::atomic<std::int64_t> server_time_shift_{0};
  Namespace refused_ns_;
  std::optional<Value> refused_id_;
  int stall_at_ = -1;
  Stall stall_when_ = Stall::kInFlight;
  bool stall_next_ = false;
  bool in_bulk_ = false;
  ManualClock* stall_clock_ = nullptr;
  std::chrono::milliseconds stall_for_{0};
  std::function<void()> before_stall_;
};

}  // namespace txn_recovery::testing
