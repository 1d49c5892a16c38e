// Idle sweeps over terminal transactions only, after a first sweep built the indexes: their
// wall time, the daemon's and the server's CPU next to their round trips and documents
// returned, what the server examined for them (explain, or each read replayed), every command
// timed on the wire; and their cost at the largest N against the smallest.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench.h"
#include "wire_counter.h"

namespace txn_recovery::bench {

std::vector<IdleFigures> Session::RunIdle() {
  Table idle_table(
      "Idle sweeps over terminal transactions only (after a first sweep built the indexes)",
      {"idle", "N terminal", "wall s", "daemon CPU s", "server CPU s", "peak RSS MiB",
       "round trips", "docs returned", "keys examined", "docs examined", "note"});
  std::vector<IdleFigures> idles;
  for (std::int64_t n : o.idle) {
    seed(n, true);
    // The first sweep creates the indexes (manage_indexes); some servers build them in the
    // background, so the server is left to settle, and its CPU at rest measured meanwhile.
    RunResult first = SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/false);
    std::optional<double> rest;
    {
      ServerMeter meter(server);
      auto t0 = Steady::now();
      std::this_thread::sleep_for(Seconds(o.idle_settle));
      if (auto cpu = meter.Elapsed()) rest = *cpu / Seconds(Steady::now() - t0).count();
    }
    std::int64_t indexes = 0;
    for (const auto& p : profiles) {
      std::vector<IndexSpec> specs;
      Check(store->ListIndexes(TransferTxns(db_of(*p)), &specs), "list indexes");
      indexes += static_cast<std::int64_t>(specs.size());
    }
    std::vector<RunResult> runs;
    for (int i = 0; i < std::max(1, o.idle_sweeps); ++i)
      runs.push_back(SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/false));
    std::sort(runs.begin(), runs.end(),
              [](const RunResult& a, const RunResult& b) { return a.seconds < b.seconds; });
    const RunResult& m = runs[runs.size() / 2];
    std::string note = "median of " + std::to_string(runs.size()) + " (wall " +
                       Fmt("%.2f", runs.front().seconds) + "-" + Fmt("%.2f", runs.back().seconds) +
                       " s); first sweep " + Fmt("%.2f", first.seconds) + " s; " +
                       std::to_string(indexes) + " indexes on transactions";
    if (rest) note += "; server at rest " + Fmt("%.0f", 100 * *rest) + " % of a core";
    // The sweeps changed nothing: every transaction terminal, every balance as seeded.
    nlohmann::json j = Json(m);
    note += "; " + verify(n, &j);
    int failed = first.failed_sweeps;
    for (const auto& r : runs) failed += r.failed_sweeps;
    if (failed) {
      note += "; " + std::to_string(failed) + " sweep(s) failed and were repeated";
      j["failed_sweeps"] = failed;
    }
    // The server's account of the same sweep, where it gives one; else its reads timed.
    ServerWork work;
    for (const auto& p : profiles)
      work.Add(ExamineSweep(store.get(), config, uri, TransferTxns(db_of(*p))));
    if (work.explained) {
      note += "; explain: " + std::to_string(work.reads) + " reads, " +
              std::to_string(work.collection_scans) + " collection scans";
      if (work.blocks >= 0) note += ", " + std::to_string(work.blocks) + " pages";
    } else {
      std::string slowest = work.costliest.substr(0, 100);
      if (slowest.size() < work.costliest.size()) slowest += "...";
      note += "; no explain: its " + std::to_string(work.reads) + " reads replayed alone take " +
              Fmt("%.2f", work.replay_seconds) + " s, the slowest " +
              Fmt("%.2f", work.slowest_seconds) + " s: " + slowest;
    }
    // And every command of one more such sweep timed on the wire, request to reply: what
    // the reads above leave out (index management, the server's clock, the pause switch).
    std::vector<std::pair<std::string, bench::WireCounter::Timing>> commands;
    {
      bench::WireCounter timer(uri);
      (void)SweepUntilClean(o, config, timer.Uri(), server, store.get(), /*sum=*/false);
      for (const auto& entry : timer.TakeTimings()) commands.push_back(entry);
    }
    std::sort(commands.begin(), commands.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    note += "; on the wire:";
    for (std::size_t i = 0; i < commands.size() && i < 3; ++i)
      note += (i ? ", " : " ") + commands[i].first + " " + Fmt("%.2f", commands[i].second.seconds) +
              " s";
    j["commands_on_the_wire"] = nlohmann::json::object();
    for (const auto& [name, t] : commands)
      j["commands_on_the_wire"][name] = {{"count", t.count}, {"seconds", t.seconds}};
    j["server_work"] = {{"explained", work.explained},
                        {"reads", work.reads},
                        {"returned", work.returned},
                        {"costliest_read", work.costliest},
                        {"each_read", work.each}};
    if (work.explained) {
      j["server_work"]["collection_scans"] = work.collection_scans;
      j["server_work"]["keys_examined"] = work.keys_examined;
      j["server_work"]["docs_examined"] = work.docs_examined;
      if (work.blocks >= 0) j["server_work"]["pages"] = work.blocks;
    } else {
      j["server_work"]["replay_seconds"] = work.replay_seconds;
      j["server_work"]["slowest_seconds"] = work.slowest_seconds;
    }
    idle_table.Print({"idle", Int(n), Fmt("%.2f", m.seconds), Fmt("%.2f", m.client_cpu),
                      Opt(m.server_cpu), MiB(m.peak_rss_kb), Int(m.round_trips),
                      Int(m.documents_read), work.explained ? Int(work.keys_examined) : "-",
                      work.explained ? Int(work.docs_examined) : "-", note});
    j["run"] = "idle";
    j["n"] = n;
    j["first_sweep_seconds"] = first.seconds;
    j["indexes_on_transactions"] = indexes;
    j["server_cpu_at_rest"] = Json(rest);
    j["sweeps"] = nlohmann::json::array();
    for (const auto& r : runs) j["sweeps"].push_back(Json(r));
    report.Add(std::move(j));
    idles.push_back({n, m, work});
  }
  return idles;
}

void PrintIdleRatio(const std::vector<IdleFigures>& idles) {
  if (idles.size() >= 2) {
    const IdleFigures& lo = idles.front();
    const IdleFigures& hi = idles.back();
    auto ratio = [](double a, double b) { return b > 0 ? Fmt("%.1fx", a / b) : "-"; };
    Table t("Idle sweep cost, largest vs smallest N (target: within 1.5x)",
            {"N", "wall", "daemon CPU", "server CPU", "round trips", "docs returned",
             "keys examined", "docs examined", "pages"});
    auto examined = [&](auto field) {
      return hi.work.explained && lo.work.explained
                 ? ratio(static_cast<double>(hi.work.*field), static_cast<double>(lo.work.*field))
                 : std::string("-");
    };
    t.Print({Int(hi.n) + " vs " + Int(lo.n), ratio(hi.median.seconds, lo.median.seconds),
             ratio(hi.median.client_cpu, lo.median.client_cpu),
             hi.median.server_cpu && lo.median.server_cpu
                 ? ratio(*hi.median.server_cpu, *lo.median.server_cpu)
                 : "-",
             ratio(static_cast<double>(hi.median.round_trips),
                   static_cast<double>(lo.median.round_trips)),
             ratio(static_cast<double>(hi.median.documents_read),
                   static_cast<double>(lo.median.documents_read)),
             examined(&ServerWork::keys_examined), examined(&ServerWork::docs_examined),
             hi.work.blocks >= 0 && lo.work.blocks >= 0 ? examined(&ServerWork::blocks) : "-"});
  }
}

}  // namespace txn_recovery::bench
