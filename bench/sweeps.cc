// `txn-recoveryd sweep` as an operator runs it, measured from outside (bench.h: Sweeps), and
// the same sweep run in this process and examined read by read.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "daemon/commands/index_check.h"
#include "daemon/commands/sweep_command.h"
#include "daemon/configuration/config.h"
#include "wire_counter.h"

namespace txn_recovery::bench {

std::string TempPath(const std::string& suffix) {
  return "/tmp/txn-recovery-bench-" + std::to_string(getpid()) + suffix;
}

// The daemon's configuration: everything but the URI, which it reads from its environment.
std::string WriteConfig(const Options& o, const std::vector<std::string>& watches,
                        const std::string& suffix) {
  std::string path = TempPath(suffix);
  std::ofstream f(path);
  f << "[mongodb]\nsocket_timeout = \"10m\"\n"
    << "[sweep]\nworkers = " << o.workers << "\nbatch_size = " << o.batch_size
    << "\npace = " << o.pace << "\nmanage_indexes = true\n[log]\nlevel = \"warn\"\n";
  for (const auto& w : watches) f << w;
  return path;
}

namespace {

// One `txn-recoveryd sweep --json` (with `extra` arguments) reaching the server whose URI
// is in TXN_RECOVERYD_MONGODB_URI; `tag` tells apart the output files of sweeps run at once.
RunResult SweepWith(const Options& o, const std::string& config, const ProcessTreeCpu& server,
                    const std::vector<std::string>& extra, const std::string& tag = "") {
  std::vector<std::string> args = {"sweep", "--json", "--config", config};
  args.insert(args.end(), extra.begin(), extra.end());
  const std::string out_path = TempPath(tag + ".out");
  ServerMeter meter(server);
  ChildRun c = RunChild(o.daemon, args, out_path);
  RunResult r;
  r.server_cpu = meter.Elapsed();
  std::string out;
  {
    std::ifstream in(out_path);
    std::stringstream ss;
    ss << in.rdbuf();
    out = ss.str();
  }
  std::remove(out_path.c_str());
  if (c.term_signal)
    throw std::runtime_error("sweep ended on signal " + std::to_string(c.term_signal));
  // A dry run lists every planned transaction (a million lines at the largest size); only
  // the summary is read here, so the list is dropped while parsing. A sweep that failed
  // (exit 1: the server went away mid-sweep, say) still writes its report.
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(
        out, [](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          return !(event == nlohmann::json::parse_event_t::key && parsed == "transactions");
        });
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("sweep exited " + std::to_string(c.exit_code) +
                             " without a readable report");
  }
  r.exit_code = c.exit_code;
  for (const auto& w : doc["watches"])
    if (w.contains("status") && w["status"] != "ok" && r.failure.empty())
      r.failure = w["status"].get<std::string>();
  r.seconds = c.seconds;
  r.client_cpu = c.cpu_seconds;
  r.peak_rss_kb = c.peak_rss_kb;
  r.round_trips = doc["wire"]["round_trips"].get<std::int64_t>();
  r.documents_read = doc["wire"]["documents_read"].get<std::int64_t>();
  for (const auto& w : doc["watches"]) {
    r.done += w["resolved"].get<std::int64_t>();
    r.left += w["busy"].get<std::int64_t>() + w["failed"].get<std::int64_t>();
  }
  return r;
}

// One `txn-recoveryd sweep --json` reaching the server at `uri`.
RunResult Sweep(const Options& o, const std::string& config, const std::string& uri,
                const ProcessTreeCpu& server, bool dry_run = false) {
  setenv("TXN_RECOVERYD_MONGODB_URI", uri.c_str(), 1);
  return SweepWith(o, config, server,
                   dry_run ? std::vector<std::string>{"--dry-run"} : std::vector<std::string>{});
}

}  // namespace

// `k` sweeps started at once over the same stuck transactions, each of everything (several
// hosts that do not divide the work) or each with its own `--share i/k`: the wall time
// until the last ends, and their work summed (`left`: the claims that found a transaction
// busy or failed).
RunResult SweepsAtOnce(const Options& o, const std::string& config, const std::string& uri,
                       const ProcessTreeCpu& server, int k, bool shared) {
  setenv("TXN_RECOVERYD_MONGODB_URI", uri.c_str(), 1);
  std::vector<RunResult> results(static_cast<std::size_t>(k));
  std::vector<std::string> errors(static_cast<std::size_t>(k));
  ServerMeter meter(server);
  const auto t0 = Steady::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < k; ++i)
    threads.emplace_back([&, i] {
      std::vector<std::string> extra;
      if (shared) extra = {"--share", std::to_string(i) + "/" + std::to_string(k)};
      try {
        results[static_cast<std::size_t>(i)] =
            SweepWith(o, config, server, extra, "-" + std::to_string(i));
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(i)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  RunResult total;
  total.seconds = Seconds(Steady::now() - t0).count();
  total.server_cpu = meter.Elapsed();
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!errors[i].empty())
      throw std::runtime_error("sweep " + std::to_string(i) + ": " + errors[i]);
    const RunResult& r = results[i];
    total.done += r.done;
    total.left += r.left;
    total.round_trips += r.round_trips;
    total.documents_read += r.documents_read;
    total.client_cpu += r.client_cpu;
    total.peak_rss_kb = std::max(total.peak_rss_kb, r.peak_rss_kb);
    if (r.exit_code != 0 && total.failure.empty())
      total.failure = "exit " + std::to_string(r.exit_code) + ": " + r.failure;
  }
  return total;
}

// Waits up to three minutes for the server to answer again (after a restart): a count on
// `probe`, twice in a row a second apart. A ping is not enough: DocumentDB's gateway answers
// it while PostgreSQL is still in crash recovery.
void WaitForServer(MongoStore* store, const Namespace& probe) {
  const auto deadline = Steady::now() + std::chrono::minutes(3);
  for (int ok = 0; ok < 2;) {
    std::int64_t n = 0;
    ok = store->Count(probe, Filter(), &n).ok() ? ok + 1 : 0;
    if (Steady::now() > deadline) throw std::runtime_error("the server did not come back");
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// Sweeps until one ends clean, as `txn-recoveryd run` would: a sweep the server fails (a
// DocumentDB backend that crashes restarts every connection) exits 1 and the next goes on,
// up to --sweep-attempts (10). With `sum` (a recovery), it also sweeps again, every 10 s, as
// long as a sweep leaves transactions busy or failed (a failed sweep's claims stay leased
// until their lease expires, 60 s by default), and the figures are those of all the sweeps,
// from the first start to the last end: its work is what every sweep did. Without (an idle
// or dry-run sample), the clean sweep's alone. Either way the failed ones are counted.
RunResult SweepUntilClean(const Options& o, const std::string& config, const std::string& uri,
                          const ProcessTreeCpu& server, MongoStore* store, bool sum, bool dry_run) {
  RunResult total;
  ServerMeter meter(server);
  const auto t0 = Steady::now();
  for (int attempt = 1;;) {
    RunResult r = Sweep(o, config, uri, server, dry_run);
    if (sum) {
      total.done += r.done;
      total.client_cpu += r.client_cpu;
      total.round_trips += r.round_trips;
      total.documents_read += r.documents_read;
      total.peak_rss_kb = std::max(total.peak_rss_kb, r.peak_rss_kb);
    }
    if (r.exit_code == 0 && !sum) {
      r.failed_sweeps = total.failed_sweeps;
      r.failure = total.failure;
      return r;
    }
    if (r.exit_code == 0 && r.left == 0) break;
    if (r.exit_code == 0) {
      if (++total.follow_ups > 30)
        throw std::runtime_error(std::to_string(r.left) + " transactions still left after " +
                                 std::to_string(total.follow_ups) + " sweeps");
      std::fprintf(stderr, "txn-recovery-bench: %lld transactions busy or failed; sweeping again\n",
                   static_cast<long long>(r.left));
      std::this_thread::sleep_for(std::chrono::seconds(10));
      continue;
    }
    ++total.failed_sweeps;
    total.failure = "exit " + std::to_string(r.exit_code) + ": " + r.failure;
    if (attempt++ >= o.sweep_attempts)
      throw std::runtime_error("sweep failed " + std::to_string(total.failed_sweeps) +
                               " times, the last with " + total.failure);
    std::fprintf(stderr, "txn-recovery-bench: a sweep failed (%s); sweeping again\n",
                 total.failure.c_str());
    WaitForServer(store, Namespace{o.database_prefix + "_probe", "probe"});
  }
  total.seconds = Seconds(Steady::now() - t0).count();
  total.server_cpu = meter.Elapsed();
  return total;
}

// The update commands and statements a sweep sends and the documents they matched, counted
// by a forwarder between the daemon and the server (wire_counter.h).
Writes Counted(WireCounter* counter) {
  Writes w;
  for (const auto& [collection, k] : counter->Take()) {
    w.commands += k.commands;
    w.by[collection].statements += k.statements;
    w.by[collection].matched += k.matched;
  }
  return w;
}

// The bench's configuration file as the daemon reads it, the URI from the environment the
// daemons get (never the file).
txn_recovery::daemon::Config DaemonConfig(const std::string& config_path, const std::string& uri) {
  txn_recovery::daemon::Config config;
  Check(txn_recovery::daemon::LoadConfig(
            config_path,
            [&](const std::string& name) -> std::optional<std::string> {
              if (name == "TXN_RECOVERYD_MONGODB_URI") return uri;
              return std::nullopt;
            },
            &config),
        "the daemon's configuration");
  return config;
}

// The same sweep as `txn-recoveryd sweep --json` (the daemon's RunSweep on the daemon's
// configuration file), run in this process through a QueryLog, then every read it sent
// explained by the server, or replayed and timed where the server does not answer explain:
// the work each read costs, which neither round trips nor documents returned show. `probe`
// is a collection that exists.
ServerWork ExamineSweep(MongoStore* store, const std::string& config_path, const std::string& uri,
                        const Namespace& probe) {
  QueryPlan plan;
  ServerWork w;
  w.explained =
      Explain(store, {ReadQuery::Kind::kFind, probe, Filter().Eq("_id", 1), {}}, &plan).ok();
  const txn_recovery::daemon::Config config = DaemonConfig(config_path, uri);
  QueryLog log(store);
  txn_recovery::daemon::SweepCommandOptions options;
  options.json = true;
  std::ostringstream report;
  if (int code = txn_recovery::daemon::RunSweep(config, &log, options, report); code != 0)
    throw std::runtime_error("the in-process sweep exited " + std::to_string(code));
  std::int64_t widest = -1;
  for (const ReadQuery& q : log.reads()) {
    ++w.reads;
    if (w.explained) {
      Check(Explain(store, q, &plan), "explain " + q.ToString());
      if (plan.collection_scan) ++w.collection_scans;
      w.keys_examined += plan.keys_examined;
      w.docs_examined += plan.docs_examined;
      w.returned += plan.returned;
      if (plan.blocks >= 0) w.blocks = std::max<std::int64_t>(w.blocks, 0) + plan.blocks;
      w.each.push_back({{"read", q.ToString()},
                        {"keys_examined", plan.keys_examined},
                        {"docs_examined", plan.docs_examined},
                        {"blocks", plan.blocks},
                        {"returned", plan.returned},
                        {"collection_scan", plan.collection_scan},
                        {"plan", plan.summary}});
      if (plan.keys_examined + plan.docs_examined > widest) {
        widest = plan.keys_examined + plan.docs_examined;
        w.costliest = q.ToString() + ": " + plan.summary;
      }
      continue;
    }
    const auto t0 = Steady::now();
    if (q.kind == ReadQuery::Kind::kCount) {
      std::int64_t n = 0;
      Check(store->Count(q.ns, q.filter, &n), "count " + q.ToString());
      w.returned += 1;
    } else {
      std::unique_ptr<Cursor> c;
      Check(store->Find(q.ns, q.filter, q.options, &c), "find " + q.ToString());
      Document d;
      for (bool has = true;;) {
        Check(c->Next(&d, &has), "read " + q.ToString());
        if (!has) break;
        ++w.returned;
      }
    }
    const double seconds = Seconds(Steady::now() - t0).count();
    w.each.push_back({{"read", q.ToString()}, {"seconds", seconds}});
    w.replay_seconds += seconds;
    if (seconds >= w.slowest_seconds) {
      w.slowest_seconds = seconds;
      w.costliest = q.ToString();
    }
  }
  return w;
}

// The indexes the daemon's queries need, created here by the daemon's own code
// (PrepareIndexes, on the bench's configuration) after the data is seeded and before a fleet
// starts, as a fleet finds them in production: on DocumentDB the first daemon to create
// them waited 10-12 s for 2,000 transfers, which a drain time must not include.
void CreateIndexes(Store* store, const std::string& config_path, const std::string& uri) {
  const txn_recovery::daemon::Config config = DaemonConfig(config_path, uri);
  Check(txn_recovery::daemon::PrepareIndexes(config, store, /*dry_run=*/false),
        "create the indexes");
}

}  // namespace txn_recovery::bench
