// The txn-recoveryd executable as an operator runs it: exit codes, reports, redaction.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>

#include "daemon/cli.h"
#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/test_env.h"
#include "txn_recovery/engine/membership.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::seconds;

std::string ConfigFor(const std::string& uri, const std::string& database) {
  return "[mongodb]\nuri = \"" + uri + "\"\nserver_selection_timeout = \"2s\"\n" +
         "[[watch]]\nname = \"bank\"\ndatabase = \"" + database + "\"\n";
}

TXN_RECOVERY_DATABASE_SUITE(Cli);

TEST(Cli, AnExceptionThatEscapesACommandIsAnInternalErrorExit70) {
  // Exit 70 (EX_SOFTWARE) says "a bug": not a configuration to fix or an outage to wait
  // out, which the other codes say, so that a unit's RestartPreventExitStatus= and an
  // operator's script can tell them apart. A command that ends normally keeps its code.
  EXPECT_EQ(txn_recovery::daemon::GuardInternalErrors([] { return 69; }), 69);
  ::testing::internal::CaptureStderr();
  const int rc = txn_recovery::daemon::GuardInternalErrors(
      []() -> int { throw std::logic_error("metric x updated as a gauge"); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 70);
  EXPECT_NE(err.find("internal error"), std::string::npos) << err;
  EXPECT_NE(err.find("metric x updated as a gauge"), std::string::npos) << err;
}

TEST(Cli, UsageErrorsExit64) {
  EXPECT_EQ(RunTxnRecoveryd({}).exit_code, 64);
  EXPECT_EQ(RunTxnRecoveryd({"sweep"}).exit_code, 64);
  EXPECT_EQ(RunTxnRecoveryd({"sweep", "--config", "/nonexistent.toml"}).exit_code, 64);
  EXPECT_EQ(RunTxnRecoveryd({"frobnicate"}).exit_code, 64);
}

TEST(Cli, AnUnknownCommandIsNamedWithTheCommandsThereAre) {
  ProcessResult r = RunTxnRecoveryd({"bogus", "--config", "/dev/null"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("unknown command 'bogus'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sweep"), std::string::npos) << r.err;
}

TEST(Cli, AMisspeltCommandIsNamedWithTheCommandItResembles) {
  ProcessResult r = RunTxnRecoveryd({"sweeep", "--config", "/dev/null"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("unknown command 'sweeep' (did you mean 'sweep'?"), std::string::npos)
      << r.err;
  ProcessResult far = RunTxnRecoveryd({"frobnicate", "--config", "/dev/null"});
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << "nothing close: " << far.err;
}

// check-config and every other command print every problem of the file, each with its
// line, on stderr, and exit 78 once.
TEST(Cli, EveryProblemOfTheFileIsPrintedAtOnce) {
  std::string path = WriteTestFile(
      ".toml",
      "[mongodb]\nuri = \"mongodb://h\"\n[daemon]\nintreval = \"30s\"\n[[watch]]\nname = \"w\"\n");
  ProcessResult r = RunTxnRecoveryd({"check-config", "--config", path});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find(path + ":4:1: daemon.intreval: unknown key (did you mean 'interval'?"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(path + ":5:1: watch[0].database: is required"), std::string::npos) << r.err;
}

TEST(Cli, WithoutItsConfigurationFileItSaysWhereItLookedAndHowToProvideOne) {
  for (const char* command : {"run", "sweep", "check-config"}) {
    ProcessResult r = RunTxnRecoveryd({command, "--config", "/nonexistent/txn-recoveryd.toml"});
    EXPECT_EQ(r.exit_code, 64) << command;
    EXPECT_NE(r.err.find("no configuration file at /nonexistent/txn-recoveryd.toml"),
              std::string::npos)
        << command << ": " << r.err;
  }
}

TEST(Cli, VersionNamesTheSourceRevision) {
  ProcessResult r = RunTxnRecoveryd({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("txn-recoveryd 0.1.0 (revision "), std::string::npos) << r.out;
}

TEST(Cli, CheckConfigRefusesAUriThatRunWouldRefuse) {
  // check-config once said OK to this file, and `run` then exited 78 on it.
  std::string path =
      WriteTestFile(".toml",
                    "[mongodb]\nuri = \"mongodb//db.example\"\n[[watch]]\nname = \"w\"\n"
                    "database = \"d\"\n");
  for (const char* command : {"check-config", "run", "sweep"}) {
    ProcessResult r = RunTxnRecoveryd({command, "--config", path});
    EXPECT_EQ(r.exit_code, 78) << command << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(path + ":2:7: mongodb.uri: not a usable MongoDB URI"), std::string::npos)
        << command << ": " << r.err;
  }
}

TEST(Cli, AControlCharacterInAVariableIsABadConfigurationNotACrash) {
  std::string path = WriteTestFile(".toml", ConfigFor("mongodb://127.0.0.1:1", "d"));
  for (const char* command : {"check-config", "run"}) {
    ProcessResult r = RunTxnRecoveryd({command, "--config", path},
                                      {{"TXN_RECOVERYD_SWEEP_LEASE", "60s\x01"}}, seconds(20));
    EXPECT_EQ(r.exit_code, 78) << command << ": " << r.err;
    EXPECT_NE(r.err.find("environment TXN_RECOVERYD_SWEEP_LEASE: byte 4 is a control "
                         "character (0x01)"),
              std::string::npos)
        << command << ": " << r.err;
  }
}

TEST(Cli, AMisspeltVariableIsWarnedAboutWithTheNameItResembles) {
  std::string path = WriteTestFile(".toml", ConfigFor("mongodb://127.0.0.1:1", "d"));
  ProcessResult r = RunTxnRecoveryd({"check-config", "--config", path},
                                    {{"TXN_RECOVERYD_SWEEP_WORKER", "8"}}, seconds(20));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("unknown environment variable TXN_RECOVERYD_SWEEP_WORKER (did you "
                       "mean TXN_RECOVERYD_SWEEP_WORKERS?) is ignored"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("workers = 4"), std::string::npos) << "ignored, as it says";
}

TEST(Cli, BadConfigurationExits78NamingFileLineAndKey) {
  std::string path =
      WriteTestFile(".toml",
                    "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                    "resume_after = \"soon\"\n");
  ProcessResult r = RunTxnRecoveryd({"sweep", "--config", path});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find(path + ":6:16: watch[0].resume_after"), std::string::npos) << r.err;
}

TEST(Cli, UnreachableDatabaseExits69AndNeverPrintsThePassword) {
  std::string path = WriteTestFile(
      ".toml",
      "[mongodb]\nuri = \"mongodb://admin:s3cr3t-pw@127.0.0.1:1/?serverSelectionTimeoutMS=300\"\n"
      "server_selection_timeout = \"300ms\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n");
  for (const char* flag : {"", "--json", "-vv"}) {
    std::vector<std::string> args = {"sweep", "--config", path};
    if (*flag) args.push_back(flag);
    ProcessResult r = RunTxnRecoveryd(args);
    EXPECT_EQ(r.exit_code, 69) << flag << "\n" << r.out << r.err;
    EXPECT_EQ((r.out + r.err).find("s3cr3t-pw"), std::string::npos) << flag << r.out << r.err;
  }
}

// The URI's serverSelectionTimeoutMS wins over mongodb.server_selection_timeout (5 s by
// default), and the sweep waits for it once: before, the index check and each watch waited
// in turn (15 s for one watch with the default, 5 s more for each other watch).
TEST(Cli, AnUnreachableDatabaseIsReportedAfterOneWaitOfTheTimeoutTheUriSets) {
  std::string path =
      WriteTestFile(".toml",
                    "[mongodb]\nuri = \"mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=1000\"\n"
                    "[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                    "[[watch]]\nname = \"v\"\ndatabase = \"e\"\n");
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult r = RunTxnRecoveryd({"sweep", "--json", "--config", path});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.exit_code, 69) << r.out << r.err;
  EXPECT_LT(took, std::chrono::milliseconds(2500)) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["watches"].size(), 2u) << r.out;
  for (const auto& w : doc["watches"])
    EXPECT_NE(w["status"].get<std::string>().find("Unavailable"), std::string::npos) << w.dump();
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
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  ProcessResult dry = RunTxnRecoveryd({"sweep", "--dry-run", "--json", "--config", path});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(bank.State(resume), "pending") << "a dry run must write nothing";

  ProcessResult r = RunTxnRecoveryd({"sweep", "--json", "-v", "--config", path});
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
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));
  ProcessResult r = RunTxnRecoveryd({"sweep", "-v", "--config", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("quarantined: field 'value' is missing watch=bank txn_id=bad-42"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("quarantined 1 (1 in total)"), std::string::npos) << r.out;
  // Still reported on the next sweep: it needs an operator.
  EXPECT_EQ(RunTxnRecoveryd({"sweep", "--config", path}).exit_code, 1);
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
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  ProcessResult plain = RunTxnRecoveryd({"sweep", "--config", path});
  EXPECT_EQ(plain.exit_code, 0) << "without --orphans the sweep cannot see either";
  EXPECT_EQ(bank.Balance("A1"), 1200);

  ProcessResult r = RunTxnRecoveryd({"sweep", "--orphans", "--config", path});
  EXPECT_EQ(r.exit_code, 1) << "a marker of a missing transaction needs an operator\n"
                            << r.out << r.err;
  EXPECT_NE(r.out.find("late writes undone 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing-transaction"), std::string::npos) << r.out;
  // The ids as an operator types them: a search for deleted-7 finds it.
  EXPECT_NE(r.out.find("_id=A2  txn=deleted-7"), std::string::npos) << r.out;
  EXPECT_EQ(bank.Balance("A1"), 1100);
  EXPECT_EQ(bank.Markers("A2").size(), 1u) << "no record of the change: the marker stays";

  ProcessResult json = RunTxnRecoveryd({"sweep", "--orphans", "--json", "--config", path});
  auto doc = nlohmann::json::parse(json.out);
  const auto& orphans = doc["watches"][0]["orphans"];
  EXPECT_EQ(orphans["missing_transactions"], 1);
  EXPECT_EQ(orphans["late_writes_undone"], 0) << "undone once, by the first scan";
  EXPECT_EQ(orphans["findings"][0]["transaction"], "deleted-7") << "the id, not JSON in a string";
  EXPECT_EQ(orphans["findings"][0]["participant"], "A2");
}

TEST(Cli, CheckConfigPrintsTheEffectiveConfigurationWithThePasswordRedacted) {
  std::string path = WriteTestFile(
      ".toml",
      "[mongodb]\nuri = \"mongodb://app:hunter2-pw@db.example:27017/?authSource=admin\"\n"
      "[daemon]\ninterval = \"30s\"\n[[watch]]\nname = \"bank\"\ndatabase = \"bank\"\n");
  ProcessResult r = RunTxnRecoveryd({"check-config", "--config", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((r.out + r.err).find("hunter2-pw"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("app:***@db.example"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("interval = \"30s\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("name = \"bank\""), std::string::npos) << r.out;

  std::string bad =
      WriteTestFile(".toml", "[mongodb]\nuri = \"mongodb://h\"\n[daemon]\ninterval = 5\n");
  ProcessResult b = RunTxnRecoveryd({"check-config", "--config", bad});
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
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  ProcessResult p = RunTxnRecoveryd({"pause", "--config", path});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("watch bank: paused"), std::string::npos) << p.out;
  ProcessResult s = RunTxnRecoveryd({"sweep", "--config", path});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("PAUSED"), std::string::npos) << s.out;
  EXPECT_EQ(bank.State(id), "pending") << "a paused watch is not acted on";

  ProcessResult i = RunTxnRecoveryd({"inspect", "--json", "--config", path});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  auto doc = nlohmann::json::parse(i.out);
  EXPECT_EQ(doc["watches"][0]["paused"], true);
  EXPECT_EQ(doc["watches"][0]["stuck"]["pending"], 1);

  ASSERT_EQ(RunTxnRecoveryd({"resume", "--config", path}).exit_code, 0);
  EXPECT_EQ(RunTxnRecoveryd({"sweep", "--config", path}).exit_code, 0);
  EXPECT_EQ(bank.State(id), "done");
  ProcessResult t = RunTxnRecoveryd({"inspect", "--config", path});
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("stuck (older than 1m): none"), std::string::npos) << t.out;
}

// A transaction document `sweep` will quarantine (no amount), `minutes_old` stale.
void InsertMalformed(TestBackend& backend, const Bank& bank, const Value& id) {
  DateTime now;
  ASSERT_TRUE(backend.store()->ServerTime(&now).ok());
  ASSERT_TRUE(
      backend.store()
          ->InsertMany(bank.txns(), {Document{{"_id", id},
                                              {"source", "A0"},
                                              {"destination", "A1"},
                                              {"state", "pending"},
                                              {"lastModified", DateTime{now.millis - 300'000}}}})
          .ok());
}

TEST(Cli, InspectExits1WhileATransactionIsQuarantinedAsTheManPageSays) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));
  EXPECT_EQ(RunTxnRecoveryd({"inspect", "--config", path}).exit_code, 0)
      << "nothing quarantined yet";

  InsertMalformed(*backend, bank, Value("bad-42"));
  ASSERT_EQ(RunTxnRecoveryd({"sweep", "--config", path}).exit_code, 1);
  ProcessResult text = RunTxnRecoveryd({"inspect", "--config", path});
  EXPECT_EQ(text.exit_code, 1) << text.out;
  EXPECT_NE(text.out.find("_id=bad-42  pending  field 'value' is missing"), std::string::npos)
      << text.out;
  // Nothing is stuck any more, and the quarantine is what needs attention: said first, where
  // "stuck: none" would otherwise read as all clear.
  auto attention = text.out.find("ATTENTION: 1 quarantined transaction waits for an operator");
  EXPECT_NE(attention, std::string::npos) << text.out;
  EXPECT_LT(attention, text.out.find("stuck (older than")) << text.out;
  ProcessResult json = RunTxnRecoveryd({"inspect", "--json", "--config", path});
  EXPECT_EQ(json.exit_code, 1);
  auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["exit_code"], 1);
  EXPECT_EQ(doc["watches"][0]["quarantined"][0]["_id"], "bad-42");
}

TEST(Cli, IdsAreReportedAsJsonValuesOnceNotAsJsonInsideStrings) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  Value numeric = bank.Transfer("A0", "A1", 100, 3);  // the applications' ids are numbers
  bank.Age(numeric, std::chrono::minutes(2));
  auto oid = ObjectId::FromHex("54fd7392742abeef6186a68e");
  ASSERT_TRUE(oid);
  InsertMalformed(*backend, bank, Value("malformed-1"));
  InsertMalformed(*backend, bank, Value(*oid));
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  ProcessResult r = RunTxnRecoveryd({"sweep", "--json", "-v", "--config", path});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  std::set<std::string> ids;
  for (const auto& t : doc["watches"][0]["transactions"]) ids.insert(t["_id"].dump());
  EXPECT_EQ(ids, (std::set<std::string>{numeric.ToString(), "\"malformed-1\"",
                                        "{\"$oid\":\"54fd7392742abeef6186a68e\"}"}))
      << r.out;

  ProcessResult i = RunTxnRecoveryd({"inspect", "--json", "--config", path});
  ids.clear();
  auto inspected = nlohmann::json::parse(i.out);
  for (const auto& q : inspected["watches"][0]["quarantined"]) ids.insert(q["_id"].dump());
  EXPECT_EQ(ids,
            (std::set<std::string>{"\"malformed-1\"", "{\"$oid\":\"54fd7392742abeef6186a68e\"}"}))
      << i.out;
  ProcessResult t = RunTxnRecoveryd({"inspect", "--config", path});
  EXPECT_NE(t.out.find("_id=54fd7392742abeef6186a68e  pending"), std::string::npos) << t.out;
}

TEST(Cli, ADryRunListsEveryPlannedActionWithTheStateItWouldReach) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(6);
  Value resume = bank.Transfer("A0", "A1", 100, 3);      // pending
  Value rollback = bank.Transfer("A2", "A3", 100, 3);    // pending, expired
  Value finish = bank.Transfer("A4", "A5", 100, 6);      // applied
  Value turned = bank.Transfer("A0", "closed", 100, 3);  // pending, its credit's account gone
  bank.Age(resume, std::chrono::minutes(2));
  bank.Age(rollback, std::chrono::minutes(45));
  bank.Age(finish, std::chrono::minutes(2));
  bank.Age(turned, std::chrono::minutes(2));
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));
  auto line = [](const Value& id, const std::string& rest) {
    return "bank  _id=" + id.ToString() + "  " + rest;
  };

  ProcessResult r = RunTxnRecoveryd({"sweep", "--dry-run", "--config", path});  // no -v
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(line(resume, "pending -> done  resume  planned")), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(line(rollback, "pending -> cancelled  rollback  planned")),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(line(finish, "applied -> done  finish  planned")), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(line(turned, "pending -> cancelled  rollback  planned")), std::string::npos)
      << "a resume that cannot apply is rehearsed as the roll back it becomes\n"
      << r.out;

  ProcessResult j = RunTxnRecoveryd({"sweep", "--dry-run", "--json", "--config", path});
  ASSERT_EQ(j.exit_code, 0) << j.out << j.err;
  std::map<std::string, std::string> after;
  auto planned = nlohmann::json::parse(j.out);
  for (const auto& t : planned["watches"][0]["transactions"])
    after[t["_id"].dump()] =
        t["before"].get<std::string>() + " -> " + t["after"].get<std::string>();
  EXPECT_EQ(after,
            (std::map<std::string, std::string>{{resume.ToString(), "pending -> done"},
                                                {rollback.ToString(), "pending -> cancelled"},
                                                {finish.ToString(), "applied -> done"},
                                                {turned.ToString(), "pending -> cancelled"}}))
      << j.out;
  EXPECT_EQ(bank.State(resume), "pending") << "a dry run writes nothing";

  ProcessResult real =
      RunTxnRecoveryd({"sweep", "--config", path});  // a real sweep without -v: no list
  EXPECT_EQ(real.exit_code, 0);
  EXPECT_EQ(real.out.find("_id="), std::string::npos) << real.out;
}

TEST(Cli, WatchNamesTheWatchesACommandActsOnAndAnUnknownOneIsAUsageError) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 100, 3);
  bank.Age(id, std::chrono::minutes(2));
  std::string uri = FindTestUri().uri_or_reason;
  std::string path = WriteTestFile(
      ".toml", "[mongodb]\nuri = \"" + uri + "\"\n[[watch]]\nname = \"bank\"\ndatabase = \"" +
                   backend->database() + "\"\n[[watch]]\nname = \"other\"\ndatabase = \"" +
                   backend->database() + "_o2\"\n");  // 63 bytes at most, as MongoDB allows

  for (const char* command : {"sweep", "inspect", "pause", "resume"}) {
    ProcessResult r = RunTxnRecoveryd({command, "--watch", "nope", "--config", path});
    EXPECT_EQ(r.exit_code, 64) << command;
    EXPECT_NE(
        r.err.find("--watch nope: no watch of that name in " + path + " (it has: bank, other)"),
        std::string::npos)
        << command << ": " << r.err;
  }
  ProcessResult p = RunTxnRecoveryd({"pause", "--watch", "other", "--config", path});
  EXPECT_EQ(p.out, "watch other: paused\n");
  ProcessResult s = RunTxnRecoveryd({"sweep", "--watch", "bank", "--json", "--config", path});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto doc = nlohmann::json::parse(s.out);
  ASSERT_EQ(doc["watches"].size(), 1u) << s.out;
  EXPECT_EQ(doc["watches"][0]["name"], "bank");
  EXPECT_EQ(bank.State(id), "done");
  ProcessResult i = RunTxnRecoveryd({"inspect", "--watch", "other", "--json", "--config", path});
  doc = nlohmann::json::parse(i.out);
  ASSERT_EQ(doc["watches"].size(), 1u) << i.out;
  EXPECT_EQ(doc["watches"][0]["paused"], true);
  EXPECT_EQ(RunTxnRecoveryd({"resume", "--watch", "other", "--config", path}).out,
            "watch other: resumed\n");
}

TEST(Cli, InspectListsTheLiveMembersOfTheFleetAndTheBucketsEachHolds) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  const Namespace members{backend->database(), "txn_recoveryd_members"};
  // host-a runs this very build (its record says so as `run` writes it: "txn-recoveryd
  // VERSION (REVISION)", from `--version`'s "txn-recoveryd VERSION (revision REVISION)").
  std::smatch v;
  const std::string version = RunTxnRecoveryd({"--version"}).out;
  ASSERT_TRUE(
      std::regex_search(version, v, std::regex(R"(txn-recoveryd (\S+) \(revision (\S+)\))")))
      << version;
  const std::string this_build = "txn-recoveryd " + v[1].str() + " (" + v[2].str() + ")";
  ASSERT_TRUE(Heartbeat(backend->store(), members,
                        MemberRecord{"host-a:1:y", "db-1", this_build, {"transactions"}, {}})
                  .ok());
  ASSERT_TRUE(Heartbeat(backend->store(), members,
                        MemberRecord{"host-b:2:x", "db-1", "v", {"transactions"}, {}})
                  .ok());
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  ProcessResult i = RunTxnRecoveryd({"inspect", "--json", "--config", path});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  auto fleet = nlohmann::json::parse(i.out)["watches"][0]["fleet_members"];
  ASSERT_EQ(fleet.size(), 2u) << i.out;
  EXPECT_EQ(fleet[0]["id"], "host-a:1:y");
  EXPECT_EQ(fleet[0]["buckets"], 128);
  EXPECT_EQ(fleet[1]["id"], "host-b:2:x");
  EXPECT_EQ(fleet[1]["buckets"], 128);
  EXPECT_EQ(fleet[0]["same_version"], true) << fleet[0];
  EXPECT_EQ(fleet[1]["same_version"], false) << fleet[1];

  ProcessResult t = RunTxnRecoveryd({"inspect", "--config", path});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("fleet (txn_recoveryd_members): 2 live members"), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("host-a:1:y  host=db-1"), std::string::npos) << t.out;
}

// What an operator asks of a fleet that drains slowly: what is stuck in each live member's
// share, what has been stuck there well past its threshold (that member is not driving
// its share: said with a warning), and the records of members that stopped and that no
// live member has removed yet.
TEST(Cli, InspectSaysWhatIsStuckAndOverdueInEachShareAndListsExpiredMembers) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  const Namespace members{backend->database(), "txn_recoveryd_members"};
  for (const char* id : {"host-b:2:x", "host-a:1:y", "host-c:3:z"})
    ASSERT_TRUE(
        Heartbeat(backend->store(), members, MemberRecord{id, "db-1", "v", {"transactions"}, {}})
            .ok());
  DateTime now;
  ASSERT_TRUE(backend->store()->ServerTime(&now).ok());
  WriteResult w;
  ASSERT_TRUE(backend->store()
                  ->UpdateOne(members, Filter().Eq("_id", "host-c:3:z"),
                              Update().Set("heartbeat", DateTime{now.millis - 3'600'000}), &w)
                  .ok());
  ASSERT_EQ(w.matched, 1);
  // Debited and left pending (resume_after 1 min by default; fleet.overdue_after 150 s):
  // 10 minutes old is overdue, 2 minutes is stuck only, just begun is neither.
  Bank bank(backend->store(), backend->database());
  bank.Open(4);
  std::vector<Value> overdue, stuck;
  for (int i = 0; i < 24; ++i) {
    const Value id = bank.Transfer(Bank::Account(i % 4), Bank::Account((i + 1) % 4), 1, 3);
    if (i % 3 == 0) {
      bank.Age(id, std::chrono::minutes(10));
      overdue.push_back(id);
      stuck.push_back(id);
    } else if (i % 3 == 1) {
      bank.Age(id, std::chrono::minutes(2));
      stuck.push_back(id);
    }
  }
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  ProcessResult i = RunTxnRecoveryd({"inspect", "--json", "--config", path});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  const auto doc = nlohmann::json::parse(i.out)["watches"][0];
  const auto& fleet = doc["fleet_members"];
  ASSERT_EQ(fleet.size(), 2u) << i.out;
  bool warned_of_someone = false;
  for (std::uint32_t pos = 0; pos < 2; ++pos) {
    const Share share{pos, 2};
    std::int64_t in_share = 0, overdue_in_share = 0;
    for (const Value& id : stuck) in_share += share.Owns(id) ? 1 : 0;
    for (const Value& id : overdue) overdue_in_share += share.Owns(id) ? 1 : 0;
    EXPECT_EQ(fleet[pos]["stuck"], in_share) << fleet[pos]["id"];
    EXPECT_EQ(fleet[pos]["overdue"], overdue_in_share) << fleet[pos]["id"];
    warned_of_someone = warned_of_someone || overdue_in_share > 0;
  }
  ASSERT_EQ(doc["fleet_expired_members"].size(), 1u) << i.out;
  EXPECT_EQ(doc["fleet_expired_members"][0]["id"], "host-c:3:z");
  EXPECT_GE(doc["fleet_expired_members"][0]["heartbeat_age_seconds"].get<double>(), 3600.0);

  // The members here run another build ("v") than this inspect's.
  for (const auto& m : fleet) EXPECT_EQ(m["same_version"], false) << m;

  ProcessResult t = RunTxnRecoveryd({"inspect", "--config", path});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("version=v [not this inspect's]"), std::string::npos) << t.out;
  ASSERT_TRUE(warned_of_someone);
  for (std::size_t pos = 0; pos < 2; ++pos)
    EXPECT_EQ(
        t.out.find("WARNING: member " + fleet[pos]["id"].get<std::string>()) != std::string::npos,
        fleet[pos]["overdue"].get<std::int64_t>() > 0)
        << t.out;
  EXPECT_NE(t.out.find("expired member records: 1"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("host-c:3:z  host=db-1"), std::string::npos) << t.out;
}

// An operator splits a large backlog between two sweeps started by hand: each drives only
// its share, says how many it left to the others, and together they resolve everything once.
TEST(Cli, TwoSweepsWithComplementarySharesResolveEveryStuckTransferOnce) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(6);
  const Snapshot before = bank.Take();
  std::vector<Value> ids;
  for (int i = 0; i < 30; ++i)
    ids.push_back(bank.Transfer(Bank::Account(i % 6), Bank::Account((i + 1) % 6), 1, 3));
  for (const Value& id : ids) bank.Age(id, std::chrono::minutes(5));
  std::string path =
      WriteTestFile(".toml", ConfigFor(FindTestUri().uri_or_reason, backend->database()));

  // One after the other: the first leaves the second's share, the second finds only its own.
  std::int64_t resolved = 0;
  for (const char* share : {"0/2", "1/2"}) {
    ProcessResult r = RunTxnRecoveryd({"sweep", "--share", share, "--json", "--config", path});
    ASSERT_EQ(r.exit_code, 0) << share << ": " << r.out << r.err;
    const auto w = nlohmann::json::parse(r.out)["watches"][0];
    const std::int64_t mine = w["resolved"].get<std::int64_t>();
    EXPECT_GT(mine, 0) << share << ": " << r.out;
    EXPECT_LT(mine, 30) << share << ": " << r.out;
    EXPECT_EQ(w["outside_share"].get<std::int64_t>(), resolved == 0 ? 30 - mine : 0)
        << share << ": " << r.out;
    resolved += mine;
  }
  EXPECT_EQ(resolved, 30);
  for (const Value& id : ids) EXPECT_EQ(bank.State(id), "done") << id.ToString();
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;

  ProcessResult text = RunTxnRecoveryd({"sweep", "--share", "1/2", "--config", path});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("left to the other shares 0 (share 1/2)"), std::string::npos) << text.out;
}

TEST(Cli, AShareThatIsNotKOfNIsAUsageErrorThatSaysWhy) {
  const std::string path = WriteTestFile(".toml", ConfigFor("mongodb://127.0.0.1:1", "db"));
  const std::pair<const char*, const char*> cases[] = {
      {"2", "--share takes K/N"},
      {"a/b", "--share takes K/N"},
      {"-1/2", "--share takes K/N"},
      {"2/2", "K must be 0 to N-1 (1)"},
      {"0/0", "N must be 1 to 256"},
      {"0/257", "N must be 1 to 256"},
      {"0/99999999999", "--share takes K/N"},
  };
  for (const auto& [share, says] : cases) {
    ProcessResult r = RunTxnRecoveryd({"sweep", std::string("--share=") + share, "--config", path});
    EXPECT_EQ(r.exit_code, 64) << share;
    EXPECT_NE(r.err.find(says), std::string::npos) << share << ": " << r.err;
  }
}

}  // namespace
}  // namespace txn_recovery::testing
