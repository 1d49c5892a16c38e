// txn-recovery-bench: how fast stuck transactions are cleared, against the two references
// that matter, on the same data, and what an idle sweep costs the server:
//   sweep     `txn-recoveryd sweep` as an operator runs it (a separate process: its wall
//             time, its CPU time and its own peak RSS (child_process.h), its round trips and
//             documents read from its --json report);
//   baseline  the applications' own step-by-step recovery loop, as a user writes it from
//             the MongoDB manual's two-phase-commit transfer: find one stale transaction,
//             replay its steps one update at a time, repeat;
//   limit     the server's own limit: the same writes, no reads, no guards, no leases,
//             as unordered bulk writes (phase by phase so that every $push precedes its
//             $pull);
//   writes    the update commands, their statements and the documents they matched per
//             recovered transfer
//             (the sweep's counted on the wire by a forwarder, the others' as they send them);
//   idle      sweeps over terminal transactions only, after a first sweep has built the
//             indexes: their wall time, the daemon's and the server's CPU time next to
//             their round trips and documents returned, and, on servers that answer
//             explain, the index keys and documents the server examined for the same sweep
//             run in-process through a QueryLog (tests/support/query_log.h);
//   dry-run   a sweep that plans every stuck transaction and writes nothing (memory);
//   fleet     k sweeps started at once over the same stuck transactions, each of everything
//             or each of its `--share i/k` (docs/fleet.md): the claims that found a
//             transaction busy and the documents read per transaction resolved;
//   fleet-run k `txn-recoveryd run` daemons started at once, a fleet dividing the same
//             stuck transactions (docs/fleet.md): the time until the last is resolved, each
//             daemon's busy claims (its /metrics) and what each resolved (its JSON log);
//   takeover  three run daemons, one SIGKILLed once a third of the backlog is resolved: how
//             long its share waits for the others; then one SIGSTOPped past the fleet's
//             expiry and continued: whether any transaction was resolved by two of them.
//   propose   `txn-recoveryd propose` over N finished transactions, and `rehearse` of the
//             watch beside them: the first hour's commands (issue 43's times).
// The server's CPU time is read from /proc for the processes named by the test server's
// state directory (--server-state-dir); the bench and the server share the machine.
//
// The URI comes from TXN_RECOVERY_TEST_URI or TXN_RECOVERYD_MONGODB_URI (never argv) and
// reaches the daemon through its environment (never its configuration file).
// scripts/bench.sh starts the embedded server and runs the whole set.
//
// Workloads are profiles (BenchProfile, bench.h); `--profiles` picks the mix. Every profile
// seeds its own database with a deterministic plan (the same data for each of the three
// runs), and verifies the end state after each, reading in batches and counting each _id
// once (a server may return a document twice within one cursor: DocumentDB does).
//
// The bench is split by measurement, each run in a file of its own (bench.h lists them); this
// file holds its command line.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench.h"

namespace {

std::vector<std::int64_t> ParseList(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(std::stoll(item));
  return out;
}

}  // namespace

using txn_recovery::bench::Main;
using txn_recovery::bench::Options;

// An exception out of main ends the tool with its message (std::terminate), as a
// benchmark tool may.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "txn-recovery-bench: the daemon's sweep vs the applications' own step-by-step recovery "
      "loop vs the server's bulk-write limit; idle sweeps; dry runs"};
  Options o;
  std::string ns = "1000,10000", idle = "10000", profiles = "transfer";
  o.daemon = TXN_RECOVERYD_BINARY;
  app.add_option("--n", ns, "Stuck transactions per recovery run, comma-separated");
  app.add_option("--idle", idle, "Terminal transactions for the idle sweeps (empty: none)");
  std::string dry;
  app.add_option("--dry-run-n", dry, "Stuck transactions for dry-run sweeps (memory)");
  app.add_option("--writes-n", o.writes_n,
                 "Stuck transactions for the sweep whose writes are counted through a wire "
                 "proxy (default: the first --n; 0: none)");
  app.add_option("--profiles", profiles,
                 "Comma-separated mix of profiles (transfer, operations: mongoose operations)");
  app.add_option("--baseline-budget", o.baseline_budget, "Seconds the baseline may run per N");
  app.add_option("--warm-up", o.warm_up,
                 "Stuck transactions of a sweep and a limit run first, not shown, so that no "
                 "measured run pays for the server's warm-up (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--workers", o.workers, "sweep.workers of the daemon");
  app.add_option("--batch-size", o.batch_size, "sweep.batch_size of the daemon");
  app.add_option("--limit-threads", o.limit_threads, "Threads issuing the limit's bulk writes");
  app.add_option("--idle-sweeps", o.idle_sweeps, "Measured idle sweeps per N (the median shown)")
      ->check(CLI::Range(1, 100));
  app.add_option("--sweep-attempts", o.sweep_attempts,
                 "Sweeps tried before a failing one stops the bench (the server went away); "
                 "failures are reported with the figures")
      ->check(CLI::Range(1, 100));
  app.add_option("--idle-settle", o.idle_settle,
                 "Seconds between the first idle sweep (which builds the indexes) and the "
                 "measured ones");
  app.add_option("--read-batch", o.read_batch, "Documents per reply when the bench verifies")
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--server-state-dir", o.server_state_dir,
                 "The test server's state directory (scripts/testdb-start.sh): its processes' "
                 "CPU time is measured");
  std::string fleet;
  app.add_option("--fleet", fleet,
                 "Sweeps run at once, comma-separated (e.g. 1,2,3): each count twice, every "
                 "sweep of everything, then each of its --share (empty: none)");
  app.add_option("--fleet-n", o.fleet_n,
                 "Stuck transactions for the --fleet, --fleet-run and --takeover runs");
  std::string fleet_run, takeover_stop = "5,20";
  app.add_option("--fleet-run", fleet_run,
                 "`txn-recoveryd run` daemons started at once, comma-separated (e.g. 1,2,3): "
                 "each count drains --fleet-n stuck transactions as a fleet (empty: none)");
  app.add_option("--fleet-interval", o.fleet_interval,
                 "daemon.interval of the --fleet-run daemons");
  app.add_option("--fleet-timeout", o.fleet_timeout,
                 "Seconds a fleet of run daemons may take to drain before the row fails");
  app.add_flag("--takeover", o.takeover,
               "3 run daemons on --fleet-n stuck transactions: one SIGKILLed once a third is "
               "resolved, then (a run each) one SIGSTOPped for each --takeover-stop");
  app.add_option("--fleet-logs", o.fleet_logs,
                 "A directory where each run daemon's JSON log is kept (runN-daemonI.jsonl)");
  app.add_option("--fleet-log-level", o.fleet_log_level,
                 "log.level of the run daemons (info; debug logs every busy claim, for a look "
                 "at --fleet-logs, and costs time)");
  app.add_option("--takeover-stop", takeover_stop,
                 "Seconds of each take-over SIGSTOP, comma-separated (empty: none)");
  app.add_option("--takeover-heartbeat", o.takeover_heartbeat, "fleet.heartbeat of the take-over");
  app.add_option("--takeover-expiry", o.takeover_expiry, "fleet.expiry of the take-over");
  app.add_option("--takeover-interval", o.takeover_interval, "daemon.interval of the take-over");
  app.add_option("--takeover-lease", o.takeover_lease, "sweep.lease of the take-over (>= 15s)");
  app.add_option("--takeover-resume-after", o.takeover_resume_after,
                 "resume_after of the take-over's watch");
  app.add_option("--index-cost", o.index_cost_writes,
                 "The application's writes to its accounts per round, with and without each "
                 "index the daemon may ask for there, and one orphan scan of them after each "
                 "round (0: not measured)");
  app.add_option("--index-cost-accounts", o.index_cost_accounts,
                 "The accounts of --index-cost (the orphan scan without indexes reads them all)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000'000}));
  std::string live_paces = "0,100", hot_accounts;
  app.add_option("--live-traffic", o.live_rate,
                 "The application's transfers per second while a backlog drains, with no "
                 "daemon and with each --live-paces (0: no such run)");
  app.add_option("--live-backlog", o.live_backlog, "The stuck transfers of --live-traffic");
  app.add_option("--live-paces", live_paces,
                 "The sweep.pace bounds of --live-traffic, comma-separated (0: unbounded)");
  app.add_option("--live-alone", o.live_alone,
                 "Seconds the application runs alone in --live-traffic");
  app.add_option("--live-threads", o.live_threads, "The application's threads in --live-traffic");
  app.add_option("--hot-accounts", hot_accounts,
                 "Recover --hot-n stuck transfers with each account named by K of them, for "
                 "each K of this comma-separated list (the first is the reference)");
  app.add_option("--hot-n", o.hot_n, "The stuck transfers of --hot-accounts");
  app.add_option("--pace", o.pace, "sweep.pace of the bench's sweeps (0: unbounded)");
  std::string propose;
  app.add_option("--propose", propose,
                 "Finished transactions (comma-separated Ns) under `txn-recoveryd propose`, "
                 "then `rehearse` of the watch beside them (empty: none)");
  app.add_option("--propose-runs", o.propose_runs,
                 "Measured propose runs per N, after a first one shown apart (the median shown)")
      ->check(CLI::Range(1, 100));
  app.add_option("--propose-sample", o.propose_sample,
                 "propose --sample (0: the daemon's default, 1,000)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--propose-out", o.propose_out, "Keep the first proposal's text in this file");
  app.add_option("--rehearse-runs", o.rehearse_runs,
                 "Rehearsals of the watch per N after the proposals (the median shown; 0: none)")
      ->check(CLI::Range(0, 100));
  app.add_option("--json", o.json_path, "Also write every figure to this JSON file");
  app.add_option("--daemon", o.daemon, "The txn-recoveryd binary");
  CLI11_PARSE(app, argc, argv);
  o.ns = ParseList(ns);
  o.idle = ParseList(idle);
  o.dry = ParseList(dry);
  o.fleet = ParseList(fleet);
  o.live_paces = ParseList(live_paces);
  o.hot_accounts = ParseList(hot_accounts);
  for (std::int64_t k : o.hot_accounts)
    if (k < 1) {
      std::cerr << "--hot-accounts: each K is at least 1\n";
      return 64;
    }
  o.fleet_run = ParseList(fleet_run);
  o.propose = ParseList(propose);
  o.takeover_stop.clear();
  for (std::int64_t v : ParseList(takeover_stop)) o.takeover_stop.push_back(static_cast<double>(v));
  o.profiles.clear();
  std::stringstream ps(profiles);
  for (std::string item; std::getline(ps, item, ',');)
    if (!item.empty()) o.profiles.push_back(item);
  for (const char* var : {"TXN_RECOVERY_TEST_URI", "TXN_RECOVERYD_MONGODB_URI"})
    if (const char* v = std::getenv(var); v && *v && o.uri.empty()) o.uri = v;
  if (o.uri.empty()) {
    std::cerr << "set TXN_RECOVERY_TEST_URI or TXN_RECOVERYD_MONGODB_URI\n";
    return 64;
  }
  try {
    return Main(o);
  } catch (const std::exception& e) {
    std::cerr << "txn-recovery-bench: " << e.what() << "\n";
    return 1;
  }
}
