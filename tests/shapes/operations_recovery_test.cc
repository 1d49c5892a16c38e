// Recovery of the `operations` profile (mongoose operations): transactions listing invertible
// changes to documents of several collections, participants marked with
// `pendingTransaction`. Every scenario runs against the in-memory store and the test server,
// with the watch loaded from configuration text; docs/chaos.md's invariants are checked after
// each.
#include <gtest/gtest.h>

#include <limits>

#include "support/crash_at_every_write.h"
#include "support/operations_app.h"
#include "support/test_env.h"
#include "support/watch_config.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::minutes;

// Nothing but the profile: its defaults are the mongoose operations'.
constexpr const char* kMongooseWatch = R"(
[[watch]]
name = "mongoose"
database = "shop"
profile = "operations"
)";

// The world of the scenarios: two users exchanging money, a promotion code being used up,
// a user promoted, and documents no transaction names.
struct Shop {
  explicit Shop(OperationsApp* app, Store* store) : app(app), store(store) {}

  void Open() {
    Must(
        store->InsertMany(app->Collection("users"),
                          {Document{{"_id", "A"}, {"money", 1000}, {"pendingTransaction", Array{}}},
                           Document{{"_id", "B"}, {"money", 1000}, {"pendingTransaction", Array{}}},
                           Document{{"_id", "D"}, {"money", 50}, {"tier", "silver"}},
                           Document{{"_id", "Z"}, {"money", 5}, {"tier", "bronze"}}}));
    Must(store->InsertMany(
        app->Collection("promotions"),
        {Document{{"_id", "PROMO"}, {"left", 10}}, Document{{"_id", "OTHER"}, {"left", 3}}}));
  }
  // Four operations over two collections: A pays B 100, PROMO is used once, D becomes gold.
  static std::vector<Operation> Purchase() {
    return {Operation::Inc("users", "A", "money", -100), Operation::Inc("users", "B", "money", 100),
            Operation::Inc("promotions", "PROMO", "left", -1),
            Operation::Set("users", "D", "tier", "gold", "silver")};
  }
  OperationsSnapshot Take() { return app->Take({"users", "promotions"}); }

  // The purchase is either entirely there or not at all.
  void ExpectPurchase(bool done) {
    EXPECT_EQ(*app->Doc("users", "A")->Get("money"), Value(done ? 900 : 1000));
    EXPECT_EQ(*app->Doc("users", "B")->Get("money"), Value(done ? 1100 : 1000));
    EXPECT_EQ(*app->Doc("promotions", "PROMO")->Get("left"), Value(done ? 9 : 10));
    EXPECT_EQ(*app->Doc("users", "D")->Get("tier"), Value(done ? "gold" : "silver"));
    EXPECT_EQ(app->Sum("users", "money"), 2055) << "conservation of the money moved by inc";
    for (const char* u : {"A", "B", "D"}) EXPECT_TRUE(app->Markers("users", u).empty()) << u;
    EXPECT_TRUE(app->Markers("promotions", "PROMO").empty());
  }

  OperationsApp* app;
  Store* store;
};

class OperationsRecovery : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    watch_ = WatchFromToml(kMongooseWatch, backend_->database());
    app_ = std::make_unique<OperationsApp>(store(), backend_->database(), watch_.profile);
    shop_ = std::make_unique<Shop>(app_.get(), store());
    shop_->Open();
  }
  Store* store() { return backend_->store(); }
  WatchSummary Sweep(std::vector<TxnReport>* reports = nullptr,
                     const std::string& owner = "daemon-1") {
    return SweepOnce(store(), backend_->clock(), watch_, owner, reports);
  }
  void ExpectInvariants(const OperationsSnapshot& before, bool all_terminal = true) {
    for (const auto& v : app_->Violations(before, all_terminal)) ADD_FAILURE() << v;
  }
  std::string QuarantineReason(const Value& id) {
    auto t = app_->Txn(id);
    const Value* r = t ? t->GetPath("recovery.quarantine.reason") : nullptr;
    return r && r->is_string() ? *r->as_string() : "<not quarantined>";
  }

  std::unique_ptr<TestBackend> backend_;
  WatchSpec watch_;
  std::unique_ptr<OperationsApp> app_;
  std::unique_ptr<Shop> shop_;
};

TEST_P(OperationsRecovery, TheMongooseDefaultsNeedOnlyTheProfileName) {
  const Profile& p = watch_.profile;
  ASSERT_NE(p.operations(), nullptr);
  EXPECT_EQ(p.kind(), "operations");
  EXPECT_EQ(p.state_field, "status");
  EXPECT_EQ(p.time_field, "lastModified");
  EXPECT_EQ(p.states.Written(TxnState::kInitial), "new");
  EXPECT_EQ(p.states.Written(TxnState::kCancelled), "canceled");
  EXPECT_EQ(p.states.Parse("cancelled"), TxnState::kCancelled);
  EXPECT_EQ(p.operations()->operations_field, "data.operations");
  EXPECT_EQ(p.operations()->marker_field, "pendingTransaction");
}

TEST_P(OperationsRecovery, AMongooseTransactionHalfAppliedAcrossTwoCollectionsIsResumed) {
  OperationsSnapshot before = shop_->Take();
  // The application pushed its marker onto A and B, then died before PROMO and D.
  Value tx = app_->Run(Shop::Purchase(), 4);
  app_->Age(tx, kStuck);

  std::vector<TxnReport> reports;
  WatchSummary s = Sweep(&reports);

  EXPECT_EQ(s.resolved, 1);
  EXPECT_EQ(app_->State(tx), "done");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].result.operations_applied, 2) << "only the two missing operations";
  EXPECT_EQ(*app_->Txn(tx)->GetPath("recovery.outcome"), Value("committed"));
  shop_->ExpectPurchase(true);
  ExpectInvariants(before);
}

// ---- The application killed after every one of its steps ------------------------------

class OperationsApplicationKilled
    : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {};

TEST_P(OperationsApplicationKilled, TheDaemonAppliesAllOfItOrNoneOfIt) {
  auto [kind, c] = GetParam();
  auto backend = TestBackend::Create(kind);
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  WatchSpec watch = WatchFromToml(kMongooseWatch, backend->database());
  OperationsApp app(backend->store(), backend->database(), watch.profile);
  Shop shop(&app, backend->store());
  shop.Open();
  OperationsSnapshot before = shop.Take();
  const auto ops = Shop::Purchase();
  Value tx = app.Run(ops, c.steps);
  app.Age(tx, c.age);
  SCOPED_TRACE("application killed after it " + OperationsApp::StepName(c.steps, ops.size()));

  SweepOnce(backend->store(), backend->clock(), watch, "daemon-1");

  EXPECT_EQ(app.State(tx), c.expected);
  const bool terminal = std::string(c.expected) != "new";
  for (const auto& v : app.Violations(before, terminal)) ADD_FAILURE() << v;
  shop.ExpectPurchase(std::string(c.expected) == "done");
}

// The application killed after each of its OperationsApp::StepCount(4) = 12 steps.
std::vector<KilledCase> KilledCases() {
  std::vector<KilledCase> out;
  const int n = OperationsApp::StepCount(4);
  for (int steps = 1; steps <= n; ++steps) {
    // Stuck: new waits for initial_timeout; pending is resumed; applied is finished.
    out.push_back({steps, kStuck, steps == 1 ? "new" : "done"});
    // Expired: new is cancelled, pending rolled back (mongoose operations: "only pending
    // transactions need to be rolled back"), applied still finished.
    out.push_back({steps, kExpired, steps <= 6 ? "canceled" : "done"});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryStepBoundary, OperationsApplicationKilled,
                         ::testing::Combine(::testing::Values("memory", "mongo"),
                                            ::testing::ValuesIn(KilledCases())),
                         KilledCaseName{"after"});

// ---- The daemon killed after every one of its writes -----------------------------------

class OperationsDaemonKilled
    : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {};

// The purchase, the application killed after `c.steps` steps `c.age` ago: recovered, it is
// in `c.expected` and entirely there or not at all.
class StuckPurchase final : public KilledDaemonScenario {
 public:
  StuckPurchase(TestBackend* backend, const KilledCase& c)
      : KilledDaemonScenario(WatchFromToml(kMongooseWatch, backend->database()), c),
        app_(backend->store(), backend->database(), watch_.profile),
        shop_(&app_, backend->store()) {
    shop_.Open();
    before_ = shop_.Take();
    tx_ = app_.Run(Shop::Purchase(), c.steps);
    Age();
  }
  void Age() override { app_.Age(tx_, c_.age); }
  void ExpectRecovered() override {
    EXPECT_EQ(app_.State(tx_), c_.expected);
    for (const auto& v : app_.Violations(before_)) ADD_FAILURE() << v;
    shop_.ExpectPurchase(std::string(c_.expected) == "done");
  }

 private:
  OperationsApp app_;
  Shop shop_;
  OperationsSnapshot before_;
  Value tx_;
};

TEST_P(OperationsDaemonKilled, ASecondDaemonCompletesTheSameDecision) {
  auto [kind, c] = GetParam();
  CrashAtEveryWrite(
      kind, [c = c](TestBackend* backend) { return std::make_unique<StuckPurchase>(backend, c); });
}

INSTANTIATE_TEST_SUITE_P(EveryDaemonWrite, OperationsDaemonKilled,
                         ::testing::Combine(::testing::Values("memory", "mongo"),
                                            ::testing::Values(KilledCase{4, kStuck, "done"},
                                                              KilledCase{4, kExpired, "canceled"},
                                                              KilledCase{9, kStuck, "done"})),
                         KilledCaseName{"app"});

// ---- Operations that cannot apply ------------------------------------------------------

TEST_P(OperationsRecovery, ASetWhosePreviousValueNoLongerHoldsRollsTheTransactionBack) {
  // Someone else demoted D: setting gold over "bronze" could not be undone to it.
  WriteResult w;
  Must(store()->UpdateOne(app_->Collection("users"), Filter().Eq("_id", "D"),
                          Update().Set("tier", "bronze"), &w));
  OperationsSnapshot before = shop_->Take();
  Value tx = app_->Run(Shop::Purchase(), 5);  // A, B and PROMO applied; D not yet
  app_->Age(tx, kStuck);

  std::vector<TxnReport> reports;
  Sweep(&reports);

  EXPECT_EQ(app_->State(tx), "canceled");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].result.action, Action::kRollback);
  EXPECT_NE(reports[0].result.detail.find("guard failed"), std::string::npos)
      << reports[0].result.detail;
  EXPECT_EQ(*app_->Doc("users", "A")->Get("money"), Value(1000));
  EXPECT_EQ(*app_->Doc("users", "B")->Get("money"), Value(1000));
  EXPECT_EQ(*app_->Doc("promotions", "PROMO")->Get("left"), Value(10));
  EXPECT_EQ(*app_->Doc("users", "D")->Get("tier"), Value("bronze")) << "never overwritten";
  ExpectInvariants(before);
}

TEST_P(OperationsRecovery, AnOperationOnAMissingDocumentRollsTheTransactionBack) {
  OperationsSnapshot before = shop_->Take();
  auto ops = Shop::Purchase();
  ops.push_back(Operation::Inc("users", "ghost", "money", 1));
  Value tx = app_->Run(ops, 4);  // A and B applied
  app_->Age(tx, kStuck);

  std::vector<TxnReport> reports;
  Sweep(&reports);

  EXPECT_EQ(app_->State(tx), "canceled");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(reports[0].result.detail.find("participant not found"), std::string::npos)
      << reports[0].result.detail;
  shop_->ExpectPurchase(false);
  ExpectInvariants(before);
}

TEST_P(OperationsRecovery, ASetOfAFieldThatWasAbsentIsUndoneByRemovingIt) {
  OperationsSnapshot before = shop_->Take();
  Value tx = app_->Run({Operation::Inc("users", "A", "money", -5),
                        Operation::Set("users", "B", "badge", "early", Null{})},
                       4);  // both applied, still pending: B now has a badge
  EXPECT_EQ(*app_->Doc("users", "B")->Get("badge"), Value("early"));
  app_->Age(tx, kExpired);

  Sweep();

  EXPECT_EQ(app_->State(tx), "canceled");
  EXPECT_EQ(app_->Doc("users", "B")->Get("badge"), nullptr);
  ExpectInvariants(before);
}

// ---- Documents that do not fit ---------------------------------------------------------

TEST_P(OperationsRecovery, OperationsWithoutAnExactInverseAreQuarantinedAndNothingIsTouched) {
  OperationsSnapshot before = shop_->Take();
  const DateTime old{ServerNow(store()).millis - std::chrono::milliseconds(kStuck).count()};
  auto txn = [&](const std::string& id, Array ops, const std::string& status = "pending") {
    return Document{{"_id", id},
                    {"status", status},
                    {"lastModified", old},
                    {"data", Document{{"operations", std::move(ops)}}}};
  };
  auto op = [](const char* coll, const char* id, const char* kind, Document change) {
    return Value(Document{{"collection", coll}, {"_id", id}, {kind, std::move(change)}});
  };
  struct Bad {
    Document doc;
    const char* reason;
  };
  std::vector<Bad> bad = {
      {txn("unknown-kind", {op("users", "A", "mul", Document{{"money", 2}})}), "unknown key 'mul'"},
      {txn("set-without-previous", {op("users", "D", "set", Document{{"tier", "gold"}})}),
       "without 'previous'"},
      {txn("string-inc", {op("users", "A", "inc", Document{{"money", "100"}})}), "is not a number"},
      {txn("on-transactions", {op("transactions", "x", "inc", Document{{"n", 1}})}),
       "the transactions collection itself"},
      {txn("twice-one-document", {op("users", "A", "inc", Document{{"money", -1}}),
                                  op("users", "A", "inc", Document{{"money", -2}})}),
       "one marker cannot tell them apart"},
      {txn("no-collection", {Value(Document{{"_id", "A"}, {"inc", Document{{"money", 1}}}})}),
       "'data.operations[0].collection' is missing"},
      {{{"_id", "no-operations"}, {"status", "pending"}, {"lastModified", old}},
       "'data.operations' is missing"},
      {txn("unknown-status", {op("users", "A", "inc", Document{{"money", 1}})}, "commited"),
       "unknown state 'commited'"},
  };
  for (const auto& b : bad) Must(store()->InsertMany(app_->txns(), {b.doc}));
  Value good = app_->Run(Shop::Purchase(), 3);
  app_->Age(good, kStuck);

  WatchSummary s = Sweep();

  EXPECT_EQ(s.quarantined, static_cast<std::int64_t>(bad.size()));
  EXPECT_EQ(app_->State(good), "done") << "a bad document does not stop the sweep";
  for (const auto& b : bad) {
    const Value& id = *b.doc.Get("_id");
    EXPECT_NE(QuarantineReason(id).find(b.reason), std::string::npos)
        << id.ToString() << ": " << QuarantineReason(id);
  }
  shop_->ExpectPurchase(true);
  ExpectInvariants(before);
  EXPECT_EQ(Sweep().examined, 0) << "quarantined transactions are not read again";
}

// ---- Late writes -------------------------------------------------------------------------

TEST_P(OperationsRecovery, AnOperationAppliedAgainAfterTheDaemonFinishedIsUndone) {
  OperationsSnapshot before = shop_->Take();
  Value tx = app_->Run(Shop::Purchase(), 3);  // stalled after paying from A
  app_->Age(tx, kStuck);
  Sweep();
  ASSERT_EQ(app_->State(tx), "done");

  // The application wakes up and carries on with B and D: the markers are gone, so its
  // guards let both changes through a second time.
  ASSERT_TRUE(app_->ApplyOperation(tx, 1).ok());
  ASSERT_TRUE(app_->ApplyOperation(tx, 3).ok());
  EXPECT_EQ(*app_->Doc("users", "B")->Get("money"), Value(1200));
  app_->Age(tx, kStuck);

  WatchSummary s = Sweep();

  EXPECT_EQ(s.late_writes_undone, 2);
  shop_->ExpectPurchase(true);
  ExpectInvariants(before);
}

TEST_P(OperationsRecovery, AnOperationAppliedAfterTheDaemonRolledBackIsUndone) {
  OperationsSnapshot before = shop_->Take();
  Value tx = app_->Run(Shop::Purchase(), 3);  // stalled after paying from A
  app_->Age(tx, kExpired);
  Sweep();
  ASSERT_EQ(app_->State(tx), "canceled");

  ASSERT_TRUE(app_->ApplyOperation(tx, 1).ok());  // credits B for a cancelled purchase
  ASSERT_TRUE(app_->ApplyOperation(tx, 3).ok());  // and promotes D
  app_->Age(tx, kStuck);

  WatchSummary s = Sweep();

  EXPECT_EQ(s.late_writes_undone, 2);
  shop_->ExpectPurchase(false);
  ExpectInvariants(before);
}

TEST_P(OperationsRecovery, AnApplicationWakingAfterTheRollbackStopsAtItsNextTransition) {
  OperationsSnapshot before = shop_->Take();
  const auto ops = Shop::Purchase();
  Value tx = app_->Run(ops, 3);  // stalled after paying from A
  app_->Age(tx, kExpired);
  Sweep();
  ASSERT_EQ(app_->State(tx), "canceled");

  // It wakes up and carries on with its remaining steps: three late changes, then the
  // compare-and-set to applied fails and it stops before pulling any marker.
  int step = 4;
  Status s;
  for (; step <= OperationsApp::StepCount(ops.size()); ++step)
    if (!(s = app_->RunStep(tx, step, ops.size())).ok()) break;
  EXPECT_EQ(step, 7) << "stopped at " << OperationsApp::StepName(step, ops.size());
  EXPECT_TRUE(s.IsConflict()) << s.ToString();
  app_->Age(tx, kStuck);

  WatchSummary again = Sweep();

  EXPECT_EQ(again.late_writes_undone, 3);
  shop_->ExpectPurchase(false);
  ExpectInvariants(before);
}

INSTANTIATE_TEST_SUITE_P(Backends, OperationsRecovery, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

// ---- Parsing alone -------------------------------------------------------------------------

Status ParseOps(Array ops, Transaction* txn, const Profile& p = Profile::Operations()) {
  Document doc{{"_id", 1},
               {"status", "pending"},
               {"lastModified", DateTime{1}},
               {"data", Document{{"operations", std::move(ops)}}}};
  return p.Parse(doc, Namespace{"shop", "transactions"}, "recovery", txn);
}

TEST(OperationsProfile, EachOperationBecomesAStepWithItsExactInverse) {
  Transaction t;
  ASSERT_TRUE(ParseOps({Value(Document{{"collection", "users"},
                                       {"_id", "A"},
                                       {"inc", Document{{"money", 100}, {"points", -3}}},
                                       {"set", Document{{"tier", "gold"}}},
                                       {"previous", Document{{"tier", "silver"}}}})},
                       &t)
                  .ok());
  ASSERT_EQ(t.steps.size(), 1u);
  const ParticipantStep& s = t.steps[0];
  EXPECT_EQ(s.ns, (Namespace{"shop", "users"}));
  // The change, then the marker: the order of the one step builder (a single update, so the
  // order of its operators does not matter to the server).
  EXPECT_EQ(s.apply.ToString(),
            "{$inc: {money: 100}, $inc: {points: -3}, $set: {tier: \"gold\"}, $push: "
            "{pendingTransaction: 1}}");
  EXPECT_EQ(s.undo.ToString(),
            "{$inc: {money: -100}, $inc: {points: 3}, $set: {tier: \"silver\"}, $pull: "
            "{pendingTransaction: 1}}");
  EXPECT_EQ(s.undo_duplicate.ToString(),
            "{$inc: {money: -100}, $inc: {points: 3}, $pull: {pendingTransaction: 1}}")
      << "a late $set leaves the committed value; only the marker goes";
  EXPECT_EQ(s.apply_guard.ToString(), "{tier: {$eq: \"silver\"}}");
}

// Drivers refuse to store these keys, so only a document written some other way could
// carry them: parsing alone shows they are refused.
TEST(OperationsProfile, DottedAndDollarKeysAndUnwritableValuesAreRefused) {
  Transaction t;
  Status dotted =
      ParseOps({Value(Document{
                   {"collection", "users"}, {"_id", "A"}, {"inc", Document{{"wallet.money", 1}}}})},
               &t);
  EXPECT_NE(dotted.message().find("dotted"), std::string::npos) << dotted.ToString();
  Status dollar = ParseOps(
      {Value(Document{{"collection", "users"}, {"_id", "A"}, {"inc", Document{{"$money", 1}}}})},
      &t);
  EXPECT_TRUE(dollar.IsMalformed());
  EXPECT_NE(dollar.message().find("'$'"), std::string::npos) << dollar.message();
  Status nested = ParseOps({Value(Document{{"collection", "users"},
                                           {"_id", "A"},
                                           {"set", Document{{"f", Document{{"$gt", 1}}}}},
                                           {"previous", Document{{"f", 1}}}})},
                           &t);
  EXPECT_TRUE(nested.IsMalformed()) << nested.ToString();
  Status decimal = ParseOps({Value(Document{{"collection", "users"},
                                            {"_id", "A"},
                                            {"set", Document{{"f", OtherValue{"decimal128", {}}}}},
                                            {"previous", Document{{"f", 1}}}})},
                            &t);
  EXPECT_TRUE(decimal.IsMalformed()) << decimal.ToString();
  Status infinite =
      ParseOps({Value(Document{{"collection", "users"},
                               {"_id", "A"},
                               {"inc", Document{{"f", std::numeric_limits<double>::infinity()}}}})},
               &t);
  EXPECT_TRUE(infinite.IsMalformed()) << infinite.ToString();
}

TEST(OperationsProfile, AllowedCollectionsAndMaxOperationsBoundWhatIsAccepted) {
  Profile p = Profile::Operations();
  p.operations()->collections = {"users"};
  p.operations()->max_operations = 1;
  Transaction t;
  Status other =
      ParseOps({Value(Document{
                   {"collection", "promotions"}, {"_id", "P"}, {"inc", Document{{"left", -1}}}})},
               &t, p);
  EXPECT_NE(other.message().find("not one of the watch's collections"), std::string::npos)
      << other.ToString();
  Value one(Document{{"collection", "users"}, {"_id", "A"}, {"inc", Document{{"m", 1}}}});
  Value two(Document{{"collection", "users"}, {"_id", "B"}, {"inc", Document{{"m", 1}}}});
  EXPECT_TRUE(ParseOps({one}, &t, p).ok());
  Status many = ParseOps({one, two}, &t, p);
  EXPECT_NE(many.message().find("more than 1"), std::string::npos) << many.ToString();
  Status system = ParseOps(
      {Value(Document{{"collection", "system.users"}, {"_id", "A"}, {"inc", Document{{"m", 1}}}})},
      &t);
  EXPECT_TRUE(system.IsMalformed()) << system.ToString();
}

}  // namespace
}  // namespace txn_recovery::testing
