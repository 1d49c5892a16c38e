#include "daemon/run/watch_metrics.h"

#include <spdlog/spdlog.h>

#include "daemon/logging/logging.h"
#include "txn_recovery/tools/inspect.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;
using Steady = std::chrono::steady_clock;

double UnixSeconds() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count()) /
         1000.0;
}

void WatchMetrics::Record(const txn_recovery::WatchSpec& w,
                          const txn_recovery::WatchSummary& summary, const Status& s,
                          double seconds, bool fleet, txn_recovery::Store* store,
                          RoundOutcome* out) {
  CountSweep(w, summary, seconds, fleet);
  Labels watch{{"watch", w.name}};
  out->resolved += summary.resolved;
  out->failed += summary.failed;
  if (summary.paused) out->paused.push_back(w.name);
  if (!s.ok()) {
    metrics_.Inc("txn_recoveryd_sweep_failures_total", watch);
    if (s.IsUnavailable()) out->database_up = false;
    if (s.IsUnauthenticated()) out->authentication_failed = true;
    out->broken.push_back(w.name);
    AgeWithoutCount(w);
    LogFields f({{"watch", w.name}});
    spdlog::error("sweep of {} failed: {}", w.ns.ToString(), s.ToString());
    return;
  }
  metrics_.Set("txn_recoveryd_last_successful_sweep_timestamp_seconds", watch, UnixSeconds());
  metrics_.Set("txn_recoveryd_quarantined_transactions", watch,
               static_cast<double>(summary.quarantined_total));
  out->quarantined += summary.quarantined_total;
  CountStuck(w, store, out);
}

void WatchMetrics::CountSweep(const txn_recovery::WatchSpec& w,
                              const txn_recovery::WatchSummary& summary, double seconds,
                              bool fleet) {
  Labels watch{{"watch", w.name}};
  metrics_.Inc("txn_recoveryd_sweeps_total", watch);
  metrics_.Inc("txn_recoveryd_sweep_failures_total", watch, 0);  // present from the start
  metrics_.Observe("txn_recoveryd_sweep_duration_seconds", watch, seconds);
  metrics_.Set("txn_recoveryd_paused", watch, summary.paused ? 1 : 0);
  for (const auto& [action, outcomes] : summary.counts) {
    Labels la{{"watch", w.name}, {"action", std::string(txn_recovery::ActionName(action))}};
    if (auto it = outcomes.find(txn_recovery::Outcome::kResolved); it != outcomes.end())
      metrics_.Inc("txn_recoveryd_resolved_total", la, static_cast<double>(it->second));
    if (auto it = outcomes.find(txn_recovery::Outcome::kFailed); it != outcomes.end())
      metrics_.Inc("txn_recoveryd_transaction_failures_total", la, static_cast<double>(it->second));
  }
  metrics_.Inc("txn_recoveryd_quarantined_total", watch, static_cast<double>(summary.quarantined));
  metrics_.Inc("txn_recoveryd_busy_total", watch, static_cast<double>(summary.busy));
  if (fleet)
    metrics_.Inc("txn_recoveryd_fleet_overdue_taken_total", watch,
                 static_cast<double>(summary.overdue_taken));
  metrics_.Inc("txn_recoveryd_late_writes_undone_total", watch,
               static_cast<double>(summary.late_writes_undone));
  metrics_.Inc("txn_recoveryd_pace_wait_seconds_total", watch,
               std::chrono::duration<double>(summary.pace_waited).count());
  metrics_.Inc("txn_recoveryd_first_sightings_total", watch,
               static_cast<double>(summary.first_sightings));
  if (w.retention.enabled()) {
    metrics_.Inc("txn_recoveryd_finished_removed_total", {{"watch", w.name}, {"mode", "deleted"}},
                 static_cast<double>(summary.finished_deleted));
    metrics_.Inc("txn_recoveryd_finished_removed_total", {{"watch", w.name}, {"mode", "archived"}},
                 static_cast<double>(summary.finished_archived));
  }
}

void WatchMetrics::CountStuck(const txn_recovery::WatchSpec& w, txn_recovery::Store* store,
                              RoundOutcome* out) {
  txn_recovery::StuckReport report;
  if (Status is = txn_recovery::Inspect(store, w, &report); !is.ok()) {
    LogFields f({{"watch", w.name}});
    spdlog::warn("could not count stuck transactions: {}", is.ToString());
    if (is.IsUnavailable()) out->database_up = false;
    AgeWithoutCount(w);
    return;
  }
  auto& seen = stuck_series_[w.name];
  for (const auto& state : seen)
    metrics_.Set("txn_recoveryd_stuck_transactions", {{"watch", w.name}, {"state", state}}, 0);
  for (const auto& [state, n] : report.stuck) {
    std::string name(txn_recovery::TxnStateName(state));
    seen.insert(name);
    metrics_.Set("txn_recoveryd_stuck_transactions", {{"watch", w.name}, {"state", name}},
                 static_cast<double>(n));
    out->stuck += n;
  }
  StuckAgeEstimate& age = stuck_age_[w.name];
  age.Measured(report.oldest_age, Steady::now());
  metrics_.Set("txn_recoveryd_oldest_stuck_age_seconds", {{"watch", w.name}},
               age.SecondsAt(Steady::now()));
  if (report.oldest_age && (!out->oldest || *report.oldest_age > *out->oldest))
    out->oldest = report.oldest_age;
}

void WatchMetrics::RoundFailed(const std::vector<txn_recovery::WatchSpec>& watches) {
  for (const auto& w : watches) {
    metrics_.Inc("txn_recoveryd_sweeps_total", {{"watch", w.name}});
    metrics_.Inc("txn_recoveryd_sweep_failures_total", {{"watch", w.name}});
    AgeWithoutCount(w);
  }
}

void WatchMetrics::AgeWithoutCount(const txn_recovery::WatchSpec& w) {
  auto it = stuck_age_.find(w.name);
  if (it == stuck_age_.end()) return;  // never counted: no value to carry on
  metrics_.Set("txn_recoveryd_oldest_stuck_age_seconds", {{"watch", w.name}},
               it->second.SecondsAt(Steady::now()));
}

void RoundCounters::Count(txn_recovery::Store* store) {
  std::uint64_t suppressed = SuppressedLogMessages();
  metrics_.Inc("txn_recoveryd_log_messages_suppressed_total", {},
               static_cast<double>(suppressed - suppressed_logs_reported_));
  suppressed_logs_reported_ = suppressed;
  txn_recovery::Store::WireStats w;
  if (store == nullptr || !store->GetWireStats(&w)) return;
  metrics_.Inc("txn_recoveryd_database_round_trips_total", {},
               static_cast<double>(w.round_trips - wire_counted_.round_trips));
  metrics_.Inc("txn_recoveryd_database_documents_read_total", {},
               static_cast<double>(w.documents_returned - wire_counted_.documents_returned));
  wire_counted_ = w;
}

}  // namespace txn_recovery::daemon
