#include "daemon/run/orphan_scans.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "daemon/commands/sweep_command.h"
#include "daemon/logging/logging.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/tools/orphans.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;
using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

void OrphanScans::AfterRound(const Config& config, txn_recovery::Store* store,
                             const txn_recovery::LeaseOptions& lease, RoundOutcome* out) {
  if (!next_)
    next_ = Steady::now() + jitter_(std::min<milliseconds>(config.daemon.orphan_scan_interval,
                                                           std::chrono::minutes(10)),
                                    config.daemon.jitter);
  if (out->database_up && !requests_.stopping() && Steady::now() >= *next_) {
    ScanAll(config, store, lease, out);
    next_ = Steady::now() + jitter_(config.daemon.orphan_scan_interval, config.daemon.jitter);
  }
}

// The scan reads every marked participant whatever the share: in a fleet, one member per
// period runs it, whichever claims it first (txn_recovery::ClaimOrphanScan). The period is
// this member's shortest wait between two of its scans, so that alone it claims every scan it
// tries; with others, the fleet scans each watch about once per orphan_scan_interval, and
// a member that is live but does not scan holds the scan up for one period at most.
bool OrphanScans::Mine(const Config& config, const txn_recovery::WatchSpec& w) {
  if (!fleet_.ShareIn(w)) return true;  // not in a fleet (or no view of it): as a lone daemon
  const double shortest = 1.0 - std::clamp(config.daemon.jitter, 0.0, 1.0);
  const auto period = milliseconds(static_cast<std::int64_t>(
      static_cast<double>(config.daemon.orphan_scan_interval.count()) * shortest * 0.95));
  bool claimed = false;
  LogFields f({{"watch", w.name}});
  if (Status s = fleet_.ClaimOrphanScan(w, period, &claimed); !s.ok()) {
    spdlog::warn("orphan scan of {} not claimed (left to the next attempt): {}", w.ns.ToString(),
                 s.ToString());
    return false;
  }
  if (!claimed)
    spdlog::debug("orphan scan of {}: another member claimed it within {}", w.ns.ToString(),
                  FormatDuration(period));
  return claimed;
}

void OrphanScans::ScanAll(const Config& config, txn_recovery::Store* store,
                          const txn_recovery::LeaseOptions& lease, RoundOutcome* out) {
  txn_recovery::OrphanOptions options = OrphanOptionsFor(config, lease);
  options.stop = requests_.stop_flag();
  options.progress = [this] { watchdog_.Progress(); };
  using Kind = txn_recovery::OrphanFinding::Kind;
  for (const auto& w : config.watches) {
    if (requests_.stopping()) return;
    if (!Mine(config, w)) continue;
    txn_recovery::OrphanSummary summary;
    Status s = txn_recovery::ScanOrphans(
        store, txn_recovery::Clock::Real(), w, options,
        [&](const txn_recovery::OrphanFinding& f) { LogOrphan(w.name, f); }, &summary);
    if (s.IsAborted() && requests_.stopping()) return;
    if (summary.paused) continue;
    metrics_.Inc("txn_recoveryd_orphan_scans_total", {{"watch", w.name}});
    if (!s.ok()) {
      LogFields f({{"watch", w.name}});
      spdlog::error("orphan scan of {} failed: {}", w.ns.ToString(), s.ToString());
      if (s.IsUnavailable()) out->database_up = false;
      continue;
    }
    metrics_.Inc("txn_recoveryd_late_writes_undone_total", {{"watch", w.name}},
                 static_cast<double>(summary.late_writes_undone));
    // Gauges of the last scan: what is left for an operator, by kind.
    const std::pair<Kind, std::int64_t> left[] = {
        {Kind::kMissingTransaction, summary.missing_transactions},
        {Kind::kForeignMarker, summary.foreign_markers},
        {Kind::kTooManyMarkers, summary.crowded_participants},
        {Kind::kQuarantined, summary.quarantined},
        {Kind::kFailed, summary.failed}};
    for (const auto& [kind, n] : left)
      metrics_.Set("txn_recoveryd_orphan_markers",
                   {{"watch", w.name}, {"kind", std::string(txn_recovery::OrphanKindName(kind))}},
                   static_cast<double>(n));
    spdlog::info("orphan scan of {}: {} marked participants, {} late writes undone, {} to report",
                 w.name, summary.participants_scanned, summary.late_writes_undone,
                 summary.missing_transactions + summary.foreign_markers +
                     summary.crowded_participants + summary.quarantined + summary.failed);
  }
}

}  // namespace txn_recovery::daemon
