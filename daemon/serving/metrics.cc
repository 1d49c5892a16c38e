#include "daemon/serving/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <stdexcept>

namespace txn_recovery::daemon {
namespace {

// The buckets of the Prometheus clients' DefBuckets, for a histogram declared without any.
const std::vector<double> kDefaultBuckets = {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10};

bool IsMetricName(const std::string& s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Label names are metric names without the colon, which Prometheus keeps for recording
// rules' metric names only; "__" prefixes are reserved for its internal labels.
bool IsLabelName(const std::string& s) {
  return IsMetricName(s) && s.find(':') == std::string::npos && s.rfind("__", 0) != 0;
}

const char* TypeName(Metrics::Type type) {
  switch (type) {
    case Metrics::Type::kCounter:
      return "counter";
    case Metrics::Type::kGauge:
      return "gauge";
    case Metrics::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// Integers print as integers (a counter at 3 reads "3", not "3.0" or "3e+00"); anything
// else as the shortest text that reads back as the same double, which is also what the
// Prometheus clients print for bucket bounds ("0.005", "2.5").
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Below 2^53 every integral double is exactly an int64 and prints without loss.
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0)
    return std::to_string(static_cast<long long>(v));
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "NaN";  // cannot happen: 64 bytes hold any double
  return std::string(buf, end);
}

void AppendEscaped(std::string* out, const std::string& s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (quote && c == '"') {
      *out += "\\\"";
    } else {
      *out += c;
    }
  }
}

// `{a="x",b="y"}`, with an extra label last (a histogram's "le"); nothing when empty.
void AppendLabels(std::string* out, const Labels& labels, const char* extra_name = nullptr,
                  const std::string& extra_value = {}) {
  if (labels.empty() && extra_name == nullptr) return;
  *out += '{';
  bool first = true;
  auto add = [&](const std::string& name, const std::string& value) {
    if (!first) *out += ',';
    first = false;
    *out += name;
    *out += "=\"";
    AppendEscaped(out, value, true);
    *out += '"';
  };
  for (const auto& [name, value] : labels) add(name, value);
  if (extra_name != nullptr) add(extra_name, extra_value);
  *out += '}';
}

void AppendSample(std::string* out, const std::string& name, const Labels& labels, double value,
                  const char* extra_name = nullptr, const std::string& extra_value = {}) {
  *out += name;
  AppendLabels(out, labels, extra_name, extra_value);
  *out += ' ';
  *out += FormatValue(value);
  *out += '\n';
}

std::string LabelNames(const Labels& labels) {
  std::string s = "{";
  for (const auto& [name, value] : labels) {
    if (s.size() > 1) s += ',';
    s += name;
  }
  return s + "}";
}

}  // namespace

void Metrics::Describe(const std::string& name, Type type, const std::string& help,
                       std::vector<double> buckets) {
  if (!IsMetricName(name)) throw std::logic_error("invalid metric name \"" + name + "\"");
  if (type == Type::kHistogram) {
    if (buckets.empty()) buckets = kDefaultBuckets;
    if (std::isinf(buckets.back()) && buckets.back() > 0) buckets.pop_back();  // implied
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      if (!std::isfinite(buckets[i]) || (i > 0 && !(buckets[i - 1] < buckets[i])))
        throw std::logic_error("histogram " + name +
                               ": buckets must be finite and strictly increasing");
    }
  } else if (!buckets.empty()) {
    throw std::logic_error(std::string(TypeName(type)) + " " + name + " cannot have buckets");
  }

  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    if (it->second.type != type)
      throw std::logic_error("metric " + name + " redeclared as " + TypeName(type) +
                             ", was declared " + TypeName(it->second.type));
    return;
  }
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  f.buckets = std::move(buckets);
}

Metrics::Series& Metrics::SeriesFor(const std::string& name, Type type, const Labels& labels) {
  auto it = families_.find(name);
  if (it == families_.end())
    throw std::logic_error("metric " + name + " updated before it was described");
  Family& f = it->second;
  // Inc serves counters and gauges alike; the callers pass the type they expect.
  bool type_ok = f.type == type || (type == Type::kCounter && f.type == Type::kGauge);
  if (!type_ok)
    throw std::logic_error("metric " + name + " is a " + TypeName(f.type) + ", not updated as a " +
                           TypeName(type));

  Labels key = labels;
  std::sort(key.begin(), key.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  auto found = f.series.find(key);
  if (found != f.series.end()) return found->second;

  // A new series: its label names must be the family's.
  std::vector<std::string> names;
  names.reserve(key.size());
  for (const auto& [label, value] : key) names.push_back(label);
  if (f.has_label_names) {
    if (names != f.label_names)
      throw std::logic_error("metric " + name + " updated with labels " + LabelNames(key) +
                             " unlike its other series");
  } else {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!IsLabelName(names[i]))
        throw std::logic_error("metric " + name + ": invalid label name \"" + names[i] + "\"");
      if (i > 0 && names[i - 1] == names[i])
        throw std::logic_error("metric " + name + ": label " + names[i] + " given twice");
      if (f.type == Type::kHistogram && names[i] == "le")
        throw std::logic_error("histogram " + name + " cannot have a label \"le\"");
    }
    f.label_names = std::move(names);
    f.has_label_names = true;
  }
  Series& s = f.series[std::move(key)];
  s.buckets.assign(f.buckets.size(), 0);
  return s;
}

void Metrics::Inc(const std::string& name, const Labels& labels, double by) {
  std::lock_guard lock(mu_);
  // Checked before SeriesFor so that a refused update leaves no empty series behind.
  auto it = families_.find(name);
  if (it != families_.end() && it->second.type == Type::kCounter && !(by >= 0))
    throw std::logic_error("counter " + name + " incremented by " + FormatValue(by));
  SeriesFor(name, Type::kCounter, labels).value += by;
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  SeriesFor(name, Type::kGauge, labels).value = value;
}

void Metrics::SetCounter(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end() && it->second.type != Type::kCounter)
    throw std::logic_error("metric " + name + " is not a counter");
  Series& s = SeriesFor(name, Type::kCounter, labels);
  if (value > s.value) s.value = value;
}

void Metrics::Observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  Series& s = SeriesFor(name, Type::kHistogram, labels);
  const std::vector<double>& bounds = families_.at(name).buckets;
  // NaN belongs in no bucket but +Inf (which is the count); lower_bound would put it first.
  if (!std::isnan(value)) {
    auto b = std::lower_bound(bounds.begin(), bounds.end(), value);  // first bound >= value
    if (b != bounds.end()) ++s.buckets[static_cast<std::size_t>(b - bounds.begin())];
  }
  s.sum += value;
  ++s.count;
}

void Metrics::Clear(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end())
    throw std::logic_error("metric " + name + " cleared before it was described");
  it->second.series.clear();
}

double Metrics::Value(const std::string& name, const Labels& labels) const {
  Labels key = labels;
  std::sort(key.begin(), key.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto s = it->second.series.find(key);
  if (s == it->second.series.end()) return 0;
  if (it->second.type == Type::kHistogram) return static_cast<double>(s->second.count);
  return s->second.value;
}

std::string Metrics::Render() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [name, f] : families_) {  // std::map: sorted by name
    if (f.series.empty()) continue;
    out += "# HELP " + name + " ";
    AppendEscaped(&out, f.help, false);
    out += "\n# TYPE " + name + " " + TypeName(f.type) + "\n";
    for (const auto& [labels, s] : f.series) {  // sorted by label values, names being equal
      if (f.type != Type::kHistogram) {
        AppendSample(&out, name, labels, s.value);
        continue;
      }
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += s.buckets[i];
        AppendSample(&out, name + "_bucket", labels, static_cast<double>(cumulative), "le",
                     FormatValue(f.buckets[i]));
      }
      AppendSample(&out, name + "_bucket", labels, static_cast<double>(s.count), "le", "+Inf");
      AppendSample(&out, name + "_sum", labels, s.sum);
      AppendSample(&out, name + "_count", labels, static_cast<double>(s.count));
    }
  }
  return out;
}

namespace {

using T = Metrics::Type;

// What each sweep of a watch did, and what it left stuck or quarantined.
void DescribeSweepMetrics(Metrics* m) {
  m->Describe("txn_recoveryd_sweeps_total", T::kCounter,
              "Sweeps of a watch attempted, failed ones included "
              "(txn_recoveryd_sweep_failures_total counts those).");
  m->Describe("txn_recoveryd_sweep_failures_total", T::kCounter,
              "Sweeps of a watch that stopped on an error (database unreachable, bad document).");
  m->Describe("txn_recoveryd_sweep_duration_seconds", T::kHistogram,
              "How long one sweep of a watch took.",
              {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120});
  m->Describe("txn_recoveryd_last_successful_sweep_timestamp_seconds", T::kGauge,
              "Unix time at which the last successful sweep of a watch ended.");
  m->Describe("txn_recoveryd_stuck_transactions", T::kGauge,
              "Transactions found stuck by the last sweep, by state.");
  m->Describe("txn_recoveryd_oldest_stuck_age_seconds", T::kGauge,
              "Age of the oldest transaction found stuck by the last sweep that could count "
              "them (0 if none), growing with the time elapsed since while sweeps fail.");
  m->Describe("txn_recoveryd_resolved_total", T::kCounter,
              "Stuck transactions driven to a terminal state, by action taken.");
  m->Describe("txn_recoveryd_transaction_failures_total", T::kCounter,
              "Attempts to resolve a transaction that failed and will be retried, by action.");
  m->Describe("txn_recoveryd_quarantined_transactions", T::kGauge,
              "Transactions currently quarantined, waiting for an operator.");
  m->Describe("txn_recoveryd_quarantined_total", T::kCounter,
              "Transactions set aside for an operator: documents that do not fit their "
              "profile, and transactions whose recovery failed sweep.max_failures sweeps in a "
              "row.");
  m->Describe("txn_recoveryd_busy_total", T::kCounter,
              "Transactions left alone because another daemon held their lease, or the "
              "application moved them on after they were read.");
}

// What bounds and follows the sweeps: the pace, retention, the orphan scans, the database's
// cost, the fleet.
void DescribeAroundTheSweeps(Metrics* m) {
  m->Describe("txn_recoveryd_pace_limit", T::kGauge,
              "The bound on transactions driven per second by the whole fleet (sweep.pace; "
              "each member drives its part), 0 when unbounded.");
  m->Describe("txn_recoveryd_pace_wait_seconds_total", T::kCounter,
              "Time the sweep waited for the pace bound before reading its candidates: a "
              "backlog held back by sweep.pace rather than by the server.");
  m->Describe("txn_recoveryd_late_writes_undone_total", T::kCounter,
              "Writes found applied to a transaction after it was rolled back, and undone.");
  m->Describe("txn_recoveryd_first_sightings_total", T::kCounter,
              "Transactions without a time whose first sighting a sweep stamped (their age "
              "starts then; missing_time = \"first_seen\").");
  m->Describe("txn_recoveryd_finished_removed_total", T::kCounter,
              "Finished transactions removed by retention, by mode (deleted or archived).");
  m->Describe("txn_recoveryd_orphan_scans_total", T::kCounter,
              "Orphan scans of a watch's participants that completed.");
  m->Describe("txn_recoveryd_orphan_markers", T::kGauge,
              "Markers the last orphan scan left for an operator, by kind.");
  m->Describe("txn_recoveryd_database_round_trips_total", T::kCounter,
              "Commands this process sent to the database (find, getMore, update, ...), "
              "counted after each round.");
  m->Describe("txn_recoveryd_database_documents_read_total", T::kCounter,
              "Documents the database sent this process in its replies, counted after each "
              "round.");
  m->Describe("txn_recoveryd_fleet_overdue_taken_total", T::kCounter,
              "Overdue transactions of another member's share driven by this member "
              "(fleet.overdue_after): that member is live but is not driving its share.");
  m->Describe("txn_recoveryd_fleet_members", T::kGauge,
              "Live members of the fleet that sweep the watch at the last heartbeat, this "
              "one included.");
  m->Describe("txn_recoveryd_fleet_share_buckets", T::kGauge,
              "Buckets of the 256 this member's share of the watch holds.");
}

// The process: paused watches, the database, the build, the reloads, the logs.
void DescribeProcessMetrics(Metrics* m) {
  m->Describe("txn_recoveryd_paused", T::kGauge,
              "1 while the watch's pause switch is on and the daemon leaves it alone.");
  m->Describe("txn_recoveryd_database_up", T::kGauge,
              "1 if the database answered the last attempt to reach it, 0 otherwise.");
  m->Describe("txn_recoveryd_build_info", T::kGauge,
              "Always 1; the version and revision labels say which build is running.");
  m->Describe("txn_recoveryd_last_reload_successful", T::kGauge,
              "1 if the last configuration reload succeeded, 0 if it was refused.");
  m->Describe("txn_recoveryd_last_reload_success_timestamp_seconds", T::kGauge,
              "Unix time of the last successful configuration load.");
  m->Describe("txn_recoveryd_log_messages_suppressed_total", T::kCounter,
              "Repeated identical log messages dropped by rate limiting.");
}

}  // namespace

void DescribeStandardMetrics(Metrics* m, const std::string& version, const std::string& revision) {
  DescribeSweepMetrics(m);
  DescribeAroundTheSweeps(m);
  DescribeProcessMetrics(m);
  m->Set("txn_recoveryd_build_info", {{"version", version}, {"revision", revision}}, 1);
}

}  // namespace txn_recovery::daemon
