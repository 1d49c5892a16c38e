// The recovery runs: for each --n, the daemon's sweep, the applications' own step-by-step
// recovery loop (the baseline) and the server's bulk-write limit over the same stuck
// transactions; the writes each sends per recovered transaction; the three side by side.
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.h"
#include "wire_counter.h"

namespace txn_recovery::bench {

std::vector<Summary> Session::RunRecovery() {
  Table recovery(
      "Recovery (per run; client CPU: the daemon's for sweep, the bench's own otherwise)",
      {"run", "N", "done", "wall s", "tx/s", "client CPU s", "server CPU s", "peak RSS MiB",
       "RT/tx", "docs/tx", "check"});
  auto recovery_row = [&](const std::string& run, std::int64_t n, const RunResult& r,
                          const std::string& check, nlohmann::json j) {
    recovery.Print({run, Int(n), Int(r.done), Fmt("%.1f", r.seconds),
                    r.seconds > 0 ? Fmt("%.0f", static_cast<double>(r.done) / r.seconds) : "-",
                    Fmt("%.1f", r.client_cpu), Opt(r.server_cpu, "%.1f"), MiB(r.peak_rss_kb),
                    Per(static_cast<double>(r.round_trips), r.done),
                    Per(static_cast<double>(r.documents_read), r.done), check});
    j.update(Json(r));
    j["run"] = run;
    j["n"] = n;
    j["writes"] = Json(r.writes);
    report.Add(std::move(j));
  };

  std::vector<Summary> summaries;
  for (std::int64_t n : o.ns) {
    Summary s{n, {}, {}, {}, {}};
    seed(n, false);
    CreateIndexes(store.get(), config, uri);
    s.sweep = SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/true);
    nlohmann::json j;
    std::string check = verify(n, &j) + Failures(s.sweep, &j);
    recovery_row("sweep", n, s.sweep, check, std::move(j));

    seed(n, false);
    CreateIndexes(store.get(), config, uri);
    auto deadline =
        Steady::now() + std::chrono::duration_cast<Steady::duration>(Seconds(o.baseline_budget));
    {
      ServerMeter meter(server);
      for (const auto& p : profiles) {
        RunResult r = p->Baseline(store.get(), db_of(*p), ServerNow(store.get()), deadline);
        s.baseline.done += r.done;
        s.baseline.seconds += r.seconds;
        s.baseline.client_cpu += r.client_cpu;
        s.baseline.round_trips += r.round_trips;
        s.baseline.documents_read += r.documents_read;
        s.baseline.complete = s.baseline.complete && r.complete;
        s.baseline.writes.Add(r.writes);
      }
      s.baseline.server_cpu = meter.Elapsed();
    }
    j = nlohmann::json::object();
    check = s.baseline.complete ? verify(n, &j)
                                : "time budget of " + Fmt("%.0f", o.baseline_budget) + " s ran out";
    recovery_row("baseline", n, s.baseline, check, std::move(j));

    s.limit = limit(n, true);
    j = nlohmann::json::object();
    check = verify(n, &j);
    recovery_row("limit", n, s.limit, check, std::move(j));
    s.limit_bare = limit(n, false);
    j = nlohmann::json::object();
    check = verify(n, &j);
    recovery_row("limit, _id only", n, s.limit_bare, check, std::move(j));
    summaries.push_back(s);
  }
  return summaries;
}

void Session::RunWrites(const std::vector<Summary>& summaries) {
  // Writes per recovered transfer: the sweep's through a counting forwarder (a run of its own, not
  // timed: forwarding costs time), the baseline's and the limit's as they sent them.
  const std::int64_t writes_n = o.writes_n >= 0 ? o.writes_n : (o.ns.empty() ? 0 : o.ns.front());
  Table writes_table(
      "Writes per recovered transaction (update and findAndModify commands, the statements in "
      "them, the documents they matched; the sweep's counted on the wire, in a run of its own)",
      {"run", "N", "update commands/tx", "statements/tx", "matched/tx",
       "by collection: statements / matched per tx"});
  auto writes_row = [&](const std::string& run, std::int64_t n, const RunResult& r) {
    std::string by;
    for (const auto& [k, v] : r.writes.by)
      by += (by.empty() ? "" : ", ") + k + " " + Per(static_cast<double>(v.statements), r.done) +
            " / " + Per(static_cast<double>(v.matched), r.done);
    writes_table.Print({run, Int(n), Per(static_cast<double>(r.writes.commands), r.done),
                        Per(static_cast<double>(r.writes.statements()), r.done),
                        Per(static_cast<double>(r.writes.matched()), r.done), by});
  };
  if (writes_n > 0) {
    bench::WireCounter counter(uri);
    seed(writes_n, false);
    RunResult r = SweepUntilClean(o, config, counter.Uri(), server, store.get(), /*sum=*/true);
    r.writes = Counted(&counter);
    nlohmann::json j;
    std::string check = verify(writes_n, &j);
    Failures(r, &j);
    if (check.rfind("verified", 0) != 0)
      throw std::runtime_error("the sweep through the wire counter: " + check);
    j.update(Json(r));
    j["run"] = "sweep-writes";
    j["n"] = writes_n;
    j["writes"] = Json(r.writes);
    report.Add(std::move(j));
    writes_row("sweep", writes_n, r);
  }
  for (const auto& s : summaries) {
    if (s.baseline.complete) writes_row("baseline", s.n, s.baseline);
    writes_row("limit", s.n, s.limit);
  }
}

void PrintSideBySide(const std::vector<Summary>& summaries) {
  if (!summaries.empty()) {
    Table t(
        "Side by side (same run, same data; limit: the daemon's indexes present, "
        "_id only: none but _id)",
        {"N", "sweep/baseline", "sweep/limit", "sweep/limit _id only", "server CPU s: sweep",
         "baseline", "limit", "limit _id only", "sweep peak RSS MiB"});
    bool cut = false;
    for (const auto& s : summaries) {
      auto rate = [](const RunResult& r) { return static_cast<double>(r.done) / r.seconds; };
      cut = cut || !s.baseline.complete;
      t.Print({Int(s.n),
               Fmt("%.1fx", rate(s.sweep) / rate(s.baseline)) + (s.baseline.complete ? "" : "*"),
               Fmt("%.0f %%", 100 * rate(s.sweep) / rate(s.limit)),
               Fmt("%.0f %%", 100 * rate(s.sweep) / rate(s.limit_bare)),
               Opt(s.sweep.server_cpu, "%.1f"), Opt(s.baseline.server_cpu, "%.1f"),
               Opt(s.limit.server_cpu, "%.1f"), Opt(s.limit_bare.server_cpu, "%.1f"),
               MiB(s.sweep.peak_rss_kb)});
    }
    if (cut)
      std::printf(
          "(* the baseline ran out of its time budget: its rate is over the part it did)\n");
  }
}

}  // namespace txn_recovery::bench
