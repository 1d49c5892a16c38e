// Sweeps at once (--fleet): k sweeps started together over the same stuck transactions, each
// of everything or each of its `--share i/k` (docs/fleet.md): the claims that found a
// transaction busy and the documents read per transaction resolved.
#include <cstdint>
#include <string>

#include "bench.h"

namespace txn_recovery::bench {

void Session::RunFleet() {
  Table t(
      "Sweeps at once over the same stuck transactions: each of everything, or each of "
      "its --share (one per host of a fleet)",
      {"sweeps", "N", "mode", "resolved", "busy claims", "wall s", "server CPU s", "RT/tx",
       "docs read/tx", "check"});
  // A first sweep, not shown, so that the first row does not pay for the server's warm-up
  // (the embedded server's JIT made it twice as slow as the same sweep repeated).
  // Whatever a busy claim or a failed sweep left is finished by more sweeps, as the next
  // rounds of a daemon would (after the server is back, when it went away: DocumentDB's
  // backend crash, footnote 1 of docs/benchmarks.md); a row shows the first round.
  auto finish = [&](const RunResult& r) {
    if (!r.failure.empty())
      WaitForServer(store.get(), Namespace{o.database_prefix + "_probe", "probe"});
    if (r.left > 0 || !r.failure.empty())
      (void)SweepUntilClean(o, config, uri, server, store.get(), true);
  };
  seed(o.fleet_n, false);
  finish(SweepsAtOnce(o, config, uri, server, 1, false));
  for (std::int64_t k : o.fleet) {
    for (bool shared : {false, true}) {
      if (k == 1 && shared) continue;  // one share of one is everything
      seed(o.fleet_n, false);
      RunResult r = SweepsAtOnce(o, config, uri, server, static_cast<int>(k), shared);
      finish(r);
      nlohmann::json j;
      const std::string check = verify(o.fleet_n, &j) + (r.failure.empty() ? "" : "; " + r.failure);
      t.Print({Int(k), Int(o.fleet_n), shared ? "shares" : "everything", Int(r.done), Int(r.left),
               Fmt("%.1f", r.seconds), Opt(r.server_cpu, "%.1f"),
               Per(static_cast<double>(r.round_trips), r.done),
               Per(static_cast<double>(r.documents_read), r.done), check});
      j.update(Json(r));
      j["busy_claims"] = r.left;
      j["run"] = shared ? "fleet-shares" : "fleet-everything";
      j["sweeps"] = k;
      j["n"] = o.fleet_n;
      report.Add(std::move(j));
    }
  }
}

}  // namespace txn_recovery::bench
