// Described steps (profile "steps"): an application's two-phase commit recovered from a
// description of its documents in the configuration, without changing the application.
// The mongoose operations example exactly as written: {status: new|pending|applied|done,
// lastModified, data: {targetUser, amount}}, applied as $inc {money: data.amount} on the user
// with `pendingTransaction` as the marker. Killed after each of its steps and recovered; a
// wrong description quarantines naming the path and writes nothing, and check-config
// --probe reports it before the daemon is turned on. The transfer and operations profiles
// produce the very steps their descriptions do.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "daemon/configuration/config.h"
#include "support/crash_at_every_write.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/scenario.h"
#include "support/test_env.h"
#include "support/watch_config.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/tools/inspect.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::minutes;

// The mongoose example, described: nothing else differs from the defaults.
constexpr const char* kMongooseWatch = R"(
[[watch]]
name = "mongoose"
database = "shop"
profile = "steps"
state_field = "status"
marker_field = "pendingTransaction"
steps = [
  {collection = "users", key = "_id", key_path = "data.targetUser", inc = {money = "data.amount"}},
]
[watch.states]
new = ["new"]
)";

// The mongoose application, one step at a time (so that a test can kill it between any
// two): transactions {_id: ObjectId, status, lastModified, data: {targetUser, amount}},
// users {_id: ObjectId, money, pendingTransaction: [ObjectId]}.
class MongooseApp {
 public:
  enum Step { kInsertNew = 1, kMarkPending, kApplyUser, kMarkApplied, kPullUser, kMarkDone };
  static constexpr int kSteps = 6;

  MongooseApp(Store* store, const std::string& db)
      : store_(store), txns_{db, "transactions"}, users_{db, "users"} {}

  const Namespace& txns() const { return txns_; }
  const Namespace& users() const { return users_; }

  Value AddUser(std::int32_t money) {
    Value id(ObjectIdAged(store_, {}));
    Must(store_->InsertMany(
        users_, {Document{{"_id", id}, {"money", money}, {"pendingTransaction", Array{}}}}));
    return id;
  }

  // Inserts a transaction crediting `amount` to `user` and runs its first `steps` steps.
  Value Run(const Value& user, std::int32_t amount, int steps) {
    Value id(ObjectIdAged(store_, {}));
    Must(store_->InsertMany(
        txns_, {Document{{"_id", id},
                         {"status", "new"},
                         {"lastModified", ServerNow(store_)},
                         {"data", Document{{"targetUser", user}, {"amount", amount}}}}}));
    WriteResult r;
    auto move = [&](const char* from, const char* to) {
      Must(store_->UpdateOne(txns_, Filter().Eq("_id", id).Eq("status", from),
                             Update().Set("status", std::string(to)).CurrentDate("lastModified"),
                             &r));
    };
    for (int s = kInsertNew + 1; s <= steps; ++s) {
      switch (s) {
        case kMarkPending:
          move("new", "pending");
          break;
        case kApplyUser:
          ApplyUser(id, user, amount);
          break;
        case kMarkApplied:
          move("pending", "applied");
          break;
        case kPullUser:
          Must(store_->UpdateOne(users_, Filter().Eq("_id", user).Eq("pendingTransaction", id),
                                 Update().Pull("pendingTransaction", id), &r));
          break;
        case kMarkDone:
          move("applied", "done");
          break;
      }
    }
    return id;
  }

  // The application's findAndUpdate: where the marker is absent, $push it and $inc the money. A
  // stalled application running it after the daemon has ended the transaction applies it
  // again (a late write).
  void ApplyUser(const Value& id, const Value& user, std::int32_t amount) {
    std::optional<Document> after;
    Must(store_->FindOneAndUpdate(users_, Filter().Ne("pendingTransaction", id).Eq("_id", user),
                                  Update().Push("pendingTransaction", id).Inc("money", amount),
                                  &after));
  }

  void Age(const Value& id, std::chrono::milliseconds age) {
    AgeDocument(store_, txns_, id, "lastModified", age);
  }

  Document Get(const Namespace& ns, const Value& id) {
    std::optional<Document> d;
    Must(store_->FindOne(ns, Filter().Eq("_id", id), &d));
    if (!d) throw std::runtime_error("no document " + id.ToString() + " in " + ns.ToString());
    return *d;
  }
  std::string State(const Value& txn) { return *Get(txns_, txn).Get("status")->as_string(); }
  double Money(const Value& user) { return *Get(users_, user).Get("money")->as_double(); }
  std::size_t Markers(const Value& user) {
    return Get(users_, user).Get("pendingTransaction")->as_array()->size();
  }

 private:
  Store* store_;
  Namespace txns_, users_;
};

// ---- The application killed between any two of its steps ---------------------------

class MongooseKilled : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {};

TEST_P(MongooseKilled, TheDaemonEndsTheCreditDoneOrCancelledWithNoMarkerLeft) {
  auto [kind, c] = GetParam();
  auto backend = TestBackend::Create(kind);
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  WatchSpec watch = WatchFromToml(kMongooseWatch, backend->database());
  MongooseApp app(backend->store(), backend->database());
  Value user = app.AddUser(500);
  Value bystander = app.AddUser(70);
  Value id = app.Run(user, 100, c.steps);
  SCOPED_TRACE("application killed after step " + std::to_string(c.steps));
  app.Age(id, c.age);

  WatchSummary s = SweepOnce(backend->store(), backend->clock(), watch, "daemon-1");

  EXPECT_EQ(s.quarantined, 0);
  EXPECT_EQ(app.State(id), c.expected);
  const bool done = std::string(c.expected) == "done";
  EXPECT_EQ(app.Money(user), done ? 600 : 500) << "credited exactly once, or not at all";
  EXPECT_EQ(app.Markers(user), 0u);
  EXPECT_EQ(app.Money(bystander), 70);
}

const KilledCase kKilledCases[] = {
    {1, kStuck, "new"},         {2, kStuck, "done"},        {3, kStuck, "done"},
    {4, kStuck, "done"},        {5, kStuck, "done"},        {6, kStuck, "done"},
    {1, kExpired, "cancelled"}, {2, kExpired, "cancelled"}, {3, kExpired, "cancelled"},
    {4, kExpired, "done"},      {5, kExpired, "done"},      {6, kExpired, "done"},
};

INSTANTIATE_TEST_SUITE_P(EveryStepBoundary, MongooseKilled,
                         ::testing::Combine(::testing::Values("memory", "mongo"),
                                            ::testing::ValuesIn(kKilledCases)),
                         KilledCaseName{"after"});

// ---- The daemon killed at every one of its writes -------------------------------------

class MongooseDaemonKilled : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {
};

// A credit of 100 to a user with 500, the application killed after `c.steps` steps `c.age`
// ago: recovered, it is in `c.expected`, the user credited once or not at all, no marker left.
class StuckCredit final : public KilledDaemonScenario {
 public:
  StuckCredit(TestBackend* backend, const KilledCase& c)
      : KilledDaemonScenario(WatchFromToml(kMongooseWatch, backend->database()), c),
        app_(backend->store(), backend->database()),
        user_(app_.AddUser(500)),
        id_(app_.Run(user_, 100, c.steps)) {
    Age();
  }
  void Age() override { app_.Age(id_, c_.age); }
  void ExpectRecovered() override {
    EXPECT_EQ(app_.State(id_), c_.expected);
    EXPECT_EQ(app_.Money(user_), std::string(c_.expected) == "done" ? 600 : 500);
    EXPECT_EQ(app_.Markers(user_), 0u);
  }

 private:
  MongooseApp app_;
  Value user_;
  Value id_;
};

TEST_P(MongooseDaemonKilled, ASuccessorFinishesWhatTheKilledDaemonStarted) {
  auto [kind, c] = GetParam();
  CrashAtEveryWrite(
      kind, [c = c](TestBackend* backend) { return std::make_unique<StuckCredit>(backend, c); });
}

INSTANTIATE_TEST_SUITE_P(EveryWrite, MongooseDaemonKilled,
                         ::testing::Combine(::testing::Values("memory", "mongo"),
                                            ::testing::Values(KilledCase{3, kStuck, "done"},
                                                              KilledCase{3, kExpired,
                                                                         "cancelled"})),
                         KilledCaseDecisionName{});

// ---- Late writes: a stalled application applying its step after the daemon ended it -------

class MongooseLateWrite : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {};

TEST_P(MongooseLateWrite, TheCreditAppliedAfterTheDaemonEndedTheTransactionIsUndone) {
  auto [kind, c] = GetParam();
  auto backend = TestBackend::Create(kind);
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  WatchSpec watch = WatchFromToml(kMongooseWatch, backend->database());
  MongooseApp app(backend->store(), backend->database());
  Value user = app.AddUser(500);
  Value id = app.Run(user, 100, MongooseApp::kMarkPending);  // stalled before its credit
  app.Age(id, c.age);
  SweepOnce(backend->store(), backend->clock(), watch, "daemon-1");
  ASSERT_EQ(app.State(id), c.expected);
  const double settled = std::string(c.expected) == "done" ? 600 : 500;
  ASSERT_EQ(app.Money(user), settled);

  app.ApplyUser(id, user, 100);  // it wakes up: no marker, so its guard lets it through
  ASSERT_EQ(app.Money(user), settled + 100);
  app.Age(id, kStuck);
  WatchSummary s = SweepOnce(backend->store(), backend->clock(), watch, "daemon-1");

  EXPECT_EQ(s.late_writes_undone, 1);
  EXPECT_EQ(app.Money(user), settled);
  EXPECT_EQ(app.Markers(user), 0u);
  EXPECT_EQ(app.State(id), c.expected);
}

INSTANTIATE_TEST_SUITE_P(Backends, MongooseLateWrite,
                         ::testing::Combine(::testing::Values("memory", "mongo"),
                                            ::testing::Values(KilledCase{2, kStuck, "done"},
                                                              KilledCase{2, kExpired,
                                                                         "cancelled"})),
                         KilledCaseDecisionName{"after_"});

TEST(DescribedSteps, TheOrphanScanLooksWhereTheStepsPutMarkers) {
  WatchSpec w = WatchFromToml(kMongooseWatch, "shop");
  auto where = w.profile.MarkerLocations(w.ns);
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where[0].ns, (Namespace{"shop", "users"}));
  EXPECT_EQ(where[0].field, "pendingTransaction");
}

// ---- A description that does not fit the documents -------------------------------------

class WrongDescription : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    app_ = std::make_unique<MongooseApp>(backend_->store(), backend_->database());
  }
  // The mongoose watch with `from` replaced by `to` in its text.
  WatchSpec Described(const std::string& from, const std::string& to) {
    std::string toml = kMongooseWatch;
    toml.replace(toml.find(from), from.size(), to);
    return WatchFromToml(toml, backend_->database());
  }
  std::unique_ptr<TestBackend> backend_;
  std::unique_ptr<MongooseApp> app_;
};

TEST_P(WrongDescription, APathThatIsNotInTheDocumentsQuarantinesNamingItAndWritesNothing) {
  WatchSpec watch = Described("data.targetUser", "data.target");
  Value user = app_->AddUser(500);
  Value id = app_->Run(user, 100, MongooseApp::kApplyUser);
  app_->Age(id, kStuck);

  std::vector<TxnReport> reports;
  WatchSummary s = SweepOnce(backend_->store(), backend_->clock(), watch, "daemon-1", &reports);

  EXPECT_EQ(s.quarantined, 1);
  std::optional<Document> t;
  Must(backend_->store()->FindOne(app_->txns(), Filter().Eq("_id", id), &t));
  const Value* reason = t->GetPath("recovery.quarantine.reason");
  ASSERT_NE(reason, nullptr);
  EXPECT_NE(reason->ToString().find("'data.target' is missing"), std::string::npos)
      << reason->ToString();
  EXPECT_EQ(app_->State(id), "pending");
  EXPECT_EQ(app_->Money(user), 600) << "the application's own credit, and nothing else";
  EXPECT_EQ(app_->Markers(user), 1u);
}

TEST_P(WrongDescription, AValueOfTheWrongTypeQuarantinesNamingThePath) {
  WatchSpec watch = Described("inc = {money = \"data.amount\"}", "inc = {money = \"data\"}");
  Value user = app_->AddUser(500);
  Value id = app_->Run(user, 100, MongooseApp::kMarkPending);
  app_->Age(id, kStuck);
  SweepOnce(backend_->store(), backend_->clock(), watch, "daemon-1");
  std::optional<Document> t;
  Must(backend_->store()->FindOne(app_->txns(), Filter().Eq("_id", id), &t));
  const Value* reason = t->GetPath("recovery.quarantine.reason");
  ASSERT_NE(reason, nullptr);
  EXPECT_NE(reason->ToString().find("field 'data' has type object, expected number"),
            std::string::npos)
      << reason->ToString();
  EXPECT_EQ(app_->Money(user), 500);
  EXPECT_EQ(app_->Markers(user), 0u);
}

TEST_P(WrongDescription, TheProbeReportsEachDocumentThatDoesNotFitAndEachMissingParticipant) {
  Value user = app_->AddUser(500);
  for (int steps = 1; steps <= MongooseApp::kSteps; ++steps) app_->Run(user, 10, steps);
  Value gone = app_->Run(Value(ObjectIdAged(backend_->store(), {})), 5, MongooseApp::kMarkPending);

  ProbeResult good;
  ASSERT_TRUE(
      Probe(backend_->store(), WatchFromToml(kMongooseWatch, backend_->database()), 100, 20, &good)
          .ok());
  EXPECT_EQ(good.examined, 7);
  EXPECT_EQ(good.fit, 7);
  EXPECT_EQ(good.misfit_total, 0);
  EXPECT_EQ(good.missing_participant_total, 1) << "the user of one transfer does not exist";
  ASSERT_EQ(good.missing_participants.size(), 1u);
  EXPECT_EQ(good.missing_participants[0].id, gone);

  ProbeResult wrong;
  ASSERT_TRUE(
      Probe(backend_->store(), Described("data.targetUser", "data.target"), 100, 3, &wrong).ok());
  EXPECT_EQ(wrong.examined, 7);
  EXPECT_EQ(wrong.fit, 0);
  EXPECT_EQ(wrong.misfit_total, 7);
  ASSERT_EQ(wrong.misfits.size(), 3u) << "only the first `keep` are kept";
  EXPECT_NE(wrong.misfits[0].detail.find("'data.target' is missing"), std::string::npos);
  EXPECT_EQ(app_->Money(user), 500 + 10 * 4) << "a probe writes nothing";
}

INSTANTIATE_TEST_SUITE_P(Backends, WrongDescription, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

TXN_RECOVERY_DATABASE_SUITE(CheckConfigProbe);

TEST(CheckConfigProbe, TheCommandNamesThePathAndExits78WhenNoDocumentFits) {
  TestUri uri = FindTestUri();
  ASSERT_TRUE(uri.ok) << uri.uri_or_reason;
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  MongooseApp app(backend->store(), backend->database());
  app.Run(app.AddUser(500), 10, MongooseApp::kMarkPending);
  const std::string config = ::testing::TempDir() + "probe_" + std::to_string(getpid()) + ".toml";
  auto write = [&](const std::string& key_path) {
    std::string watch = kMongooseWatch;
    watch.replace(watch.find("data.targetUser"), 15, key_path);
    watch.replace(watch.find("\"shop\""), 6, "\"" + backend->database() + "\"");
    std::ofstream(config) << "[mongodb]\nuri = \"" << uri.uri_or_reason << "\"\n" << watch;
  };
  auto run = [&](std::string* out) {
    ProcessResult r = RunTxnRecoveryd({"check-config", "--config", config, "--probe"}, {},
                                      std::chrono::seconds(60));
    *out = r.out + r.err;
    return r.exit_code;
  };
  std::string out;
  write("data.target");
  int rc = run(&out);
  EXPECT_EQ(rc, 78) << out;
  EXPECT_NE(out.find("does not fit: field 'data.target' is missing"), std::string::npos) << out;
  EXPECT_NE(out.find("1 read, 0 fit, 1 do not"), std::string::npos) << out;

  write("data.targetUser");
  rc = run(&out);
  std::remove(config.c_str());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("1 read, 1 fit, 0 do not"), std::string::npos) << out;
  EXPECT_NE(out.find("#   [0] users where _id = <data.targetUser>: $inc money by <data.amount>; "
                     "marker pendingTransaction"),
            std::string::npos)
      << "check-config prints the steps as the daemon understands them\n"
      << out;
}

// ---- One mechanism: the profiles are descriptions ----------------------------------------

// Everything a step's writes are built from, for comparing two steps.
std::string Shape(const ParticipantStep& s) {
  return s.ns.ToString() + " " + s.target.ToString() + " guard " + s.apply_guard.ToString() +
         " apply " + s.apply.ToString() + " undo " + s.undo.ToString() + " dup " +
         s.undo_duplicate.ToString() + " finish " + s.finish.ToString() + " marker " +
         s.marker_field + (s.target_may_be_ambiguous ? " ambiguous" : "");
}

TEST(OneMechanism, ATransferIsTheDescriptionCheckConfigPrintsForIt) {
  for (const char* extra : {"", "require_funds = true\n", "participant_key = \"name\"\n"}) {
    SCOPED_TRACE(extra);
    WatchSpec transfer = WatchFromToml(
        std::string("[[watch]]\nname = \"t\"\ndatabase = \"bank\"\nprofile = \"transfer\"\n") +
            extra,
        "bank");
    // The `steps = [...]` check-config would print for the same description.
    txn_recovery::Profile as_steps = Profile::Steps();
    *as_steps.steps() = transfer.profile.transfer()->AsSteps();
    WatchSpec described = transfer;
    described.profile = as_steps;
    const std::string printed = txn_recovery::daemon::DescribeSteps(described);
    const std::string list = printed.substr(printed.find("marker_field"),
                                            printed.find("\n]") + 2 - printed.find("marker_field"));
    WatchSpec reloaded = WatchFromToml(
        "[[watch]]\nname = \"t\"\ndatabase = \"bank\"\nprofile = \"steps\"\n" + list + "\n",
        "bank");

    Document doc{{"_id", 7},     {"source", "A"},      {"destination", "B"},
                 {"value", 100}, {"state", "pending"}, {"lastModified", DateTime{1}}};
    Transaction a, b;
    ASSERT_TRUE(transfer.profile.Parse(doc, transfer.ns, "recovery", &a).ok());
    ASSERT_TRUE(reloaded.profile.Parse(doc, reloaded.ns, "recovery", &b).ok()) << list;
    ASSERT_EQ(a.steps.size(), 2u);
    ASSERT_EQ(b.steps.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(Shape(a.steps[i]), Shape(b.steps[i]));
      EXPECT_EQ(a.steps[i].describe, b.steps[i].describe);
    }
    EXPECT_EQ(a.steps[0].describe, "debit 100 from \"A\"");
  }
}

TEST(OneMechanism, AnOperationsEntryAndTheMongooseDescribedStepBuildTheSameWrites) {
  WatchSpec described = WatchFromToml(kMongooseWatch, "shop");
  WatchSpec operations = WatchFromToml(
      "[[watch]]\nname = \"ops\"\ndatabase = \"shop\"\nprofile = \"operations\"\n", "shop");
  const Value user(std::string("u1"));
  Document mongoose{{"_id", 9},
                    {"status", "pending"},
                    {"lastModified", DateTime{1}},
                    {"data", Document{{"targetUser", user}, {"amount", 100}}}};
  Document listed{{"_id", 9},
                  {"status", "pending"},
                  {"lastModified", DateTime{1}},
                  {"data", Document{{"operations",
                                     Array{Value(Document{{"collection", "users"},
                                                          {"_id", user},
                                                          {"inc", Document{{"money", 100}}}})}}}}};
  Transaction a, b;
  ASSERT_TRUE(described.profile.Parse(mongoose, described.ns, "recovery", &a).ok());
  ASSERT_TRUE(operations.profile.Parse(listed, operations.ns, "recovery", &b).ok());
  ASSERT_EQ(a.steps.size(), 1u);
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(Shape(a.steps[0]), Shape(b.steps[0]));
}

TEST(DescribedSteps, DocumentsThatDoNotFitAreMalformedNamingThePath) {
  WatchSpec w = WatchFromToml(kMongooseWatch, "shop");
  auto parse = [&](Document data) {
    Document doc{{"_id", 1}, {"status", "pending"}, {"lastModified", DateTime{1}}};
    doc.SetPath("data", std::move(data));
    Transaction t;
    return w.profile.Parse(doc, w.ns, "recovery", &t);
  };
  const std::pair<Document, const char*> cases[] = {
      {Document{{"amount", 1}}, "field 'data.targetUser' is missing"},
      {Document{{"targetUser", "u"}}, "field 'data.amount' is missing"},
      {Document{{"targetUser", Array{}}, {"amount", 1}}, "'data.targetUser' has type array"},
      {Document{{"targetUser", "u"}, {"amount", "100"}}, "'data.amount' has type string"},
      {Document{{"targetUser", "u"}, {"amount", std::numeric_limits<double>::infinity()}},
       "'data.amount' is not finite"},
  };
  for (const auto& [data, expected] : cases) {
    Status s = parse(data);
    EXPECT_TRUE(s.IsMalformed()) << Value(data).ToString();
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  }
  EXPECT_TRUE(parse(Document{{"targetUser", "u"}, {"amount", -5}}).ok())
      << "a described inc may be negative unless the step says positive = true";
}

TEST(DescribedSteps, TheLoaderRefusesADescriptionWithoutAnExactInverseAtItsLine) {
  auto refused = [](const std::string& step) {
    try {
      WatchFromToml("[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"steps\"\nsteps = [" +
                        step + "]\n",
                    "d");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused("{collection = \"u\", key_path = \"k\", set = {tier = \"t\"}}")
                .find("needs previous.tier"),
            std::string::npos);
  EXPECT_NE(refused("{collection = \"u\", key_path = \"k\"}").find("changes nothing"),
            std::string::npos);
  EXPECT_NE(refused("{collection = \"u\", key_path = \"k\", inc = {pendingTransactions = \"a\"}}")
                .find("marker"),
            std::string::npos);
  EXPECT_NE(refused("{collection = \"transactions\", key_path = \"k\", inc = {m = \"a\"}}")
                .find("transactions collection"),
            std::string::npos);
  EXPECT_NE(refused("{collection = \"u\", key_path = \"k\", inc = {m = \"a\"}, guard = \"m >> a\"}")
                .find("FIELD OP PATH"),
            std::string::npos);
  EXPECT_NE(refused("{collection = \"u\", key = \"owner.id\", key_path = \"k\", set = {owner = "
                    "\"a\"}, previous = {owner = \"b\"}}")
                .find("nor a field within or around them"),
            std::string::npos)
      << "a change that moves the participant out of its own target";
  EXPECT_NE(refused("{collection = \"u\", key_path = \"k\", inc = {\"a.b\" = \"x\", a = \"y\"}}")
                .find("are changed by one step"),
            std::string::npos);
  EXPECT_NE(refused("{collection = \"u\", key_path = \"k\", inc = {m = \"a\"}}, {collection = "
                    "\"u\", key = \"no\", key_path = \"j\", inc = {m = \"a\"}}")
                .find("on the same collection and marker"),
            std::string::npos)
      << "two keys could name one document";
  const std::string unknown =
      refused("{collection = \"u\", key_path = \"k\", inc = {m = \"a\"}, colour = 1}");
  EXPECT_NE(unknown.find(":7:62: watch[0].steps[0].colour: unknown key"), std::string::npos)
      << "the line and column of the key (after the two lines of [mongodb]): " << unknown;
}

}  // namespace
}  // namespace txn_recovery::testing

namespace txn_recovery::testing {
namespace {

// The README's worked examples are configuration that loads, and each describes what its
// profile would: the section's indented blocks, loaded as they are printed.
TEST(DescribedSteps, TheReadmesWorkedExamplesLoadAndMatchTheirProfiles) {
  std::ifstream in(std::string(TXN_RECOVERY_SOURCE_DIR) + "/docs/describing-shapes.md");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto begin = text.find("## Describing your application's transactions");
  ASSERT_NE(begin, std::string::npos);
  const std::string section = text.substr(begin, text.find("\n## ", begin + 1) - begin);
  std::vector<std::string> blocks;
  std::string block;
  std::istringstream lines(section);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("    ", 0) == 0) {
      block += line.substr(4) + "\n";
    } else if (!block.empty()) {
      blocks.push_back(block);
      block.clear();
    }
  }
  ASSERT_EQ(blocks.size(), 3u) << section;

  WatchSpec mongoose = WatchFromToml(blocks[0], "shop");
  EXPECT_EQ(mongoose.profile.steps()->steps.at(0).key_path, "data.targetUser");

  auto same_steps = [](const WatchSpec& a, const WatchSpec& b, const Document& doc) {
    Transaction ta, tb;
    ASSERT_TRUE(a.profile.Parse(doc, a.ns, "recovery", &ta).ok());
    ASSERT_TRUE(b.profile.Parse(doc, b.ns, "recovery", &tb).ok());
    ASSERT_EQ(ta.steps.size(), tb.steps.size());
    for (std::size_t i = 0; i < ta.steps.size(); ++i)
      EXPECT_EQ(Shape(ta.steps[i]), Shape(tb.steps[i]));
  };
  const std::string head = "[[watch]]\nname = \"w\"\ndatabase = \"bank\"\n";
  same_steps(
      WatchFromToml(blocks[1], "bank"),
      WatchFromToml(head + "profile = \"transfer\"\nbalance_field = \"value\"\n", "bank"),
      Document{
          {"_id", 1}, {"source", "A"}, {"destination", "B"}, {"value", 100}, {"state", "pending"}});
  same_steps(
      WatchFromToml(head + "profile = \"steps\"\nmissing_time = \"object_id\"\n" + blocks[2],
                    "bank"),
      WatchFromToml(head + "profile = \"transfer\"\nparticipant_key = \"name\"\namount_field "
                           "= \"amount\"\nrequire_funds = true\nmissing_time = \"object_id\"\n",
                    "bank"),
      Document{{"_id", ObjectId::AtTime(1000)},
               {"source", "Joe"},
               {"destination", "Peter"},
               {"amount", 100},
               {"state", "pending"}});
}

}  // namespace
}  // namespace txn_recovery::testing
