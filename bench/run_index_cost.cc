// What the indexes the daemon may ask for on the accounts cost the application's own writes,
// and what one orphan scan costs with them and without (--index-cost; the measure itself is
// index_cost.h).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "bench.h"
#include "daemon/configuration/config.h"
#include "index_cost.h"

namespace txn_recovery::bench {

void Session::RunIndexCost() {
  // The transfer watch as the daemon reads it, for the indexes it requires on the accounts.
  const txn_recovery::daemon::Config daemon_config = DaemonConfig(config, o.uri);
  const auto transfer =
      std::find_if(daemon_config.watches.begin(), daemon_config.watches.end(),
                   [](const WatchSpec& w) { return w.profile.transfer() != nullptr; });
  if (transfer == daemon_config.watches.end())
    throw std::runtime_error("--index-cost needs the transfer profile in --profiles");
  bench::IndexCostOptions io;
  io.writes = o.index_cost_writes;
  io.accounts = o.index_cost_accounts;
  Table t(
      "The application's own writes, with each index the daemon may ask for and without: "
      "to its accounts (a guarded $inc and $push of its marker, then the $pull), then one "
      "orphan scan of them; to its transactions (the insert and three moves of the state, "
      "each with $currentDate). Unordered bulks of 500",
      {"collection", "indexes", "writes", "wall s", "writes/s", "server CPU s", "overhead",
       "orphan scan s", "its server CPU s"});
  for (const bench::IndexCostRow& row :
       bench::MeasureIndexCost(store.get(), *transfer, io, server)) {
    t.Print({row.collection, row.variant, Int(row.writes), Fmt("%.2f", row.seconds),
             Fmt("%.0f", static_cast<double>(row.writes) / row.seconds), Opt(row.server_cpu),
             Fmt("%+.1f %%", 100 * row.overhead), Opt(row.orphan_scan_seconds, "%.3f"),
             Opt(row.orphan_scan_server_cpu)});
    nlohmann::json j = {{"run", "index-cost"},
                        {"collection", row.collection},
                        {"variant", row.variant},
                        {"indexes", row.indexes},
                        {"accounts", io.accounts},
                        {"writes", row.writes},
                        {"seconds", row.seconds},
                        {"server_cpu", Json(row.server_cpu)},
                        {"overhead", row.overhead},
                        {"orphan_scan_seconds", Json(row.orphan_scan_seconds)},
                        {"orphan_scan_server_cpu", Json(row.orphan_scan_server_cpu)}};
    report.Add(std::move(j));
  }
}

}  // namespace txn_recovery::bench
