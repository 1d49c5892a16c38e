// Sweeper: one pass over one watch. Streams the candidates (candidates.h), quarantines the
// documents that do not fit the profile, decides on the rest (decision.h) and drives them
// with the StateMachine, on `workers` threads, `bulk_size` transactions at a time.
//
// The sweeper reports; it does not log. Each transaction's outcome goes to the caller's
// callback and into the WatchSummary counters.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "txn_recovery/base/clock.h"
#include "txn_recovery/engine/decision.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/engine/pace.h"
#include "txn_recovery/engine/state_machine.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

// What a sweep learned of a watch's collection that later sweeps of the same process can
// reuse. Thread-safe. Today: whether its finished transactions carry a time
// (FinishedTimesProbe), which decides the index the not-yet-seen are read on. The answer
// costs the server a walk of the finished history on DocumentDB, where a probe cannot stop
// at its first match: a daemon asks once, not every sweep. A stale answer costs time only,
// never a transaction: the read finds the same documents on either index.
//
// And, for a fleet's overdue rule (SweepOptions::overdue_after), when this member first found
// each candidate outside its share, in the run of consecutive sweeps that all found it so:
// as many entries as the other members' candidates, forgotten once a sweep no longer finds
// them (driven, moved on, or in the share).
class SweepMemory {
 public:
  std::optional<bool> FinishedCarryTimes(const Namespace& ns) const;
  void SetFinishedCarryTimes(const Namespace& ns, bool carry);

  // A sweep of `ns` starts: what it sights is this sweep's.
  void BeginSightings(const Namespace& ns);
  // `id` is a candidate outside the share: when it was first sighted so (`now` if this is
  // the first time, or the last sweep did not sight it).
  DateTime SightedOutsideShare(const Namespace& ns, const std::string& id, DateTime now);
  // A sweep of `ns` read every candidate: what it did not sight is forgotten. A sweep cut
  // short (stopped, failed) calls nothing: it forgets nothing, and what it did not reach
  // keeps its first sighting. The memory is the process's: a member restarted more often
  // than overdue_after takes nothing overdue (its record expires meanwhile, which gives its
  // share to the others instead).
  void EndSightings(const Namespace& ns);

 private:
  struct Sightings {
    std::uint64_t sweep = 0;                                          // the current sweep's number
    std::map<std::string, std::pair<DateTime, std::uint64_t>> first;  // id -> (first, last sweep)
  };
  mutable std::mutex mu_;
  std::map<std::string, bool> finished_carry_times_;
  std::map<std::string, Sightings> sightings_;
};

// Its defaults are the daemon's too ([sweep] workers, batch_size, bulk_size, max_failures):
// the daemon's configuration and its documentation are rendered from them, and its tests
// fail until docs/configuration.md, the man page and the example say what they say.
struct SweepOptions {
  bool dry_run =
      false;  // rehearse (StateMachine::RehearseBatch): read, decide, report; write nothing
  LeaseOptions lease;
  int workers = 4;  // threads executing transactions
  // Documents per cursor batch, which is also how many candidate documents are held in
  // memory at once, however many are stuck. Not all of the sweep's memory: a share's sweep
  // keeps the _id of every candidate it has read (to drop a document read twice), and a
  // member's SweepMemory those it saw outside its share; both grow with the candidates
  // (tens of bytes each), not with their documents.
  std::int32_t batch_size = 500;
  // Transactions a worker drives together: each phase of theirs is one bulk write per
  // collection (StateMachine::ExecuteBatch). Larger means fewer round trips and longer
  // claims held at once.
  std::int32_t bulk_size = 125;
  // A transaction whose action fails this many sweeps in a row (for reasons other than
  // the database being unreachable) is quarantined with its last error, so that one
  // broken document cannot fail every sweep forever.
  int max_failures = 5;
  // Checked between transactions: once true the sweep stops taking new ones, finishes the
  // one each worker has in hand, and returns Aborted. May be null.
  const std::atomic<bool>* stop = nullptr;
  // A fleet member's part of the candidates (membership.h); nullopt: every candidate. With
  // a share the sweep reads the candidates' _ids alone, then fetches and drives those in
  // the share, `bulk_size` at a time. Efficiency, never permission: each is still claimed.
  std::optional<Share> share;
  // With a share: asked before each batch of ids is fetched (may be null). Returns the share
  // to apply from then on: a member that lists the fleet again between batches divides a
  // backlog with the members that started with it from its first sweep, instead of holding
  // most of it until its next sweep. Ids already passed over are not read again in this
  // sweep; ids already fetched are driven. Called on the thread that called SweepWatch.
  std::function<Share()> refresh_share;
  // With a share and a memory: a candidate found outside the share by every sweep of this
  // member for this long (on the server's clock; SweepMemory) is overdue, and driven too,
  // whatever its bucket (docs/fleet.md, "Overdue transactions are everyone's"): a member
  // that stays live but does not drive its share cannot keep it stuck. Counted from this
  // member's own first sighting, not from the transaction's age, so that a backlog older
  // than this (after an outage) is still divided while its holders drain it. nullopt: only
  // the share.
  std::optional<std::chrono::milliseconds> overdue_after;
  // Kept by the caller across sweeps (a `run` daemon); null (a one-shot sweep): nothing is
  // asked, and the finished transactions are taken to carry a time.
  std::shared_ptr<SweepMemory> memory;
  // The bound on the transactions driven per second, taken before each chunk of
  // candidates is read (pace.h);
  // shared by every sweep of a daemon, and with a share, divided among its members. Null:
  // unbounded.
  std::shared_ptr<Pace> pace;
};

struct TxnReport {
  std::string watch;
  Value id;
  std::optional<TxnState> state_before;  // nullopt when the state could not be read
  // Driven although another member's share holds it (SweepOptions::overdue_after); that
  // member is not driving it. The position, in the sweep's view, of the member whose share
  // holds it.
  std::optional<std::uint32_t> overdue_in_share_of;
  ExecuteResult result;
};

struct WatchSummary {
  std::string watch;
  std::int64_t examined = 0;  // documents the candidate query returned
  // Candidates left to the other members of the fleet (SweepOptions::share).
  std::int64_t outside_share = 0;
  // Candidates outside the share driven because they were overdue (overdue_in_share_of).
  std::int64_t overdue_taken = 0;
  // counts[action][outcome]
  std::map<Action, std::map<Outcome, std::int64_t>> counts;
  std::int64_t quarantined = 0;        // set aside by this sweep
  std::int64_t quarantined_total = 0;  // quarantine records after the sweep (quarantine_records.h)
  std::int64_t late_writes_undone = 0;
  // Transactions without a time whose first sighting this sweep stamped (missing_time =
  // "first_seen"; in a dry run: would have stamped). Their age starts now.
  std::int64_t first_sightings = 0;
  // Transactions read whose age does not come from their time field (they have none): a
  // collection that holds any needs the index their ages are read from
  // (RequiredIndex::only_with_timeless), which a `run` daemon then looks for again.
  std::int64_t without_time = 0;
  std::int64_t failed = 0;
  std::int64_t busy = 0;
  std::int64_t resolved = 0;
  // Finished transactions removed by retention after the pass (SweepAndRetain, retention.h).
  std::int64_t finished_deleted = 0;
  std::int64_t finished_archived = 0;
  // Time the sweep waited for the pace bound (SweepOptions::pace) before reading its
  // candidates: what held the backlog back.
  std::chrono::milliseconds pace_waited{0};
  bool paused = false;  // the pause switch was on: nothing was read or written
  Status status;        // the watch-level error (database unreachable, ...), OK otherwise
};

// Thread-safety: a Sweeper may be used by one thread at a time; it runs its own workers.
class Sweeper {
 public:
  // `store` and `clock` must outlive the sweeper.
  Sweeper(Store* store, Clock* clock, SweepOptions options);

  // One pass over `watch`; its retention is the caller's (SweepAndRetain, retention.h).
  // `on_txn` (may be null) is called once for every transaction acted on, planned or set
  // aside, from the sweeper's threads but never concurrently. Returns the watch-level
  // status (also stored in summary->status).
  Status SweepWatch(const WatchSpec& watch, const std::function<void(const TxnReport&)>& on_txn,
                    WatchSummary* summary);

  // The server's time now, on the clock the last SweepWatch aged transactions with (its one
  // reading of the server's clock, extrapolated): what comes after a sweep (retention) ages
  // with the same clock, without another round trip. Only after a SweepWatch that read the
  // server's clock (it was not paused and the server answered).
  DateTime ServerNow() const { return server_now_(); }

  Store* store() const noexcept { return store_; }
  Clock* clock() const noexcept { return clock_; }
  const SweepOptions& options() const noexcept { return options_; }

 private:
  class Pass;
  Store* store_;
  Clock* clock_;
  SweepOptions options_;
  std::function<DateTime()> server_now_;  // of the last sweep that read the server's clock
};

}  // namespace txn_recovery
