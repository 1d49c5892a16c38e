// The lease, as a type. A recovery writes to a transaction and its participants only under a
// lease it holds (docs/state-machine.md, the lease-deadline rule): here that rule is carried
// by the types rather than by habit.
//
// - A `Lease` exists only once a claim matched: its constructor is private, and only the
//   `LeaseKeeper` (the lease arithmetic: the claim's terms, taking, renewing) makes one.
// - A write of the execution names what it is sent under (engine/batch_item.h, `Write`):
//   a `Lease` the batch holds, the claim taking one, or a reason from `LeaseFree`. There is
//   no fourth way to build one.
// - Only two classes can send a write at all, the Writer's friends: the execution's
//   `LeasedSender` (engine/leased_sender.h), which applies the deadline and the fence of the
//   lease a write names, and the `LeaseFreeWriter` below, which must be given its reason.
//
// So a phase that tries to write without a lease does not compile: it holds no Writer and no
// Store (its reads go through engine/store_reads.h), and every Write it builds names a lease.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "engine/requests.h"
#include "engine/writer.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/engine/state_machine.h"

namespace txn_recovery {

// The writes made without a lease, by design: each is safe without one, and why is said
// here, in the one place they are listed (docs/architecture.md, "The lease as a type").
enum class LeaseFree {
  // Removing a finish's trace once its transaction is terminal: terminal states never
  // change and no finish can follow (model/recovery.pml). When sent by the action that
  // made it done, it still keeps to that lease's deadline (LeasedSender).
  kUntrace,
  // Undoing an apply that reached a participant after its transaction ended, guarded by the
  // marker so that it is undone at most once; terminal states never change.
  kLateWrite,
  // Stamping the first sighting of a transaction without a time: changes only its age, and
  // the first stamp of several daemons stays.
  kFirstSighting,
  // Counting a failed attempt on the transaction document: read by no recovery decision.
  kFailureCount,
  // Setting a transaction aside: the record first, then the mark fenced by the record's
  // deadline (engine/quarantine_records.h).
  kQuarantine,
  // The fleet's member records: the daemon's own collection, no transaction in it.
  kMembership,
  // The orphan scan's removal of a trace whose transaction is gone or terminal.
  kOrphanScan,
  // The retention tool's archive and delete of terminal transactions past their age.
  kRetention,
  // An operator's command: releasing one named transaction's quarantine, the pause switch.
  kOperator,
};

// A lease this batch holds on one transaction: the terms its claim (or its last renewal)
// wrote, and the local deadline after which nothing more is written under it. Copyable, so
// that a write can say which lease it goes under; made and renewed only by a LeaseKeeper.
class Lease {
 public:
  const requests::LeaseTerms& terms() const { return terms_; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

 private:
  friend class LeaseKeeper;
  Lease(requests::LeaseTerms terms, std::chrono::steady_clock::time_point deadline)
      : terms_(std::move(terms)), deadline_(deadline) {}
  requests::LeaseTerms terms_;
  std::chrono::steady_clock::time_point deadline_;
};

// The lease arithmetic, in one place. A claim or renewal sent at server time `now` writes
// the expiry `now + duration` with its fence `expiry - margin / 2`; the daemon stops writing
// under it at `start + duration - margin` on its monotonic clock, `start` being when the
// write was sent. Holds references: `clock` and `options` must outlive it.
class LeaseKeeper {
 public:
  LeaseKeeper(Clock* clock, const LeaseOptions& options) : clock_(clock), options_(options) {}

  // The terms a claim sent at server time `now` writes, under the nonce `claim`.
  requests::LeaseTerms Offer(const std::string& claim, DateTime now) const;
  // The lease a claim offering `terms`, sent at `start`, took (its bulk matched it).
  Lease Take(const requests::LeaseTerms& terms, std::chrono::steady_clock::time_point start) const;
  // The expiry a renewal sent at server time `now` writes.
  DateTime Expiry(DateTime now) const { return DateTime{now.millis + options_.duration.count()}; }
  // `lease` renewed by a transition sent at `start`, server time `now`.
  void Renew(Lease* lease, DateTime now, std::chrono::steady_clock::time_point start) const;
  // Whether `lease`'s local deadline has not passed: writes under it may still be sent.
  bool Live(const Lease& lease) const { return clock_->MonotonicNow() < lease.deadline(); }
  std::chrono::steady_clock::time_point Now() const { return clock_->MonotonicNow(); }

 private:
  void SetExpiry(requests::LeaseTerms* terms, DateTime now) const;
  Clock* clock_;
  const LeaseOptions& options_;
};

// The writer of the writes made without a lease. Its reason is required, so that each such
// write says at its call site which of the list above it is; nothing reads it afterwards.
// Not thread-safe when recording; the store (and the record) must outlive it.
class LeaseFreeWriter {
 public:
  LeaseFreeWriter(Store* store, LeaseFree /*why*/) : writer_(store) {}
  // A rehearsal's: sends nothing and appends each write to `*record` (engine/writer.h).
  LeaseFreeWriter(Store* store, std::vector<PlannedWrite>* record, LeaseFree /*why*/)
      : writer_(store, record) {}

  bool recording() const { return writer_.recording(); }

  // The Writer's sends (engine/writer.h says what each does when recording).
  Status Each(const Namespace& ns, std::vector<LabelledRequest> requests, BulkResult* result) {
    return writer_.Each(ns, std::move(requests), result);
  }
  Status One(const Namespace& ns, const LabelledRequest& request, WriteResult* result) {
    return writer_.One(ns, request, result);
  }
  Status OneAndRead(const Namespace& ns, const LabelledRequest& request,
                    std::optional<Document>* after) {
    return writer_.OneAndRead(ns, request, after);
  }
  Status Many(const Namespace& ns, const std::string& what, const Filter& filter,
              const Update* update, WriteResult* result) {
    return writer_.Many(ns, what, filter, update, result);
  }
  Status Insert(const Namespace& ns, const std::string& what, const std::vector<Document>& docs) {
    return writer_.Insert(ns, what, docs);
  }
  void Note(const Namespace& ns, std::string what) { writer_.Note(ns, std::move(what)); }

 private:
  Writer writer_;
};

}  // namespace txn_recovery
