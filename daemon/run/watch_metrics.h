// What each round of `run` adds to the metrics: per watch, its sweep's counters and the
// gauges of what is still stuck after it (what an operator alerts on); per round, what the
// process exchanged with the database and the log messages the repeat window dropped.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/run/round_outcome.h"
#include "daemon/serving/metrics.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::daemon {

// Now, as the timestamp gauges give it: seconds since the epoch.
double UnixSeconds();

class WatchMetrics {
 public:
  explicit WatchMetrics(Metrics* metrics) : metrics_(*metrics) {}

  // After the sweep of `w` that ended with `s` in `seconds`: its counters, summed into
  // `out`, and when it succeeded the stuck transactions counted again in `store`.
  // `fleet` says whether the fleet is on (its counter is present only then).
  void Record(const txn_recovery::WatchSpec& w, const txn_recovery::WatchSummary& summary,
              const txn_recovery::Status& s, double seconds, bool fleet, txn_recovery::Store* store,
              RoundOutcome* out);
  // A round whose ping failed: every watch's sweep counted as failed.
  void RoundFailed(const std::vector<txn_recovery::WatchSpec>& watches);
  // A watch whose stuck transactions could not be counted this round: its oldest-stuck age
  // goes on from the last count (StuckAgeEstimate), rather than freezing.
  void AgeWithoutCount(const txn_recovery::WatchSpec& w);

 private:
  void CountSweep(const txn_recovery::WatchSpec& w, const txn_recovery::WatchSummary& summary,
                  double seconds, bool fleet);
  void CountStuck(const txn_recovery::WatchSpec& w, txn_recovery::Store* store, RoundOutcome* out);

  Metrics& metrics_;
  std::map<std::string, std::set<std::string>> stuck_series_;  // watch -> states reported
  std::map<std::string, StuckAgeEstimate> stuck_age_;          // watch -> its last count
};

// The counters that mirror totals kept elsewhere, brought up to date once a round.
class RoundCounters {
 public:
  explicit RoundCounters(Metrics* metrics) : metrics_(*metrics) {}

  // What this process exchanged with the database through `store` since the last round:
  // what the daemon costs the server, whatever its speed (heartbeats and index checks
  // included); and the log messages dropped since.
  void Count(txn_recovery::Store* store);
  // `run` opened a new connection, whose counts start from zero.
  void StoreReplaced() { wire_counted_ = {}; }

 private:
  Metrics& metrics_;
  std::uint64_t suppressed_logs_reported_ = 0;
  txn_recovery::Store::WireStats wire_counted_;  // already in the metrics
};

}  // namespace txn_recovery::daemon
