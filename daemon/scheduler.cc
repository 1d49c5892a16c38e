#include "scheduler.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "config_schema.h"
#include "exit_codes.h"
#include "http_server.h"
#include "index_check.h"
#include "logging.h"
#include "metrics.h"
#include "notifier.h"
#include "process_metrics.h"
#include "revision.h"
#include "stop_signals.h"
#include "sweep_command.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/engine/fleet_member.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/mongo_store.h"
#include "txn_recovery/tools/inspect.h"
#include "txn_recovery/tools/retention.h"

namespace txn_recoveryd {

using txn_recovery::Status;
using Steady = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

Status ApplyOverrides(const RunOptions& options, Config* config) {
  if (!options.log_format.empty()) {
    std::optional<LogFormat> format = LogFormatNamed(options.log_format);
    if (!format)
      return Status::InvalidArgument("--log-format: must be " +
                                     Alternatives(Choices(SchemaKey("log", "format"))) + ", not '" +
                                     options.log_format + "'");
    config->log.format = *format;
  }
  if (!options.log_level.empty()) {
    const std::vector<std::string> levels = Choices(SchemaKey("log", "level"));
    if (std::find(levels.begin(), levels.end(), options.log_level) == levels.end())
      return Status::InvalidArgument("--log-level: must be " + Alternatives(levels) + ", not '" +
                                     options.log_level + "'");
    config->log.level = options.log_level;
  }
  if (!options.http_listen.empty()) {
    ListenAddress unused;
    if (Status s = ParseListenAddress(options.http_listen, &unused); !s.ok())
      return Status::InvalidArgument("--http-listen: " + s.message());
    config->http.listen = options.http_listen;
  }
  if (!options.web_config_file.empty()) {
    if (Status s = LoadHttpSecurity(options.web_config_file, &config->http.security); !s.ok())
      return Status::InvalidArgument("--web.config.file: " + s.message());
    config->http.web_config = options.web_config_file;
  }
  return Status::Ok();
}

namespace {

// What the web configuration does to the endpoint, for the log: never a secret.
std::string SecurityNote(const HttpConfig& http) {
  if (http.web_config.empty()) return "";
  std::string note = " (web configuration " + http.web_config;
  note += http.security.tls ? ": TLS" : ": no TLS";
  if (http.security.auth) note += ", basic authentication on / and /metrics";
  return note + ")";
}

double UnixSeconds() {
  return static_cast<double>(std::chrono::duration_cast<milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count()) /
         1000.0;
}

std::string ClockTime() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%SZ", &tm);
  return buf;
}

// The signals the daemon handles, blocked in every thread and received by one thread with
// sigwait(): no async-signal-safety concerns, and the handling code may lock and log.
// SIGUSR2 only wakes the thread when the daemon shuts the watcher down.
sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGQUIT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR2);
  return set;
}

class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
    thread_ = std::thread([this] {
      sigset_t set = HandledSignals();
      for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (done_.load()) return;
        if (sig != SIGUSR2) on_signal_(sig);
      }
    });
  }
  ~SignalWatcher() {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGUSR2);
    thread_.join();
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  std::function<void(int)> on_signal_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

class Daemon {
 public:
  Daemon(RunOptions options, EnvLookup env)
      : options_(std::move(options)),
        env_(std::move(env)),
        rng_(std::random_device{}()),
        fleet_(nullptr, Self(owner_), {}, FleetEvents()) {}
  // A SIGTERM that arrived while Run failed at start (a bad configuration) has started the
  // drain deadline's thread: it must end before its std::thread is destroyed.
  ~Daemon() {
    std::thread deadline;
    {
      std::lock_guard<std::mutex> l(mu_);
      finished_ = true;
      deadline = std::move(deadline_thread_);
      cv_.notify_all();
    }
    if (deadline.joinable()) deadline.join();
  }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  int Run();

 private:
  struct SweepOutcome {
    bool database_up = true;
    bool authentication_failed = false;
    std::int64_t resolved = 0, failed = 0, stuck = 0, quarantined = 0;
    std::optional<milliseconds> oldest;
    std::vector<std::string> paused, broken;
  };

  void OnSignal(int sig);
  Status Load(Config* config) const;
  Status OpenStore(const Config& config, std::unique_ptr<txn_recovery::MongoStore>* store) const;
  Status StartHttp(const HttpConfig& http, std::unique_ptr<HealthServer>* server);
  void Reload();
  SweepOutcome SweepAll();
  // A round whose ping failed: counted and said, nothing swept.
  SweepOutcome DatabaseDown(const Status& ping);
  // The periodic orphan scan of every watch (orphans.h), with its metrics.
  void ScanOrphans(const txn_recovery::LeaseOptions& lease, SweepOutcome* out);
  // Fleet membership (docs/fleet.md): fleet_ does the work; these say what it learned (logs
  // and metrics) and do nothing when the fleet is off.
  static txn_recovery::MemberRecord Self(const std::string& owner);
  txn_recovery::FleetEvents FleetEvents();
  void Heartbeat();
  // The share of watch `w`; nullopt (everything) when the fleet is off or the last
  // heartbeat in its database failed.
  std::optional<txn_recovery::Share> ShareIn(const txn_recovery::WatchSpec& w) const;
  bool OrphanScanIsMine(const txn_recovery::WatchSpec& w);
  // Deletes this instance's records at a clean stop, so that the others take its share now.
  void LeaveFleet();
  // An overdue transaction of another member's share, taken by this one: said with the
  // member whose share holds it, since it means that member is not driving it.
  void LogOverdueTaken(const txn_recovery::WatchSpec& w, const txn_recovery::TxnReport& r);
  void RecordWatch(const txn_recovery::WatchSpec& w, const txn_recovery::WatchSummary& summary,
                   const Status& s, double seconds, SweepOutcome* out);
  // A watch whose stuck transactions could not be counted this round: its oldest-stuck age
  // goes on from the last count (StuckAgeEstimate), rather than freezing.
  void AgeWithoutCount(const txn_recovery::WatchSpec& w);
  // Whether the file the URI comes from (mongodb.uri_file, a Kubernetes Secret's file) now
  // holds another URI than the one last read from it.
  bool UriFileChanged();
  void Progress();
  // Publishes what other threads read of config_ after it changes.
  void Adopted() {
    uri_read_ = config_.mongodb.uri;
    fleet_.SetStore(store_.get());
    fleet_.SetOptions(
        {config_.fleet.members_collection, config_.fleet.heartbeat, config_.fleet.expiry});
    live_limit_ms_ = std::max<std::int64_t>(60'000, 3 * config_.daemon.interval.count());
    drain_deadline_ms_ = config_.daemon.drain_deadline.count();
  }
  // Sleeps up to `d`, waking early for a stop or reload request, and keeps the watchdog fed.
  void Wait(milliseconds d);
  void SweepUntilStopped();
  void WaitBeating(std::chrono::milliseconds next, bool database_up);
  void ShutDown();
  milliseconds Jittered(milliseconds interval);
  void StartDrainDeadline();
  void PublishStatus(const SweepOutcome& o, milliseconds took, milliseconds next);
  void CountWire();

  RunOptions options_;
  EnvLookup env_;
  std::mt19937_64 rng_;
  Config config_;
  std::unique_ptr<txn_recovery::MongoStore> store_;
  // What sweeps learned of the collections, for the next ones (kept across reloads: it
  // describes the data, not the configuration).
  std::shared_ptr<txn_recovery::SweepMemory> sweep_memory_ =
      std::make_shared<txn_recovery::SweepMemory>();
  bool indexes_checked_ = false;  // PrepareIndexes ran for the current configuration
  // It left an index for when a transaction without a time appears: checked again after a
  // sweep that reads one.
  bool indexes_deferred_ = false;
  std::unique_ptr<HealthServer> http_;
  std::string owner_ = txn_recovery::MakeOwnerId();
  Notifier notifier_;
  Metrics metrics_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool reload_requested_ = false;  // guarded by mu_
  std::atomic<bool> stop_{false};
  StopSignals stop_signals_;  // used by the signal thread only
  bool finished_ = false;     // guarded by mu_; the drain deadline thread waits for it
  std::thread deadline_thread_;

  std::atomic<std::int64_t> last_progress_ms_{0};  // steady clock, for /livez
  std::atomic<bool> database_up_{false};
  // The last failed ping was a refused login, not an unreachable server (/readyz says so).
  std::atomic<bool> database_auth_failed_{false};
  std::atomic<std::int64_t> live_limit_ms_{60'000};
  // Copies of configuration values read by the signal and HTTP threads.
  std::atomic<std::int64_t> drain_deadline_ms_{DaemonConfig{}.drain_deadline.count()};
  std::uint64_t suppressed_logs_reported_ = 0;
  txn_recovery::Store::WireStats wire_counted_;  // of store_, already in the metrics
  Steady::time_point last_watchdog_{};
  std::map<std::string, std::set<std::string>> stuck_series_;  // watch -> states reported
  std::map<std::string, StuckAgeEstimate> stuck_age_;          // watch -> its last count
  // The URI last read from config_.mongodb.uri_path: a change reloads once, not every round
  // while a reload keeps failing.
  std::string uri_read_;
  // The first scan comes an interval after start, or 10 minutes if that is sooner (not
  // at once: a daemon restarted in a loop must not rescan every participant each time),
  // then every orphan_scan_interval. Unset until the first sweep.
  std::optional<Steady::time_point> next_orphan_scan_;
  txn_recovery::FleetMember fleet_;  // its store and options follow config_ (Adopted)
};

void Daemon::OnSignal(int sig) {
  if (sig == SIGHUP) {
    std::lock_guard<std::mutex> l(mu_);
    reload_requested_ = true;
    cv_.notify_all();
    return;
  }
  const char* name = sig == SIGINT ? "SIGINT" : sig == SIGQUIT ? "SIGQUIT" : "SIGTERM";
  switch (stop_signals_.On(sig, Steady::now())) {
    case StopSignals::Decision::kIgnore:
      // The same request again (a process-group signal reaches us twice): keep draining.
      spdlog::info("{} again within a second of the first: still draining", name);
      return;
    case StopSignals::Decision::kExitNow:
      // The operator does not want to wait for the drain. Everything the daemon leaves is
      // safe to repeat; its leases expire.
      spdlog::warn("second {} during the drain: exiting now", name);
      spdlog::default_logger()->flush();
      std::_Exit(kExitOk);
    case StopSignals::Decision::kDrain:
      break;
  }
  stop_ = true;
  spdlog::info("{} received: finishing the transactions in hand, then exiting (deadline {})", name,
               FormatDuration(milliseconds(drain_deadline_ms_.load())));
  notifier_.Stopping();
  StartDrainDeadline();
  std::lock_guard<std::mutex> l(mu_);
  cv_.notify_all();
}

void Daemon::StartDrainDeadline() {
  milliseconds deadline(drain_deadline_ms_.load());
  std::lock_guard<std::mutex> guard(mu_);
  if (finished_) return;  // the loop is already done; nothing to bound
  deadline_thread_ = std::thread([this, deadline] {
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_for(l, deadline, [this] { return finished_; })) return;
    spdlog::warn(
        "drain deadline of {} passed with work in hand: exiting anyway; every step left "
        "undone is safe to repeat and its lease expires",
        FormatDuration(deadline));
    spdlog::default_logger()->flush();
    std::_Exit(kExitOk);
  });
}

Status Daemon::Load(Config* config) const {
  Status s = LoadConfig(options_.config_path, env_, config);
  if (s.ok()) s = ApplyOverrides(options_, config);
  return s;
}

Status Daemon::OpenStore(const Config& config,
                         std::unique_ptr<txn_recovery::MongoStore>* store) const {
  txn_recovery::MongoOptions mo = MongoOptionsFor(config);
  Status s = txn_recovery::MongoStore::Open(mo, store);
  if (!s.ok())
    return Status::InvalidArgument(config.mongodb.uri_source + ": mongodb.uri: " + s.message());
  return s;
}

Status Daemon::StartHttp(const HttpConfig& http, std::unique_ptr<HealthServer>* server) {
  const std::string& listen = http.listen;
  auto next = std::make_unique<HealthServer>();
  HealthHandlers h;
  h.metrics = [this] {
    UpdateProcessMetrics(&metrics_);
    return metrics_.Render();
  };
  h.live = [this](std::string* why) {
    auto now = duration_cast<milliseconds>(Steady::now().time_since_epoch()).count();
    auto idle = now - last_progress_ms_.load();
    if (idle <= live_limit_ms_.load()) return true;
    *why = "the sweep loop has made no progress for " + std::to_string(idle / 1000) + "s";
    return false;
  };
  h.ready = [this](std::string* why) {
    if (stop_.load()) {
      *why = "stopping";
      return false;
    }
    if (!database_up_.load()) {
      *why = database_auth_failed_.load()
                 ? "authentication failed: the database refused the credentials (see the log)"
                 : "the database is unreachable (see the log and txn_recoveryd_database_up)";
      return false;
    }
    return true;
  };
  Status s = next->Start(listen, std::move(h), {}, http.security);
  if (!s.ok()) return s;
  ListenAddress parsed;
  const bool every = ParseListenAddress(listen, &parsed).ok() && parsed.every_address;
  spdlog::info("health and metrics on {}://{}{}{}", http.security.tls ? "https" : "http",
               next->address(), every ? " (every IPv4 and IPv6 address of this host)" : "",
               SecurityNote(http));
  *server = std::move(next);
  return Status::Ok();
}

void Daemon::Progress() {
  auto now = Steady::now();
  last_progress_ms_ = duration_cast<milliseconds>(now.time_since_epoch()).count();
  if (auto wd = notifier_.watchdog_interval(); wd && now - last_watchdog_ >= *wd / 2) {
    notifier_.Watchdog();
    last_watchdog_ = now;
  }
}

void Daemon::Wait(milliseconds d) {
  auto until = Steady::now() + d;
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_.load() && !reload_requested_) {
    auto now = Steady::now();
    if (now >= until) break;
    // Wake at least once a second so the watchdog and /livez see a live loop.
    auto slice = std::min<Steady::duration>(until - now, std::chrono::seconds(1));
    cv_.wait_for(l, slice);
    l.unlock();
    Progress();
    l.lock();
  }
}

milliseconds Daemon::Jittered(milliseconds interval) {
  double j = std::clamp(config_.daemon.jitter, 0.0, 1.0);
  std::uniform_real_distribution<double> dist(1.0 - j, 1.0 + j);
  return milliseconds(
      static_cast<std::int64_t>(static_cast<double>(interval.count()) * dist(rng_)));
}

void Daemon::Reload() {
  notifier_.Reloading();
  Config next;
  Status s = Load(&next);
  std::unique_ptr<HealthServer> next_http;
  std::unique_ptr<txn_recovery::MongoStore> next_store;
  bool http_changed = s.ok() && next.http.listen != config_.http.listen;
  bool store_changed = s.ok() && (next.mongodb.uri != config_.mongodb.uri ||
                                  next.mongodb.server_selection_timeout !=
                                      config_.mongodb.server_selection_timeout ||
                                  next.mongodb.socket_timeout != config_.mongodb.socket_timeout ||
                                  next.sweep.workers != config_.sweep.workers);
  // Everything that can fail is prepared before anything is swapped, so that a failed
  // reload leaves the running configuration entirely in force.
  if (s.ok() && http_changed && !next.http.listen.empty()) s = StartHttp(next.http, &next_http);
  if (s.ok() && store_changed) s = OpenStore(next, &next_store);
  if (!s.ok()) {
    spdlog::error("reload failed; the running configuration stays in force: {}", s.message());
    metrics_.Set("txn_recoveryd_last_reload_successful", {}, 0);
    notifier_.Ready();
    return;
  }
  if (http_changed) {
    if (http_) http_->Stop();
    http_ = std::move(next_http);
  } else if (http_) {
    // The same listener: the web configuration, its certificate and key read again (a
    // renewed certificate), for the connections accepted from now on.
    http_->SetSecurity(next.http.security);
    if (!next.http.web_config.empty())
      spdlog::info("web configuration read again{}", SecurityNote(next.http));
  }
  if (store_changed) {
    store_ = std::move(next_store);
    wire_counted_ = {};  // the new store counts from zero
  }
  if (next.log.format != config_.log.format)
    spdlog::warn("log.format changes take effect at the next restart");
  if (next.log.level != config_.log.level)
    spdlog::default_logger()->set_level(spdlog::level::from_str(next.log.level));
  config_ = std::move(next);
  indexes_checked_ = false;
  Adopted();
  metrics_.Set("txn_recoveryd_last_reload_successful", {}, 1);
  metrics_.Set("txn_recoveryd_last_reload_success_timestamp_seconds", {}, UnixSeconds());
  spdlog::info("configuration reloaded from {}: {} watch(es), interval {}{}", config_.path,
               config_.watches.size(), FormatDuration(config_.daemon.interval),
               store_changed ? ", new database connection" : "");
  notifier_.Ready();
}

void Daemon::RecordWatch(const txn_recovery::WatchSpec& w,
                         const txn_recovery::WatchSummary& summary, const Status& s, double seconds,
                         SweepOutcome* out) {
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
  if (config_.fleet.enabled)
    metrics_.Inc("txn_recoveryd_fleet_overdue_taken_total", watch,
                 static_cast<double>(summary.overdue_taken));
  metrics_.Inc("txn_recoveryd_late_writes_undone_total", watch,
               static_cast<double>(summary.late_writes_undone));
  metrics_.Inc("txn_recoveryd_pace_wait_seconds_total", watch,
               std::chrono::duration<double>(summary.pace_waited).count());
  metrics_.Inc("txn_recoveryd_first_sightings_total", watch,
               static_cast<double>(summary.first_sightings));
  if (indexes_deferred_ && summary.without_time > 0) indexes_checked_ = false;
  if (w.retention.enabled()) {
    metrics_.Inc("txn_recoveryd_finished_removed_total", {{"watch", w.name}, {"mode", "deleted"}},
                 static_cast<double>(summary.finished_deleted));
    metrics_.Inc("txn_recoveryd_finished_removed_total", {{"watch", w.name}, {"mode", "archived"}},
                 static_cast<double>(summary.finished_archived));
  }
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

  // What is still stuck after the sweep: the gauges an operator alerts on.
  txn_recovery::StuckReport report;
  if (Status is = txn_recovery::Inspect(store_.get(), w, &report); !is.ok()) {
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
  metrics_.Set("txn_recoveryd_oldest_stuck_age_seconds", watch, age.SecondsAt(Steady::now()));
  if (report.oldest_age && (!out->oldest || *report.oldest_age > *out->oldest))
    out->oldest = report.oldest_age;
}

void Daemon::AgeWithoutCount(const txn_recovery::WatchSpec& w) {
  auto it = stuck_age_.find(w.name);
  if (it == stuck_age_.end()) return;  // never counted: no value to carry on
  metrics_.Set("txn_recoveryd_oldest_stuck_age_seconds", {{"watch", w.name}},
               it->second.SecondsAt(Steady::now()));
}

bool Daemon::UriFileChanged() {
  const std::string& path = config_.mongodb.uri_path;
  if (path.empty()) return false;
  std::string now;
  // Unreadable for a moment (a file being replaced by hand): the next round reads it again.
  if (!ReadSecretFile(path, &now).ok() || now == uri_read_) return false;
  uri_read_ = now;
  return true;
}

txn_recovery::MemberRecord Daemon::Self(const std::string& owner) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return txn_recovery::MemberRecord{owner, host, MemberVersion(), {}, {}};
}

txn_recovery::FleetEvents Daemon::FleetEvents() {
  txn_recovery::FleetEvents e;
  e.share = [this](const txn_recovery::WatchSpec& w, const txn_recovery::Share& share,
                   bool changed) {
    if (changed) {
      LogFields f({{"watch", w.name}});
      spdlog::info(
          "fleet of {}: {} live member(s) sweep it, this one at position {} holds {} of {} "
          "buckets",
          w.ns.ToString(), share.count, share.self, share.Buckets(), txn_recovery::kFleetBuckets);
    }
    metrics_.Set("txn_recoveryd_fleet_members", {{"watch", w.name}},
                 static_cast<double>(share.count));
    metrics_.Set("txn_recoveryd_fleet_share_buckets", {{"watch", w.name}},
                 static_cast<double>(share.Buckets()));
  };
  e.membership_failed = [](const txn_recovery::Namespace& members, const Status& s,
                           bool had_share) {
    LogFields f({{"database", members.database}});
    if (had_share)
      spdlog::warn("fleet membership in {} failed, sweeping every candidate: {}",
                   members.ToString(), s.ToString());
  };
  e.expired_removed = [](const std::string& database, std::int64_t removed) {
    LogFields f({{"database", database}});
    spdlog::info("fleet of {}: {} expired member record(s) removed", database, removed);
  };
  // A mixed fleet is a rolling upgrade: each member leaves alone what it cannot read, and
  // the lease keeps every transaction to one driver (docs/upgrading.md). Said, because a
  // member left behind holds its share of what only the newer ones can drive.
  e.newer_member = [](const std::string& database, const txn_recovery::MemberRecord& m) {
    LogFields f({{"database", database}});
    spdlog::warn(
        "fleet of {}: member {} on {} (version {}) writes format {}, newer than this "
        "daemon's {}: upgrade this host; meanwhile it leaves alone what that member "
        "writes",
        database, m.id, m.host, m.version, m.format, txn_recovery::RecoveryRecord::kFormat);
  };
  e.leave_failed = [](const std::string& database, const Status& s) {
    spdlog::warn("could not leave the fleet of {} (the record expires instead): {}", database,
                 s.ToString());
  };
  return e;
}

void Daemon::Heartbeat() {
  if (config_.fleet.enabled) fleet_.Heartbeat(config_.watches);
}

// An overdue transaction of another member's share, taken by this one: said with the
// member whose share holds it, since it means that member is not driving it.
void Daemon::LogOverdueTaken(const txn_recovery::WatchSpec& w, const txn_recovery::TxnReport& r) {
  std::string holder = "position " + std::to_string(*r.overdue_in_share_of);
  if (auto m = fleet_.SweeperAt(w, *r.overdue_in_share_of)) holder = m->id + " on " + m->host;
  LogFields f({{"watch", w.name}, IdField("txn_id", r.id)});
  spdlog::warn(
      "transaction overdue in the share of member {} (bucket {}): driven by this member; that "
      "member is live but is not driving its share",
      holder, txn_recovery::BucketOf(r.id));
}

std::optional<txn_recovery::Share> Daemon::ShareIn(const txn_recovery::WatchSpec& w) const {
  if (!config_.fleet.enabled) return std::nullopt;
  return fleet_.ShareOf(w);
}

void Daemon::LeaveFleet() {
  if (!config_.fleet.enabled || store_ == nullptr) return;
  fleet_.Leave();
}

Daemon::SweepOutcome Daemon::SweepAll() {
  Status ping = store_->Ping();
  if (!ping.ok()) return DatabaseDown(ping);
  SweepOutcome out;
  database_auth_failed_ = false;
  if (!database_up_.exchange(true))
    spdlog::info("database reachable at {}", txn_recovery::RedactUri(config_.mongodb.uri));
  metrics_.Set("txn_recoveryd_database_up", {}, 1);
  // Once per configuration, at the first sweep that reaches the database.
  if (!indexes_checked_)
    indexes_checked_ =
        !PrepareIndexes(config_, store_.get(), false, &indexes_deferred_).IsUnavailable();

  txn_recovery::SweepOptions so = SweepOptionsFor(config_);
  metrics_.Set("txn_recoveryd_pace_limit", {}, static_cast<double>(config_.sweep.pace));
  so.lease.owner = owner_;
  so.stop = &stop_;
  so.memory = sweep_memory_;
  if (config_.fleet.enabled) so.overdue_after = config_.fleet.overdue_after;
  Heartbeat();
  // Reports arrive from the sweeper's workers, never concurrently; the watchdog and /livez
  // are fed from here so that a sweep of a million transactions is not mistaken for a hang.
  bool refused = false;  // some write of this watch's sweep was refused for a privilege
  const txn_recovery::WatchSpec* sweeping = nullptr;
  auto on_txn = [this, &refused, &sweeping](const txn_recovery::TxnReport& r) {
    if (r.overdue_in_share_of) LogOverdueTaken(*sweeping, r);
    LogTransaction(r);
    refused = refused || r.result.status.IsPermissionDenied();
    Progress();
  };
  for (const auto& w : config_.watches) {
    if (stop_.load()) break;
    txn_recovery::WatchSummary summary;
    auto t0 = Steady::now();
    // Between watches too, so that a long sweep does not let this member expire.
    if (fleet_.HeartbeatDue()) Heartbeat();
    so.share = ShareIn(w);
    if (config_.fleet.enabled)
      so.refresh_share = [this, &w] { return fleet_.Refresh(config_.watches, w); };
    sweeping = &w;
    txn_recovery::Sweeper sweeper(store_.get(), txn_recovery::Clock::Real(), so);
    Status s = txn_recovery::SweepAndRetain(&sweeper, w, on_txn, &summary);
    double seconds = std::chrono::duration<double>(Steady::now() - t0).count();
    if (s.IsAborted() && stop_.load()) break;  // the drain, not a failure
    // A member whose sweep of a watch failed, or whose writes there were refused for a
    // privilege it lacks (a host deployed with the wrong role), cannot drive its share: the
    // others take it (docs/fleet.md).
    fleet_.NoteSweep(w, s.ok() && !refused, summary.resolved);
    refused = false;
    RecordWatch(w, summary, s, seconds, &out);
    Progress();
  }
  if (!next_orphan_scan_)
    next_orphan_scan_ =
        Steady::now() + Jittered(std::min<milliseconds>(config_.daemon.orphan_scan_interval,
                                                        std::chrono::minutes(10)));
  if (out.database_up && !stop_.load() && Steady::now() >= *next_orphan_scan_) {
    ScanOrphans(so.lease, &out);
    next_orphan_scan_ = Steady::now() + Jittered(config_.daemon.orphan_scan_interval);
  }
  if (!out.database_up) {
    database_auth_failed_ = out.authentication_failed;
    database_up_ = false;
    metrics_.Set("txn_recoveryd_database_up", {}, 0);
  }
  return out;
}

// The database did not answer the round's ping: every watch's sweep counted as failed, and
// said once per attempt (the rate limiter keeps an outage to a line a minute).
Daemon::SweepOutcome Daemon::DatabaseDown(const Status& ping) {
  SweepOutcome out;
  out.database_up = false;
  database_up_ = false;
  metrics_.Set("txn_recoveryd_database_up", {}, 0);
  for (const auto& w : config_.watches) {
    metrics_.Inc("txn_recoveryd_sweeps_total", {{"watch", w.name}});
    metrics_.Inc("txn_recoveryd_sweep_failures_total", {{"watch", w.name}});
    AgeWithoutCount(w);
  }
  if (ping.IsUnauthenticated()) {
    out.authentication_failed = true;
    database_auth_failed_ = true;
    spdlog::error("authentication failed: the database refused the credentials of {}: {}",
                  txn_recovery::RedactUri(config_.mongodb.uri), ping.message());
  } else {
    database_auth_failed_ = false;
    spdlog::warn("database unreachable ({}): {}", txn_recovery::RedactUri(config_.mongodb.uri),
                 ping.message());
  }
  return out;
}

// The scan reads every marked participant whatever the share: in a fleet, one member per
// period runs it, whichever claims it first (txn_recovery::ClaimOrphanScan). The period is
// this member's shortest wait between two of its scans, so that alone it claims every scan it
// tries; with others, the fleet scans each watch about once per orphan_scan_interval, and
// a member that is live but does not scan holds the scan up for one period at most.
bool Daemon::OrphanScanIsMine(const txn_recovery::WatchSpec& w) {
  if (!ShareIn(w)) return true;  // not in a fleet (or no view of it): as a lone daemon
  const double shortest = 1.0 - std::clamp(config_.daemon.jitter, 0.0, 1.0);
  const auto period = milliseconds(static_cast<std::int64_t>(
      static_cast<double>(config_.daemon.orphan_scan_interval.count()) * shortest * 0.95));
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

void Daemon::ScanOrphans(const txn_recovery::LeaseOptions& lease, SweepOutcome* out) {
  txn_recovery::OrphanOptions oo = OrphanOptionsFor(config_, lease);
  oo.stop = &stop_;
  oo.progress = [this] { Progress(); };
  using Kind = txn_recovery::OrphanFinding::Kind;
  for (const auto& w : config_.watches) {
    if (stop_.load()) return;
    if (!OrphanScanIsMine(w)) continue;
    txn_recovery::OrphanSummary summary;
    Status s = txn_recovery::ScanOrphans(
        store_.get(), txn_recovery::Clock::Real(), w, oo,
        [&](const txn_recovery::OrphanFinding& f) { LogOrphan(w.name, f); }, &summary);
    if (s.IsAborted() && stop_.load()) return;
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

// What this process exchanged with the database since the last round: what the daemon
// costs the server, whatever its speed (heartbeats and index checks included).
void Daemon::CountWire() {
  txn_recovery::Store::WireStats w;
  if (store_ == nullptr || !store_->GetWireStats(&w)) return;
  metrics_.Inc("txn_recoveryd_database_round_trips_total", {},
               static_cast<double>(w.round_trips - wire_counted_.round_trips));
  metrics_.Inc("txn_recoveryd_database_documents_read_total", {},
               static_cast<double>(w.documents_returned - wire_counted_.documents_returned));
  wire_counted_ = w;
}

void Daemon::PublishStatus(const SweepOutcome& o, milliseconds took, milliseconds next) {
  std::string status;
  if (o.authentication_failed) {
    status = "authentication failed: the database refused the credentials; retrying in " +
             FormatDuration(next);
  } else if (!o.database_up) {
    status = "database unreachable; retrying in " + FormatDuration(next);
  } else {
    status = "last sweep " + ClockTime() + " (" + FormatDuration(took) +
             "): " + std::to_string(o.resolved) + " resolved, " + std::to_string(o.failed) +
             " failed; " + std::to_string(o.stuck) + " stuck";
    if (o.oldest) status += " (oldest " + std::to_string(o.oldest->count() / 1000) + "s)";
    status += ", " + std::to_string(o.quarantined) + " quarantined; database up";
    if (!o.paused.empty()) status += "; PAUSED: " + std::to_string(o.paused.size()) + " watch(es)";
    if (!o.broken.empty()) status += "; failing: " + std::to_string(o.broken.size()) + " watch(es)";
  }
  notifier_.Status(status);
}

// Sweeps every interval (after a failed sweep: after the backoff) until asked to stop.
void Daemon::SweepUntilStopped() {
  milliseconds backoff = config_.daemon.backoff_initial;
  while (!stop_.load()) {
    bool reload = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      std::swap(reload, reload_requested_);
    }
    // A rotated URI is taken up without a signal: a Kubernetes Secret's file changes under
    // the running pod (the kubelet swaps its ..data symlink) and nobody sends SIGHUP; an
    // operator who rewrites mongodb.uri_file need not either. Read again before every round,
    // the file costs a read, and a changed one is a reload, which opens a new connection
    // (a libmongoc pool keeps the URI it was created with) only once the whole
    // configuration, the new URI included, is found sound.
    if (!reload && UriFileChanged()) {
      spdlog::info("{} holds a new URI: reloading", config_.mongodb.uri_source);
      reload = true;
    }
    if (reload) Reload();
    auto t0 = Steady::now();
    SweepOutcome o = SweepAll();
    auto took = duration_cast<milliseconds>(Steady::now() - t0);
    if (stop_.load()) break;
    milliseconds next;
    if (o.database_up) {
      backoff = config_.daemon.backoff_initial;
      next = Jittered(config_.daemon.interval);
    } else {
      // The tagged-insert application's schedule, jittered so that hosts reconnecting after an
      // outage spread out.
      next = Jittered(backoff);
      backoff = std::min(backoff * 2, config_.daemon.backoff_max);
    }
    PublishStatus(o, took, next);
    std::uint64_t suppressed = SuppressedLogMessages();
    metrics_.Inc("txn_recoveryd_log_messages_suppressed_total", {},
                 static_cast<double>(suppressed - suppressed_logs_reported_));
    suppressed_logs_reported_ = suppressed;
    CountWire();
    WaitBeating(next, o.database_up);
  }
}

// A wait longer than the heartbeat is cut into heartbeats, so that the record stays live
// while this member waits for its next sweep.
void Daemon::WaitBeating(milliseconds next, bool database_up) {
  for (auto until = Steady::now() + next; !stop_.load();) {
    const auto left = duration_cast<milliseconds>(until - Steady::now());
    if (left.count() <= 0) break;
    Wait(std::min(left, config_.fleet.heartbeat));
    bool reloading = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      reloading = reload_requested_;
    }
    if (reloading || stop_.load() || Steady::now() >= until) break;
    if (database_up) Heartbeat();
  }
}

// Releases the leases, stops serving and lets the shutdown deadline's thread go.
void Daemon::ShutDown() {
  notifier_.Status("stopping: releasing leases");
  LeaveFleet();
  store_.reset();
  if (http_) http_->Stop();
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
  std::thread deadline;
  {
    std::lock_guard<std::mutex> l(mu_);
    finished_ = true;
    deadline = std::move(deadline_thread_);
    cv_.notify_all();
  }
  if (deadline.joinable()) deadline.join();
}

int Daemon::Run() {
  // Before any thread exists, so that every thread inherits the mask and only the watcher
  // receives these signals.
  sigset_t set = HandledSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  SignalWatcher watcher([this](int sig) { OnSignal(sig); });

  if (Status s = Load(&config_); !s.ok()) {
    std::cerr << "txn-recoveryd: bad configuration: " << s.message() << "\n";
    return kExitConfig;
  }
  SetupLogging(config_.log.format, config_.log.level);
  Adopted();
  DescribeStandardMetrics(&metrics_, TXN_RECOVERYD_VERSION, Revision());
  for (const auto& unknown : UnknownEnvironmentVariables(ProcessEnvironmentNames()))
    spdlog::warn("unknown environment variable {} is ignored", unknown);
  metrics_.Set("txn_recoveryd_last_reload_successful", {}, 1);
  metrics_.Set("txn_recoveryd_last_reload_success_timestamp_seconds", {}, UnixSeconds());
  metrics_.Set("txn_recoveryd_database_up", {}, 0);
  Progress();

  if (Status s = OpenStore(config_, &store_); !s.ok()) {
    spdlog::error("bad configuration: {}", s.message());
    return kExitConfig;
  }
  fleet_.SetStore(store_.get());
  if (!config_.http.listen.empty()) {
    if (Status s = StartHttp(config_.http, &http_); !s.ok()) {
      spdlog::error("cannot serve health and metrics: {}", s.message());
      return kExitUnavailable;
    }
  }
  spdlog::info("txn-recoveryd {} ({}) started as {}: {} watch(es) on {}, interval {}",
               TXN_RECOVERYD_VERSION, Revision(), owner_, config_.watches.size(),
               txn_recovery::RedactUri(config_.mongodb.uri),
               FormatDuration(config_.daemon.interval));
  notifier_.Ready();
  notifier_.Status("started; first sweep under way");

  SweepUntilStopped();

  ShutDown();
  return kExitOk;
}

}  // namespace

int RunDaemon(const RunOptions& options, const EnvLookup& env) {
  Daemon daemon(options, env);
  return daemon.Run();
}

}  // namespace txn_recoveryd
