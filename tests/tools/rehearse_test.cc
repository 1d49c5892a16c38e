// rehearse: each profile's watch, rehearsed in scratch collections of the test database,
// passes every scenario (every crash point of its application, a late write) with the real
// engine; the scratch collections are dropped; the watched collections are never read or
// written; a profile that cannot be rehearsed says so. (That it fails, naming the scenario,
// when the engine is broken is shown with the build option TXN_RECOVERY_TEST_BREAK_UNDO:
// docs/operating.md.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <fstream>
#include <thread>

#include "daemon/commands/rehearse_command.h"
#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/test_env.h"
#include "support/watch_config.h"
#include "txn_recovery/tools/rehearse.h"

namespace txn_recovery::testing {
namespace {

class Rehearsal : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
  }
  RehearsalReport Run(const std::string& toml) {
    WatchSpec w = WatchFromToml(toml, backend_->database());
    RehearseOptions o;
    o.sweep.lease.owner = "rehearsal";
    RehearsalReport r;
    Must(Rehearse(backend_->store(), backend_->clock(), w, o, &r));
    return r;
  }
  void ExpectPassed(const RehearsalReport& r) {
    EXPECT_TRUE(r.unsupported.empty()) << r.unsupported;
    EXPECT_GE(r.scenarios.size(), 8u);
    for (const auto& s : r.scenarios)
      for (const auto& v : s.violations) ADD_FAILURE() << s.name << ": " << v;
    EXPECT_TRUE(r.Passed());
    EXPECT_TRUE(r.left_behind.empty());
    std::vector<std::string> names;
    Must(backend_->store()->ListCollections(backend_->database(), &names));
    for (const auto& n : names)
      EXPECT_NE(n.rfind(kRehearsalPrefix, 0), 0u) << n << " was not dropped";
  }
  std::unique_ptr<TestBackend> backend_;
};

TEST_P(Rehearsal, TheManualsTransferPassesEveryCrashPoint) {
  RehearsalReport r = Run("[[watch]]\nname = \"bank\"\ndatabase = \"d\"\nprofile = \"transfer\"\n");
  ExpectPassed(r);
  // initial; pending with 0, 1, 2 steps applied, stuck and expired; applied with 0, 1, 2
  // markers pulled; canceling with 0, 1, 2 undone; the late write.
  EXPECT_EQ(r.scenarios.size(), 1u + 6u + 3u + 3u + 1u);
}

TEST_P(Rehearsal, TheSchemaBooksTransferPassesWithItsNamesAndSpellings) {
  ExpectPassed(Run(R"([[watch]]
name = "schema-book"
database = "bank"
profile = "transfer"
participant_key = "name"
amount_field = "amount"
require_funds = true
missing_time = "object_id"
[watch.states]
applied = ["committed"]
cancelled = ["canceled", "cancel", "cancelled"]
)"));
}

TEST_P(Rehearsal, TheLocalizedManualPassesInItsOwnSpellings) {
  ExpectPassed(Run(R"([[watch]]
name = "localized"
database = "bank"
profile = "transfer"
balance_field = "value"
[watch.states]
initial = ["initiale"]
pending = ["en_cours"]
applied = ["appliquee"]
done = ["terminee"]
canceling = ["annulation"]
cancelled = ["annulee"]
)"));
}

TEST_P(Rehearsal, MongooseOperationsPass) {
  ExpectPassed(Run("[[watch]]\nname = \"m\"\ndatabase = \"d\"\nprofile = \"operations\"\n"));
}

TEST_P(Rehearsal, AStepsShapePasses) {
  ExpectPassed(Run(R"([[watch]]
name = "mongoose-users"
database = "shop"
profile = "steps"
state_field = "status"
marker_field = "pendingTransaction"
steps = [
  {collection = "users", key_path = "data.targetUser", inc = {money = "data.amount"}},
  {collection = "users", key_path = "data.fromUser", inc = {money = "-data.amount"}, set = {tier = "data.tier"}, previous = {tier = "data.previousTier"}},
]
[watch.states]
new = ["new"]
)"));
}

TEST_P(Rehearsal, TaggedInsertsPassEveryCrashPoint) {
  RehearsalReport r =
      Run("[[watch]]\nname = \"t\"\ndatabase = \"d\"\nprofile = \"tagged-insert\"\n"
          "tagged_collections = [\"orders\", \"lines\"]\n");
  ExpectPassed(r);
  // started with 0, 1, 2 collections inserted; finishing with 0, 1, 2 untagged; rollback
  // with 0, 1, 2 deleted.
  EXPECT_EQ(r.scenarios.size(), 9u);
}

TEST_P(Rehearsal, TheWatchedCollectionsAreNeitherReadNorWritten) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(4);
  for (int steps = 1; steps <= kAppStepCount; ++steps) bank.Transfer("A0", "A1", 5, steps);
  Must(backend_->store()->CreateIndexes(bank.txns(),
                                        {IndexSpec{{{"state", 1}}, "", false, false, false}}));
  auto everything = [&] {
    std::vector<std::string> out;
    for (const Namespace& ns : {bank.txns(), bank.accounts()}) {
      std::unique_ptr<Cursor> c;
      Must(backend_->store()->Find(ns, Filter(), FindOptions{}, &c));
      Document d;
      for (bool has = true; Must(c->Next(&d, &has)), has;) out.push_back(Value(d).ToString());
      std::vector<IndexSpec> specs;
      Must(backend_->store()->ListIndexes(ns, &specs));
      for (const auto& s : specs) out.push_back(s.name + " " + s.ToString());
    }
    return out;
  };
  const auto before = everything();

  ExpectPassed(Run("[[watch]]\nname = \"bank\"\ndatabase = \"d\"\nprofile = \"transfer\"\n"));

  EXPECT_EQ(everything(), before);
}

INSTANTIATE_TEST_SUITE_P(Backends, Rehearsal, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

// connectionStatus's privileges as mongod reports them: a readWrite role on `bank` grants
// every action a rehearsal needs there; a role on the watched collections alone does not
// cover the scratch collections; no authenticated user (no access control) is not checked.
TEST(RehearsePrivileges, TheMissingActionIsNamedFromTheUsersPrivileges) {
  const std::vector<std::string> needed = {"find", "insert", "update", "remove", "dropCollection"};
  auto status = [](Array privileges) {
    return Document{{"authInfo", Document{{"authenticatedUsers",
                                           Array{Document{{"user", "txn"}, {"db", "admin"}}}},
                                          {"authenticatedUserPrivileges", privileges}}}};
  };
  auto privilege = [](const char* db, const char* coll, Array actions) {
    return Document{{"resource", Document{{"db", db}, {"collection", coll}}}, {"actions", actions}};
  };
  const Array read_write = {"find", "insert", "update", "remove", "dropCollection", "createIndex"};
  EXPECT_TRUE(txn_recovery::daemon::MissingActions(status({privilege("bank", "", read_write)}),
                                                   "bank", needed)
                  .empty());
  EXPECT_EQ(txn_recovery::daemon::MissingActions(
                status({privilege("bank", "transactions", read_write),
                        privilege("bank", "", Array{"find", "insert", "update", "remove"})}),
                "bank", needed),
            std::vector<std::string>{"dropCollection"});
  EXPECT_EQ(txn_recovery::daemon::MissingActions(status({privilege("shop", "", read_write)}),
                                                 "bank", needed)
                .size(),
            needed.size());
  EXPECT_TRUE(txn_recovery::daemon::MissingActions(
                  Document{{"authInfo", Document{{"authenticatedUsers", Array{}}}}}, "bank", needed)
                  .empty());
}

TXN_RECOVERY_DATABASE_SUITE(RehearseCommand);

// The command as an operator runs it, on the test server: a table, or JSON, and exit 0.
TEST(RehearseCommand, EveryWatchOfTheFilePassesAndTheJsonReportSaysSo) {
  TestUri uri = FindTestUri();
  ASSERT_TRUE(uri.ok) << uri.uri_or_reason;
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  const std::string config =
      ::testing::TempDir() + "rehearse_" + std::to_string(getpid()) + ".toml";
  std::ofstream(config) << "[[watch]]\nname = \"bank\"\ndatabase = \"" << backend->database()
                        << "\"\nprofile = \"transfer\"\n[[watch]]\nname = \"ops\"\ndatabase = \""
                        << backend->database()
                        << "\"\ncollection = \"orders_tx\"\nprofile = \"operations\"\n";
  const std::map<std::string, std::string> env = {{"TXN_RECOVERYD_MONGODB_URI", uri.uri_or_reason}};

  ProcessResult table = RunTxnRecoveryd({"rehearse", "--config", config}, env);
  ProcessResult json = RunTxnRecoveryd({"rehearse", "--config", config, "--json"}, env);
  std::remove(config.c_str());

  EXPECT_EQ(table.exit_code, 0) << table.out << table.err;
  EXPECT_NE(table.out.find("PASS  pending, 1 of 2 steps applied, stuck -> done"), std::string::npos)
      << table.out;
  EXPECT_EQ(table.out.find("FAIL"), std::string::npos) << table.out;
  EXPECT_EQ(json.exit_code, 0) << json.out << json.err;
  EXPECT_NE(json.out.find("\"write_concern\": \"majority\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"topology\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"passed\": true"), std::string::npos) << json.out;
}

// SIGTERM (as systemd or an operator's kill sends it) in the middle of a long rehearsal: it
// stops between its phases, drops what it created, and exits 1.
TEST(RehearseCommand, ASigtermStopsItAndWhatItCreatedIsDropped) {
  TestUri uri = FindTestUri();
  ASSERT_TRUE(uri.ok) << uri.uri_or_reason;
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  const std::string config =
      ::testing::TempDir() + "rehearse_term_" + std::to_string(getpid()) + ".toml";
  {
    std::ofstream f(config);
    for (int i = 0; i < 200; ++i)
      f << "[[watch]]\nname = \"bank" << i << "\"\ndatabase = \"" << backend->database()
        << "\"\ncollection = \"t" << i << "\"\nprofile = \"transfer\"\n";
  }
  auto p = StartTxnRecoveryd({"rehearse", "--config", config},
                             {{"TXN_RECOVERYD_MONGODB_URI", uri.uri_or_reason}});
  // Under way: its first watch's table is out (or it is still connecting: the signal is
  // taken all the same).
  for (int i = 0; i < 100 && p->Stdout().find("PASS") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p->Signal(SIGTERM);
  const std::optional<int> code = p->Wait(std::chrono::seconds(60));
  std::remove(config.c_str());

  EXPECT_EQ(code, 1) << p->Stdout() << p->Stderr();
  EXPECT_NE(p->Stderr().find("stopping the rehearsal"), std::string::npos) << p->Stderr();
  std::vector<std::string> names;
  Must(backend->store()->ListCollections(backend->database(), &names));
  for (const auto& n : names) EXPECT_NE(n.rfind(kRehearsalPrefix, 0), 0u) << n << " left behind";
}

}  // namespace
}  // namespace txn_recovery::testing
