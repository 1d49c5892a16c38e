// When `run` scans the participants for orphan markers (orphans.h), and what it makes of a
// scan (logs, metrics). The first scan comes an interval after start, or 10 minutes if that
// is sooner (not at once: a daemon restarted in a loop must not rescan every participant
// each time), then every daemon.orphan_scan_interval; in a fleet, one member per period
// scans each watch.
#pragma once

#include <chrono>
#include <optional>

#include "daemon/configuration/config.h"
#include "daemon/run/fleet.h"
#include "daemon/run/jitter.h"
#include "daemon/run/loop_requests.h"
#include "daemon/run/round_outcome.h"
#include "daemon/run/watchdog.h"
#include "daemon/serving/metrics.h"
#include "txn_recovery/engine/state_machine.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::daemon {

class OrphanScans {
 public:
  OrphanScans(Metrics* metrics, Fleet* fleet, Jitter* jitter, Watchdog* watchdog,
              const LoopRequests* requests)
      : metrics_(*metrics),
        fleet_(*fleet),
        jitter_(*jitter),
        watchdog_(*watchdog),
        requests_(*requests) {}

  // After a round of sweeps: scans every watch of `config` when the time has come and the
  // round reached the database. A scan that finds the database gone says so in `out`.
  void AfterRound(const Config& config, txn_recovery::Store* store,
                  const txn_recovery::LeaseOptions& lease, RoundOutcome* out);

 private:
  void ScanAll(const Config& config, txn_recovery::Store* store,
               const txn_recovery::LeaseOptions& lease, RoundOutcome* out);
  bool Mine(const Config& config, const txn_recovery::WatchSpec& w);

  Metrics& metrics_;
  Fleet& fleet_;
  Jitter& jitter_;
  Watchdog& watchdog_;
  const LoopRequests& requests_;
  std::optional<std::chrono::steady_clock::time_point> next_;  // unset until the first round
};

}  // namespace txn_recovery::daemon
