// The recovery engine: doing what the decision table (decision.h) says, through guarded
// single-document writes under a lease. docs/state-machine.md is the prose version of this
// contract; read it before changing anything here.
//
// There is one execution path. Execute is ExecuteBatch of one transaction; ExecuteBatch
// drives several transactions in lockstep, each write of a phase sent together with the
// same write of the others (one unordered bulk per collection). Every write is built by
// one pure request builder (lib/src/engine/requests.h) and goes through the batch's Send,
// the one place that applies the lease-deadline rule and adds the fence, to the one
// Writer (lib/src/engine/writer.h) that sends it.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "txn_recovery/base/clock.h"
#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/engine/decision.h"
#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

class LeaseFreeWriter;  // lib/src/engine/lease.h: the writes made without a lease

// How a transaction ended up after Execute.
enum class Outcome {
  kUntouched,    // nothing to do
  kResolved,     // reached a terminal state (or, for kCheckLateWrites, was checked)
  kBusy,         // another daemon holds the lease, or the application touched it since read
  kFailed,       // an error stopped the work; everything done so far is safe to repeat
  kQuarantined,  // the document (or a participant it names) does not fit its profile; set
                 // aside with the reason
  kPlanned,      // dry run: nothing written
};
std::string_view OutcomeName(Outcome o) noexcept;

// The server's time now, extrapolated from one reading of it (`server_reading`, taken just
// before the call) with this host's monotonic clock: ages stay on the server's clock
// without a round trip per transaction. `clock` must outlive the returned function.
std::function<DateTime()> ServerNowFrom(Clock* clock, DateTime server_reading);

struct LeaseOptions {
  std::string owner;  // unique per daemon instance: host, pid and a random part
  std::chrono::milliseconds duration{std::chrono::seconds(60)};
  // The lease-deadline rule (docs/state-machine.md). Before each write under a lease the
  // daemon checks, on its monotonic clock, that less than `duration - margin` has passed
  // since it sent the claim (or the last renewal); and each such write carries a fence,
  // `expires - margin / 2` on the server's clock, which the server checks as it applies
  // it. The local check stops a daemon that knows it is late; the fence stops a write that
  // was delayed after the check (a stall, a slow network). Both end before `expires`, the
  // first moment another daemon may take the lease.
  std::chrono::milliseconds margin{std::chrono::seconds(10)};
};

// A unique owner id for leases: "<host>:<pid>:<random>".
std::string MakeOwnerId();

struct ExecuteResult {
  Outcome outcome = Outcome::kUntouched;
  Action action = Action::kNone;  // the action finally taken (a resume may become a rollback)
  TxnState final_state = TxnState::kInitial;
  int operations_applied = 0;  // participant writes that changed a document
  int operations_undone = 0;
  int late_writes_undone = 0;
  std::string detail;  // why, for failures, rollbacks-instead-of-resume and quarantines
  Status status;       // the error behind kFailed
};

// One write the engine would send, from a rehearsal (RehearseBatch): what it is for, where,
// and the filter and update exactly as built (lib/src/engine/requests.h). An entry without
// filter is a note: a write left out, and why.
struct PlannedWrite {
  std::string what;  // "claim", "apply: debit 100 from \"A\"", "mark applied", ...
  Namespace ns;
  Filter filter;
  std::optional<Update> update;  // none: a delete (of a tagged set)
  bool many = false;             // every matching document (a tagged set), not one
};

// Executes decisions for one watch. Thread-safe: holds no mutable state of its own; several
// threads may execute different transactions at once.
class StateMachine {
 public:
  // `store` and `clock` must outlive the machine. `server_now` estimates the server's
  // current time (see ServerNowFrom).
  StateMachine(Store* store, Clock* clock, Namespace txn_ns, const Profile* profile,
               std::string lease_field, LeaseOptions lease, std::function<DateTime()> server_now);

  // ExecuteBatch of one.
  ExecuteResult Execute(const Transaction& txn, Action action);

  // Performs each transaction's action (kNone and kQuarantine leave it untouched): claims
  // their leases, performs the writes, releases the leases still held on every way out.
  // Every write is conditional and repeatable: if the process dies at any point, running
  // the same action again (here or on another host, once the lease has expired) completes
  // it. Each phase of every transaction (apply, mark applied, finish, mark done, ...) is
  // sent together with the same phase of the others, one unordered bulk per collection,
  // and read back only where the counts do not say which write matched. Only the order
  // within one transaction matters, and it is kept. A write the server refuses fails its
  // own transaction and no other. Returns one result per transaction, in order.
  std::vector<ExecuteResult> ExecuteBatch(const std::vector<const Transaction*>& txns,
                                          const std::vector<Action>& actions);

  // ExecuteBatch rehearsed: the same execution, against a writer that sends nothing and
  // takes every write as matched (a rehearsal cannot know what would interfere). It reads
  // what the execution reads (the participants) and appends each write it would send to
  // `*record` (may be null), in order, exactly as built, fences included, with a line for
  // each write it leaves out and why ("(nothing: already applied) ..."). Results: kPlanned
  // where the execution would act, the action it would take (a resume whose participant is
  // missing is rehearsed as the rollback it becomes), "would quarantine: ..." for a
  // participant that does not fit. The dry run and `explain` are this, so that they cannot
  // drift from what runs.
  std::vector<ExecuteResult> RehearseBatch(const std::vector<const Transaction*>& txns,
                                           const std::vector<Action>& actions,
                                           std::vector<PlannedWrite>* record);
  // RehearseBatch of one: the writes, for `explain`.
  std::vector<PlannedWrite> Rehearse(const Transaction& txn, Action action);

  // Stamps the first sighting of each of `ids` with the server's time, one unordered bulk.
  // Each stamp matches only while the transaction has neither a time nor a stamp (of several
  // daemons, the first stamp stays). result->modified: how many this call wrote;
  // result->refused: the ones the server refused, by index into `ids`.
  Status StampFirstSeen(const std::vector<Value>& ids, BulkResult* result);

  // Counts a failed attempt on the document (RecoveryPaths::Failures, LastError) and
  // returns the count after it.
  Status RecordFailure(const Value& id, std::string_view error, std::int64_t* failures);

  // Records the reason on the document (RecoveryPaths::Quarantine), so the sweep skips it
  // until an operator clears the field, after writing its record in the daemon's own
  // collection, which inspect, the gauge and the alert count (quarantine_records.h: the
  // record first, the mark fenced by the record's deadline). Not ok, and the transaction
  // not marked, when the record could not be written or the mark came too late.
  Status Quarantine(const Value& id, std::string_view reason);

 private:
  class Batch;
  Status QuarantineThrough(LeaseFreeWriter* writer, const Value& id, std::string_view reason);
  // Whether `mark`, the quarantine's write of the mark, marked the transaction.
  static Status Marked(const LeaseFreeWriter& writer, const WriteResult& mark);
  Store* store_;
  Clock* clock_;
  Namespace txn_ns_;
  const Profile* profile_;
  RecoveryPaths paths_;
  LeaseOptions lease_;
  std::function<DateTime()> server_now_;
};

}  // namespace txn_recovery
