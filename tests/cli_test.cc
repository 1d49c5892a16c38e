// The txn-recoveryd executable as an operator runs it: exit codes, reports, redaction.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/bank.h"
#include "support/test_env.h"

namespace txn_recovery::testing {
namespace {

struct ProcessResult {
  int exit_code = -1;
  std::string out, err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the daemon with `args`, with the environment variable for the URI removed so that
// only the configuration file counts.
ProcessResult Daemon(const std::string& args) {
  std::string base = ::testing::TempDir() + "txn_recoveryd_cli_" + std::to_string(getpid());
  std::string cmd = "env -u TXN_RECOVERYD_MONGODB_URI " + Quote(TXN_RECOVERYD_BINARY) + " " + args +
                    " >" + base + ".out 2>" + base + ".err";
  int status = std::system(cmd.c_str());
  ProcessResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadAll(base + ".out");
  r.err = ReadAll(base + ".err");
  return r;
}

std::string WriteConfig(const std::string& text) {
  std::string path = ::testing::TempDir() + "txn_recoveryd_cli_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml";
  std::ofstream(path) << text;
  return path;
}

std::string ConfigFor(const std::string& uri, const std::string& database) {
  return "[mongodb]\nuri = \"" + uri + "\"\nserver_selection_timeout = \"2s\"\n" +
         "[[watch]]\nname = \"bank\"\ndatabase = \"" + database + "\"\n";
}

TEST(Cli, UsageErrorsExit64) {
  EXPECT_EQ(Daemon("").exit_code, 64);
  EXPECT_EQ(Daemon("sweep").exit_code, 64);
  EXPECT_EQ(Daemon("sweep --config /nonexistent.toml").exit_code, 64);
  EXPECT_EQ(Daemon("frobnicate").exit_code, 64);
}

TEST(Cli, BadConfigurationExits78NamingFileLineAndKey) {
  std::string path = WriteConfig(
      "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
      "resume_after = \"soon\"\n");
  ProcessResult r = Daemon("sweep --config " + path);
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find(path + ":6:16: watch[0].resume_after"), std::string::npos) << r.err;
}

TEST(Cli, UnreachableDatabaseExits69AndNeverPrintsThePassword) {
  std::string path = WriteConfig(
      "[mongodb]\nuri = \"mongodb://admin:s3cr3t-pw@127.0.0.1:1/?serverSelectionTimeoutMS=300\"\n"
      "server_selection_timeout = \"300ms\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n");
  for (const char* flags : {"", " --json", " -vv"}) {
    ProcessResult r = Daemon("sweep --config " + path + flags);
    EXPECT_EQ(r.exit_code, 69) << flags << "\n" << r.out << r.err;
    EXPECT_EQ((r.out + r.err).find("s3cr3t-pw"), std::string::npos) << flags << r.out << r.err;
  }
}

TEST(Cli, SweepResolvesStuckTransfersAndReportsThemAsJson) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(4);
  Snapshot before = bank.Take();
  Value resume = bank.Transfer("A0", "A1", 100, 3);
  Value rollback = bank.Transfer("A2", "A3", 100, 4);
  bank.Age(resume, std::chrono::minutes(2));
  bank.Age(rollback, std::chrono::minutes(45));
  std::string path = WriteConfig(ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  ProcessResult dry = Daemon("sweep --dry-run --json --config " + path);
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(bank.State(resume), "pending") << "a dry run must write nothing";

  ProcessResult r = Daemon("sweep --json -v --config " + path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["exit_code"], 0);
  const auto& w = doc["watches"][0];
  EXPECT_EQ(w["name"], "bank");
  EXPECT_EQ(w["resolved"], 2);
  EXPECT_EQ(w["actions"]["resume"]["resolved"], 1);
  EXPECT_EQ(w["actions"]["rollback"]["resolved"], 1);
  EXPECT_EQ(w["transactions"].size(), 2u);
  EXPECT_EQ(bank.State(resume), "done");
  EXPECT_EQ(bank.State(rollback), "cancelled");
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
}

TEST(Cli, AQuarantinedTransactionMakesTheSweepExit1AndNamesIt) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  DateTime now;
  ASSERT_TRUE(backend->store()->ServerTime(&now).ok());
  ASSERT_TRUE(
      backend->store()
          ->InsertMany(bank.txns(), {Document{{"_id", "bad-42"},
                                              {"source", "A0"},
                                              {"destination", "A1"},
                                              {"state", "pending"},
                                              {"lastModified", DateTime{now.millis - 300'000}}}})
          .ok());
  std::string path = WriteConfig(ConfigFor(FindTestUri().uri_or_reason, backend->database()));
  ProcessResult r = Daemon("sweep -v --config " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("quarantined: field 'value' is missing watch=bank txn_id=\"bad-42\""),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("quarantined 1 (1 in total)"), std::string::npos) << r.out;
  // Still reported on the next sweep: it needs an operator.
  EXPECT_EQ(Daemon("sweep --config " + path).exit_code, 1);
}

TEST(Cli, SweepOrphansUndoesALateWriteAndReportsAMarkerOfAMissingTransactionWithBothIds) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(3);
  Value late = bank.Transfer("A0", "A1", 100, kAppStepCount);
  bank.Age(late, std::chrono::hours(6));  // past every window the sweep looks at
  ASSERT_TRUE(bank.RunStep(late, AppStep::kCreditDestination).ok());  // credited twice
  WriteResult wr;
  ASSERT_TRUE(backend->store()
                  ->UpdateOne(bank.accounts(), Filter().Eq("_id", "A2"),
                              Update().Push("pendingTransactions", Value("deleted-7")), &wr)
                  .ok());
  std::string path = WriteConfig(ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  ProcessResult plain = Daemon("sweep --config " + path);
  EXPECT_EQ(plain.exit_code, 0) << "without --orphans the sweep cannot see either";
  EXPECT_EQ(bank.Balance("A1"), 1200);

  ProcessResult r = Daemon("sweep --orphans --config " + path);
  EXPECT_EQ(r.exit_code, 1) << "a marker of a missing transaction needs an operator\n"
                            << r.out << r.err;
  EXPECT_NE(r.out.find("late writes undone 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing-transaction"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("_id=\"A2\"  txn=\"deleted-7\""), std::string::npos) << r.out;
  EXPECT_EQ(bank.Balance("A1"), 1100);
  EXPECT_EQ(bank.Markers("A2").size(), 1u) << "no record of the change: the marker stays";

  ProcessResult json = Daemon("sweep --orphans --json --config " + path);
  auto doc = nlohmann::json::parse(json.out);
  const auto& orphans = doc["watches"][0]["orphans"];
  EXPECT_EQ(orphans["missing_transactions"], 1);
  EXPECT_EQ(orphans["late_writes_undone"], 0) << "undone once, by the first scan";
  EXPECT_EQ(orphans["findings"][0]["transaction"], "\"deleted-7\"");
}

TEST(Cli, CheckConfigPrintsTheEffectiveConfigurationWithThePasswordRedacted) {
  std::string path = WriteConfig(
      "[mongodb]\nuri = \"mongodb://app:hunter2-pw@db.example:27017/?authSource=admin\"\n"
      "[daemon]\ninterval = \"30s\"\n[[watch]]\nname = \"bank\"\ndatabase = \"bank\"\n");
  ProcessResult r = Daemon("check-config --config " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((r.out + r.err).find("hunter2-pw"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("app:***@db.example"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("interval = \"30s\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("name = \"bank\""), std::string::npos) << r.out;

  std::string bad = WriteConfig("[mongodb]\nuri = \"mongodb://h\"\n[daemon]\ninterval = 5\n");
  ProcessResult b = Daemon("check-config --config " + bad);
  EXPECT_EQ(b.exit_code, 78);
  EXPECT_NE(b.err.find(bad + ":4:"), std::string::npos) << b.err;
}

TEST(Cli, PauseStopsEverySweepUntilResumeAndInspectShowsIt) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 100, 3);
  bank.Age(id, std::chrono::minutes(2));
  std::string path = WriteConfig(ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  ProcessResult p = Daemon("pause --config " + path);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("watch bank: paused"), std::string::npos) << p.out;
  ProcessResult s = Daemon("sweep --config " + path);
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("PAUSED"), std::string::npos) << s.out;
  EXPECT_EQ(bank.State(id), "pending") << "a paused watch is not acted on";

  ProcessResult i = Daemon("inspect --json --config " + path);
  ASSERT_EQ(i.exit_code, 0) << i.err;
  auto doc = nlohmann::json::parse(i.out);
  EXPECT_EQ(doc["watches"][0]["paused"], true);
  EXPECT_EQ(doc["watches"][0]["stuck"]["pending"], 1);

  ASSERT_EQ(Daemon("resume --config " + path).exit_code, 0);
  EXPECT_EQ(Daemon("sweep --config " + path).exit_code, 0);
  EXPECT_EQ(bank.State(id), "done");
  ProcessResult t = Daemon("inspect --config " + path);
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("stuck (older than 1m): none"), std::string::npos) << t.out;
}

}  // namespace
}  // namespace txn_recovery::testing
