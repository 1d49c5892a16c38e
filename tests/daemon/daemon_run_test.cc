// `txn-recoveryd run` as systemd and operators run it: a real process, its notifications on
// a stand-in NOTIFY_SOCKET, its health endpoint, signals, and the database going away.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/exposition.h"
#include "support/server_probe.h"
#include "support/test_env.h"
#include "support/wire_proxy.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
namespace fs = std::filesystem;

constexpr const char* kJournalSocketPath = "/run/systemd/journal/socket";

std::string Config(const std::string& uri, const std::vector<std::string>& databases,
                   const std::string& extra = "") {
  std::string c = "[mongodb]\nuri = \"" + uri +
                  "\"\nserver_selection_timeout = \"1s\"\n"
                  "[sweep]\nworkers = 2\nlease = \"20s\"\n"
                  "[daemon]\ninterval = \"300ms\"\nbackoff_initial = \"100ms\"\n"
                  "backoff_max = \"1s\"\ndrain_deadline = \"5s\"\n"
                  "[log]\nlevel = \"info\"\n" +
                  extra;
  for (std::size_t i = 0; i < databases.size(); ++i)
    c += "[[watch]]\nname = \"w" + std::to_string(i) + "\"\ndatabase = \"" + databases[i] + "\"\n";
  return c;
}

// `n` transfers between the 8 accounts of `bank`, left by the application after its debit
// and five minutes old: stuck, past resume_after, far from rollback_after.
std::vector<Value> StuckTransfers(Bank* bank, int n) {
  std::vector<Value> ids;
  for (int i = 0; i < n; ++i)
    ids.push_back(bank->Transfer(Bank::Account(i % 8), Bank::Account((i + 3) % 8), 1, 3));
  for (const Value& id : ids) bank->Age(id, std::chrono::minutes(5));
  return ids;
}

// `txn-recoveryd run` with its stderr in text format.
std::unique_ptr<Subprocess> StartDaemon(const std::string& config_path,
                                        std::map<std::string, std::string> env = {},
                                        std::vector<std::string> args = {}) {
  args.insert(args.begin(), {"run", "--config", config_path});
  env.emplace("TXN_RECOVERYD_LOG_FORMAT", "text");
  return StartTxnRecoveryd(std::move(args), env);
}

// Checks `text` against the Prometheus text exposition format (0.0.4): every sample line
// is NAME{LABELS} VALUE of a family announced by # HELP and # TYPE before its samples.
// Returns the problems found.
std::vector<std::string> ExpositionProblems(const std::string& text) {
  static const std::regex kSample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? )"
      R"((-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$)");
  static const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$)");
  std::vector<std::string> problems;
  std::set<std::string> typed;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (std::regex_match(line, m, kType)) {
      typed.insert(m[1]);
      continue;
    }
    if (!std::regex_match(line, m, kSample)) {
      problems.push_back("not a sample: " + line);
      continue;
    }
    std::string family = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!typed.count(family) && family.size() > std::strlen(suffix) &&
          family.compare(family.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
        family.resize(family.size() - std::strlen(suffix));
    if (!typed.count(family)) problems.push_back("sample before its # TYPE: " + line);
  }
  if (text.empty() || text.back() != '\n') problems.push_back("must end with a newline");
  return problems;
}

TEST(ExpositionCheck, AcceptsTheFormatAndCatchesWhatBreaksIt) {
  EXPECT_TRUE(
      ExpositionProblems("# HELP a_total A.\n# TYPE a_total counter\n"
                         "a_total{watch=\"b\\\"q\",state=\"x\"} 3\n"
                         "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 0.5\nh_count 1\n")
          .empty());
  EXPECT_FALSE(ExpositionProblems("a_total 1\n").empty()) << "no # TYPE";
  EXPECT_FALSE(ExpositionProblems("# TYPE a gauge\na{watch=b} 1\n").empty()) << "unquoted";
  EXPECT_FALSE(ExpositionProblems("# TYPE a gauge\na 1").empty()) << "no final newline";
  EXPECT_FALSE(ExpositionProblems("# TYPE a gauge\na one\n").empty()) << "not a number";
}

TXN_RECOVERY_DATABASE_SUITE(DaemonRun);

class DaemonRun : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create("mongo");
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    uri_ = FindTestUri().uri_or_reason;
  }
  std::unique_ptr<TestBackend> backend_;
  std::string uri_;
};

TEST_F(DaemonRun, UnderSystemdItNotifiesReadyStatusWatchdogReloadAndStopping) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(6);
  Snapshot before = bank.Take();
  std::vector<Value> stuck;
  for (int i = 0; i < 5; ++i)
    stuck.push_back(bank.Transfer("A0", std::string("A").append(std::to_string(i + 1)), 10, 3));
  bank.AgeAll(std::chrono::minutes(5));

  std::string path = WriteTestFile(
      ".toml", Config(uri_, {backend_->database()}, "[http]\nlisten = \"127.0.0.1:0\"\n"));
  FakeNotifySocket notify;
  auto daemon = StartDaemon(path, {{"NOTIFY_SOCKET", notify.path()}, {"WATCHDOG_USEC", "2000000"}});

  ASSERT_TRUE(notify.WaitFor("READY=1", seconds(20))) << daemon->Stderr();
  ASSERT_TRUE(Eventually([&] { return bank.AllIn(stuck, "done"); }, seconds(20)))
      << daemon->Stderr();
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
  EXPECT_TRUE(notify.WaitFor("STATUS=last sweep", seconds(10)));
  EXPECT_TRUE(notify.WaitFor("WATCHDOG=1", seconds(10)));

  int port = HealthPort(*daemon);
  ASSERT_GT(port, 0) << daemon->Stderr();
  HttpAnswer live = HttpGet(port, "/livez"), ready = HttpGet(port, "/readyz"),
             metrics = HttpGet(port, "/metrics");
  EXPECT_EQ(live.status, 200) << live.body;
  EXPECT_EQ(ready.status, 200) << ready.body;
  ASSERT_EQ(metrics.status, 200);
  for (const auto& p : ExpositionProblems(metrics.body)) ADD_FAILURE() << p;
  std::string watch = "watch=\"w0\"";
  EXPECT_EQ(FamilySum(metrics.body, "txn_recoveryd_resolved_total", watch), 5) << metrics.body;
  EXPECT_GE(FamilySum(metrics.body, "txn_recoveryd_sweeps_total", watch), 1);
  EXPECT_EQ(SeriesValue(metrics.body, "txn_recoveryd_database_up"), 1);
  EXPECT_EQ(SeriesValue(metrics.body, "txn_recoveryd_last_reload_successful"), 1);
  // Its cost to the server, counted after each round: at least the 5 transfers and their
  // accounts were read.
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string body = HttpGet(port, "/metrics").body;
        return SeriesValue(body, "txn_recoveryd_database_round_trips_total") >= 5 &&
               SeriesValue(body, "txn_recoveryd_database_documents_read_total") >= 5;
      },
      seconds(10)))
      << HttpGet(port, "/metrics").body;
  EXPECT_NE(metrics.body.find("txn_recoveryd_build_info{revision="), std::string::npos);
  EXPECT_NE(metrics.body.find(",version=\"0.1.0\"} 1\n"), std::string::npos);

  // A broken file on SIGHUP: logged with its line, the running configuration stays.
  std::ofstream(path) << Config(uri_, {backend_->database()}, "[http]\nlisten = 9464\n");
  std::size_t before_reload = notify.messages().size();
  daemon->Signal(SIGHUP);
  ASSERT_TRUE(notify.WaitFor("RELOADING=1", seconds(10)));
  EXPECT_TRUE(Eventually(
      [&] { return daemon->Stderr().find("reload failed") != std::string::npos; }, seconds(5)));
  EXPECT_NE(daemon->Stderr().find(path + ":"), std::string::npos) << daemon->Stderr();
  bool monotonic = false;
  for (std::size_t i = before_reload; i < notify.messages().size(); ++i)
    monotonic = monotonic || notify.messages()[i].find("MONOTONIC_USEC=") != std::string::npos;
  EXPECT_TRUE(monotonic) << "RELOADING=1 must carry MONOTONIC_USEC";
  EXPECT_TRUE(Eventually(
      [&] {
        return SeriesValue(HttpGet(port, "/metrics").body,
                           "txn_recoveryd_last_reload_successful") == 0;
      },
      seconds(5)));
  Value after_bad_reload = bank.Transfer("A0", "A1", 10, 4);
  bank.Age(after_bad_reload, std::chrono::minutes(5));
  // Created while the daemon runs: resolved within about one interval (300ms).
  EXPECT_TRUE(Eventually([&] { return bank.State(after_bad_reload) == "done"; }, seconds(3)))
      << "the old configuration must stay in force\n"
      << daemon->Stderr();

  // A valid file: swapped in (a second watch appears), READY=1 again.
  std::string second = backend_->database() + "_2";
  std::ofstream(path) << Config(uri_, {backend_->database(), second},
                                "[http]\nlisten = \"127.0.0.1:0\"\n");
  daemon->Signal(SIGHUP);
  EXPECT_TRUE(Eventually(
      [&] { return daemon->Stderr().find("configuration reloaded") != std::string::npos; },
      seconds(10)))
      << daemon->Stderr();
  EXPECT_NE(daemon->Stderr().find("2 watch(es)"), std::string::npos);
  EXPECT_TRUE(Eventually(
      [&] {
        return SeriesValue(HttpGet(port, "/metrics").body,
                           "txn_recoveryd_last_reload_successful") == 1;
      },
      seconds(5)));

  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0) << daemon->Stderr();
  EXPECT_TRUE(notify.WaitFor("STOPPING=1", seconds(1)));
  EXPECT_NE(daemon->Stderr().find("stopped"), std::string::npos);
  std::unique_ptr<MongoStore> cleanup;
  MongoOptions mo;
  mo.uri = uri_;
  if (MongoStore::Open(mo, &cleanup).ok()) (void)DropDatabase(cleanup.get(), second);
}

TEST_F(DaemonRun, RetentionArchivesOldFinishedTransactionsAndTheMetricCountsThem) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(3);
  std::vector<Value> old_done;
  for (int i = 0; i < 3; ++i) old_done.push_back(bank.Transfer("A0", "A1", 1, 8));
  Value recent = bank.Transfer("A1", "A2", 1, 8);
  bank.AgeAll(std::chrono::hours(24 * 10));
  bank.Age(recent, std::chrono::hours(2));

  std::string path = WriteTestFile(
      ".toml", Config(uri_, {backend_->database()}, "[http]\nlisten = \"127.0.0.1:0\"\n") +
                   "retain_finished = \"7d\"\narchive_collection = \"archive\"\n");
  auto daemon = StartDaemon(path);
  int port = HealthPort(*daemon);
  ASSERT_GT(port, 0) << daemon->Stderr();
  std::string series = "txn_recoveryd_finished_removed_total{mode=\"archived\",watch=\"w0\"}";
  EXPECT_TRUE(Eventually([&] { return SeriesValue(HttpGet(port, "/metrics").body, series) == 3; },
                         seconds(10)))
      << HttpGet(port, "/metrics").body << daemon->Stderr();
  for (const auto& id : old_done) EXPECT_FALSE(bank.Txn(id)) << id.ToString();
  EXPECT_TRUE(bank.Txn(recent)) << "younger than retain_finished";
  std::int64_t archived = 0;
  Must(backend_->store()->Count({backend_->database(), "archive"}, Filter(), &archived));
  EXPECT_EQ(archived, 3);
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0) << daemon->Stderr();
}

TEST_F(DaemonRun, TheFirstSightingsIndexIsCreatedOnlyOnceATransactionWithoutATimeAppears) {
  // The watch names no time field, so a transaction without one is aged from its first
  // sighting; an application that always writes a time never needs that index, and pays
  // for it on every write of its transactions if it is there.
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  bank.Transfer(Bank::Account(0), Bank::Account(1), 1, 8);
  std::string config = Config(uri_, {backend_->database()}, "[http]\nlisten = \"127.0.0.1:0\"\n");
  config.replace(config.find("[sweep]\n"), 8, "[sweep]\nmanage_indexes = true\n");
  auto daemon = StartDaemon(WriteTestFile(".toml", config));
  int port = HealthPort(*daemon);
  ASSERT_GT(port, 0) << daemon->Stderr();
  const std::string sweeps = "txn_recoveryd_sweeps_total{watch=\"w0\"}";
  ASSERT_TRUE(Eventually([&] { return SeriesValue(HttpGet(port, "/metrics").body, sweeps) >= 3; },
                         seconds(10)))
      << daemon->Stderr();
  auto first_sightings_index = [&] {
    std::vector<IndexSpec> list;
    Must(backend_->store()->ListIndexes(bank.txns(), &list));
    for (const IndexSpec& i : list)
      if (i.keys.size() == 2 && i.keys[1].first == "recovery.firstSeen") return true;
    return false;
  };
  EXPECT_FALSE(first_sightings_index()) << daemon->Stderr();
  EXPECT_NE(daemon->Stderr().find("created index {state: 1, lastModified: 1} ordered"),
            std::string::npos)
      << daemon->Stderr();

  Must(backend_->store()->InsertMany(bank.txns(), {Document{{"_id", "no time"},
                                                            {"source", Bank::Account(0)},
                                                            {"destination", Bank::Account(1)},
                                                            {"value", 1},
                                                            {"state", "initial"}}}));
  EXPECT_TRUE(Eventually(first_sightings_index, seconds(10))) << daemon->Stderr();
  // DocumentDB lists an index before its createIndexes has returned.
  EXPECT_TRUE(Eventually(
      [&] {
        return daemon->Stderr().find("created index {state: 1, recovery.firstSeen: 1} ordered") !=
               std::string::npos;
      },
      seconds(10)))
      << daemon->Stderr();
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0) << daemon->Stderr();
}

TEST_F(DaemonRun, ThePeriodicOrphanScanUndoesALateWriteNoSweepWouldSeeAndCountsWhatIsLeft) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(3);
  Value late = bank.Transfer("A0", "A1", 100, kAppStepCount);
  bank.Age(late, std::chrono::hours(6));
  ASSERT_TRUE(bank.RunStep(late, AppStep::kCreditDestination).ok());  // credited twice
  WriteResult wr;
  Must(backend_->store()->UpdateOne(bank.accounts(), Filter().Eq("_id", "A2"),
                                    Update().Push("pendingTransactions", Value("deleted-7")), &wr));

  std::string path = WriteTestFile(
      ".toml", Config(uri_, {backend_->database()}, "[http]\nlisten = \"127.0.0.1:0\"\n"));
  auto daemon = StartDaemon(path, {{"TXN_RECOVERYD_DAEMON_ORPHAN_SCAN_INTERVAL", "1s"}});
  int port = HealthPort(*daemon);
  ASSERT_GT(port, 0) << daemon->Stderr();
  EXPECT_TRUE(Eventually([&] { return bank.Balance("A1") == 1100; }, seconds(10)))
      << daemon->Stderr();
  std::string missing = "txn_recoveryd_orphan_markers{kind=\"missing-transaction\",watch=\"w0\"}";
  EXPECT_TRUE(Eventually([&] { return SeriesValue(HttpGet(port, "/metrics").body, missing) == 1; },
                         seconds(10)))
      << HttpGet(port, "/metrics").body;
  EXPECT_NE(daemon->Stderr().find("deleted-7"), std::string::npos) << daemon->Stderr();
  EXPECT_EQ(bank.Markers("A2").size(), 1u);
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0) << daemon->Stderr();
}

TEST_F(DaemonRun, SigtermDuringALargeSweepDrainsWithinTheDeadlineAndLeavesNoLease) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(20);
  Snapshot before = bank.Take();
  constexpr int kTxns = 1500;
  for (int i = 0; i < kTxns; ++i)
    bank.Transfer(std::string("A").append(std::to_string(i % 20)),
                  std::string("A").append(std::to_string((i + 7) % 20)), 1, 3);
  bank.AgeAll(std::chrono::minutes(5));

  std::string path = WriteTestFile(".toml", Config(uri_, {backend_->database()}));
  auto daemon = StartDaemon(path);
  Filter done = Filter().Eq("state", "done");
  ASSERT_TRUE(Eventually(
      [&] {
        std::int64_t n = 0;
        return backend_->store()->Count(bank.txns(), done, &n).ok() && n >= 50;
      },
      seconds(30)))
      << daemon->Stderr();
  auto t0 = std::chrono::steady_clock::now();
  daemon->Signal(SIGTERM);
  std::optional<int> rc = daemon->Wait(seconds(8));
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(rc, 0) << daemon->Stderr();
  EXPECT_LT(took, seconds(6)) << "the drain deadline is 5s";

  std::int64_t leased = -1;
  ASSERT_TRUE(
      backend_->store()->Count(bank.txns(), Filter().Exists("recovery.lease"), &leased).ok());
  EXPECT_EQ(leased, 0) << "a drained daemon releases every lease it held";

  // Whatever the drain left is finished by the next sweep, and nothing was applied twice.
  SweepOnce(backend_->store(), backend_->clock(), bank.Watch(), "next-daemon");
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
}

TEST_F(DaemonRun, StartsWhileTheDatabaseIsDownAndRecoversWhenItComesBack) {
  // This test owns its server's lifecycle, so it always uses an embedded one.
  int db_port = FreePort();
  std::string db_uri = "mongodb://127.0.0.1:" + std::to_string(db_port);
  std::string state_dir = TestFile("_db");
  std::string path =
      WriteTestFile(".toml", Config(db_uri, {"outage"}, "[http]\nlisten = \"127.0.0.1:0\"\n"));
  FakeNotifySocket notify;
  auto daemon = StartDaemon(path, {{"NOTIFY_SOCKET", notify.path()}});

  ASSERT_TRUE(notify.WaitFor("READY=1", seconds(10)))
      << "a database that is down is not a configuration error\n"
      << daemon->Stderr();
  int port = HealthPort(*daemon);
  ASSERT_GT(port, 0);
  EXPECT_TRUE(notify.WaitFor("STATUS=database unreachable", seconds(10)));
  EXPECT_EQ(HttpGet(port, "/livez").status, 200) << "liveness does not depend on the database";
  HttpAnswer ready = HttpGet(port, "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("unreachable"), std::string::npos) << ready.body;
  EXPECT_EQ(SeriesValue(HttpGet(port, "/metrics").body, "txn_recoveryd_database_up"), 0);
  EXPECT_TRUE(daemon->Running());

  const std::vector<std::string> start = {
      std::string(TXN_RECOVERY_SOURCE_DIR) + "/scripts/testdb-start.sh",
      "--port",
      std::to_string(db_port),
      "--owner-pid",
      std::to_string(getpid()),
      "--state-dir",
      state_dir};
  const std::vector<std::string> stop = {
      std::string(TXN_RECOVERY_SOURCE_DIR) + "/scripts/testdb-stop.sh", "--state-dir", state_dir};
  auto run = [](const std::vector<std::string>& argv) {
    Subprocess p(argv);
    const std::optional<int> rc = p.Wait(seconds(120));
    return ::testing::AssertionResult(rc == 0) << argv[0] << " exited " << rc.value_or(-1) << "\n"
                                               << p.Stderr();
  };
  ASSERT_TRUE(run(start));
  struct StopDb {
    const std::vector<std::string>& stop;
    ~StopDb() { (void)Subprocess(stop).Wait(seconds(60)); }
  } stop_db{stop};

  std::unique_ptr<MongoStore> store;
  MongoOptions mo;
  mo.uri = db_uri;
  ASSERT_TRUE(MongoStore::Open(mo, &store).ok());
  Bank bank(store.get(), "outage");
  bank.Open(2);
  Snapshot before = bank.Take();
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  EXPECT_TRUE(Eventually([&] { return bank.State(id) == "done"; }, seconds(20)))
      << daemon->Stderr();
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
  EXPECT_TRUE(Eventually([&] { return HttpGet(port, "/readyz").status == 200; }, seconds(5)));
  EXPECT_EQ(SeriesValue(HttpGet(port, "/metrics").body, "txn_recoveryd_database_up"), 1);
  // The outage was logged, but not once per retry.
  std::string err = daemon->Stderr();
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = err.find("database unreachable", at)) != std::string::npos; ++at)
    ++lines;
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 3u) << err;

  // The database stopped mid-run: the daemon stays up and says so; back: it recovers.
  store.reset();
  ASSERT_TRUE(run(stop));
  EXPECT_TRUE(Eventually([&] { return HttpGet(port, "/readyz").status == 503; }, seconds(10)));
  EXPECT_TRUE(Eventually(
      [&] { return SeriesValue(HttpGet(port, "/metrics").body, "txn_recoveryd_database_up") == 0; },
      seconds(5)));
  EXPECT_EQ(HttpGet(port, "/livez").status, 200);
  EXPECT_TRUE(daemon->Running());
  ASSERT_TRUE(run(start));
  ASSERT_TRUE(MongoStore::Open(mo, &store).ok());
  Bank again(store.get(), "outage");  // the embedded server keeps nothing across restarts
  again.Open(2);
  Snapshot before_again = again.Take();
  Value id2 = again.Transfer("A0", "A1", 10, 4);
  again.Age(id2, std::chrono::minutes(5));
  EXPECT_TRUE(Eventually([&] { return again.State(id2) == "done"; }, seconds(20)))
      << daemon->Stderr();
  for (const auto& v : again.Violations(before_again)) ADD_FAILURE() << v;
  EXPECT_TRUE(Eventually([&] { return HttpGet(port, "/readyz").status == 200; }, seconds(5)));

  daemon->Signal(SIGINT);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0) << daemon->Stderr();
}

TEST_F(DaemonRun, CommandLineBeatsEnvironmentBeatsFile) {
  // Each layer names a listen address; only the winning one can be bound.
  std::string path = WriteTestFile(".toml", Config("mongodb://127.0.0.1:1", {"precedence"},
                                                   "[http]\nlisten = \"203.0.113.1:1\"\n"));
  {
    auto daemon = StartDaemon(path, {{"TXN_RECOVERYD_HTTP_LISTEN", "203.0.113.2:1"}},
                              {"--http-listen", "127.0.0.1:0"});
    EXPECT_GT(HealthPort(*daemon), 0) << daemon->Stderr();
    daemon->Signal(SIGTERM);
    EXPECT_EQ(daemon->Wait(seconds(10)), 0);
  }
  {
    auto daemon = StartDaemon(path, {{"TXN_RECOVERYD_HTTP_LISTEN", "127.0.0.1:0"}});
    EXPECT_GT(HealthPort(*daemon), 0) << daemon->Stderr();
    daemon->Signal(SIGTERM);
    EXPECT_EQ(daemon->Wait(seconds(10)), 0);
  }
  {
    // The file alone: its address cannot be bound here, which is exit 69 at start.
    auto daemon = StartDaemon(path);
    EXPECT_EQ(daemon->Wait(seconds(10)), 69) << daemon->Stderr();
    EXPECT_NE(daemon->Stderr().find("203.0.113.1:1"), std::string::npos) << daemon->Stderr();
  }
  {
    // A bad file at start: 78 and the file's line, before anything else happens.
    std::ofstream(path) << Config("mongodb://127.0.0.1:1", {"precedence"},
                                  "[http]\nlisten = 9464\n");
    auto daemon = StartDaemon(path);
    EXPECT_EQ(daemon->Wait(seconds(10)), 78) << daemon->Stderr();
    EXPECT_NE(daemon->Stderr().find(path + ":"), std::string::npos) << daemon->Stderr();
  }
}

TEST_F(DaemonRun, ASigtermThatArrivesTwiceAsAProcessGroupSignalStillDrains) {
  // GNU timeout and container runtimes signal the process and then its group: the same
  // SIGTERM arrives twice, a millisecond apart. The copy must not cut the drain short.
  Bank bank(backend_->store(), backend_->database());
  bank.Open(20);
  Snapshot before = bank.Take();
  for (int i = 0; i < 600; ++i)
    bank.Transfer(std::string("A").append(std::to_string(i % 20)),
                  std::string("A").append(std::to_string((i + 7) % 20)), 1, 3);
  bank.AgeAll(std::chrono::minutes(5));
  // The daemon reaches the database through a proxy that holds the reply to its tenth
  // write for 3 s: the sweep is then surely in the middle of its work, and the drain the
  // first SIGTERM starts cannot end before the copy has arrived, however fast the server.
  std::string error;
  auto proxy = WireProxy::StartFor(uri_, &error);
  ASSERT_TRUE(proxy) << error;
  std::atomic<int> writes{0};
  std::atomic<bool> held{false};
  proxy->SetRule([&](WireProxy::Reply* r) {
    WireProxy::Verdict v;
    if (r->command == "update" && ++writes == 10) {
      held = true;
      v.fate = WireProxy::Fate::kDelay;
      v.delay = seconds(3);
    }
    return v;
  });
  std::string path = WriteTestFile(".toml", Config(proxy->Uri(uri_), {backend_->database()}));
  auto daemon = StartDaemon(path);
  ASSERT_TRUE(Eventually([&] { return held.load(); }, seconds(30))) << daemon->Stderr();
  daemon->Signal(SIGTERM);
  // The copy arrives once the first has been taken (a signal still pending would merge
  // with it in the kernel, which is no test), well within the second of grace, while the
  // held write keeps the drain going.
  ASSERT_TRUE(Eventually(
      [&] { return daemon->Stderr().find("SIGTERM received") != std::string::npos; }, seconds(2)));
  daemon->Signal(SIGTERM);
  ASSERT_EQ(daemon->Wait(seconds(10)), 0) << daemon->Stderr();
  std::string err = daemon->Stderr();
  EXPECT_EQ(err.find("exiting now"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGTERM again within a second of the first: still draining"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("stopped"), std::string::npos) << "the drain ran to its end\n" << err;
  std::int64_t leased = -1;
  ASSERT_TRUE(
      backend_->store()->Count(bank.txns(), Filter().Exists("recovery.lease"), &leased).ok());
  EXPECT_EQ(leased, 0) << "a drained daemon releases every lease it held";
  SweepOnce(backend_->store(), backend_->clock(), bank.Watch(), "next-daemon");
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
}

TEST_F(DaemonRun, JournalFormatWithoutAJournalSocketWritesPrefixedLinesToStderr) {
  if (access(kJournalSocketPath, F_OK) == 0)
    GTEST_SKIP() << "a journal listens at " << kJournalSocketPath
                 << " here; the fallback is for hosts (containers, chroots) without one";
  std::string path = WriteTestFile(".toml", Config("mongodb://127.0.0.1:1", {"journal"}));
  auto daemon = StartDaemon(path, {}, {"--log-format", "journal"});
  EXPECT_TRUE(Eventually(
      [&] { return daemon->Stderr().find("<6>txn-recoveryd 0.1.0") != std::string::npos; },
      seconds(10)))
      << "nothing logged: '" << daemon->Stderr() << "'";
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0);
  EXPECT_NE(daemon->Stderr().find("<6>stopped"), std::string::npos) << daemon->Stderr();
}

TEST_F(DaemonRun, JsonLogsCarryATransactionIdAsItselfNotAsJsonInAString) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  DateTime now;
  ASSERT_TRUE(backend_->store()->ServerTime(&now).ok());
  for (const Value& id : {Value("malformed-1"), Value(std::int32_t{7})})
    ASSERT_TRUE(
        backend_->store()
            ->InsertMany(bank.txns(), {Document{{"_id", id},
                                                {"source", "A0"},
                                                {"destination", "A1"},
                                                {"state", "pending"},
                                                {"lastModified", DateTime{now.millis - 300'000}}}})
            .ok());
  std::string path = WriteTestFile(".toml", Config(uri_, {backend_->database()}));
  auto daemon = StartDaemon(path, {{"TXN_RECOVERYD_LOG_FORMAT", "json"}});
  std::set<std::string> ids;
  EXPECT_TRUE(Eventually(
      [&] {
        ids.clear();
        std::istringstream in(daemon->Stdout());
        for (std::string line; std::getline(in, line);) {
          auto j = nlohmann::json::parse(line, nullptr, false);
          if (!j.is_discarded() && j.value("msg", "").rfind("quarantined:", 0) == 0)
            ids.insert(j["txn_id"].dump());
        }
        return ids.size() == 2;
      },
      seconds(20)))
      << daemon->Stdout();
  EXPECT_EQ(ids, (std::set<std::string>{"\"malformed-1\"", "7"})) << daemon->Stdout();
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0);
}

TEST_F(DaemonRun, MetricsShowTheProcessTheTransactionsBusyWithAnotherDaemonAndTheRevision) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  // Another daemon holds its lease for ten more minutes.
  DateTime now;
  ASSERT_TRUE(backend_->store()->ServerTime(&now).ok());
  WriteResult wr;
  ASSERT_TRUE(backend_->store()
                  ->UpdateOne(bank.txns(), Filter().Eq("_id", id),
                              Update()
                                  .Set("recovery.lease.owner", Value("other-host:1:abc"))
                                  .Set("recovery.lease.expires", DateTime{now.millis + 600'000}),
                              &wr)
                  .ok());
  std::string path = WriteTestFile(
      ".toml", Config(uri_, {backend_->database()}, "[http]\nlisten = \"127.0.0.1:0\"\n"));
  auto daemon = StartDaemon(path);
  int port = HealthPort(*daemon);
  ASSERT_GT(port, 0) << daemon->Stderr();
  std::string body;
  EXPECT_TRUE(Eventually(
      [&] {
        body = HttpGet(port, "/metrics").body;
        return FamilySum(body, "txn_recoveryd_busy_total", "watch=\"w0\"") >= 1;
      },
      seconds(20)))
      << body;
  for (const auto& p : ExpositionProblems(body)) ADD_FAILURE() << p;
  EXPECT_EQ(bank.State(id), "pending") << "left to the daemon holding the lease";
  EXPECT_GT(SeriesValue(body, "process_resident_memory_bytes"), 1e6) << body;
  EXPECT_GT(SeriesValue(body, "process_virtual_memory_bytes"), 1e6);
  EXPECT_GT(SeriesValue(body, "process_open_fds"), 2);
  EXPECT_GT(SeriesValue(body, "process_max_fds"), 2);
  EXPECT_GE(SeriesValue(body, "process_cpu_seconds_total"), 0);
  double started = SeriesValue(body, "process_start_time_seconds");
  double unix_now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(started, unix_now - 120) << "started within the test";
  EXPECT_LE(started, unix_now + 1);
  EXPECT_NE(body.find("txn_recoveryd_build_info{revision=\""), std::string::npos) << body;
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0);
}

// The configuration of Config() with its URI in a file, mongodb.uri_file, instead.
std::string ConfigWithUriFile(const std::string& uri_file,
                              const std::vector<std::string>& databases,
                              const std::string& extra = "") {
  std::string c = Config("URI", databases, extra);
  const std::string inline_uri = "uri = \"URI\"";
  return c.replace(c.find(inline_uri), inline_uri.size(), "uri_file = \"" + uri_file + "\"");
}

// A Kubernetes Secret as the kubelet projects it into a pod: each version of its files in a
// directory of its own, `..data` a symlink to the current one, and each key a symlink
// through `..data`. An update writes the new version's directory, points a new symlink at
// it and renames that over `..data`: one atomic step, after which every key reads the new
// version (the file the daemon opens by name never changes in place).
class ProjectedSecret {
 public:
  ProjectedSecret(std::string dir, const std::string& key) : dir_(std::move(dir)), key_(key) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::create_symlink("..data/" + key_, dir_ + "/" + key_);
  }
  ~ProjectedSecret() { fs::remove_all(dir_); }
  ProjectedSecret(const ProjectedSecret&) = delete;
  ProjectedSecret& operator=(const ProjectedSecret&) = delete;

  std::string path() const { return dir_ + "/" + key_; }

  // Publishes a new version holding `value`, as the kubelet does, and removes the old one.
  void Update(const std::string& value) {
    const std::string version = "..2026_12_07_10_00_0" + std::to_string(versions_++) + ".1";
    fs::create_directory(dir_ + "/" + version);
    std::ofstream(dir_ + "/" + version + "/" + key_) << value << "\n";
    fs::create_directory_symlink(version, dir_ + "/..data_tmp");
    fs::rename(dir_ + "/..data_tmp", dir_ + "/..data");
    if (!current_.empty()) fs::remove_all(dir_ + "/" + current_);
    current_ = version;
  }

 private:
  std::string dir_, key_, current_;
  int versions_ = 0;
};

TEST_F(DaemonRun, AUriRotatedInAKubernetesSecretIsTakenUpWithoutASignalOrARestart) {
  // The Secret first holds a URI nobody answers at (the password before the rotation,
  // say); the kubelet then swaps in the right one. Nobody signals the daemon.
  ProjectedSecret secret(TestFile("_secret"), "mongodb-uri");
  secret.Update("mongodb://127.0.0.1:" + std::to_string(FreePort()));
  std::string path =
      WriteTestFile(".toml", ConfigWithUriFile(secret.path(), {backend_->database()},
                                               "[http]\nlisten = \"127.0.0.1:0\"\n"));
  auto daemon = StartDaemon(path);
  int port = HealthPort(*daemon);
  ASSERT_GT(port, 0) << daemon->Stderr();
  ASSERT_TRUE(Eventually([&] { return HttpGet(port, "/readyz").status == 503; }, seconds(10)))
      << daemon->Stderr();

  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Snapshot before = bank.Take();
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  secret.Update(uri_);
  EXPECT_TRUE(Eventually([&] { return bank.State(id) == "done"; }, seconds(20)))
      << daemon->Stderr();
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
  EXPECT_EQ(HttpGet(port, "/readyz").status, 200);
  EXPECT_NE(daemon->Stderr().find("uri_file " + secret.path() + " holds a new URI: reloading"),
            std::string::npos)
      << daemon->Stderr();
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0) << daemon->Stderr();
}

TEST_F(DaemonRun, TheOldestStuckAgeKeepsGrowingWhileSweepsFail) {
  // A transfer stuck for five minutes that the daemon leaves alone: another daemon holds
  // its lease for ten more.
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  DateTime now;
  ASSERT_TRUE(backend_->store()->ServerTime(&now).ok());
  WriteResult wr;
  ASSERT_TRUE(backend_->store()
                  ->UpdateOne(bank.txns(), Filter().Eq("_id", id),
                              Update()
                                  .Set("recovery.lease.owner", Value("other-host:1:abc"))
                                  .Set("recovery.lease.expires", DateTime{now.millis + 600'000}),
                              &wr)
                  .ok());
  const std::string uri_file = WriteTestFile(".uri", uri_ + "\n");
  std::string path = WriteTestFile(
      ".toml",
      ConfigWithUriFile(uri_file, {backend_->database()}, "[http]\nlisten = \"127.0.0.1:0\"\n"));
  auto daemon = StartDaemon(path);
  int port = HealthPort(*daemon);
  ASSERT_GT(port, 0) << daemon->Stderr();
  const std::string age = "txn_recoveryd_oldest_stuck_age_seconds{watch=\"w0\"}";
  std::string body;
  ASSERT_TRUE(Eventually(
      [&] {
        body = HttpGet(port, "/metrics").body;
        return SeriesValue(body, age) >= 300;
      },
      seconds(20)))
      << body << daemon->Stderr();

  // The URI file rewritten in place with an address nobody answers at: taken up without a
  // signal, and every sweep fails from then on.
  std::ofstream(uri_file, std::ios::trunc) << "mongodb://127.0.0.1:" << FreePort() << "\n";
  ASSERT_TRUE(Eventually(
      [&] {
        body = HttpGet(port, "/metrics").body;
        return SeriesValue(body, "txn_recoveryd_database_up") == 0 &&
               FamilySum(body, "txn_recoveryd_sweep_failures_total", "watch=\"w0\"") >= 2;
      },
      seconds(20)))
      << body << daemon->Stderr();
  // The transaction is as stuck as it was, and older every second: so is the gauge, so that
  // an alert on it fires during the very outage that keeps it stuck.
  const double during = SeriesValue(body, age);
  EXPECT_GE(during, 300) << body;
  std::this_thread::sleep_for(seconds(3));
  EXPECT_TRUE(Eventually(
      [&] {
        body = HttpGet(port, "/metrics").body;
        return SeriesValue(body, age) >= during + 2;
      },
      seconds(10)))
      << "the gauge froze at " << during << " while the sweeps failed:\n"
      << body;
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(10)), 0) << daemon->Stderr();
}

// Two `run` daemons on one database divide the work by their member records (docs/fleet.md):
// both are listed, each resolves part of it, everything is resolved once; one killed
// (SIGKILL, no goodbye), the other takes its share once its record has expired.
TEST_F(DaemonRun, TwoDaemonsDivideTheWorkAndOneTakesOverTheShareOfTheOtherKilled) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(8);
  const Snapshot before = bank.Take();
  const Namespace members{backend_->database(), "txn_recoveryd_members"};
  std::string path =
      WriteTestFile(".toml", Config(uri_, {backend_->database()}, "[fleet]\nexpiry = \"2s\"\n"));
  auto first = StartDaemon(path);
  auto second = StartDaemon(path);
  std::vector<MemberRecord> live;
  auto list = [&] {
    DateTime now;
    return backend_->store()->ServerTime(&now).ok() &&
           LiveMembers(backend_->store(), members, std::chrono::seconds(2), now, &live).ok();
  };
  ASSERT_TRUE(Eventually([&] { return list() && live.size() == 2; }, seconds(20)))
      << first->Stderr() << second->Stderr();
  const std::string first_id = live[0].id, second_id = live[1].id;
  // Both have seen each other before there is work: neither takes it all.
  ASSERT_TRUE(Eventually(
      [&] {
        return first->Stderr().find("2 live member(s)") != std::string::npos &&
               second->Stderr().find("2 live member(s)") != std::string::npos;
      },
      seconds(10)));

  auto stuck = [&](int n) { return StuckTransfers(&bank, n); };
  auto resolved_by = [&](const std::vector<Value>& ids, std::map<std::string, int>* by) {
    by->clear();
    for (const Value& id : ids) {
      std::optional<Document> t = bank.Txn(id);
      const Value* who = t ? t->GetPath("recovery.resolvedBy") : nullptr;
      if (who == nullptr || !who->is_string()) return false;
      (*by)[*who->as_string()]++;
    }
    return true;
  };
  const std::vector<Value> shared = stuck(40);
  std::map<std::string, int> by;
  ASSERT_TRUE(Eventually([&] { return resolved_by(shared, &by); }, seconds(30)))
      << first->Stderr() << second->Stderr();
  EXPECT_GT(by[first_id], 0) << "each daemon drives its share";
  EXPECT_GT(by[second_id], 0) << "each daemon drives its share";
  EXPECT_EQ(by[first_id] + by[second_id], 40);
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;

  // The member listed first is killed; which process it is, its log says ("started as").
  Subprocess* victim =
      first->Stderr().find(first_id) != std::string::npos ? first.get() : second.get();
  Subprocess* survivor = victim == first.get() ? second.get() : first.get();
  const std::string& survivor_id = second_id;
  victim->Signal(SIGKILL);
  const std::vector<Value> orphaned = stuck(20);
  ASSERT_TRUE(Eventually([&] { return resolved_by(orphaned, &by); }, seconds(30)))
      << survivor->Stderr();
  EXPECT_EQ(by[survivor_id], 20) << "the survivor took the share of the killed daemon";
  ASSERT_TRUE(list());
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].id, survivor_id);
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;

  // A clean stop leaves the fleet at once: its record does not wait to expire. (The killed
  // member's expired record is removed at the next heartbeat of any member; the survivor
  // may stop before its next one: not asserted.)
  survivor->Signal(SIGTERM);
  EXPECT_EQ(survivor->Wait(seconds(10)), 0);
  std::int64_t records = -1;
  ASSERT_TRUE(backend_->store()->Count(members, Filter().Eq("_id", survivor_id), &records).ok());
  EXPECT_EQ(records, 0);
  ASSERT_TRUE(list());
  EXPECT_TRUE(live.empty()) << "no member is left alive";
}

// Host A sweeps the bank's transactions and a second collection of the same database; host
// B (another configuration, as in a rolling change) sweeps only the second. B is a member
// of the database's fleet but does not sweep the bank: A's share of the bank is all of it,
// or half of the bank's stuck transfers would wait forever for B.
TEST_F(DaemonRun, AMemberThatDoesNotSweepACollectionHoldsNoShareOfIt) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(8);
  const Snapshot before = bank.Take();
  const std::string other = "[[watch]]\nname = \"orders\"\ndatabase = \"" + backend_->database() +
                            "\"\ncollection = \"order_transactions\"\n";
  auto a = StartDaemon(WriteTestFile(
      "-a.toml", Config(uri_, {backend_->database()}, "[fleet]\nexpiry = \"2s\"\n") + other));
  auto b =
      StartDaemon(WriteTestFile("-b.toml", Config(uri_, {}, "[fleet]\nexpiry = \"2s\"\n") + other));
  // Both see each other on the collection they share, and A alone on the bank.
  ASSERT_TRUE(Eventually(
      [&] {
        return a->Stderr().find("order_transactions: 2 live member(s)") != std::string::npos &&
               b->Stderr().find("order_transactions: 2 live member(s)") != std::string::npos &&
               a->Stderr().find(".transactions: 1 live member(s)") != std::string::npos;
      },
      seconds(20)))
      << a->Stderr() << b->Stderr();
  const std::vector<Value> ids = StuckTransfers(&bank, 40);
  ASSERT_TRUE(Eventually([&] { return bank.AllIn(ids, "done"); }, seconds(30)))
      << a->Stderr() << b->Stderr();
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
  a->Signal(SIGTERM);
  b->Signal(SIGTERM);
  EXPECT_EQ(a->Wait(seconds(10)), 0);
  EXPECT_EQ(b->Wait(seconds(10)), 0);
}

// Host A stays a live member of the bank's fleet but never drives its share: its
// configuration (an old rollout, a typo) waits an hour before resuming. Host B's share is
// half the bank, yet B drives every stuck transfer, A's half once it is overdue
// (fleet.overdue_after past the age at which B's decision table acts), and says whose share
// it took them from.
TEST_F(DaemonRun, AMemberThatNeverDrivesItsShareLeavesItsOverdueTransactionsToTheOther) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(8);
  const Snapshot before = bank.Take();
  const std::string fleet =
      "[fleet]\nexpiry = \"2s\"\noverdue_after = \"2s\"\n[http]\nlisten = "
      "\"127.0.0.1:0\"\n";
  auto idle = StartDaemon(
      WriteTestFile("-idle.toml", Config(uri_, {backend_->database()}, fleet) +
                                      "resume_after = \"1h\"\nrollback_after = \"2h\"\n"));
  auto b = StartDaemon(WriteTestFile("-b.toml", Config(uri_, {backend_->database()}, fleet)));
  ASSERT_TRUE(Eventually(
      [&] {
        return idle->Stderr().find("2 live member(s)") != std::string::npos &&
               b->Stderr().find("2 live member(s)") != std::string::npos;
      },
      seconds(20)))
      << idle->Stderr() << b->Stderr();
  // Five minutes old: past B's resume_after (1 minute) by more than overdue_after; far
  // from A's.
  const std::vector<Value> ids = StuckTransfers(&bank, 40);
  ASSERT_TRUE(Eventually([&] { return bank.AllIn(ids, "done"); }, seconds(30)))
      << idle->Stderr() << b->Stderr();
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
  EXPECT_NE(b->Stderr().find("transaction overdue in the share of member"), std::string::npos)
      << b->Stderr();
  const int port = HealthPort(*b);
  ASSERT_GT(port, 0) << b->Stderr();
  // Counted when the sweep that took them ends, which may be after the last one is done
  // (a paced sweep waits for its next chunk before it finds none).
  EXPECT_TRUE(Eventually(
      [&] {
        return FamilySum(HttpGet(port, "/metrics").body, "txn_recoveryd_fleet_overdue_taken_total",
                         "watch=\"w0\"") > 0;
      },
      seconds(10)))
      << HttpGet(port, "/metrics").body;
  idle->Signal(SIGTERM);
  b->Signal(SIGTERM);
  EXPECT_EQ(idle->Wait(seconds(10)), 0);
  EXPECT_EQ(b->Wait(seconds(10)), 0);
}

// The orphan scan reads every marked participant whatever the share: two members of a
// watch run it about once per orphan_scan_interval between them, not once each (whichever
// claims it first; the hand-over from a member that stops scanning:
// Membership.OneMemberPerPeriodRunsTheOrphanScanAndAnotherTakesItOverWhenItStops).
TEST_F(DaemonRun, OfTwoMembersTheOrphanScanRunsOncePerIntervalBetweenThem) {
  const std::string config = WriteTestFile(
      ".toml", "[mongodb]\nuri = \"" + uri_ +
                   "\"\nserver_selection_timeout = \"1s\"\n"
                   "[daemon]\ninterval = \"300ms\"\norphan_scan_interval = \"500ms\"\n"
                   "jitter = 0\ndrain_deadline = \"5s\"\n[log]\nlevel = \"info\"\n"
                   "[fleet]\nexpiry = \"2s\"\n"
                   "[http]\nlisten = \"127.0.0.1:0\"\n[[watch]]\nname = \"w0\"\ndatabase = \"" +
                   backend_->database() + "\"\n");
  auto a = StartDaemon(config);
  auto b = StartDaemon(config);
  ASSERT_TRUE(Eventually(
      [&] {
        return a->Stderr().find("2 live member(s)") != std::string::npos &&
               b->Stderr().find("2 live member(s)") != std::string::npos;
      },
      seconds(20)))
      << a->Stderr() << b->Stderr();
  const int port_a = HealthPort(*a), port_b = HealthPort(*b);
  ASSERT_GT(port_a, 0) << a->Stderr();
  ASSERT_GT(port_b, 0) << b->Stderr();
  auto scans = [&](int port) {
    return FamilySum(HttpGet(port, "/metrics").body, "txn_recoveryd_orphan_scans_total",
                     "watch=\"w0\"");
  };
  const double a0 = scans(port_a), b0 = scans(port_b);
  std::this_thread::sleep_for(seconds(4));
  const double da = scans(port_a) - a0, db = scans(port_b) - b0;
  // One per claim period (475 ms: the interval less 5 %) at most: 9 in 4 s. Each alone scans
  // once per round that finds its interval passed, every 600 ms here: 12 together,
  // measured with the claim switched off. Fewer on a loaded machine, whose timers slip.
  EXPECT_LE(da + db, 9) << "scans in 4 s: " << da << " and " << db;
  EXPECT_GE(da + db, 2) << "scans in 4 s: " << da << " and " << db;
  a->Signal(SIGTERM);
  b->Signal(SIGTERM);
  EXPECT_EQ(a->Wait(seconds(10)), 0);
  EXPECT_EQ(b->Wait(seconds(10)), 0);
}

}  // namespace
}  // namespace txn_recovery::testing
