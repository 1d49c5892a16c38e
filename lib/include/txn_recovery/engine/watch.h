// A watch: one transactions collection and the profile its documents follow, with the
// thresholds of the decision table and the daemon's bookkeeping field. The sweeper,
// `inspect`, the orphan scan and retention all work on one.
//
// Also the watch's pause switch: a document {_id: "pause", paused: true} in a control
// collection of the watch's database, read by every instance at the start of each sweep
// of the watch (`txn-recoveryd pause` / `resume`).
#pragma once

#include <string>

#include "txn_recovery/base/status.h"
#include "txn_recovery/engine/decision.h"
#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/shapes/retention_policy.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

struct WatchSpec {
  std::string name;
  Namespace ns;  // the transactions collection
  Profile profile;
  Thresholds thresholds;
  // The sub-document of each transaction where the daemon keeps its lease, the record of
  // how it resolved the transaction, and quarantine reasons (recovery_record.h).
  // Applications never write it.
  std::string lease_field = "recovery";
  // A collection in the watch's database holding {_id: "pause", paused: true}: while that
  // document says so, no instance acts on this watch.
  std::string control_collection = "txn_recoveryd_control";
  // Finished transactions older than retention.retain_finished (and than the late-write
  // window) are deleted or archived at the end of each sweep (SweepAndRetain, retention.h).
  // Off by default.
  RetentionPolicy retention;
  // Whether the indexes of the marker arrays and of the finish traces on the participant
  // collections are asked for (RequiredIndexes). Only the orphan scan reads by them: every
  // write and read of the recovery names a participant by its key. Off by default, because
  // on DocumentDB they cost the application's every participant write (docs/benchmarks.md,
  // "What the daemon's indexes cost the application") while without them the orphan scan,
  // once per orphan_scan_interval, reads each participant collection whole.
  bool orphan_scan_indexes = false;

  Namespace control_ns() const { return {ns.database, control_collection}; }
};

// Whether the pause switch of `watch` is on.
Status IsPaused(Store* store, const WatchSpec& watch, bool* paused);
// Turns the pause switch on or off for every instance; `by` is recorded.
Status SetPaused(Store* store, const WatchSpec& watch, bool paused, const std::string& by);

}  // namespace txn_recovery
