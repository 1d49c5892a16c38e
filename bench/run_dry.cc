// Dry runs: a sweep that plans every stuck transaction and writes nothing (the memory of
// streaming N).
#include <cstdint>
#include <string>

#include "bench.h"

namespace txn_recovery::bench {

void Session::RunDry() {
  Table dry_table(
      "Dry runs (plan every stuck transaction, write nothing: the memory of streaming N)",
      {"dry-run", "N", "wall s", "planned/s", "daemon CPU s", "server CPU s", "peak RSS MiB",
       "RT/tx", "docs/tx", "note"});
  for (std::int64_t n : o.dry) {
    seed(n, false);
    RunResult dry =
        SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/false, /*dry_run=*/true);
    nlohmann::json failed;
    std::string failures = Failures(dry, &failed);
    failures = failures.empty() ? "-" : failures.substr(2);
    dry_table.Print({"dry-run", Int(n), Fmt("%.1f", dry.seconds),
                     Fmt("%.0f", static_cast<double>(n) / dry.seconds), Fmt("%.1f", dry.client_cpu),
                     Opt(dry.server_cpu, "%.1f"), MiB(dry.peak_rss_kb),
                     Per(static_cast<double>(dry.round_trips), n, "%.3f"),
                     Per(static_cast<double>(dry.documents_read), n), failures});
    nlohmann::json j = Json(dry);
    j["run"] = "dry-run";
    j["n"] = n;
    if (!failed.is_null()) j.update(failed);
    report.Add(std::move(j));
  }
}

}  // namespace txn_recovery::bench
