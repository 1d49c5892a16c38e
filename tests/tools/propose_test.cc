// propose: each application shape the project knows, planted with finished, in-flight and
// stuck transactions by its own application, is proposed from its documents alone, and the
// proposal is the documented watch (or differs where docs/operating.md says, and why); the
// proposal fits its documents (check-config --probe's Probe) and a sweep with it recovers
// them. What is not a transactions collection gets no watch, with the reason; what the data
// cannot decide is said, never guessed; nothing is written.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/operations_app.h"
#include "support/tagged_insert_app.h"
#include "support/test_env.h"
#include "support/watch_config.h"
#include "txn_recovery/tools/inspect.h"
#include "txn_recovery/tools/propose.h"

namespace txn_recovery::testing {
namespace {

using Verdict = CollectionProposal::Verdict;

class Propose : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
  }
  Store* store() { return backend_->store(); }
  const std::string& db() { return backend_->database(); }

  Proposal Run() {
    Proposal p;
    Must(txn_recovery::Propose(store(), db(), ProposeOptions{}, &p));
    text_ = ProposalText(p);
    return p;
  }
  const CollectionProposal& Of(const Proposal& p, const std::string& collection) {
    for (const auto& c : p.collections)
      if (c.collection == collection) return c;
    ADD_FAILURE() << "no proposal for " << collection << "\n" << text_;
    static const CollectionProposal none;
    return none;
  }
  // The proposed watch as the daemon loads it.
  WatchSpec Loaded(const CollectionProposal& c) {
    EXPECT_FALSE(c.watch_toml.empty()) << text_;
    return WatchFromToml(c.watch_toml, db());
  }
  // The proposal and the documented watch read the documents alike: the same profile, fields,
  // participants and steps, and every state spelling seen in the data is the same state,
  // written the same way.
  void ExpectSameWatch(const WatchSpec& proposed, const std::string& documented_toml,
                       const std::vector<std::string>& spellings_seen) {
    const WatchSpec documented = WatchFromToml(documented_toml, db());
    const Profile& a = proposed.profile;
    const Profile& b = documented.profile;
    EXPECT_EQ(a.kind(), b.kind()) << text_;
    EXPECT_EQ(a.state_field, b.state_field) << text_;
    EXPECT_EQ(a.time_field, b.time_field) << text_;
    EXPECT_EQ(MissingTimeName(a.missing_time), MissingTimeName(b.missing_time)) << text_;
    EXPECT_EQ(proposed.ns.collection, documented.ns.collection);
    for (const std::string& s : spellings_seen) {
      ASSERT_TRUE(a.states.Parse(s)) << s << "\n" << text_;
      ASSERT_TRUE(b.states.Parse(s)) << s;
      EXPECT_EQ(*a.states.Parse(s), *b.states.Parse(s)) << s << "\n" << text_;
      EXPECT_EQ(a.states.Written(*a.states.Parse(s)), b.states.Written(*b.states.Parse(s))) << s;
    }
    if (a.transfer() && b.transfer()) {
      const TransferProfile& x = *a.transfer();
      const TransferProfile& y = *b.transfer();
      EXPECT_EQ(x.source_field, y.source_field);
      EXPECT_EQ(x.destination_field, y.destination_field);
      EXPECT_EQ(x.amount_field, y.amount_field);
      EXPECT_EQ(x.participants_collection, y.participants_collection);
      EXPECT_EQ(x.participant_key, y.participant_key);
      EXPECT_EQ(x.balance_field, y.balance_field);
      EXPECT_EQ(x.marker_field, y.marker_field);
    }
    if (a.operations() && b.operations()) {
      EXPECT_EQ(a.operations()->operations_field, b.operations()->operations_field);
      EXPECT_EQ(a.operations()->marker_field, b.operations()->marker_field);
    }
    if (a.tagged_insert() && b.tagged_insert()) {
      auto x = a.tagged_insert()->tagged_collections;
      auto y = b.tagged_insert()->tagged_collections;
      std::sort(x.begin(), x.end());
      std::sort(y.begin(), y.end());
      EXPECT_EQ(x, y) << text_;
      EXPECT_EQ(a.tagged_insert()->tag_field, b.tagged_insert()->tag_field);
      EXPECT_EQ(a.tagged_insert()->valid_field, b.tagged_insert()->valid_field);
    }
    if (a.steps() && b.steps()) {
      ASSERT_EQ(a.steps()->steps.size(), b.steps()->steps.size()) << text_;
      for (std::size_t i = 0; i < a.steps()->steps.size(); ++i)
        EXPECT_EQ(a.steps()->steps[i].ToString(a.steps()->marker_field),
                  b.steps()->steps[i].ToString(b.steps()->marker_field));
    }
  }
  // check-config --probe's reading: every document fits the proposed watch.
  void ExpectEveryDocumentFits(const WatchSpec& w) {
    ProbeResult r;
    Must(Probe(store(), w, 1000, 5, &r));
    EXPECT_GT(r.examined, 0);
    EXPECT_EQ(r.fit, r.examined) << (r.misfits.empty() ? "" : r.misfits[0].detail) << "\n" << text_;
    EXPECT_EQ(r.missing_participant_total, 0);
  }
  WatchSummary Sweep(const WatchSpec& w) {
    return SweepOnce(store(), backend_->clock(), w, "daemon-1", nullptr);
  }
  // Every document and index of every collection of the database.
  std::map<std::string, std::pair<std::vector<Document>, std::vector<std::string>>> Everything() {
    std::map<std::string, std::pair<std::vector<Document>, std::vector<std::string>>> all;
    std::vector<std::string> names;
    Must(store()->ListCollections(db(), &names));
    for (const auto& name : names) {
      auto& [docs, indexes] = all[name];
      std::unique_ptr<Cursor> c;
      Must(store()->Find({db(), name}, Filter(), FindOptions{}, &c));
      Document d;
      for (bool has = true; Must(c->Next(&d, &has)), has;) docs.push_back(d);
      std::vector<IndexSpec> specs;
      Must(store()->ListIndexes({db(), name}, &specs));
      for (const auto& s : specs) indexes.push_back(s.name + " " + s.ToString());
    }
    return all;
  }

  // A bank of `profile` whose application has run: `done` transfers finished, two stuck after
  // each of its steps 1 to 7 (initial; pending before, between and after the two changes;
  // applied before, between and after the pulls), three cancelled before anything was applied.
  std::unique_ptr<Bank> PlantBank(Profile profile, Bank::Dialect dialect, int done = 30,
                                  Snapshot* opened = nullptr) {
    auto bank = std::make_unique<Bank>(store(), db(), std::move(profile), dialect);
    bank->Open(6);
    if (opened != nullptr) *opened = bank->Take();
    for (int i = 0; i < done; ++i)
      bank->Transfer(Bank::Account(i % 6), Bank::Account((i + 1) % 6), 5, kAppStepCount);
    for (int steps = 1; steps < kAppStepCount; ++steps)
      for (int k = 0; k < 2; ++k) bank->Transfer(Bank::Account(k), Bank::Account(k + 2), 7, steps);
    for (int k = 0; k < 3; ++k) {
      Value id = bank->Transfer(Bank::Account(3), Bank::Account(4), 9, 1);
      WriteResult r;
      Must(store()->UpdateOne(bank->txns(), Filter().Eq("_id", id),
                              Update().Set(bank->profile().state_field,
                                           bank->profile().states.Written(TxnState::kCancelled)),
                              &r));
    }
    return bank;
  }

  std::unique_ptr<TestBackend> backend_;
  std::string text_;
};

TEST_P(Propose, TheManualsTransferIsTheDocumentedWatchAndASweepWithItRecoversIt) {
  Snapshot before;
  auto bank = PlantBank(Profile::Transfer(), Bank::Dialect::kManual, 30, &before);

  Proposal p = Run();

  const CollectionProposal& c = Of(p, "transactions");
  EXPECT_EQ(c.verdict, Verdict::kProposed) << text_;
  WatchSpec w = Loaded(c);
  ExpectSameWatch(w, "[[watch]]\nname = \"bank\"\ndatabase = \"bank\"\nprofile = \"transfer\"\n",
                  {"initial", "pending", "applied", "done", "cancelled"});
  EXPECT_EQ(Of(p, "accounts").verdict, Verdict::kNotTransactions) << text_;
  ExpectEveryDocumentFits(w);
  bank->AgeAll(kExpired);
  Sweep(w);
  for (const auto& v : bank->Violations(before)) ADD_FAILURE() << v;
}

TEST_P(Propose, TheSchemaBooksNamesAreFoundByFollowingTheTransfersToTheAccounts) {
  WatchSpec book = WatchFromToml(R"([[watch]]
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
)",
                                 db());
  auto bank = PlantBank(book.profile, Bank::Dialect::kSchemaBook);

  Proposal p = Run();

  const CollectionProposal& c = Of(p, "transactions");
  EXPECT_EQ(c.verdict, Verdict::kProposed) << text_;
  // require_funds is the application's rule, which no document shows: said, not guessed.
  EXPECT_NE(text_.find("require_funds"), std::string::npos);
  WatchSpec w = Loaded(c);
  EXPECT_FALSE(w.profile.transfer()->require_funds);
  ExpectSameWatch(w, R"([[watch]]
name = "schema-book"
database = "bank"
profile = "transfer"
participant_key = "name"
amount_field = "amount"
missing_time = "object_id"
[watch.states]
applied = ["committed"]
cancelled = ["canceled"]
)",
                  {"initial", "pending", "committed", "done", "canceled"});
  ExpectEveryDocumentFits(w);
}

TEST_P(Propose, MongooseOperationsAreTheDocumentedWatch) {
  OperationsApp app(store(), db());
  Must(store()->InsertMany(app.Collection("users"), {Document{{"_id", "u1"}, {"money", 100}},
                                                     Document{{"_id", "u2"}, {"money", 100}}}));
  auto ops = std::vector<Operation>{Operation::Inc("users", "u1", "money", -10),
                                    Operation::Inc("users", "u2", "money", 10)};
  const OperationsSnapshot before = app.Take({"users"});
  const int all = OperationsApp::StepCount(ops.size());
  std::vector<Value> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(app.Run(ops, all));
  for (int steps = 1; steps < all; ++steps)
    for (int k = 0; k < 2; ++k) ids.push_back(app.Run(ops, steps));

  Proposal p = Run();

  const CollectionProposal& c = Of(p, "transactions");
  EXPECT_EQ(c.verdict, Verdict::kProposed) << text_;
  WatchSpec w = Loaded(c);
  ExpectSameWatch(w, "[[watch]]\nname = \"m\"\ndatabase = \"d\"\nprofile = \"operations\"\n",
                  {"new", "pending", "applied", "done"});
  EXPECT_EQ(Of(p, "users").verdict, Verdict::kNotTransactions) << text_;
  ExpectEveryDocumentFits(w);
  // A sweep with the proposal recovers them all (expired: rolled back or finished).
  for (const Value& id : ids) app.Age(id, kExpired);
  Sweep(w);
  for (const auto& v : app.Violations(before)) ADD_FAILURE() << v;
}

TEST_P(Propose, TaggedInsertsAreFoundByTheTagTheirDocumentsCarry) {
  Profile profile = Profile::TaggedInsert();
  profile.tagged_insert()->tagged_collections = {"orders", "lines"};
  TaggedInsertApp app(store(), db(), profile);
  app.AddBystanders();
  const TaggedSnapshot before = app.Take();
  std::vector<Value> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(app.Commit());
  for (int steps = 1; steps <= 4; ++steps)
    for (int k = 0; k < 2; ++k) {
      Value tx = app.InsertTransaction();
      for (int s = 2; s <= steps; ++s) Must(app.RunStep(tx, s));
      ids.push_back(tx);
    }
  for (int k = 0; k < 2; ++k) {  // the application's rollback, killed before its delete
    Value tx = app.InsertTransaction();
    Must(app.RunStep(tx, 2));
    Must(app.RunStep(tx, 6));
    ids.push_back(tx);
  }

  Proposal p = Run();

  const CollectionProposal& c = Of(p, "transactions");
  EXPECT_EQ(c.verdict, Verdict::kProposed) << text_;
  ExpectSameWatch(Loaded(c), R"([[watch]]
name = "t"
database = "d"
profile = "tagged-insert"
tagged_collections = ["orders", "lines"]
)",
                  {"started", "finishing", "rollback", "done"});
  ExpectEveryDocumentFits(Loaded(c));
  // A sweep with the proposal recovers them all (expired: rolled back or finished).
  for (const Value& id : ids) app.Age(id, kExpired);
  Sweep(Loaded(c));
  for (const auto& v : app.Violations(before)) ADD_FAILURE() << v;
}

// The localized manual: the manual's transfer without a time field, numeric _ids, balances in
// `value`, its states in French. The states are recognised by how the transfers move through
// them; the two that hold no marker and are not the finished one are refused, not guessed.
TEST_P(Propose, TheLocalizedManualsStatesAreRecognisedByHowTransfersMoveThroughThem) {
  WatchSpec documented = WatchFromToml(R"([[watch]]
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
)",
                                       db());
  PlantBank(documented.profile, Bank::Dialect::kNoTime);

  Proposal p = Run();

  const CollectionProposal& c = Of(p, "transactions");
  EXPECT_EQ(c.verdict, Verdict::kUndecided) << text_;
  EXPECT_NE(text_.find("\"en_cours\" -> pending"), std::string::npos) << text_;
  EXPECT_NE(text_.find("\"appliquee\" -> applied"), std::string::npos) << text_;
  EXPECT_NE(text_.find("\"terminee\" -> done"), std::string::npos) << text_;
  for (const char* refused : {"initiale", "annulee"})
    EXPECT_NE(c.watch_toml.find(std::string("# ? = [\"") + refused + "\"]"), std::string::npos)
        << text_;
  // The operator's answer, in place of the two lines left for it.
  std::string answered = std::regex_replace(
      c.watch_toml, std::regex("# \\? = \\[\"initiale\"\\][^\n]*"), "initial = [\"initiale\"]");
  answered = std::regex_replace(answered, std::regex("# \\? = \\[\"annulee\"\\][^\n]*"),
                                "cancelled = [\"annulee\"]");
  WatchSpec w = WatchFromToml(answered, db());
  ExpectSameWatch(w, R"([[watch]]
name = "localized"
database = "bank"
profile = "transfer"
balance_field = "value"
[watch.states]
initial = ["initiale"]
pending = ["en_cours"]
applied = ["appliquee"]
done = ["terminee"]
cancelled = ["annulee"]
)",
                  {"initiale", "en_cours", "appliquee", "terminee", "annulee"});
  ExpectEveryDocumentFits(w);
}

TEST_P(Propose, AStepsShapeIsDescribedByThePathsItsTransactionsReferToParticipantsBy) {
  const Namespace txns{db(), "transactions"}, users{db(), "users"};
  DateTime now;
  Must(store()->ServerTime(&now));
  Must(store()->InsertMany(
      users, {Document{{"_id", "u1"}, {"money", 0}, {"pendingTransaction", Array{}}},
              Document{{"_id", "u2"}, {"money", 0}, {"pendingTransaction", Array{}}}}));
  std::vector<Document> docs;
  auto txn = [&](int id, const char* status, const char* user) {
    return Document{{"_id", id},
                    {"status", status},
                    {"lastModified", now},
                    {"data", Document{{"targetUser", user}, {"amount", 25}}}};
  };
  for (int i = 0; i < 20; ++i) docs.push_back(txn(i, "done", i % 2 ? "u1" : "u2"));
  docs.push_back(txn(100, "new", "u1"));
  docs.push_back(txn(101, "new", "u2"));
  docs.push_back(txn(102, "pending", "u1"));  // credited, marker pushed
  docs.push_back(txn(103, "pending", "u2"));  // not credited yet
  docs.push_back(txn(104, "applied", "u2"));
  docs.push_back(txn(105, "applied", "u1"));
  Must(store()->InsertMany(txns, docs));
  WriteResult r;
  for (int credited : {102, 105})
    Must(store()->UpdateOne(users, Filter().Eq("_id", "u1"),
                            Update().Inc("money", 25).Push("pendingTransaction", credited), &r));
  Must(store()->UpdateOne(users, Filter().Eq("_id", "u2"),
                          Update().Inc("money", 25).Push("pendingTransaction", 104), &r));

  Proposal p = Run();

  const CollectionProposal& c = Of(p, "transactions");
  EXPECT_EQ(c.verdict, Verdict::kProposed) << text_;
  // Which way the amount goes is not in the documents: said.
  EXPECT_NE(text_.find("direction"), std::string::npos);
  WatchSpec w = Loaded(c);
  ExpectSameWatch(w, R"([[watch]]
name = "mongoose-users"
database = "shop"
profile = "steps"
state_field = "status"
marker_field = "pendingTransaction"
steps = [
  {collection = "users", key_path = "data.targetUser", inc = {money = "data.amount"}},
]
[watch.states]
new = ["new"]
)",
                  {"new", "pending", "applied", "done"});
  ExpectEveryDocumentFits(w);
}

TEST_P(Propose, SomethingElseEntirelyAndAnEmptyCollectionGetNoWatchWithTheReason) {
  Must(store()->InsertMany({db(), "products"},
                           {Document{{"_id", 1}, {"name", "pen"}, {"price", 2}},
                            Document{{"_id", 2}, {"name", "ink"}, {"price", 5}},
                            Document{{"_id", 3}, {"name", "pad"}, {"price", 3}}}));
  Must(store()->InsertMany({db(), "orders"},
                           {Document{{"_id", 1}, {"product", 1}, {"status", "shipped"}},
                            Document{{"_id", 2}, {"product", 2}, {"status", "open"}},
                            Document{{"_id", 3}, {"product", 1}, {"status", "open"}}}));
  Must(store()->CreateIndexes({db(), "empty"}, {IndexSpec{{{"x", 1}}, "", false, false, false}}));

  Proposal p = Run();

  EXPECT_EQ(Of(p, "products").verdict, Verdict::kNotTransactions) << text_;
  EXPECT_FALSE(Of(p, "products").why.empty());
  // A state-like field and a reference, but nothing named carries an order's _id.
  EXPECT_EQ(Of(p, "orders").verdict, Verdict::kNotTransactions) << text_;
  EXPECT_NE(Of(p, "orders").why.find("marker"), std::string::npos) << text_;
  EXPECT_EQ(Of(p, "empty").verdict, Verdict::kEmpty) << text_;
  for (const auto& c : p.collections) EXPECT_TRUE(c.watch_toml.empty()) << c.collection;
}

TEST_P(Propose, TwoShapesInOneCollectionAreBothShownAndNoWatchIsProposed) {
  auto bank = PlantBank(Profile::Transfer(), Bank::Dialect::kManual, 10);
  OperationsApp app(store(), db());
  Must(store()->InsertMany(app.Collection("users"), {Document{{"_id", "u1"}, {"money", 100}}}));
  for (int i = 0; i < 10; ++i) app.Run({Operation::Inc("users", "u1", "money", 1)}, i % 3 + 1);

  Proposal p = Run();

  const CollectionProposal& c = Of(p, "transactions");
  EXPECT_EQ(c.verdict, Verdict::kMixed) << text_;
  EXPECT_NE(c.watch_toml.find("# profile = \"transfer\""), std::string::npos) << text_;
  EXPECT_NE(c.watch_toml.find("# profile = \"operations\""), std::string::npos) << text_;
}

TEST_P(Propose, AStateSeenOnceIsRefusedNotGuessed) {
  auto bank = PlantBank(Profile::Transfer(), Bank::Dialect::kManual, 10);
  Value odd = bank->Transfer("A0", "A1", 3, 1);
  WriteResult r;
  Must(store()->UpdateOne(bank->txns(), Filter().Eq("_id", odd), Update().Set("state", "parked"),
                          &r));

  Proposal p = Run();

  const CollectionProposal& c = Of(p, "transactions");
  EXPECT_EQ(c.verdict, Verdict::kUndecided) << text_;
  EXPECT_NE(text_.find("UNSURE: state \"parked\": seen once"), std::string::npos) << text_;
}

TEST_P(Propose, AHugeDocumentIsReadLikeAnyOther) {
  auto bank = PlantBank(Profile::Transfer(), Bank::Dialect::kManual, 10);
  Value big = bank->Transfer("A0", "A1", 3, kAppStepCount);
  WriteResult r;
  Must(store()->UpdateOne(bank->txns(), Filter().Eq("_id", big),
                          Update().Set("memo", std::string(8 << 20, 'x')), &r));

  Proposal p = Run();

  EXPECT_EQ(Of(p, "transactions").verdict, Verdict::kProposed) << text_;
  ExpectSameWatch(Loaded(Of(p, "transactions")),
                  "[[watch]]\nname = \"bank\"\ndatabase = \"bank\"\nprofile = \"transfer\"\n",
                  {"initial", "pending", "applied", "done"});
}

TEST_P(Propose, NothingOfTheDatabaseIsWritten) {
  PlantBank(Profile::Transfer(), Bank::Dialect::kManual, 10);
  Must(store()->CreateIndexes(
      {db(), "transactions"},
      {IndexSpec{{{"state", 1}, {"lastModified", 1}}, "", false, false, false}}));
  const auto before = Everything();

  Run();

  EXPECT_EQ(Everything(), before);
}

TXN_RECOVERY_DATABASE_SUITE(CheckConfigProbe);

// The command as an operator runs it: `propose` prints a configuration that check-config
// --probe reads without a complaint (the proposal's whole text, comments and all, is the file).
TEST(CheckConfigProbe, TheProposalOfTheManualsBankIsAConfigurationThatPassesTheProbe) {
  TestUri uri = FindTestUri();
  ASSERT_TRUE(uri.ok) << uri.uri_or_reason;
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(4);
  for (int steps = 1; steps <= kAppStepCount; ++steps)
    for (int k = 0; k < (steps == kAppStepCount ? 10 : 2); ++k)
      bank.Transfer(Bank::Account(k % 2), Bank::Account(2 + k % 2), 5, steps);
  const std::map<std::string, std::string> env = {{"TXN_RECOVERYD_MONGODB_URI", uri.uri_or_reason}};

  ProcessResult proposed = RunTxnRecoveryd({"propose", "--database", backend->database()}, env,
                                           std::chrono::seconds(60));

  EXPECT_EQ(proposed.exit_code, 0) << proposed.out << proposed.err;
  EXPECT_NE(proposed.out.find("profile = \"transfer\""), std::string::npos) << proposed.out;
  const std::string config =
      ::testing::TempDir() + "proposed_" + std::to_string(getpid()) + ".toml";
  std::ofstream(config) << proposed.out;
  ProcessResult probe = RunTxnRecoveryd({"check-config", "--config", config, "--probe"}, env,
                                        std::chrono::seconds(60));
  std::remove(config.c_str());
  EXPECT_EQ(probe.exit_code, 0) << probe.out << probe.err;
  EXPECT_NE(probe.out.find(", 0 do not"), std::string::npos) << probe.out;
}

TEST(ProposeCommand, WithoutAnyConfigurationOrUriItSaysWhereTheDatabaseComesFrom) {
  ProcessResult r =
      RunTxnRecoveryd({"propose", "--database", "bank"}, {}, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 64) << r.out << r.err;
  EXPECT_NE(r.err.find("TXN_RECOVERYD_MONGODB_URI"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Backends, Propose, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
