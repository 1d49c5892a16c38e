// What the files of txn-recovery-bench share: its options, a run's figures, the workload
// profiles, the sweeps it starts, its tables and JSON report, and the runs themselves, one
// file each (the list of runs and what each measures: main.cc).
//   main.cc          the command line (Options) and main()
//   session.cc       Main: the store, the profiles, the daemon's configuration; the runs in turn
//   profiles.cc      the workloads: seeding, the applications' own recovery, the limit, checks
//   sweeps.cc        `txn-recoveryd sweep` run and measured; the in-process examined sweep
//   output.cc        the Markdown tables and the JSON report
//   run_recovery.cc  sweep vs baseline vs limit; writes per transaction; side by side
//   run_idle.cc      idle sweeps; their cost, largest vs smallest N
//   run_dry.cc       dry runs
//   run_fleet.cc     sweeps at once (--fleet)
//   run_index_cost.cc  the application's writes with each index we may ask for; orphan scan
//   run_daemons.cc   a fleet of `txn-recoveryd run` daemons (--fleet-run) and --takeover
//   run_live.cc      the application's write latency while a backlog drains (--live-traffic)
//   run_hot.cc       a backlog on hot accounts against distinct ones (--hot-accounts)
//   run_propose.cc   the first hour: `propose` over N finished transactions, `rehearse`
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "child_process.h"
#include "support/server_probe.h"
#include "txn_recovery/base/document.h"
#include "txn_recovery/base/filter.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/stores/mongo_store.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::daemon {
struct Config;
}  // namespace txn_recovery::daemon

namespace txn_recovery::bench {

class WireCounter;

using Seconds = std::chrono::duration<double>;
using Steady = std::chrono::steady_clock;

// Throws std::runtime_error("what: <status>") unless `s` is ok.
void Check(const Status& s, const std::string& what);
// The server's clock.
DateTime ServerNow(Store* store);

// ---- A run's figures ----------------------------------------------------------------------

// Update commands sent and, by collection, the update statements in them and the documents
// those matched.
struct Writes {
  struct Of {
    std::int64_t statements = 0, matched = 0;
  };
  std::int64_t commands = 0;
  std::map<std::string, Of> by;

  void Add(const Writes& w) {
    commands += w.commands;
    for (const auto& [k, v] : w.by) {
      by[k].statements += v.statements;
      by[k].matched += v.matched;
    }
  }
  std::int64_t statements() const {
    std::int64_t t = 0;
    for (const auto& [k, v] : by) t += v.statements;
    return t;
  }
  std::int64_t matched() const {
    std::int64_t t = 0;
    for (const auto& [k, v] : by) t += v.matched;
    return t;
  }
};

struct RunResult {
  std::int64_t done = 0;  // transactions driven to a terminal state
  double seconds = 0;
  bool complete = true;  // false when the time budget ran out first
  std::int64_t round_trips = 0, documents_read = 0;
  double client_cpu = 0;  // the daemon's (sweeps) or the bench's own (baseline, limit)
  std::optional<double> server_cpu;
  long peak_rss_kb = -1;  // sweeps only: the daemon's own
  Writes writes;
  // Sweeps only: a sweep that did not end clean (exit code, the first watch's error), and
  // how many such sweeps were repeated before one did (SweepUntilClean).
  int exit_code = 0;
  std::string failure;
  int failed_sweeps = 0;
  // Transactions a sweep found leased by another (a failed sweep's claims, until their lease
  // expires) or could not drive, and the sweeps repeated for them after a clean one.
  std::int64_t left = 0;
  int follow_ups = 0;
};

struct Verified {
  std::string problem;  // empty when verified
  std::int64_t repeats = 0;
};

// ---- Profiles (profiles.cc) ----------------------------------------------------------------

class BenchProfile {
 public:
  virtual ~BenchProfile() = default;
  virtual std::string name() const = 0;
  // The [[watch]] tables recovering this profile's database, each with the `extra` keys.
  virtual std::string WatchToml(const std::string& database, const std::string& extra) const = 0;
  // The transactions collection of `database`, and the filter of its transactions not yet
  // terminal (what a fleet of `run` daemons has left to do).
  virtual Namespace Transactions(const std::string& database) const = 0;
  virtual Filter Unfinished() const = 0;
  // Drops `database` and fills it with `n` stuck transactions of a realistic mix of states
  // (and whatever participants they name), all of them due for recovery at `now`.
  virtual void SeedStuck(Store* store, const std::string& database, std::int64_t n,
                         DateTime now) = 0;
  // Drops `database` and fills it with `n` terminal transactions past the late-write
  // window: an idle sweep has nothing to do there.
  virtual void SeedTerminal(Store* store, const std::string& database, std::int64_t n,
                            DateTime now) = 0;
  // The applications' own recovery loop, one transaction at a time, until nothing is stale
  // or `deadline`.
  virtual RunResult Baseline(Store* store, const std::string& database, DateTime now,
                             Steady::time_point deadline) = 0;
  // The same writes as bulk writes without logic; returns how many transactions they cover.
  virtual RunResult Limit(Store* store, const std::string& database, std::int64_t n,
                          int threads) = 0;
  // Whether every transaction is terminal and the participants agree, reading `batch`
  // documents per reply; and how many documents the server returned twice meanwhile.
  virtual Verified Verify(Store* store, const std::string& database, std::int64_t n,
                          std::int32_t batch) = 0;
};

// The profile named `name` ("transfer", "operations"), or null. `per_account`: how many
// stuck transfers name each account (0: the usual mix, about eight).
std::unique_ptr<BenchProfile> MakeProfile(const std::string& name, std::int64_t per_account = 0);
// The transfer profile's transactions collection of `db` (TransferBench::Txns).
Namespace TransferTxns(const std::string& db);

// ---- Measuring ----------------------------------------------------------------------------

struct Options {
  std::string uri, daemon, server_state_dir, json_path;
  std::vector<std::int64_t> ns, idle, dry;
  std::vector<std::int64_t> fleet;  // sweeps at once (--fleet)
  std::int64_t fleet_n = 30'000;
  // A fleet of `run` daemons (--fleet-run: daemons at once; --takeover: one of three
  // killed, then stopped): their daemon.interval, and the take-over's short fleet timings.
  std::vector<std::int64_t> fleet_run;
  std::string fleet_interval = "1s";
  double fleet_timeout = 600;
  bool takeover = false;
  std::string takeover_heartbeat = "1s", takeover_expiry = "3s", takeover_interval = "1s",
              takeover_lease = "15s", takeover_resume_after = "5s";
  std::vector<double> takeover_stop{5, 20};
  std::string fleet_logs;                // a directory: every run daemon's JSON log is kept there
  std::string fleet_log_level = "info";  // "debug" adds each busy claim to their logs
  std::int64_t index_cost_writes = 0;    // --index-cost: the application's writes per round
  std::int64_t index_cost_accounts = 10'000;  // --index-cost-accounts: the accounts written
  std::int64_t writes_n = -1;                 // -1: the first of `ns`; 0: none
  // sweep.pace of the bench's daemons: 0 (unbounded), the server's own pace, unless a run
  // sets its own (--live-traffic).
  std::int64_t pace = 0;
  // --live-traffic: the application's transfers per second while a backlog of
  // --live-backlog drains, with no daemon and with each bound of --live-paces (0:
  // unbounded; the default, 100, as shipped); the application alone for --live-alone s.
  double live_rate = 0;
  std::int64_t live_backlog = 100'000;
  std::vector<std::int64_t> live_paces{0, 100};
  double live_alone = 30;
  int live_threads = 4;
  // --hot-accounts: the recovery of --hot-n stuck transfers with each account named by
  // this many of them (1: every account in one transfer, no two transfers share one).
  std::vector<std::int64_t> hot_accounts;
  std::int64_t hot_n = 20'000;
  // --propose: finished transactions under `propose` (and `rehearse` of the watch beside
  // them); its measured runs after an unshown first, its --sample (0: the daemon's default),
  // the rehearsals, and where the first proposal's text is kept.
  std::vector<std::int64_t> propose;
  int propose_runs = 3, rehearse_runs = 3;
  std::int64_t propose_sample = 0;
  std::string propose_out;
  std::vector<std::string> profiles{"transfer"};
  double baseline_budget = 600;
  int workers = 4, batch_size = 500, limit_threads = 4;
  int idle_sweeps = 3;
  int sweep_attempts = 10;
  std::int64_t warm_up = 10'000;  // --warm-up: stuck transactions of the unshown first round
  double idle_settle = 5;
  std::int32_t read_batch = 10'000;
  std::string database_prefix = "txnbench";
};

// The server's CPU time over a run, or nullopt when no server process is known.
class ServerMeter {
 public:
  explicit ServerMeter(const ProcessTreeCpu& tree) : tree_(tree), start_(tree.Seconds()) {}
  std::optional<double> Elapsed() const {
    std::optional<double> now = tree_.Seconds();
    if (!start_ || !now) return std::nullopt;
    return *now - *start_;
  }

 private:
  const ProcessTreeCpu& tree_;
  std::optional<double> start_;
};

// ---- Sweeps (sweeps.cc) -------------------------------------------------------------------

// /tmp/txn-recovery-bench-<pid><suffix>.
std::string TempPath(const std::string& suffix);

// The daemon's configuration: everything but the URI, which it reads from its environment.
std::string WriteConfig(const Options& o, const std::vector<std::string>& watches,
                        const std::string& suffix = ".toml");

// `k` sweeps started at once over the same stuck transactions, each of everything (several
// hosts that do not divide the work) or each with its own `--share i/k`: the wall time
// until the last ends, and their work summed (`left`: the claims that found a transaction
// busy or failed).
RunResult SweepsAtOnce(const Options& o, const std::string& config, const std::string& uri,
                       const ProcessTreeCpu& server, int k, bool shared);

// Waits up to three minutes for the server to answer again (after a restart): a count on
// `probe`, twice in a row a second apart. A ping is not enough: DocumentDB's gateway answers
// it while PostgreSQL is still in crash recovery.
void WaitForServer(MongoStore* store, const Namespace& probe);

// Sweeps until one ends clean, as `txn-recoveryd run` would: a sweep the server fails (a
// DocumentDB backend that crashes restarts every connection) exits 1 and the next goes on,
// up to --sweep-attempts (10). With `sum` (a recovery), it also sweeps again, every 10 s, as
// long as a sweep leaves transactions busy or failed (a failed sweep's claims stay leased
// until their lease expires, 60 s by default), and the figures are those of all the sweeps,
// from the first start to the last end: its work is what every sweep did. Without (an idle
// or dry-run sample), the clean sweep's alone. Either way the failed ones are counted.
RunResult SweepUntilClean(const Options& o, const std::string& config, const std::string& uri,
                          const ProcessTreeCpu& server, MongoStore* store, bool sum,
                          bool dry_run = false);

// The update commands and statements a sweep sends and the documents they matched, counted
// by a forwarder between the daemon and the server (wire_counter.h).
Writes Counted(WireCounter* counter);

// What one idle sweep's reads cost the server, summed over them: by the server's own account
// where it answers explain ("executionStats"), else by replaying each read alone and timing
// it (the embedded server), which at least names the read that costs.
struct ServerWork {
  bool explained = false;
  int reads = 0;
  int collection_scans = 0;
  std::int64_t keys_examined = 0, docs_examined = 0, returned = 0;
  std::int64_t blocks = -1;  // PostgreSQL's pages touched (DocumentDB), -1 where not said
  double replay_seconds = 0, slowest_seconds = 0;
  std::string costliest;  // the read that examined the most (or took longest), and its plan
  nlohmann::json each = nlohmann::json::array();  // every read with its figures and plan

  void Add(const ServerWork& w) {
    explained = w.explained;
    reads += w.reads;
    collection_scans += w.collection_scans;
    keys_examined += w.keys_examined;
    docs_examined += w.docs_examined;
    returned += w.returned;
    if (w.blocks >= 0) blocks = std::max<std::int64_t>(blocks, 0) + w.blocks;
    replay_seconds += w.replay_seconds;
    for (const auto& r : w.each) each.push_back(r);
    if (w.slowest_seconds >= slowest_seconds || costliest.empty()) {
      slowest_seconds = w.slowest_seconds;
      costliest = w.costliest;
    }
  }
};

// The bench's configuration file as the daemon reads it, the URI from the environment the
// daemons get (never the file).
txn_recovery::daemon::Config DaemonConfig(const std::string& config_path, const std::string& uri);

// The same sweep as `txn-recoveryd sweep --json` (the daemon's RunSweep on the daemon's
// configuration file), run in this process through a QueryLog, then every read it sent
// explained by the server, or replayed and timed where the server does not answer explain:
// the work each read costs, which neither round trips nor documents returned show. `probe`
// is a collection that exists.
ServerWork ExamineSweep(MongoStore* store, const std::string& config_path, const std::string& uri,
                        const Namespace& probe);

// The indexes the daemon's queries need, created here by the daemon's own code
// (PrepareIndexes, on the bench's configuration) after the data is seeded and before a fleet
// starts, as a fleet finds them in production: on DocumentDB the first daemon to create
// them waited 10-12 s for 2,000 transfers, which a drain time must not include.
void CreateIndexes(Store* store, const std::string& config_path, const std::string& uri);

// ---- Output (output.cc) -------------------------------------------------------------------

std::string Fmt(const char* f, double v);
std::string Int(std::int64_t v);
std::string Opt(const std::optional<double>& v, const char* f = "%.2f");
std::string MiB(long kb);
std::string Per(double v, std::int64_t n, const char* f = "%.2f");

// A Markdown table printed row by row as the figures come; its header before the first.
class Table {
 public:
  Table(std::string title, std::vector<std::string> headers)
      : title_(std::move(title)), headers_(std::move(headers)) {}
  void Print(const std::vector<std::string>& cells);

 private:
  void Line(const std::vector<std::string>& cells);
  std::string title_;
  std::vector<std::string> headers_;
  std::vector<std::size_t> widths_;
  bool printed_ = false;
};

// The --json report, rewritten after every row so that a run cut short keeps its figures.
class JsonReport {
 public:
  explicit JsonReport(std::string path) : path_(std::move(path)) {
    doc_["rows"] = nlohmann::json::array();
  }
  nlohmann::json& doc() { return doc_; }
  void Add(nlohmann::json row) {
    doc_["rows"].push_back(std::move(row));
    Save();
  }
  void Save() const;

 private:
  std::string path_;
  nlohmann::json doc_;
};

nlohmann::json Json(const std::optional<double>& v);
nlohmann::json Json(const RunResult& r);
nlohmann::json Json(const Writes& w);

// /proc/loadavg's three figures.
std::string LoadAverage();

// "; 1 sweep failed (...) and the next went on", recorded in `row` too; empty if none did.
std::string Failures(const RunResult& r, nlohmann::json* row);

// ---- The runs -----------------------------------------------------------------------------

// One N of the recovery runs.
struct Summary {
  std::int64_t n;
  RunResult sweep, baseline, limit, limit_bare;
};

// One N of the idle sweeps.
struct IdleFigures {
  std::int64_t n;
  RunResult median;
  ServerWork work;
};

// What the runs share (Main sets it up): the options, the store, the profiles and their
// databases, the daemon's configuration file, the server's processes, the JSON report; and
// the runs themselves, each in a file of its own.
struct Session {
  explicit Session(const Options& options) : o(options), report(options.json_path) {}

  const Options& o;
  std::unique_ptr<MongoStore> store;
  std::vector<std::unique_ptr<BenchProfile>> profiles;
  std::string config;      // the daemon's configuration file (WriteConfig)
  std::int64_t share = 1;  // every profile gets n / share of the transactions
  ProcessTreeCpu server;
  JsonReport report;
  std::string uri;

  std::string db_of(const BenchProfile& p) const { return o.database_prefix + "_" + p.name(); }
  // Every profile's database seeded with its share of `n` stuck (or terminal) transactions.
  void seed(std::int64_t n, bool terminal) const;
  // "verified" or what is wrong, recorded in `row` too.
  std::string verify(std::int64_t n, nlohmann::json* row) const;
  // The server's bulk-write limit over the same stuck transactions, with the daemon's
  // indexes on the collections (as they are wherever the daemon runs) or without them (the
  // stock collections: what the indexes cost the application is measured by --index-cost).
  RunResult limit(std::int64_t n, bool indexed) const;

  // run_recovery.cc: sweep, baseline, limit and limit on _id only for each --n.
  std::vector<Summary> RunRecovery();
  // run_recovery.cc: the writes per recovered transaction (the sweep's counted on the wire).
  void RunWrites(const std::vector<Summary>& summaries);
  // run_idle.cc: idle sweeps for each --idle, and their cost largest vs smallest N.
  std::vector<IdleFigures> RunIdle();
  // run_dry.cc: dry-run sweeps for each --dry-run-n.
  void RunDry();
  // run_fleet.cc: sweeps at once (--fleet).
  void RunFleet();
  // run_index_cost.cc: the application's own writes with each index the daemon may ask for.
  void RunIndexCost();
  // run_daemons.cc: a fleet of `txn-recoveryd run` daemons (--fleet-run) and --takeover.
  void RunDaemons();
  // run_live.cc: the application's write latency while a backlog drains (--live-traffic).
  void RunLive();
  // run_hot.cc: a backlog on hot accounts against the same on distinct ones (--hot-accounts).
  void RunHot();
  // The daemon's configuration file for `profiles` with sweep.pace `pace` (WriteConfig).
  std::string ConfigWithPace(std::int64_t pace) const;
  // run_propose.cc: `propose` over --propose finished transactions, `rehearse` of the watch.
  void RunFirstHour();
};

// The whole bench (session.cc); the exit code.
int Main(const Options& o);

// run_recovery.cc: the recovery runs side by side.
void PrintSideBySide(const std::vector<Summary>& summaries);
// run_idle.cc: the idle sweeps' cost, largest vs smallest N.
void PrintIdleRatio(const std::vector<IdleFigures>& idles);

}  // namespace txn_recovery::bench
