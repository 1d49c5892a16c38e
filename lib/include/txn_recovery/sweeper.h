// Sweeper: one pass over one watch (a transactions collection and its profile). Finds the
// transactions the decision table says to act on, quarantines the ones that do not fit the
// profile, and drives the rest with the StateMachine, on `workers` threads.
//
// The sweeper reports; it does not log. Each transaction's outcome goes to the caller's
// callback and into the WatchSummary counters.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "txn_recovery/clock.h"
#include "txn_recovery/profile.h"
#include "txn_recovery/retention.h"
#include "txn_recovery/state_machine.h"
#include "txn_recovery/store.h"

namespace txn_recovery {

struct WatchSpec {
  std::string name;
  Namespace ns;  // the transactions collection
  Profile profile;
  Thresholds thresholds;
  // The sub-document of each transaction where the daemon keeps its lease, the record of
  // how it resolved the transaction, and quarantine reasons. Applications never write it.
  std::string lease_field = "recovery";
  // A collection in the watch's database holding {_id: "pause", paused: true}: while that
  // document says so, no instance acts on this watch (txn-recoveryd pause / resume).
  std::string control_collection = "txn_recoveryd_control";
  // Finished transactions older than retention.retain_finished (and than the late-write
  // window) are deleted or archived at the end of each sweep. Off by default.
  RetentionPolicy retention;

  Namespace control_ns() const { return {ns.database, control_collection}; }
};

struct SweepOptions {
  bool dry_run = false;  // decide and report; write nothing
  LeaseOptions lease;
  int workers = 4;                // threads executing transactions
  std::int32_t batch_size = 500;  // documents per cursor batch; bounds memory
  // A transaction whose action fails this many sweeps in a row (for reasons other than
  // the database being unreachable) is quarantined with its last error, so that one
  // broken document cannot fail every sweep forever.
  int max_failures = 5;
  // Checked between transactions: once true the sweep stops taking new ones, finishes the
  // one each worker has in hand, and returns Aborted. May be null.
  const std::atomic<bool>* stop = nullptr;
};

struct TxnReport {
  std::string watch;
  Value id;
  std::optional<TxnState> state_before;  // nullopt when the state could not be read
  ExecuteResult result;
};

struct WatchSummary {
  std::string watch;
  std::int64_t examined = 0;  // documents the candidate query returned
  // counts[action][outcome]
  std::map<Action, std::map<Outcome, std::int64_t>> counts;
  std::int64_t quarantined = 0;        // set aside by this sweep
  std::int64_t quarantined_total = 0;  // carrying a quarantine reason after the sweep
  std::int64_t late_writes_undone = 0;
  std::int64_t failed = 0;
  std::int64_t busy = 0;
  std::int64_t resolved = 0;
  // Finished transactions removed by retention at the end of the sweep.
  std::int64_t finished_deleted = 0;
  std::int64_t finished_archived = 0;
  bool paused = false;  // the pause switch was on: nothing was read or written
  Status status;        // the watch-level error (database unreachable, ...), OK otherwise
};

// What is stuck in one watch right now: non-terminal transactions older than resume_after,
// by state, and the age of the oldest. Quarantined ones are counted apart.
struct StuckReport {
  std::map<TxnState, std::int64_t> stuck;
  std::optional<std::chrono::milliseconds> oldest_age;
  std::int64_t quarantined = 0;
};

// Thread-safety: a Sweeper may be used by one thread at a time; it runs its own workers.
class Sweeper {
 public:
  // `store` and `clock` must outlive the sweeper.
  Sweeper(Store* store, Clock* clock, SweepOptions options);

  // One pass over `watch`, then (unless dry-run, stopped or failed) the watch's retention.
  // `on_txn` (may be null) is called once for every transaction
  // acted on, planned or set aside, from the sweeper's threads but never concurrently.
  // Returns the watch-level status (also stored in summary->status).
  Status SweepWatch(const WatchSpec& watch, const std::function<void(const TxnReport&)>& on_txn,
                    WatchSummary* summary);

  // Whether the pause switch of `watch` is on.
  static Status IsPaused(Store* store, const WatchSpec& watch, bool* paused);
  // Turns the pause switch on or off for every instance; `by` is recorded.
  static Status SetPaused(Store* store, const WatchSpec& watch, bool paused, const std::string& by);

  // Counts what is stuck (a few count queries and one sorted find with limit 1; reads only).
  Status Inspect(const WatchSpec& watch, StuckReport* report);

  // The query that selects candidates at server time `now` (exposed for tests and
  // `inspect`): stale non-terminal states, recent terminal ones (late writes), and every
  // document whose state or time cannot be read, minus quarantined ones.
  static Filter CandidateFilter(const WatchSpec& watch, DateTime now);

 private:
  void CountFailure(StateMachine& machine, TxnReport* report);

  Store* store_;
  Clock* clock_;
  SweepOptions options_;
};

// A unique owner id for leases: "<host>:<pid>:<random>".
std::string MakeOwnerId();

}  // namespace txn_recovery
