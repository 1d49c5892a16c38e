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
#include <string>
#include <vector>

#include "txn_recovery/clock.h"
#include "txn_recovery/config_problem.h"
#include "txn_recovery/profile.h"
#include "txn_recovery/store.h"

namespace txn_recovery {

struct RetentionPolicy {
  std::chrono::milliseconds retain_finished{0};  // 0 = retention off
  // Empty: delete. Otherwise the collection (same database) finished transactions are
  // moved to; a document already there is not inserted again, so an interrupted move
  // completes on the next run without duplicates.
  std::string archive_collection;
  std::int32_t batch_size = 500;
  std::chrono::milliseconds pause_between_batches{200};
  // Batches per call; 0 = until nothing is left. A backlog (retention switched on over a
  // year of history) then drains over several sweeps instead of holding one sweep, and the
  // watchdog it feeds, for minutes.
  std::int32_t max_batches = 20;

  bool enabled() const { return retain_finished.count() > 0; }
  // Keys "retain_finished", "archive_collection" (of the watch) and "retention_batch_size",
  // "retention_pause", "retention_max_batches" (of [sweep]). The archive must be a
  // collection of its own: not one of `in_use` (the watch's transactions, participants and
  // control collections), where archived transactions would mix with live data.
  ConfigProblems Validate(const std::vector<std::string>& in_use) const;
};

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

}  // namespace txn_recovery
