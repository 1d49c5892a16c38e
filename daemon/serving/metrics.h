// Metrics: the daemon's Prometheus registry, rendered in the text exposition format 0.0.4
// for the /metrics endpoint. Written here rather than taken from prometheus-cpp because
// Debian does not ship a version we want, and the daemon needs only three metric types and
// one output format.
//
// A family (a metric name with its type and help) is declared once with Describe; its
// series are created by the first update that names their labels. Every series of a family
// must carry the same label names, so that a typo shows up as an error in tests rather
// than as a second, silently unscraped series. A family with no series is not rendered
// (as the official clients do): initialise a per-watch counter with Inc(name, labels, 0)
// so that rate() sees it from the first scrape.
//
// Misuse (an invalid name, an update of an undeclared family, the wrong update for the
// type, a negative counter increment) is a programming error: std::logic_error.
//
// Thread-safety: every member may be called from any thread; one mutex serialises them.
// An update costs a map lookup and a sort of its few labels: cheap enough per transaction.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace txn_recovery::daemon {

// Label name/value pairs in any order: {{"watch", "bank"}, {"state", "pending"}}.
using Labels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  // Declares a family. Must precede any update of it; redeclaring with the same type is a
  // no-op (the first help and buckets stay), with another type a logic_error. `name` must
  // match [a-zA-Z_:][a-zA-Z0-9_:]*. `buckets` are a histogram's upper bounds, strictly
  // increasing (+Inf is implied and may be left out); empty means the Prometheus clients'
  // defaults (.005 to 10 seconds). Other types take no buckets.
  void Describe(const std::string& name, Type type, const std::string& help,
                std::vector<double> buckets = {});

  // Adds `by` to a counter (by >= 0) or a gauge (any sign). Label names must match
  // [a-zA-Z_][a-zA-Z0-9_]* and not start with "__" (reserved by Prometheus).
  void Inc(const std::string& name, const Labels& labels = {}, double by = 1);
  // Sets a gauge.
  void Set(const std::string& name, const Labels& labels, double value);
  // Sets a counter that mirrors a total kept elsewhere (the kernel's CPU time): a value
  // below the current one is ignored, so the counter never goes back.
  void SetCounter(const std::string& name, const Labels& labels, double value);
  // Records one observation in a histogram (which may not use the label "le").
  void Observe(const std::string& name, const Labels& labels, double value);
  // Drops every series of a family, for gauges recomputed from scratch each sweep: a state
  // with nothing stuck any more disappears instead of keeping its last count.
  void Clear(const std::string& name);

  // A counter's or gauge's value, a histogram's number of observations; 0 for a family or
  // series that does not exist. For tests and the status line.
  double Value(const std::string& name, const Labels& labels) const;

  // Every family with at least one series: sorted by name, its series sorted by label
  // values, with # HELP and # TYPE lines.
  std::string Render() const;

 private:
  struct Series {
    double value = 0;                    // counter, gauge
    std::vector<std::uint64_t> buckets;  // histogram: observations per bucket, not cumulative
    double sum = 0;
    std::uint64_t count = 0;
  };
  struct Family {
    Type type;
    std::string help;
    std::vector<double> buckets;
    bool has_label_names = false;  // set by the first update
    std::vector<std::string> label_names;
    std::map<Labels, Series> series;  // key: labels sorted by name
  };

  // The series an update applies to, created if needed. Throws logic_error on misuse.
  Series& SeriesFor(const std::string& name, Type type, const Labels& labels);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

// What txn_recoveryd_oldest_stuck_age_seconds of one watch says between two measurements.
// A sweep that counts what is stuck measures the age of the oldest stuck transaction (on
// the database server's clock). A sweep that fails measures nothing, and the gauge then goes
// on growing from the last measured age by the time elapsed since it was taken: that
// transaction is still stuck unless something else finished it, and during an outage or a
// failing sweep nothing of this daemon's does. The elapsed time is this host's steady
// clock's, which runs at the server's rate; the offset between the two clocks is already
// inside the measured age, so the estimate is the server-clock age the next successful sweep
// would measure (less whatever the application finished meanwhile). A gauge frozen at its
// last value instead could never cross an alert's threshold during the very failure that
// keeps the transaction stuck. When the last measurement found nothing stuck the estimate
// stays 0: a failed sweep has seen no transaction to age.
class StuckAgeEstimate {
 public:
  using Clock = std::chrono::steady_clock;
  // A sweep measured `oldest` (nullopt: nothing stuck) at `at`.
  void Measured(std::optional<std::chrono::milliseconds> oldest, Clock::time_point at) {
    oldest_ = oldest;
    at_ = at;
    measured_ = true;
  }
  // Whether any sweep has measured it yet: before that there is no value to carry on.
  bool known() const { return measured_; }
  // The gauge's value, in seconds, at `now`.
  double SecondsAt(Clock::time_point now) const {
    if (!oldest_) return 0;
    const auto since = std::max(Clock::duration::zero(), now - at_);
    return std::chrono::duration<double>(*oldest_ + since).count();
  }

 private:
  bool measured_ = false;
  std::optional<std::chrono::milliseconds> oldest_;
  Clock::time_point at_{};
};

// Declares the daemon's standard families and sets txn_recoveryd_build_info{version,
// revision} to 1.
// Their names and labels are a contract with the dashboards and alerts built on them:
//   txn_recoveryd_sweeps_total{watch}, txn_recoveryd_sweep_failures_total{watch},
//   txn_recoveryd_sweep_duration_seconds{watch} (histogram, .005 s to 120 s),
//   txn_recoveryd_last_successful_sweep_timestamp_seconds{watch},
//   txn_recoveryd_stuck_transactions{watch,state}, txn_recoveryd_oldest_stuck_age_seconds{watch},
//   txn_recoveryd_resolved_total{watch,action},
//   txn_recoveryd_transaction_failures_total{watch,action},
//   txn_recoveryd_quarantined_transactions{watch}, txn_recoveryd_quarantined_total{watch},
//   txn_recoveryd_late_writes_undone_total{watch},
//   txn_recoveryd_finished_removed_total{watch,mode} (mode: delete|archive),
//   txn_recoveryd_busy_total{watch},
//   txn_recoveryd_paused{watch}, txn_recoveryd_database_up,
//   txn_recoveryd_build_info{version,revision},
//   txn_recoveryd_last_reload_successful, txn_recoveryd_last_reload_success_timestamp_seconds,
//   txn_recoveryd_log_messages_suppressed_total.
void DescribeStandardMetrics(Metrics* m, const std::string& version, const std::string& revision);

}  // namespace txn_recovery::daemon
