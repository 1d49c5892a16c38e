// Retention: removes finished transactions once nobody can need them, so that a busy
// transactions collection does not grow forever. Off unless a watch asks for it.
//
// A finished (done / cancelled) transaction is removed only when it is older than both the
// retention period and the late-write window: while it is inside that window the sweeper
// still re-checks its participants for late writes and needs the document to do so.
// Removal is by batches of conditional deletes (the same filter again, plus the ids), so a
// transaction that changed since it was read is never removed, and a pause between
// batches keeps the load on the database predictable.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "txn_recovery/base/clock.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/shapes/retention_policy.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

struct RetentionResult {
  std::int64_t deleted = 0;
  std::int64_t archived = 0;
  bool more = false;  // stopped at max_batches with eligible transactions possibly left
};

struct RetentionTarget {
  Namespace transactions;
  Filter finished;         // matches done / cancelled in every accepted spelling
  std::string time_field;  // a transaction with something else than a date here is kept
  std::string lease_field;
  // How the watch ages a transaction that has no time field (Profile::missing_time), as
  // the sweep does: from the daemon's first sighting (`<lease_field>.firstSeen`) or from its
  // ObjectId `_id`. Otherwise (quarantine) one without a time field is kept.
  MissingTime missing_time = MissingTime::kQuarantine;
  // The late-write window of the watch: nothing younger is removed, whatever the policy.
  std::chrono::milliseconds late_write_window{0};
};

// Removes the finished transactions of `target` older than the policy allows at server
// time `now`. Stops between batches when *stop becomes true (may be null). `clock` paces
// the batches. Thread-safety: none needed beyond the Store's; several instances may run
// at once against one collection (an instance that loses the race deletes nothing twice).
Status RemoveFinished(Store* store, Clock* clock, const RetentionTarget& target,
                      const RetentionPolicy& policy, DateTime now, const std::atomic<bool>* stop,
                      RetentionResult* result);

// One sweep of `watch` (Sweeper::SweepWatch), then, unless it was paused, a dry run,
// stopped or failed, the watch's retention (watch.retention), counted in
// summary->finished_deleted / finished_archived. Retention comes after the pass so that a
// transaction resolved just now is never removed (it is younger than the late-write window
// anyway). Every sweep of a watch with its retention goes through here: `run` and `sweep`
// alike. Returns the watch-level status (also stored in summary->status); a failure of the
// retention is one of the sweep's, with the context "retention".
Status SweepAndRetain(Sweeper* sweeper, const WatchSpec& watch,
                      const std::function<void(const TxnReport&)>& on_txn, WatchSummary* summary);

}  // namespace txn_recovery
