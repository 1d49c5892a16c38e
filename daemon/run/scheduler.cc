#include "daemon/run/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "daemon/base/exit_codes.h"
#include "daemon/base/revision.h"
#include "daemon/commands/sweep_command.h"
#include "daemon/logging/logging.h"
#include "daemon/run/config_source.h"
#include "daemon/run/database_status.h"
#include "daemon/run/drain_deadline.h"
#include "daemon/run/fleet.h"
#include "daemon/run/http_endpoint.h"
#include "daemon/run/index_checks.h"
#include "daemon/run/jitter.h"
#include "daemon/run/loop_requests.h"
#include "daemon/run/orphan_scans.h"
#include "daemon/run/round_outcome.h"
#include "daemon/run/run_signals.h"
#include "daemon/run/watch_metrics.h"
#include "daemon/run/watchdog.h"
#include "daemon/serving/http_server.h"
#include "daemon/serving/metrics.h"
#include "daemon/serving/notifier.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/engine/fleet_member.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/mongo_store.h"
#include "txn_recovery/tools/retention.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;
using Steady = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

namespace {

// The loop of `run` and what it hands each part: the configuration in force, the store,
// the server; each job (signals, the drain, the watchdog, the database's status, the
// metrics, the fleet, the orphan scans, the index checks) is a part of its own.
class Daemon {
 public:
  Daemon(RunOptions options, EnvLookup env)
      : source_(std::move(options), std::move(env)), fleet_(owner_, &metrics_) {}
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  int Run();

 private:
  // Hands config_, after it changes, to the parts that keep a copy of what they read of it
  // (some read it on other threads: the signal thread, the HTTP server's).
  void PublishConfiguration();
  void Reload();
  // A reloaded configuration's endpoint: `next` when the listen address changed, otherwise
  // the running one with the web configuration read again.
  void AdoptHttp(const HttpConfig& http, bool changed,
                 std::unique_ptr<HealthAndMetricsServer> next);
  void SweepUntilStopped();
  RoundOutcome SweepAll();
  void SweepWatches(txn_recovery::SweepOptions* options, RoundOutcome* out);
  // A round whose ping failed: counted and said, nothing swept.
  RoundOutcome DatabaseDown(const Status& ping);
  // A wait longer than the heartbeat is cut into heartbeats, so that the record stays live
  // while this member waits for its next sweep.
  void WaitBeating(milliseconds next, bool database_up);
  // Releases the leases, stops serving and lets the drain deadline's thread go.
  void ShutDown();

  std::string owner_ = txn_recovery::MakeOwnerId();
  Metrics metrics_;
  Notifier notifier_;
  LoopRequests requests_;
  // Until the configuration says otherwise.
  DrainDeadline drain_{DaemonConfig{}.drain_deadline};
  RunSignals signals_{&requests_, &drain_, &notifier_};
  Watchdog watchdog_{&notifier_};
  DatabaseStatus database_{&metrics_, &requests_};
  ConfigSource source_;
  Config config_;
  std::unique_ptr<txn_recovery::MongoStore> store_;
  // What sweeps learned of the collections, for the next ones (kept across reloads: it
  // describes the data, not the configuration).
  std::shared_ptr<txn_recovery::SweepMemory> sweep_memory_ =
      std::make_shared<txn_recovery::SweepMemory>();
  IndexChecks indexes_;
  Jitter jitter_;
  Fleet fleet_;  // its store and options follow config_ (PublishConfiguration)
  WatchMetrics watch_metrics_{&metrics_};
  RoundCounters round_counters_{&metrics_};
  OrphanScans orphan_scans_{&metrics_, &fleet_, &jitter_, &watchdog_, &requests_};
  // Last, so that it stops before the parts its handlers read.
  std::unique_ptr<HealthAndMetricsServer> http_;
};

void Daemon::PublishConfiguration() {
  source_.InForce(config_);
  fleet_.Follow(config_, store_.get());
  watchdog_.SetInterval(config_.daemon.interval);
  drain_.Set(config_.daemon.drain_deadline);
}

void Daemon::Reload() {
  notifier_.Reloading();
  Config next;
  Status s = source_.Load(&next);
  std::unique_ptr<HealthAndMetricsServer> next_http;
  std::unique_ptr<txn_recovery::MongoStore> next_store;
  bool http_changed = s.ok() && next.http.listen != config_.http.listen;
  bool store_changed = s.ok() && StoreChanged(config_, next);
  // Everything that can fail is prepared before anything is swapped, so that a failed
  // reload leaves the running configuration entirely in force.
  if (s.ok() && http_changed && !next.http.listen.empty())
    s = StartHttpEndpoint(next.http, &metrics_, &watchdog_, &database_, &next_http);
  if (s.ok() && store_changed) s = OpenStore(next, &next_store);
  if (!s.ok()) {
    spdlog::error("reload failed; the running configuration stays in force: {}", s.message());
    metrics_.Set("txn_recoveryd_last_reload_successful", {}, 0);
    notifier_.Ready();
    return;
  }
  AdoptHttp(next.http, http_changed, std::move(next_http));
  if (store_changed) {
    store_ = std::move(next_store);
    round_counters_.StoreReplaced();
  }
  if (next.log.format != config_.log.format)
    spdlog::warn("log.format changes take effect at the next restart");
  if (next.log.level != config_.log.level)
    spdlog::default_logger()->set_level(spdlog::level::from_str(next.log.level));
  config_ = std::move(next);
  indexes_.ConfigurationChanged();
  PublishConfiguration();
  metrics_.Set("txn_recoveryd_last_reload_successful", {}, 1);
  metrics_.Set("txn_recoveryd_last_reload_success_timestamp_seconds", {}, UnixSeconds());
  spdlog::info("configuration reloaded from {}: {} watch(es), interval {}{}", config_.path,
               config_.watches.size(), FormatDuration(config_.daemon.interval),
               store_changed ? ", new database connection" : "");
  notifier_.Ready();
}

void Daemon::AdoptHttp(const HttpConfig& http, bool changed,
                       std::unique_ptr<HealthAndMetricsServer> next) {
  if (changed) {
    if (http_) http_->Stop();
    http_ = std::move(next);
  } else if (http_) {
    // The same listener: the web configuration, its certificate and key read again (a
    // renewed certificate), for the connections accepted from now on.
    http_->SetSecurity(http.security);
    if (!http.web_config.empty())
      spdlog::info("web configuration read again{}", SecurityNote(http));
  }
}

RoundOutcome Daemon::SweepAll() {
  Status ping = store_->Ping();
  if (!ping.ok()) return DatabaseDown(ping);
  RoundOutcome out;
  database_.Reachable(config_.mongodb.uri);
  // Once per configuration, at the first sweep that reaches the database.
  indexes_.CheckOnce(config_, store_.get());

  txn_recovery::SweepOptions options = ConfiguredSweepOptions(config_);
  metrics_.Set("txn_recoveryd_pace_limit", {}, static_cast<double>(config_.sweep.pace));
  options.lease.owner = owner_;
  options.stop = requests_.stop_flag();
  options.memory = sweep_memory_;
  if (config_.fleet.enabled) options.overdue_after = config_.fleet.overdue_after;
  fleet_.Heartbeat();
  SweepWatches(&options, &out);
  orphan_scans_.AfterRound(config_, store_.get(), options.lease, &out);
  if (!out.database_up) database_.Lost(out.authentication_failed);
  return out;
}

void Daemon::SweepWatches(txn_recovery::SweepOptions* options, RoundOutcome* out) {
  // Reports arrive from the sweeper's workers, never concurrently; the watchdog and /livez
  // are fed from here so that a sweep of a million transactions is not mistaken for a hang.
  bool refused = false;  // some write of this watch's sweep was refused for a privilege
  const txn_recovery::WatchSpec* sweeping = nullptr;
  auto on_txn = [this, &refused, &sweeping](const txn_recovery::TxnReport& r) {
    if (r.overdue_in_share_of) fleet_.LogOverdueTaken(*sweeping, r);
    LogTransaction(r);
    refused = refused || r.result.status.IsPermissionDenied();
    watchdog_.Progress();
  };
  for (const auto& w : config_.watches) {
    if (requests_.stopping()) break;
    txn_recovery::WatchSummary summary;
    auto t0 = Steady::now();
    // Between watches too, so that a long sweep does not let this member expire.
    if (fleet_.HeartbeatDue()) fleet_.Heartbeat();
    options->share = fleet_.ShareIn(w);
    if (config_.fleet.enabled) options->refresh_share = [this, &w] { return fleet_.Refresh(w); };
    sweeping = &w;
    txn_recovery::Sweeper sweeper(store_.get(), txn_recovery::Clock::Real(), *options);
    Status s = txn_recovery::SweepAndRetain(&sweeper, w, on_txn, &summary);
    double seconds = std::chrono::duration<double>(Steady::now() - t0).count();
    if (s.IsAborted() && requests_.stopping()) break;  // the drain, not a failure
    // A member whose sweep of a watch failed, or whose writes there were refused for a
    // privilege it lacks (a host deployed with the wrong role), cannot drive its share: the
    // others take it (docs/fleet.md).
    fleet_.NoteSweep(w, s.ok() && !refused, summary.resolved);
    refused = false;
    indexes_.Swept(summary);
    watch_metrics_.Record(w, summary, s, seconds, config_.fleet.enabled, store_.get(), out);
    watchdog_.Progress();
  }
}

RoundOutcome Daemon::DatabaseDown(const Status& ping) {
  RoundOutcome out;
  out.database_up = false;
  out.authentication_failed = ping.IsUnauthenticated();
  database_.PingFailed(ping, config_.mongodb.uri);
  watch_metrics_.RoundFailed(config_.watches);
  return out;
}

// Sweeps every interval (after a failed sweep: after the backoff) until asked to stop.
void Daemon::SweepUntilStopped() {
  milliseconds backoff = config_.daemon.backoff_initial;
  while (!requests_.stopping()) {
    bool reload = requests_.TakeReload();
    // A rotated URI is taken up without a signal: a Kubernetes Secret's file changes under
    // the running pod (the kubelet swaps its ..data symlink) and nobody sends SIGHUP; an
    // operator who rewrites mongodb.uri_file need not either. Read again before every round,
    // the file costs a read, and a changed one is a reload, which opens a new connection
    // (a libmongoc pool keeps the URI it was created with) only once the whole
    // configuration, the new URI included, is found sound.
    if (!reload && source_.UriFileChanged(config_)) {
      spdlog::info("{} holds a new URI: reloading", config_.mongodb.uri_source);
      reload = true;
    }
    if (reload) Reload();
    auto t0 = Steady::now();
    RoundOutcome o = SweepAll();
    auto took = duration_cast<milliseconds>(Steady::now() - t0);
    if (requests_.stopping()) break;
    milliseconds next;
    if (o.database_up) {
      backoff = config_.daemon.backoff_initial;
      next = jitter_(config_.daemon.interval, config_.daemon.jitter);
    } else {
      // The tagged-insert application's schedule, jittered so that hosts reconnecting after an
      // outage spread out.
      next = jitter_(backoff, config_.daemon.jitter);
      backoff = std::min(backoff * 2, config_.daemon.backoff_max);
    }
    notifier_.Status(StatusLine(o, took, next));
    round_counters_.Count(store_.get());
    WaitBeating(next, o.database_up);
  }
}

void Daemon::WaitBeating(milliseconds next, bool database_up) {
  for (auto until = Steady::now() + next; !requests_.stopping();) {
    const auto left = duration_cast<milliseconds>(until - Steady::now());
    if (left.count() <= 0) break;
    requests_.Wait(std::min(left, config_.fleet.heartbeat), [this] { watchdog_.Progress(); });
    if (requests_.reload_requested() || requests_.stopping() || Steady::now() >= until) break;
    if (database_up) fleet_.Heartbeat();
  }
}

void Daemon::ShutDown() {
  notifier_.Status("stopping: releasing leases");
  fleet_.Leave();
  store_.reset();
  if (http_) http_->Stop();
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
  drain_.Finish();
}

int Daemon::Run() {
  // Before any thread exists, so that every thread inherits the mask and only the watcher
  // receives these signals.
  BlockRunSignals();
  SignalWatcher watcher([this](int sig) { signals_.On(sig); });

  if (Status s = source_.Load(&config_); !s.ok()) {
    std::cerr << "txn-recoveryd: bad configuration: " << s.message() << "\n";
    return kExitConfig;
  }
  SetupLogging(config_.log.format, config_.log.level);
  PublishConfiguration();
  DescribeStandardMetrics(&metrics_, TXN_RECOVERYD_VERSION, Revision());
  for (const auto& unknown : UnknownEnvironmentVariables(ProcessEnvironmentNames()))
    spdlog::warn("unknown environment variable {} is ignored", unknown);
  metrics_.Set("txn_recoveryd_last_reload_successful", {}, 1);
  metrics_.Set("txn_recoveryd_last_reload_success_timestamp_seconds", {}, UnixSeconds());
  metrics_.Set("txn_recoveryd_database_up", {}, 0);
  watchdog_.Progress();

  if (Status s = OpenStore(config_, &store_); !s.ok()) {
    spdlog::error("bad configuration: {}", s.message());
    return kExitConfig;
  }
  fleet_.SetStore(store_.get());
  if (!config_.http.listen.empty()) {
    if (Status s = StartHttpEndpoint(config_.http, &metrics_, &watchdog_, &database_, &http_);
        !s.ok()) {
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

}  // namespace txn_recovery::daemon
