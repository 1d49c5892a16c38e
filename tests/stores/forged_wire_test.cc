// The daemon against replies no real server sends, served by a forged MongoDB-wire server
// (support/wire_proxy.h: the test server behind a proxy that rewrites the replies a test
// picks). Whatever the reply, the daemon never crashes, never waits past its socket
// timeout, and quarantines or reports the transaction it cannot trust.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/test_env.h"
#include "support/wire_proxy.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Fate = WireProxy::Fate;
using Verdict = WireProxy::Verdict;

TXN_RECOVERY_DATABASE_SUITE(ForgedWire);

class ForgedWire : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create("mongo");
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    server_uri_ = FindTestUri().uri_or_reason;
    std::string error;
    proxy_ = WireProxy::StartFor(server_uri_, &error);
    ASSERT_TRUE(proxy_) << error;
  }

  // A configuration reaching the database through the forged server, with short timeouts.
  std::string ConfigFile(const std::string& uri, const std::string& extra = "") {
    return WriteTestFile(".toml", "[mongodb]\nuri = \"" + uri +
                                      "\"\nserver_selection_timeout = \"2s\"\n"
                                      "socket_timeout = \"2s\"\n"
                                      "[sweep]\nworkers = 2\nmax_failures = 2\n" +
                                      extra + "[[watch]]\nname = \"bank\"\ndatabase = \"" +
                                      backend_->database() + "\"\n");
  }
  std::string ProxiedConfig(const std::string& extra = "") {
    return ConfigFile(proxy_->Uri(server_uri_), extra);
  }

  // A `run` daemon on `config`, its logs as text and its health endpoint on a free port
  // (`port`: 0 when it never listened); sweeping every 300 ms, backing off 500 ms at most.
  static constexpr const char* kRunQuickly =
      "[daemon]\ninterval = \"300ms\"\nbackoff_max = \"500ms\"\n"
      "[http]\nlisten = \"127.0.0.1:0\"\n";
  std::unique_ptr<Subprocess> Run(const std::string& config, int* port) {
    auto daemon =
        StartTxnRecoveryd({"run", "--config", config}, {{"TXN_RECOVERYD_LOG_FORMAT", "text"}});
    *port = HealthPort(*daemon);
    return daemon;
  }
  // Whether /readyz comes to say `says` within 20 s.
  static bool ReadinessComesToSay(int port, const std::string& says) {
    return Eventually([&] { return HttpGet(port, "/readyz").body.find(says) != std::string::npos; },
                      seconds(20));
  }

  // `txn-recoveryd sweep -v` to its end: the exit code (nullopt if it did not end within
  // `limit`, -N if it died of signal N).
  std::optional<int> Sweep(const std::string& config, std::string* output,
                           seconds limit = seconds(60)) {
    auto p = StartTxnRecoveryd({"sweep", "-v", "--config", config});
    std::optional<int> rc = p->Wait(limit);
    *output = p->Stdout() + p->Stderr();
    return rc;
  }

  std::unique_ptr<TestBackend> backend_;
  std::string server_uri_;
  std::unique_ptr<WireProxy> proxy_;
};

// Logged in, but refused for a privilege: the server's Unauthorized (13).
std::string UnauthorizedReply() {
  return BsonWriter()
      .Double("ok", 0)
      .String("errmsg", "not authorized on bank to execute command")
      .Int32("code", 13)
      .String("codeName", "Unauthorized")
      .Finish();
}

// The replies to the daemon's reads of the transactions collection.
bool IsTransactionRead(const WireProxy::Reply& r) {
  return (r.command == "find" || r.command == "getMore" || r.command == "aggregate") &&
         (r.collection == "transactions" || r.command == "getMore");
}

TEST_F(ForgedWire, ADuplicatedAmountIsQuarantinedNotReadAsTheLastCopy) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  // Debited, not yet credited: resuming it credits A1 with what the daemon reads.
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  Snapshot before = bank.Take();
  std::int64_t numeric_id = static_cast<std::int64_t>(*id.as_double());
  proxy_->SetRule([&](WireProxy::Reply* r) {
    if (IsTransactionRead(*r))
      EditCursorBatch(&r->body, [&](std::string* doc) {
        if (!HasId(*doc, numeric_id)) return false;
        // {..., value: 10, ..., value: 1000}
        auto elements = ReadElements(*doc);
        elements->push_back(*ReadElements(BsonWriter().Int32("value", 1000).Finish())->begin());
        *doc = WriteElements(*elements);
        return true;
      });
    return Verdict{};
  });

  std::string out;
  EXPECT_EQ(Sweep(ProxiedConfig(), &out), 1) << out;
  EXPECT_GT(proxy_->forged(), 0);
  std::optional<Document> txn = bank.Txn(id);
  ASSERT_TRUE(txn);
  const Value* reason = txn->GetPath("recovery.quarantine.reason");
  ASSERT_TRUE(reason && reason->is_string()) << txn->Get("_id")->ToString() << "\n" << out;
  EXPECT_NE(reason->as_string()->find("duplicated key"), std::string::npos) << *reason->as_string();
  // The daemon wrote nothing to the accounts: A0 keeps the application's debit, A1 was
  // credited neither 10 nor 1000.
  Snapshot after = bank.Take();
  EXPECT_EQ(after.accounts, before.accounts);
  EXPECT_EQ(bank.Balance("A1"), 1000);
}

TEST_F(ForgedWire, AReplyNested100000LevelsDeepNeitherCrashesTheDaemonNorStopsTheSweep) {
  // 100,000 levels (800 KB, far below the 16 MB a document may take): the unbounded reader
  // overflowed its 8 MiB stack from about 50,000 levels on in this build.
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Snapshot before = bank.Take();
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  std::int64_t numeric_id = static_cast<std::int64_t>(*id.as_double());
  const std::string deep = NestedDocument(100000);
  proxy_->SetRule([&](WireProxy::Reply* r) {
    if (IsTransactionRead(*r))
      EditCursorBatch(&r->body, [&](std::string* doc) {
        if (!HasId(*doc, numeric_id)) return false;
        auto elements = ReadElements(*doc);
        elements->push_back({kBsonDocument, "note", deep});
        *doc = WriteElements(*elements);
        return true;
      });
    return Verdict{};
  });

  std::string out;
  EXPECT_EQ(Sweep(ProxiedConfig(), &out), 0) << "the note is not a field the profile reads\n"
                                             << out;
  EXPECT_GT(proxy_->forged(), 0);
  EXPECT_EQ(bank.State(id), "done") << out;
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
}

TEST_F(ForgedWire, AServerClockOfTheWrongTypeFailsTheSweepWithAReason) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  // The server's time (isMaster's localTime, serverStatus's) as a string.
  proxy_->SetRule([&](WireProxy::Reply* r) {
    if (r->command != "isMaster" && r->command != "serverStatus") return Verdict{};
    auto elements = ReadElements(r->body);
    if (!elements) return Verdict{};
    for (auto& e : *elements)
      if (e.key == "localTime")
        e = *ReadElements(BsonWriter().String("localTime", "now").Finish())->begin();
    r->body = WriteElements(*elements);
    return Verdict{};
  });
  std::string out;
  EXPECT_EQ(Sweep(ProxiedConfig(), &out), 1) << out;
  EXPECT_NE(out.find("localTime"), std::string::npos) << out;
  EXPECT_EQ(bank.State(id), "pending") << "no clock, no decision";
}

TEST_F(ForgedWire, ACursorReplyOfTheWrongTypeIsAnErrorNotACrash) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  proxy_->SetRule([&](WireProxy::Reply* r) {
    if (!IsTransactionRead(*r)) return Verdict{};
    auto elements = ReadElements(r->body);
    for (auto& e : *elements)
      if (e.key == "cursor") e = *ReadElements(BsonWriter().Int32("cursor", 7).Finish())->begin();
    r->body = WriteElements(*elements);
    return Verdict{};
  });
  std::string out;
  std::optional<int> rc = Sweep(ProxiedConfig(), &out);
  ASSERT_TRUE(rc) << "the sweep never ended\n" << out;
  EXPECT_GE(*rc, 1) << out;  // reported: 1, or 69 if the driver calls it a protocol error
  EXPECT_NE(*rc, 0) << out;
  EXPECT_EQ(bank.State(id), "pending");
}

TEST_F(ForgedWire, ATruncatedReplyIsAnUnreachableDatabaseNotACrash) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  proxy_->SetRule([](WireProxy::Reply* r) {
    return IsTransactionRead(*r) ? Verdict{Fate::kTruncateAndClose} : Verdict{};
  });
  std::string out;
  EXPECT_EQ(Sweep(ProxiedConfig(), &out), 69) << out;
  EXPECT_NE(out.find("find on"), std::string::npos) << out;
  EXPECT_EQ(bank.State(id), "pending");
}

TEST_F(ForgedWire, ATruncatedReplyThatThenStallsEndsAtTheSocketTimeout) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  proxy_->SetRule([](WireProxy::Reply* r) {
    return IsTransactionRead(*r) ? Verdict{Fate::kTruncateAndStall} : Verdict{};
  });
  std::string out;
  // socket_timeout is 2s: the read gives up then, whatever the server does. A daemon that
  // waited on the socket would still be waiting at the limit (libmongoc's default is 5 min).
  EXPECT_EQ(Sweep(ProxiedConfig(), &out, seconds(45)), 69) << out;
  EXPECT_EQ(bank.State(id), "pending");
}

TEST_F(ForgedWire, AReplySlowerThanTheSocketTimeoutEndsTheSweep) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  proxy_->SetRule([](WireProxy::Reply* r) {
    return IsTransactionRead(*r) ? Verdict{Fate::kDelay, seconds(120)} : Verdict{};
  });
  std::string out;
  EXPECT_EQ(Sweep(ProxiedConfig(), &out, seconds(45)), 69) << out;
}

TEST_F(ForgedWire, AnOversizedReplyIsRefusedNotAllocated) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  proxy_->SetRule([](WireProxy::Reply* r) {
    return IsTransactionRead(*r) ? Verdict{Fate::kOversized} : Verdict{};
  });
  std::string out;
  // The driver refuses a message past the server's maximum before reading its body (a
  // protocol error: the sweep of the watch fails and says why).
  EXPECT_EQ(Sweep(ProxiedConfig(), &out, seconds(45)), 1) << out;
  EXPECT_NE(out.find("Message size 67108864 is not within expected range"), std::string::npos)
      << out;
  EXPECT_EQ(bank.State(id), "pending");
}

// What mongod answers a login with a wrong password.
std::string AuthenticationFailedReply() {
  return BsonWriter()
      .Double("ok", 0)
      .String("errmsg", "Authentication failed.")
      .Int32("code", 18)
      .String("codeName", "AuthenticationFailed")
      .Finish();
}

WireProxy::Rule RefuseEveryLogin() {
  return [](WireProxy::Reply* r) {
    if (r->command == "saslStart" || r->command == "saslContinue" || r->command == "authenticate")
      r->body = AuthenticationFailedReply();
    return Verdict{};
  };
}

// The proxy's URI with credentials (the forged server refuses them).
std::string WithCredentials(const std::string& uri, const std::string& userinfo) {
  const std::string scheme = "mongodb://";
  std::string rest = uri.substr(scheme.size());
  if (std::size_t at = rest.find('@'); at != std::string::npos) rest = rest.substr(at + 1);
  return scheme + userinfo + "@" + rest;
}

TEST_F(ForgedWire, ARefusedLoginIsAuthenticationFailedNotAnUnreachableDatabase) {
  proxy_->SetRule(RefuseEveryLogin());
  std::string config = ConfigFile(WithCredentials(proxy_->Uri(server_uri_), "app:wrong-pw-4711"));
  for (const char* command : {"sweep", "inspect"}) {
    auto p = StartTxnRecoveryd({command, "--config", config});
    std::optional<int> rc = p->Wait(seconds(30));
    std::string out = p->Stdout() + p->Stderr();
    EXPECT_EQ(rc, 77) << command << "\n" << out;
    EXPECT_NE(out.find("authentication failed"), std::string::npos) << command << "\n" << out;
    EXPECT_EQ(out.find("unreachable"), std::string::npos) << command << "\n" << out;
    EXPECT_EQ(out.find("wrong-pw-4711"), std::string::npos) << command << "\n" << out;
  }
}

TEST_F(ForgedWire, ARunningDaemonSaysAuthenticationFailedInItsLogAndReadiness) {
  proxy_->SetRule(RefuseEveryLogin());
  int port = 0;
  auto daemon =
      Run(ConfigFile(WithCredentials(proxy_->Uri(server_uri_), "app:wrong-pw-4711"), kRunQuickly),
          &port);
  ASSERT_GT(port, 0) << daemon->Stderr();
  EXPECT_TRUE(ReadinessComesToSay(port, "authentication failed"))
      << HttpGet(port, "/readyz").body << daemon->Stderr();
  EXPECT_EQ(HttpGet(port, "/readyz").status, 503);
  EXPECT_EQ(HttpGet(port, "/livez").status, 200) << "a refused login is no reason to restart";
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(15)), 0);
  std::string log = daemon->Stderr();
  EXPECT_NE(log.find("authentication failed"), std::string::npos) << log;
  EXPECT_EQ(log.find("database unreachable"), std::string::npos) << log;
  EXPECT_EQ(log.find("wrong-pw-4711"), std::string::npos) << log;
}

// Logged in, but without the role to update the transactions: Unauthorized (13) on every
// write. Before, each transaction was charged for it and, after max_failures sweeps,
// quarantined though nothing is wrong with it. Now it is the deployment's problem: exit 79
// (a privilege missing, not the credentials of exit 77), no failure counted, nothing
// quarantined.
TEST_F(ForgedWire, AMissingPrivilegeIsNotChargedToTheTransactions) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 100, 3);
  bank.Age(id, std::chrono::minutes(2));
  proxy_->SetRule([](WireProxy::Reply* r) {
    if (r->command == "update" || r->command == "findAndModify") r->body = UnauthorizedReply();
    return WireProxy::Verdict{};
  });
  const std::string config = ProxiedConfig();
  for (int sweep = 0; sweep < 3; ++sweep) {  // max_failures is 2 in this configuration
    // The first claim lands (only its reply is forged) and takes the transfer over, with
    // the time: age it again, so that each sweep tries it.
    bank.Age(id, std::chrono::minutes(2));
    std::string out;
    EXPECT_EQ(Sweep(config, &out), 79) << out;
    EXPECT_NE(out.find("not authorized"), std::string::npos) << out;
  }
  // (The forged server forwards each request and rewrites only its reply, so the claims
  // themselves did land; what matters is what the daemon made of the refusal.)
  auto t = bank.Txn(id);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->GetPath("recovery.failures"), nullptr) << "nothing counted against it";
  EXPECT_EQ(t->GetPath("recovery.quarantine"), nullptr) << "nothing quarantined";
  // The claim is forwarded before its reply is forged: whether it landed (a take-over)
  // depends on the server; nothing else was written either way.
  const std::string state = bank.State(id);
  EXPECT_TRUE(state == "pending" || state == "resuming") << state;
}

// What DocumentDB answers a command PostgreSQL picked as a deadlock victim.
std::string DeadlockReply() {
  return BsonWriter()
      .Double("ok", 0)
      .String("errmsg", "Could not acquire lock for operation due to deadlock")
      .Int32("code", 112)
      .String("codeName", "WriteConflict")
      .Finish();
}

// A deadlock between two writers is the server's to break: the loser's write is sent again
// (it is harmless to repeat), so a guarded debit lands once and nothing is charged to the
// transaction; a conflict that does not clear within the retries is the write's error.
TEST_F(ForgedWire, AWriteLostToADeadlockIsSentAgainAndLandsOnce) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(1);
  std::unique_ptr<MongoStore> store;
  MongoOptions mo;
  mo.uri = proxy_->Uri(server_uri_);
  ASSERT_TRUE(MongoStore::Open(mo, &store).ok());
  std::atomic<int> conflicts{2};
  proxy_->SetRule([&](WireProxy::Reply* r) {
    // The request reached the server; only its reply says it lost.
    if (r->command == "update" && conflicts.fetch_sub(1) > 0) r->body = DeadlockReply();
    return WireProxy::Verdict{};
  });
  const Namespace accounts{backend_->database(), "accounts"};
  UpdateRequest debit{Filter().Eq("_id", "A0").Ne("pendingTransactions", 7),
                      Update().Inc("balance", -100).Push("pendingTransactions", 7)};
  BulkResult bulk;
  ASSERT_TRUE(store->UpdateEach(accounts, {debit}, &bulk).ok());
  EXPECT_TRUE(bulk.refused.empty());
  EXPECT_EQ(bank.Balance("A0"), 900) << "applied once, not once per attempt";

  conflicts = 2;
  WriteResult one;
  ASSERT_TRUE(store
                  ->UpdateMany(accounts, Filter().Eq("_id", "A0"),
                               Update().Pull("pendingTransactions", 7), &one)
                  .ok());
  EXPECT_EQ(bank.Take().accounts["\"A0\""].GetPath("pendingTransactions")->ToString(), "[]");

  conflicts = 100;  // more than the retries
  const Status s = store->UpdateEach(accounts, {debit}, &bulk);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("deadlock"), std::string::npos) << s.ToString();
}

// A sweep's workers send their first bulks at once, each comparing with the server's clock
// ($$NOW in a filter: the lease fence). A server that refuses $$NOW there (DocumentDB,
// docs/compatibility.md) is asked by one bulk; the others wait for its answer and are built
// on the estimate, instead of each being refused whole and sent again (500 claims refused
// at every start of a sweep with 4 workers). Each request still lands once.
TEST_F(ForgedWire, BulksSentAtOnceAskTheServerOnceWhetherItTakesItsClockInAFilter) {
  const Namespace ns{backend_->database(), "fenced"};
  constexpr int kWorkers = 4, kPerBulk = 25;
  std::vector<Document> docs;
  for (int i = 0; i < kWorkers * kPerBulk; ++i) docs.push_back(Document{{"_id", i}});
  ASSERT_TRUE(backend_->store()->InsertMany(ns, docs).ok());
  std::unique_ptr<MongoStore> store;
  MongoOptions mo;
  mo.uri = proxy_->Uri(server_uri_);
  ASSERT_TRUE(MongoStore::Open(mo, &store).ok());
  DateTime now;
  ASSERT_TRUE(store->ServerTime(&now).ok());
  std::atomic<int> refused_for_now{0};
  proxy_->SetRule([&](WireProxy::Reply* r) {
    if (r->command == "update" && r->body.find("$$NOW") != std::string::npos) ++refused_for_now;
    return Verdict{};
  });
  std::latch start(kWorkers);
  std::vector<BulkResult> results(kWorkers);
  std::vector<Status> statuses(kWorkers, Status::Ok());
  {
    std::vector<std::jthread> workers;
    for (int w = 0; w < kWorkers; ++w) {
      workers.emplace_back([&, w] {
        std::vector<UpdateRequest> bulk;
        for (int i = 0; i < kPerBulk; ++i)
          bulk.push_back(
              {Filter().Eq("_id", w * kPerBulk + i).ServerNowBefore(DateTime{now.millis + 600'000}),
               Update().Inc("n", 1)});
        start.arrive_and_wait();
        statuses[w] = store->UpdateEach(ns, bulk, &results[w]);
      });
    }
  }
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_TRUE(statuses[w].ok()) << statuses[w].ToString();
    EXPECT_EQ(results[w].matched, kPerBulk) << "worker " << w;
    EXPECT_TRUE(results[w].refused.empty()) << "worker " << w;
  }
  EXPECT_LE(refused_for_now.load(), 1) << "bulks refused for $$NOW";
  std::int64_t applied_once = 0;
  ASSERT_TRUE(backend_->store()->Count(ns, Filter().Eq("n", 1), &applied_once).ok());
  EXPECT_EQ(applied_once, kWorkers * kPerBulk);
}

TEST_F(ForgedWire, PerTransactionWarningsDuringAnOutageAreRateLimited) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(10);
  for (int i = 0; i < 60; ++i)
    bank.Transfer(Bank::Account(i % 10), Bank::Account((i + 3) % 10), 1, 3);
  bank.AgeAll(std::chrono::minutes(5));
  // The database answers reads and pings but every write's connection breaks: each
  // transaction of each sweep fails with the database unreachable.
  proxy_->SetRule([](WireProxy::Reply* r) {
    return r->command == "update" ? Verdict{Fate::kClose} : Verdict{};
  });
  std::string config = ProxiedConfig(
      "[daemon]\ninterval = \"200ms\"\nbackoff_max = \"200ms\"\n[log]\nlevel = \"info\"\n");
  auto daemon =
      StartTxnRecoveryd({"run", "--config", config}, {{"TXN_RECOVERYD_LOG_FORMAT", "text"}});
  // Several sweeps, each failing every transaction.
  ASSERT_TRUE(Eventually([&] { return proxy_->forged() >= 10; }, seconds(30))) << daemon->Stderr();
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(15)), 0);
  std::string log = daemon->Stderr();
  std::size_t failure_lines = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(" warning ") != std::string::npos && line.find("fail") != std::string::npos)
      ++failure_lines;
  EXPECT_NE(log.find("transactions failing: database unreachable"), std::string::npos) << log;
  EXPECT_LE(failure_lines, 4u) << "60 transactions failing in every sweep are logged once a "
                                  "minute per watch and action, not once each\n"
                               << log;
}

// What DocumentDB's gateway answers while its PostgreSQL restarts after a crash or is still
// recovering (a failover's new primary): PostgreSQL's words, even under the code of a refused
// login. The handshake is the gateway's own and still answered.
WireProxy::Rule ServerInRecovery() {
  return [](WireProxy::Reply* r) {
    if (r->command != "hello" && r->command != "isMaster" && r->command != "ismaster")
      r->body = BsonWriter()
                    .Double("ok", 0)
                    .String("errmsg", "FATAL: the database system is in recovery mode")
                    .Int32("code", 18)
                    .String("codeName", "AuthenticationFailed")
                    .Finish();
    return Verdict{};
  };
}

// The value of an unlabelled metric in a /metrics page ("" when absent).
std::string MetricValue(const std::string& page, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(page, m, std::regex("\n" + name + " (\\S+)"))) return "";
  return m[1];
}

TEST_F(ForgedWire, WhileTheServerRecoversARunningDaemonReportsAnOutageThenCarriesOn) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Snapshot before = bank.Take();
  Value id = bank.Transfer("A0", "A1", 100, 3);
  bank.Age(id, std::chrono::minutes(2));
  proxy_->SetRule(ServerInRecovery());
  int port = 0;
  auto daemon = Run(ProxiedConfig(kRunQuickly), &port);
  ASSERT_GT(port, 0) << daemon->Stderr();
  EXPECT_TRUE(ReadinessComesToSay(port, "unreachable"))
      << HttpGet(port, "/readyz").body << daemon->Stderr();
  EXPECT_EQ(HttpGet(port, "/readyz").status, 503);
  EXPECT_EQ(MetricValue(HttpGet(port, "/metrics").body, "txn_recoveryd_database_up"), "0");
  EXPECT_EQ(bank.State(id), "pending");

  proxy_->SetRule([](WireProxy::Reply*) { return Verdict{}; });  // recovered
  EXPECT_TRUE(Eventually([&] { return bank.State(id) == "done"; }, seconds(20)))
      << daemon->Stderr();
  EXPECT_TRUE(Eventually([&] { return HttpGet(port, "/readyz").status == 200; }, seconds(10)));
  EXPECT_EQ(MetricValue(HttpGet(port, "/metrics").body, "txn_recoveryd_database_up"), "1");
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(seconds(15)), 0);
  std::string log = daemon->Stderr();
  EXPECT_NE(log.find("database unreachable"), std::string::npos) << log;
  EXPECT_NE(log.find("in recovery mode"), std::string::npos) << log;
  EXPECT_EQ(log.find("authentication failed"), std::string::npos) << log;
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
}

TEST_F(ForgedWire, ASweepWhileTheServerRecoversExits69NotRefusedCredentials) {
  proxy_->SetRule(ServerInRecovery());
  std::string out;
  EXPECT_EQ(Sweep(ProxiedConfig(), &out), 69) << out;
  EXPECT_NE(out.find("in recovery mode"), std::string::npos) << out;
  EXPECT_EQ(out.find("authentication failed"), std::string::npos) << out;
}

// A failover in the middle of a write: the server applied it, the connection broke before
// the reply. The sweep reports an outage (exit 69), the transaction not finished for the
// database being unreachable, not for anything it did; the next one finds the write done
// and carries on from there, applying nothing twice.
TEST_F(ForgedWire, AWriteWhoseReplyNeverCameIsAnOutageAndTheNextSweepCarriesOn) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(2);
  Snapshot before = bank.Take();
  Value id = bank.Transfer("A0", "A1", 100, 3);
  bank.Age(id, std::chrono::minutes(2));
  std::atomic<int> closed{0};
  proxy_->SetRule([&closed](WireProxy::Reply* r) {
    if (r->command != "update" && r->command != "findAndModify") return Verdict{};
    ++closed;
    return Verdict{Fate::kClose};
  });
  const std::string config = ProxiedConfig("lease = \"15s\"\n");
  std::string out;
  EXPECT_EQ(Sweep(config, &out), 69) << out;
  EXPECT_GE(closed.load(), 1);
  EXPECT_NE(out.find("failed  (Unavailable: "), std::string::npos) << out;
  EXPECT_NE(out.find("transactions failing: database unreachable"), std::string::npos) << out;
  EXPECT_EQ(out.find("authentication failed"), std::string::npos) << out;
  EXPECT_EQ(out.find("quarantined 1"), std::string::npos) << out;
  EXPECT_NE(bank.State(id), "done") << "no reply came back: the sweep cannot have finished it";

  // The next sweeps: the first one's claim may have landed too, unanswered, and the lease
  // (the shortest there is, 15 s) then keeps the transfer from them until it expires.
  proxy_->SetRule([](WireProxy::Reply*) { return Verdict{}; });
  for (int attempt = 0; attempt < 10 && bank.State(id) != "done"; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(seconds(3));
    // The unanswered claim took the transfer over, with the time: as the next sweeps would
    // find it once resume_after has passed again.
    bank.Age(id, std::chrono::minutes(2));
    std::optional<int> rc = Sweep(config, &out);
    EXPECT_TRUE(rc == 0 || out.find("busy 1") != std::string::npos) << out;
  }
  EXPECT_EQ(bank.State(id), "done") << out;
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
}

// Two hosts of a fleet; host A was deployed with a role that may not update the accounts
// (its writes there come back Unauthorized, 13), host B is right. A keeps heartbeating, but
// after its first refused sweep it leaves the bank out of its record: B's share becomes all
// of it and every stuck transfer ends, instead of A's half waiting for an operator. (A's
// refused attempt took each of its transfers over, which makes it young again: with
// resume_after = 1s here, B finds them due a second later.)
TEST_F(ForgedWire, AFleetMemberWhoseWritesAreRefusedLeavesItsShareToTheOthers) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(8);
  const Snapshot before = bank.Take();
  proxy_->SetRule([](WireProxy::Reply* r) {
    if (r->command == "update" && r->collection == "accounts") r->body = UnauthorizedReply();
    return WireProxy::Verdict{};
  });
  auto config = [&](const std::string& name, const std::string& uri) {
    return WriteTestFile(name, "[mongodb]\nuri = \"" + uri +
                                   "\"\nserver_selection_timeout = \"2s\"\n"
                                   // Unpaced: at half the default bound each, the refused
                                   // member's later sweeps would find finishes it can drive.
                                   "[sweep]\npace = 0\n"
                                   "[daemon]\ninterval = \"300ms\"\n[fleet]\nexpiry = \"2s\"\n"
                                   "[[watch]]\nname = \"bank\"\ndatabase = \"" +
                                   backend_->database() + "\"\nresume_after = \"1s\"\n");
  };
  const std::map<std::string, std::string> env = {{"TXN_RECOVERYD_LOG_FORMAT", "text"}};
  auto refused = StartTxnRecoveryd(
      {"run", "--config", config("-refused.toml", proxy_->Uri(server_uri_))}, env);
  auto right = StartTxnRecoveryd({"run", "--config", config("-right.toml", server_uri_)}, env);
  ASSERT_TRUE(Eventually(
      [&] {
        return refused->Stderr().find("2 live member(s)") != std::string::npos &&
               right->Stderr().find("2 live member(s)") != std::string::npos;
      },
      seconds(20)))
      << refused->Stderr() << right->Stderr();

  std::vector<Value> ids;
  for (int i = 0; i < 40; ++i)
    ids.push_back(bank.Transfer(Bank::Account(i % 8), Bank::Account((i + 3) % 8), 1, 3));
  for (const Value& id : ids) bank.Age(id, std::chrono::minutes(5));
  EXPECT_TRUE(Eventually([&] { return bank.AllIn(ids, "done"); }, seconds(30)))
      << refused->Stderr() << right->Stderr();
  // A is still a member, listing nothing it cannot drive: from the heartbeat after the
  // sweep whose writes were refused ends (a paced sweep ends a chunk's wait after its last
  // transaction).
  std::size_t members = 0, listing_the_bank = 0;
  EXPECT_TRUE(Eventually(
      [&] {
        std::vector<MemberRecord> live;
        DateTime now;
        if (!backend_->store()->ServerTime(&now).ok() ||
            !LiveMembers(backend_->store(), {backend_->database(), "txn_recoveryd_members"},
                         seconds(2), now, &live)
                 .ok())
          return false;
        members = live.size();
        listing_the_bank = 0;
        for (const auto& m : live) listing_the_bank += m.watches.size();
        return members == 2 && listing_the_bank == 1;
      },
      seconds(10)))
      << members << " live members, " << listing_the_bank << " listing the bank\n"
      << refused->Stderr() << right->Stderr();
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
  refused->Signal(SIGTERM);
  right->Signal(SIGTERM);
  EXPECT_EQ(refused->Wait(seconds(15)), 0);
  EXPECT_EQ(right->Wait(seconds(15)), 0);
}

}  // namespace
}  // namespace txn_recovery::testing
