// A backlog on hot accounts (--hot-accounts): the same --hot-n stuck transfers recovered by
// one `txn-recoveryd sweep`, with each account named by K of them, for each K asked (1:
// no two transfers share an account; 20: a merchant's or a settlement account, each in
// twenty). The rate against the first K's is what a backlog after an outage, where many
// stuck transfers share a few accounts, costs.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "bench.h"

namespace txn_recovery::bench {

void Session::RunHot() {
  Table t("Recovery of " + Int(o.hot_n) +
              " stuck transfers by one sweep, by how many of them name each account",
          {"transfers per account", "accounts", "wall s", "tx/s", "of the first", "server CPU s",
           "client CPU s", "RT/tx", "busy left", "check"});
  double first_rate = 0;
  for (std::int64_t k : o.hot_accounts) {
    // A profile of its own for this K: its seeding and its check both know the accounts.
    const auto hot = MakeProfile("transfer", k);
    const std::string db = o.database_prefix + "_transfer";
    hot->SeedStuck(store.get(), db, o.hot_n, ServerNow(store.get()));
    // The bench's configuration watches the transfer profile's database: this one.
    const std::string hot_config = ConfigWithPace(0);
    CreateIndexes(store.get(), hot_config, uri);
    const RunResult r = SweepUntilClean(o, hot_config, uri, server, store.get(), /*sum=*/true);
    std::remove(hot_config.c_str());
    const Verified v = hot->Verify(store.get(), db, o.hot_n, o.read_batch);
    nlohmann::json j;
    std::string check = v.problem.empty() ? "verified" : "NOT VERIFIED: " + v.problem;
    check += Failures(r, &j);
    const double rate = r.seconds > 0 ? static_cast<double>(r.done) / r.seconds : 0;
    if (first_rate == 0) first_rate = rate;
    const std::int64_t accounts = std::max<std::int64_t>(2, 2 * o.hot_n / k);
    t.Print({Int(k), Int(accounts), Fmt("%.1f", r.seconds), Fmt("%.0f", rate),
             Fmt("%.0f %%", 100 * rate / first_rate), Opt(r.server_cpu, "%.1f"),
             Fmt("%.1f", r.client_cpu), Per(static_cast<double>(r.round_trips), r.done),
             Int(r.left), check});
    j.update(Json(r));
    j["run"] = "hot-accounts";
    j["transfers_per_account"] = k;
    j["accounts"] = accounts;
    j["n"] = o.hot_n;
    j["verified"] = v.problem.empty();
    report.Add(std::move(j));
  }
}

}  // namespace txn_recovery::bench
