// The recovery state machine: what to do with one transaction (Decide), and doing it
// (Execute) through guarded single-document writes. docs/state-machine.md is the prose
// version of this contract; read it before changing anything here.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "txn_recovery/clock.h"
#include "txn_recovery/profile.h"
#include "txn_recovery/store.h"

namespace txn_recovery {

struct Thresholds {
  std::chrono::milliseconds resume_after{std::chrono::minutes(1)};
  std::chrono::milliseconds rollback_after{std::chrono::minutes(30)};
  std::chrono::milliseconds initial_timeout{std::chrono::minutes(30)};
  // Terminal transactions younger than this have their participants re-checked for late
  // writes (an application that woke up after the daemon resolved its transaction).
  std::chrono::milliseconds late_write_window{std::chrono::hours(1)};
};

enum class Action {
  kNone,             // too young, terminal and outside the late-write window, or unknown
  kCancel,           // initial, stale: nothing was applied; mark cancelled
  kResume,           // pending: apply what is missing, mark applied, then finish
  kRollback,         // pending, expired: mark canceling, undo what was applied, mark cancelled
  kFinish,           // applied: remove markers, mark done
  kFinishRollback,   // canceling: undo what is still applied, mark cancelled
  kCheckLateWrites,  // terminal and recent: undo any change applied after the fact
  kQuarantine,       // the document does not fit its profile (never returned by Decide)
};
std::string_view ActionName(Action a) noexcept;

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

// Pure decision table (DESIGN.md). `now` is the server's time.
Action Decide(const Transaction& txn, DateTime now, const Thresholds& thresholds);

struct LeaseOptions {
  std::string owner;  // unique per daemon instance: host, pid and a random part
  std::chrono::milliseconds duration{std::chrono::seconds(60)};
  // Local safety margin: we stop writing this long before the lease expires, so that
  // clock-rate differences and in-flight requests cannot overlap another daemon's lease.
  std::chrono::milliseconds margin{std::chrono::seconds(10)};
};

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

// Executes decisions for one watch. Thread-safe: holds no mutable state of its own; several
// threads may call Execute for different transactions at once.
class StateMachine {
 public:
  // `store` and `clock` must outlive the machine. `server_now` estimates the server's
  // current time (see ServerNowFrom).
  StateMachine(Store* store, Clock* clock, Namespace txn_ns, const Profile* profile,
               std::string lease_field, LeaseOptions lease, std::function<DateTime()> server_now);

  // Claims the transaction's lease, performs `action`, releases the lease. Every write is
  // conditional and repeatable: if the process dies at any point, running Execute again
  // (here or on another host, after the lease expires) completes the same action.
  ExecuteResult Execute(const Transaction& txn, Action action);

  // Executes many transactions at once, each with its own action (kNone and kQuarantine
  // leave it untouched): the same claims, guarded writes and compare-and-set transitions
  // as Execute, but each step of every transaction in the batch is issued together with
  // the same step of the others (Store::UpdateEach, one round trip per collection) and
  // read back together, so that a batch costs a handful of round trips instead of several
  // per transaction. Steps of different transactions are independent: each write keeps
  // its own guard, so any order among them is one Execute could have produced. Only the
  // order within one transaction matters, and it is kept (apply, applied, finish, done).
  // Transactions with a participant not named by its _id are executed one by one.
  // Returns one result per transaction, in order.
  std::vector<ExecuteResult> ExecuteBatch(const std::vector<const Transaction*>& txns,
                                          const std::vector<Action>& actions);

  // Counts a failed attempt on the document (`<lease_field>.failures`, `.lastError`) and
  // returns the count after it.
  Status RecordFailure(const Value& id, std::string_view error, std::int64_t* failures);

  // Records the reason on the document (`<lease_field>.quarantine`), so the sweep skips it
  // until an operator clears the field.
  Status Quarantine(const Value& id, std::string_view reason);

 private:
  class Run;
  class Batch;
  // The condition under which a daemon may take the lease of `txn`, read as it is.
  Filter ClaimFilter(const Transaction& txn, DateTime now) const;
  Store* store_;
  Clock* clock_;
  Namespace txn_ns_;
  const Profile* profile_;
  std::string lease_field_;
  LeaseOptions lease_;
  std::function<DateTime()> server_now_;
};

}  // namespace txn_recovery
