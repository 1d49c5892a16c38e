// Main: the bench's session (the store, the profiles and their databases, the daemon's
// configuration file, the server's processes, the JSON report), set up once, then every run
// asked for, in turn (bench.h: The runs).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"

namespace txn_recovery::bench {

void Check(const Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(what + ": " + s.ToString());
}

DateTime ServerNow(Store* store) {
  DateTime now;
  Check(store->ServerTime(&now), "server time");
  return now;
}

void Session::seed(std::int64_t n, bool terminal) const {
  auto t0 = Steady::now();
  for (const auto& p : profiles) {
    DateTime now = ServerNow(store.get());
    if (terminal) {
      p->SeedTerminal(store.get(), db_of(*p), n / share, now);
    } else {
      p->SeedStuck(store.get(), db_of(*p), n / share, now);
    }
  }
  std::fprintf(stderr, "seeded %lld %s transactions in %.1fs\n", static_cast<long long>(n),
               terminal ? "terminal" : "stuck", Seconds(Steady::now() - t0).count());
}

std::string Session::verify(std::int64_t n, nlohmann::json* row) const {
  std::string problems;
  std::int64_t repeats = 0;
  for (const auto& p : profiles) {
    Verified v = p->Verify(store.get(), db_of(*p), n / share, o.read_batch);
    repeats += v.repeats;
    if (!v.problem.empty())
      problems += (problems.empty() ? "" : "; ") + p->name() + ": " + v.problem;
  }
  (*row)["verified"] = problems.empty();
  (*row)["repeats_read"] = repeats;
  if (!problems.empty()) (*row)["problem"] = problems;
  std::string text = problems.empty() ? "verified" : "NOT VERIFIED: " + problems;
  if (repeats)
    text +=
        " (the server returned " + std::to_string(repeats) + " documents twice; each counted once)";
  return text;
}

RunResult Session::limit(std::int64_t n, bool indexed) const {
  seed(n, false);
  if (indexed) CreateIndexes(store.get(), config, uri);
  RunResult sum;
  ServerMeter meter(server);
  for (const auto& p : profiles) {
    RunResult r = p->Limit(store.get(), db_of(*p), n / share, o.limit_threads);
    sum.done += r.done;
    sum.seconds += r.seconds;
    sum.client_cpu += r.client_cpu;
    sum.round_trips += r.round_trips;
    sum.documents_read += r.documents_read;
    sum.writes.Add(r.writes);
  }
  sum.server_cpu = meter.Elapsed();
  return sum;
}

std::string Session::ConfigWithPace(std::int64_t pace) const {
  Options paced = o;
  paced.pace = pace;
  std::vector<std::string> watches;
  for (const auto& p : profiles) watches.push_back(p->WatchToml(db_of(*p), ""));
  return WriteConfig(paced, watches, "-pace" + std::to_string(pace) + ".toml");
}

int Main(const Options& o) {
  // The daemon's code run in this process (RunSweep in ExamineSweep, PrepareIndexes) logs: to
  // stderr, not into the tables.
  spdlog::set_default_logger(spdlog::stderr_color_mt("txn-recovery-bench"));
  spdlog::set_level(spdlog::level::warn);
  MongoDriver driver;
  MongoOptions mo;
  mo.uri = o.uri;
  mo.socket_timeout = std::chrono::minutes(10);
  mo.max_pool_size = o.limit_threads + 2;
  Session session(o);
  auto& store = session.store;
  auto& profiles = session.profiles;
  Check(MongoStore::Open(mo, &store), "open");
  Check(store->Ping(), "ping");
  for (const auto& name : o.profiles) {
    auto p = MakeProfile(name);
    if (!p) throw std::runtime_error("unknown profile " + name);
    profiles.push_back(std::move(p));
  }
  std::vector<std::string> watches;
  for (const auto& p : profiles) watches.push_back(p->WatchToml(session.db_of(*p), ""));
  session.config = WriteConfig(o, watches);
  const std::string& config = session.config;
  // Every profile gets n / profiles of the transactions.
  session.share = static_cast<std::int64_t>(profiles.size());
  session.server = o.server_state_dir.empty() ? ProcessTreeCpu()
                                              : ProcessTreeCpu::FromStateDir(o.server_state_dir);
  const ProcessTreeCpu& server = session.server;
  if (!o.server_state_dir.empty() && !server.Seconds())
    throw std::runtime_error("no live server process named in " + o.server_state_dir);

  JsonReport& report = session.report;
  const std::string server_text =
      server.empty()
          ? "not measured (no --server-state-dir)"
          : server.description() + " (" + std::to_string(server.Processes()) + " processes now)";
  std::printf("profiles:");
  for (const auto& p : profiles) std::printf(" %s", p->name().c_str());
  std::printf(
      "; sweep: %d workers, batch %d; limit: %d threads of 1000-write bulks\n"
      "server CPU: %s\nmachine: %u cores, load average %s at the start\n",
      o.workers, o.batch_size, o.limit_threads, server_text.c_str(),
      std::thread::hardware_concurrency(), LoadAverage().c_str());
  report.doc()["config"] = {{"profiles", o.profiles},
                            {"workers", o.workers},
                            {"batch_size", o.batch_size},
                            {"limit_threads", o.limit_threads},
                            {"baseline_budget_seconds", o.baseline_budget},
                            {"idle_sweeps", o.idle_sweeps},
                            {"read_batch", o.read_batch}};
  report.doc()["server"] = server_text;
  report.doc()["machine"] = {{"cores", std::thread::hardware_concurrency()},
                             {"load_average_start", LoadAverage()}};

  session.uri = o.uri;
  const std::string& uri = session.uri;
  // Every run below starts from collections that hold the daemon's indexes, built before the
  // clock starts (a deployed daemon finds them built), and from a warm server: a sweep and a
  // limit of --warm-up transactions first, not shown. The embedded server compiled its hot
  // paths during the first run measured, which made a sweep measured first 1.5 times as slow
  // as the same sweep repeated, while the limit, measured after it, ran warm.
  const bool measures_recovery = !o.ns.empty() || o.live_rate > 0 || !o.hot_accounts.empty();
  if (measures_recovery && o.warm_up > 0) {
    session.seed(o.warm_up, false);
    CreateIndexes(store.get(), config, uri);
    (void)SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/true);
    (void)session.limit(o.warm_up, true);
    std::fprintf(stderr, "warmed up the server with a sweep and a limit of %lld\n",
                 static_cast<long long>(o.warm_up));
  }
  const std::vector<Summary> summaries = session.RunRecovery();
  session.RunWrites(summaries);
  const std::vector<IdleFigures> idles = session.RunIdle();
  session.RunDry();
  PrintSideBySide(summaries);
  PrintIdleRatio(idles);
  if (!o.fleet.empty()) session.RunFleet();
  if (o.index_cost_writes > 0) session.RunIndexCost();
  if (!o.fleet_run.empty() || o.takeover) session.RunDaemons();
  if (!o.hot_accounts.empty()) session.RunHot();
  if (o.live_rate > 0) session.RunLive();
  session.RunFirstHour();
  std::printf("\nload average at the end: %s\n", LoadAverage().c_str());
  report.doc()["machine"]["load_average_end"] = LoadAverage();
  report.Save();
  for (const auto& p : profiles) (void)DropDatabase(store.get(), session.db_of(*p));
  std::remove(config.c_str());
  return 0;
}

}  // namespace txn_recovery::bench
