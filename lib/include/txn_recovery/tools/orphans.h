// Orphan scan: markers that the regular sweep cannot see.
//
// The sweep starts from transactions: it finds a late write only while the transaction is
// younger than the late-write window. An application that stalls for longer, a transaction
// document deleted by hand or by retention, or a bug elsewhere can leave a marker on a
// participant that no sweep will ever look at. The orphan scan starts from the other end:
// every participant document carrying markers, in every location the watch's profile marks.
// For each marker it looks the transaction up:
//   - terminal: the marker is a late write; it is undone exactly like the sweep's late-write
//     check (guarded by the marker, under the transaction's lease), whatever its age;
//   - terminal, but the transaction does not name this document: reported, never touched;
//   - missing: reported with both ids and never touched. There is no record of what the
//     change was, so nothing can be undone safely; an operator has to decide;
//   - in flight (not terminal): left alone, the sweep owns it.
// Participants carrying more than `marker_cap` markers are reported too: a hot document
// that accumulates markers slows every application touching it. And the traces a finish
// leaves on participants (recovery_record.h) of transactions that are terminal or gone,
// left by a daemon stopped before it removed them, are removed.
//
// The scan reads every marked participant (two reads per participant collection: traces,
// then markers), so it is meant to run rarely (the daemon's orphan_scan_interval, or
// `txn-recoveryd sweep --orphans` on demand). Unless the watch asks for the indexes of
// markers and traces (WatchSpec::orphan_scan_indexes), each of those reads scans the
// participant collection whole: on a collection so large that the server takes longer than
// mongodb.socket_timeout to return a first batch, the scan fails with that error (and is
// retried at the next interval) until those indexes exist.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "txn_recovery/base/clock.h"
#include "txn_recovery/engine/state_machine.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

struct OrphanFinding {
  enum class Kind {
    kLateWriteUndone,     // a terminal transaction's marker: its late write was undone
    kMissingTransaction,  // the marker names no transaction: reported, nothing touched
    kForeignMarker,   // a terminal transaction's marker on a document it does not name: reported
    kTooManyMarkers,  // the participant carries more than marker_cap markers
    kQuarantined,     // the transaction was set aside instead (the record cannot say what to do)
    kFailed,          // the undo failed (database error); retried by the next scan
  };
  Kind kind;
  Namespace ns;        // the participant's collection
  Value participant;   // the participant's _id
  Value transaction;   // the transaction id the marker names (unset for kTooManyMarkers)
  std::string detail;  // what was undone, the error, or the marker count
};
std::string_view OrphanKindName(OrphanFinding::Kind k) noexcept;

// The daemon's [sweep] marker_cap defaults to marker_cap's default here; one [sweep]
// batch_size serves the sweep and this scan, so batch_size's default must stay
// SweepOptions::batch_size's (the daemon's tests hold the two together).
struct OrphanOptions {
  bool dry_run = false;  // look and report; undo nothing
  LeaseOptions lease;
  std::int32_t batch_size = 500;
  std::int64_t marker_cap = 16;             // more markers than this on one participant is reported
  const std::atomic<bool>* stop = nullptr;  // checked between participants; may be null
  // Called after each participant (the daemon feeds its watchdog from it); may be empty.
  std::function<void()> progress;
};

struct OrphanSummary {
  bool paused = false;  // the watch's pause switch was on: nothing was read or written
  std::int64_t participants_scanned = 0;  // participants carrying at least one marker
  std::int64_t markers_checked = 0;
  std::int64_t in_flight = 0;  // markers of non-terminal transactions (the sweep's)
  std::int64_t late_writes_undone = 0;
  std::int64_t missing_transactions = 0;
  std::int64_t foreign_markers = 0;
  std::int64_t crowded_participants = 0;  // more than marker_cap markers
  std::int64_t quarantined = 0;
  std::int64_t failed = 0;
  // Traces of finishes (RecoveryPaths::Finished) of transactions that are terminal or gone,
  // which a daemon stopped after the transaction was done left behind: removed.
  std::int64_t traces_removed = 0;
};

// Scans every marker location of `watch` (nothing while its pause switch is on). `on_finding` (may
// be null) is called for each finding, from the calling thread. Returns the first database error
// that stopped the scan (Aborted when *stop became true); findings up to then are reported.
Status ScanOrphans(Store* store, Clock* clock, const WatchSpec& watch, const OrphanOptions& options,
                   const std::function<void(const OrphanFinding&)>& on_finding,
                   OrphanSummary* summary);

}  // namespace txn_recovery
