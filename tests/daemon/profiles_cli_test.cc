// The executable with one configuration holding a watch of every profile: one sweep
// recovers all three, each by its own protocol, and reports each watch apart.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/operations_app.h"
#include "support/tagged_insert_app.h"
#include "support/test_env.h"
#include "support/watch_config.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::minutes;

std::string WatchesToml(const std::string& database) {
  return R"(
[[watch]]
name = "bank"
database = ")" +
         database + R"("

[[watch]]
name = "mongoose"
database = ")" +
         database + R"("
collection = "mongoose_transactions"
profile = "operations"
allowed_collections = ["users", "promotions"]

[[watch]]
name = "orders"
database = ")" +
         database + R"("
collection = "order_transactions"
profile = "tagged-insert"
tagged_collections = ["orders", "lines"]
)";
}

TXN_RECOVERY_DATABASE_SUITE(ProfilesCli);

TEST(ProfilesCli, OneSweepRecoversATransferAnOperationsAndATaggedInsertWatch) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Store* store = backend->store();
  const std::string db = backend->database();
  std::vector<WatchSpec> watches = WatchesFromToml(WatchesToml(db), db);
  ASSERT_EQ(watches.size(), 3u);

  Bank bank(store, db);
  bank.Open(2);
  Snapshot bank_before = bank.Take();
  Value transfer = bank.Transfer("A0", "A1", 100, 3);  // debited A0, then died
  bank.Age(transfer, minutes(2));

  OperationsApp shop(store, db, watches[1].profile, "mongoose_transactions");
  Must(store->InsertMany(shop.Collection("users"), {Document{{"_id", "U"}, {"money", 10}}}));
  Must(store->InsertMany(shop.Collection("promotions"), {Document{{"_id", "P"}, {"left", 1}}}));
  OperationsSnapshot shop_before = shop.Take({"users", "promotions"});
  Value purchase = shop.Run(
      {Operation::Inc("users", "U", "money", 5), Operation::Inc("promotions", "P", "left", -1)},
      3);  // the user credited, the promotion not yet used
  shop.Age(purchase, minutes(45));

  TaggedInsertApp orders(store, db, watches[2].profile, 2, "order_transactions");
  TaggedSnapshot orders_before = orders.Take();
  Value order = orders.InsertTransaction();
  Must(orders.InsertTagged(order));
  Must(orders.MarkFinishing(order));
  orders.Age(order, minutes(2));

  std::string path = ::testing::TempDir() + "txn_recoveryd_profiles_cli.toml";
  std::ofstream(path) << "[mongodb]\nuri = \"" << FindTestUri().uri_or_reason
                      << "\"\nserver_selection_timeout = \"2s\"\n"
                      << WatchesToml(db);
  ProcessResult sweep =
      RunTxnRecoveryd({"sweep", "--json", "--config", path}, {}, std::chrono::seconds(60));
  ASSERT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;

  auto report = nlohmann::json::parse(sweep.out);
  ASSERT_EQ(report["watches"].size(), 3u);
  EXPECT_EQ(report["watches"][0]["actions"]["resume"]["resolved"], 1);
  EXPECT_EQ(report["watches"][1]["actions"]["rollback"]["resolved"], 1);
  EXPECT_EQ(report["watches"][2]["actions"]["finish"]["resolved"], 1);

  EXPECT_EQ(bank.State(transfer), "done");
  EXPECT_EQ(shop.State(purchase), "canceled");
  EXPECT_EQ(orders.State(order), "done");
  EXPECT_EQ(orders.DocsOf(order).valid, orders.DocsPerTransaction());
  for (const auto& v : bank.Violations(bank_before)) ADD_FAILURE() << v;
  for (const auto& v : shop.Violations(shop_before)) ADD_FAILURE() << v;
  for (const auto& v : orders.Violations(orders_before)) ADD_FAILURE() << v;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace txn_recovery::testing
