// txn-recovery-workload: puts a bank into the state a crashing application leaves it in,
// and shows it. Used by scripts/demo.sh and the benchmarks.
//
//   seed --database bank [--accounts N] [--per-step K] [--only-stuck]
//       N accounts with 1000 each; K transfers killed after each of the application's
//       8 steps, half of them stuck (2 minutes old), half expired (31 minutes old); one
//       young pending transfer that must be left alone; one malformed transaction.
//       --only-stuck leaves out the young and the malformed one, and ages the initial
//       ones past initial_timeout's default: a sweep with the documented thresholds then
//       ends every transaction.
//   show --database bank
//       balances, markers, transactions by state, and the total.
//   verify --database bank [--accounts N]
//       docs/chaos.md's invariants against the bank as seed opened it: exit 0 when every
//       transaction is done or cancelled (or quarantined), money is conserved, each
//       account holds exactly its done transfers and no marker is left; 1, naming each
//       violation, otherwise. For checks that run the daemon as it is deployed.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include "support/bank.h"
#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/stores/mongo_store.h"

namespace {

using namespace txn_recovery;
using txn_recovery::testing::Bank;

int Seed(Store* store, const std::string& db, int accounts, int per_step, bool only_stuck) {
  Bank bank(store, db);
  WriteResult r;
  for (const Namespace& ns : {bank.txns(), bank.accounts(), Namespace{db, "audit"}})
    testing::Must(store->DeleteMany(ns, Filter(), &r));
  bank.Open(accounts);
  int n = 0;
  for (int steps = 1; steps <= testing::kAppStepCount; ++steps) {
    for (int k = 0; k < per_step; ++k, ++n) {
      std::string from = std::string("A").append(std::to_string(n % accounts));
      std::string to = std::string("A").append(std::to_string((n + 1 + k) % accounts));
      if (from == to) to = "A" + std::to_string((n + 1) % accounts);
      Value id = bank.Transfer(from, to, 10 * (1 + n % 10), steps);
      // --only-stuck: every transfer past the documented defaults, so that a daemon
      // configured with them ends all of them (an initial one only after 30 minutes).
      const bool expired = k % 2 || (only_stuck && steps == 1);
      bank.Age(id, expired ? std::chrono::minutes(31) : std::chrono::minutes(2));
    }
  }
  if (only_stuck) {
    std::printf("seeded %s: %d accounts, %d stuck transfers\n", db.c_str(), accounts, n);
    return 0;
  }
  Value young = bank.Transfer("A0", "A1", 5, 3);  // in flight right now: hands off
  bank.Age(young, std::chrono::seconds(10));
  DateTime now;
  testing::Must(store->ServerTime(&now));
  testing::Must(store->InsertMany(
      bank.txns(), {Document{{"_id", "malformed-1"},
                             {"source", "A0"},
                             {"destination", "A1"},
                             {"value", "one hundred"},
                             {"state", "pending"},
                             {"lastModified", DateTime{now.millis - 5 * 60 * 1000}}}}));
  std::printf("seeded %s: %d accounts, %d stuck transfers, 1 young, 1 malformed\n", db.c_str(),
              accounts, n);
  return 0;
}

int Show(Store* store, const std::string& db) {
  Bank bank(store, db);
  testing::Snapshot s = bank.Take();
  std::printf("%-10s %10s  %s\n", "account", "balance", "pendingTransactions");
  for (const auto& [id, doc] : s.accounts) {
    const Value* m = doc.Get("pendingTransactions");
    std::printf("%-10s %10s  %s\n", id.c_str(), doc.Get("balance")->ToString().c_str(),
                m ? m->ToString().c_str() : "-");
  }
  std::map<std::string, int> states;
  std::map<std::string, int> resolutions;
  std::unique_ptr<Cursor> c;
  testing::Must(store->Find(bank.txns(), Filter(), FindOptions{}, &c));
  Document d;
  int quarantined = 0;
  const RecoveryPaths record(bank.Watch().lease_field);
  for (bool has = true;;) {
    testing::Must(c->Next(&d, &has));
    if (!has) break;
    const Value* st = d.Get("state");
    states[st ? (st->is_string() ? *st->as_string() : st->ToString()) : "<none>"]++;
    if (const Value* a = d.GetPath(record.ResolvedAction()); a && a->is_string())
      resolutions[*a->as_string()]++;
    if (d.GetPath(record.Quarantine())) ++quarantined;
  }
  std::printf("total balance: %.0f (every account opened with 1000, plus a bystander with 777)\n",
              s.total);
  std::printf("transactions by state:");
  for (const auto& [k, v] : states) std::printf(" %s=%d", k.c_str(), v);
  std::printf("\nresolved by txn-recoveryd:");
  for (const auto& [k, v] : resolutions) std::printf(" %s=%d", k.c_str(), v);
  std::printf("\nquarantined: %d\n", quarantined);
  return 0;
}

int Verify(Store* store, const std::string& db, int accounts) {
  Bank bank(store, db);
  const std::vector<std::string> violations = bank.Violations(bank.Opened(accounts));
  for (const std::string& v : violations) std::printf("violation: %s\n", v.c_str());
  if (!violations.empty()) return 1;
  std::printf("verified %s: every transaction ended, money conserved, no marker left\n",
              db.c_str());
  return 0;
}

}  // namespace

// An exception out of main ends the tool with its message (std::terminate), as a
// benchmark tool may.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{"txn-recovery-workload: create and show stuck two-phase-commit transfers"};
  app.require_subcommand(1);
  std::string database = "bank";
  int accounts = 6, per_step = 2;
  auto* seed = app.add_subcommand("seed", "Create accounts and stuck transfers (resets DB)");
  seed->add_option("--database", database);
  seed->add_option("--accounts", accounts)->check(CLI::Range(2, 1000000));
  seed->add_option("--per-step", per_step)->check(CLI::Range(1, 1000000));
  bool only_stuck = false;
  seed->add_flag("--only-stuck", only_stuck, "No young and no malformed transaction");
  auto* show = app.add_subcommand("show", "Print balances and transaction states");
  show->add_option("--database", database);
  auto* verify = app.add_subcommand("verify", "Check the invariants; exit 1 on a violation");
  verify->add_option("--database", database);
  verify->add_option("--accounts", accounts, "As given to seed")->check(CLI::Range(2, 1000000));
  CLI11_PARSE(app, argc, argv);

  const char* uri = std::getenv("TXN_RECOVERYD_MONGODB_URI");
  if (uri == nullptr || *uri == '\0') {
    std::cerr << "set TXN_RECOVERYD_MONGODB_URI\n";
    return 64;
  }
  MongoDriver driver;
  MongoOptions options;
  options.uri = uri;
  std::unique_ptr<MongoStore> store;
  if (Status s = MongoStore::Open(options, &store); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 78;
  }
  try {
    if (*seed) return Seed(store.get(), database, accounts, per_step, only_stuck);
    if (*verify) return Verify(store.get(), database, accounts);
    return Show(store.get(), database);
  } catch (const std::exception& e) {
    std::cerr << "txn-recovery-workload: " << e.what() << "\n";
    return 69;
  }
}
