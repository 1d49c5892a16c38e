// Configuration of the `operations` and `tagged-insert` profiles: their keys, their
// defaults, and refusals that name the file, the line and the key.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "daemon/configuration/config.h"

namespace txn_recovery::daemon {
namespace {

class ProfileConfig : public ::testing::Test {
 protected:
  txn_recovery::Status Load(const std::string& watch, Config* c) {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& ch : name)
      if (ch == '/') ch = '_';
    path_ = ::testing::TempDir() + "txn_recoveryd_profile_config_" + name + ".toml";
    std::ofstream(path_) << "[mongodb]\nuri = \"mongodb://h\"\n" << watch;
    return LoadConfig(
        path_, [](const std::string&) { return std::optional<std::string>(); }, c);
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(ProfileConfig, AnOperationsWatchTakesItsKeys) {
  Config c;
  txn_recovery::Status s = Load(R"([[watch]]
name = "mongoose"
database = "shop"
profile = "operations"
operations_field = "payload.ops"
collection_key = "coll"
id_key = "doc"
inc_key = "add"
set_key = "assign"
previous_key = "was"
marker_field = "pending"
allowed_collections = ["users", "promotions"]
max_operations = 10
)",
                                &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto* op = c.watches.at(0).profile.operations();
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->operations_field, "payload.ops");
  EXPECT_EQ(op->collection_key, "coll");
  EXPECT_EQ(op->id_key, "doc");
  EXPECT_EQ(op->inc_key, "add");
  EXPECT_EQ(op->set_key, "assign");
  EXPECT_EQ(op->previous_key, "was");
  EXPECT_EQ(op->marker_field, "pending");
  EXPECT_EQ(op->collections, (std::vector<std::string>{"users", "promotions"}));
  EXPECT_EQ(op->max_operations, 10);
  // The effective configuration says the same, and loads again to the same watch.
  std::string described = DescribeConfig(c);
  EXPECT_NE(described.find("profile = \"operations\""), std::string::npos) << described;
  EXPECT_NE(described.find("allowed_collections = [\"users\", \"promotions\"]"), std::string::npos)
      << described;
}

TEST_F(ProfileConfig, ATaggedInsertWatchNeedsOnlyItsCollections) {
  Config c;
  txn_recovery::Status s = Load(R"([[watch]]
name = "orders"
database = "shop"
profile = "tagged-insert"
tagged_collections = ["orders"]
)",
                                &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto& p = c.watches.at(0).profile;
  ASSERT_NE(p.tagged_insert(), nullptr);
  EXPECT_EQ(p.tagged_insert()->tagged_collections, std::vector<std::string>{"orders"});
  EXPECT_EQ(p.state_field, "status");
  EXPECT_EQ(p.time_field, "lastUpdate");
  EXPECT_TRUE(p.states.initial.empty());
  std::string described = DescribeConfig(c);
  EXPECT_NE(described.find("tagged_collections = [\"orders\"]"), std::string::npos) << described;
  EXPECT_NE(described.find("tag_field = \"tx\""), std::string::npos) << described;
}

TEST_F(ProfileConfig, ATaggedInsertWatchMayEndRollbacksInTheirOwnState) {
  Config c;
  txn_recovery::Status s = Load(R"([[watch]]
name = "orders"
database = "shop"
profile = "tagged-insert"
tagged_collections = ["orders"]
[watch.states]
cancelled = ["canceled"]
)",
                                &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.watches.at(0).profile.states.Written(txn_recovery::TxnState::kCancelled), "canceled");
}

// The example configuration's commented watches are real configuration: uncommented, they
// load, one per profile.
TEST_F(ProfileConfig, TheCommentedExampleWatchesLoadOnceUncommented) {
  std::ifstream in(std::string(TXN_RECOVERY_SOURCE_DIR) + "/config/txn-recoveryd.toml");
  ASSERT_TRUE(in);
  std::string text, line;
  bool in_block = false;
  int blocks = 0;
  while (std::getline(in, line)) {
    if (line == "# [[watch]]") {
      in_block = true;
      ++blocks;
    } else if (line.empty()) {
      in_block = false;
    }
    if (in_block && line.rfind("# ", 0) == 0) line = line.substr(2);
    text += line + "\n";
  }
  EXPECT_EQ(blocks, 4);
  path_ = ::testing::TempDir() + "txn_recoveryd_example_uncommented.toml";
  std::ofstream(path_) << text;
  Config c;
  txn_recovery::Status s = LoadConfig(
      path_, [](const std::string&) { return std::optional<std::string>(); }, &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<std::string> kinds;
  for (const auto& w : c.watches) kinds.emplace_back(w.profile.kind());
  EXPECT_EQ(kinds, (std::vector<std::string>{"transfer", "transfer", "steps", "steps", "operations",
                                             "tagged-insert"}));
  EXPECT_EQ(c.watches.at(2).profile.steps()->steps.at(0).key_path, "data.targetUser");
  EXPECT_EQ(c.watches.at(3).profile.missing_time, txn_recovery::MissingTime::kFirstSeen)
      << "the transfer without a time field names none";
  const auto& ops = c.watches.at(4).profile;
  EXPECT_EQ(ops.states.Written(txn_recovery::TxnState::kCancelled), "canceled");
  EXPECT_EQ(ops.operations()->collections, (std::vector<std::string>{"users", "promotions"}));
  EXPECT_EQ(c.watches.at(5).profile.tagged_insert()->tagged_collections,
            (std::vector<std::string>{"orders", "order_lines"}));
}

struct BadCase {
  const char* name;
  const char* watch;
  const char* expected;  // position and key
};

class BadProfileConfig : public ProfileConfig, public ::testing::WithParamInterface<BadCase> {};

TEST_P(BadProfileConfig, IsRefusedWithFileLineAndKey) {
  Config c;
  txn_recovery::Status s = Load(GetParam().watch, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message().rfind(path_, 0), 0u) << s.message();
  EXPECT_NE(s.message().find(GetParam().expected), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadProfileConfig,
    ::testing::Values(
        BadCase{"transfer_key_in_operations",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"operations\"\n"
                "amount_field = \"x\"\n",
                ":7:1: watch[0].amount_field: is a key of profile 'transfer', not of 'operations'"},
        BadCase{"tagged_key_in_transfer",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\ntagged_collections = [\"a\"]\n",
                ":6:1: watch[0].tagged_collections: is a key of profile 'tagged-insert', not of "
                "'transfer'"},
        BadCase{"operations_key_in_tagged",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"tagged-insert\"\n"
                "tagged_collections = [\"a\"]\ninc_key = \"add\"\n",
                ":8:1: watch[0].inc_key: is a key of profile 'operations', not of "
                "'tagged-insert'"},
        BadCase{"tagged_without_collections",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"tagged-insert\"\n",
                ":3:1: watch[0].tagged_collections: must name the collections"},
        BadCase{"tagged_into_transactions",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"tagged-insert\"\n"
                "tagged_collections = [\"orders\", \"transactions\"]\n",
                ":7:22: watch[0].tagged_collections: must not name the transactions collection"},
        BadCase{"tagged_system_collection",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"tagged-insert\"\n"
                "tagged_collections = [\"system.users\"]\n",
                ":7:22: watch[0].tagged_collections: 'system.users' is a system collection"},
        BadCase{"dotted_operation_key",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"operations\"\n"
                "inc_key = \"a.b\"\n",
                ":7:11: watch[0].inc_key: 'a.b' must be a plain field name"},
        BadCase{"two_operation_keys_alike",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"operations\"\n"
                "set_key = \"inc\"\n",
                ":7:11: watch[0].set_key: 'inc' names the same key as inc_key"},
        BadCase{"operations_on_transactions",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"operations\"\n"
                "allowed_collections = [\"transactions\"]\n",
                ":7:23: watch[0].allowed_collections: must not name the transactions"},
        BadCase{"marker_on_id",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"operations\"\n"
                "marker_field = \"_id\"\n",
                ":7:16: watch[0].marker_field: cannot be _id"},
        BadCase{"zero_max_operations",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"operations\"\n"
                "max_operations = 0\n",
                ":7:18: watch[0].max_operations: must be between 1 and"},
        BadCase{"tagged_without_pending_spelling",
                "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"tagged-insert\"\n"
                "tagged_collections = [\"a\"]\n[watch.states]\nstarted = []\n",
                "watch[0].states.started: must be a non-empty list"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace txn_recovery::daemon
