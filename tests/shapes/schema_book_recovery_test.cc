// The schema-book transfer (the schema book's account transactions), recovered by the
// `transfer` profile with nothing but configuration: accounts found by `name`, ObjectId
// transaction ids and no time field at all, the amount in `amount`, states `committed` and
// `canceled` (and the book's own `cancel`), a debit only while the balance covers it, and
// the `application` that owns a transaction. Every scenario runs against both backends.
#include <gtest/gtest.h>

#include "support/bank_test.h"
#include "support/crash_at_every_write.h"
#include "support/test_env.h"
#include "support/watch_config.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

// Everything that differs from the defaults (the MongoDB manual transfer's), and nothing else.
constexpr const char* kSchemaBookWatch = R"(
[[watch]]
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
)";

class SchemaBook : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    Use(kSchemaBookWatch);
  }
  // Replaces the watch (and the bank's view of the profile) with `toml`'s.
  void Use(const std::string& toml) {
    watch_ = WatchFromToml(toml, backend_->database());
    bank_ = std::make_unique<Bank>(store(), backend_->database(), watch_.profile,
                                   Bank::Dialect::kSchemaBook);
  }
  Store* store() { return backend_->store(); }
  WatchSummary Sweep(std::vector<TxnReport>* reports = nullptr) {
    return SweepOnce(store(), backend_->clock(), watch_, "daemon-1", reports);
  }
  void ExpectInvariants(const Snapshot& before, bool all_terminal = true) {
    for (const auto& v : bank_->Violations(before, all_terminal)) ADD_FAILURE() << v;
  }
  // The book's account document, exactly: {_id: ObjectId, name, balance, pendingTransactions}.
  void InsertBookAccount(const std::string& name, std::int32_t balance, Array markers = {}) {
    Must(store()->InsertMany(bank_->accounts(),
                             {Document{{"_id", NewObjectId(ServerNow(store()).millis)},
                                       {"name", name},
                                       {"balance", balance},
                                       {"pendingTransactions", std::move(markers)}}}));
  }
  // The book's transaction document, exactly: no time field; its age is its ObjectId's.
  Value InsertBookTransaction(const std::string& source, const std::string& destination,
                              std::int32_t amount, const std::string& state,
                              std::chrono::milliseconds age) {
    Value id = ObjectIdAged(store(), age);
    Must(store()->InsertMany(bank_->txns(), {Document{{"_id", id},
                                                      {"source", source},
                                                      {"destination", destination},
                                                      {"amount", amount},
                                                      {"state", state}}}));
    return id;
  }

  std::unique_ptr<TestBackend> backend_;
  WatchSpec watch_;
  std::unique_ptr<Bank> bank_;
};

TEST_P(SchemaBook, TheSchemaBooksDocumentsAreRecoveredWithOnlyConfiguration) {
  // Joe was debited, then the application died before crediting Peter.
  Value id = ObjectIdAged(store(), kStuck);
  InsertBookAccount("Joe Moneylender", 900, Array{id});
  InsertBookAccount("Peter Bum", 1000);
  Must(store()->InsertMany(bank_->txns(), {Document{{"_id", id},
                                                    {"source", "Joe Moneylender"},
                                                    {"destination", "Peter Bum"},
                                                    {"amount", 100},
                                                    {"state", "pending"}}}));

  WatchSummary s = Sweep();

  EXPECT_EQ(s.resolved, 1);
  EXPECT_EQ(bank_->State(id), "done");
  EXPECT_EQ(bank_->Balance("Joe Moneylender"), 900);
  EXPECT_EQ(bank_->Balance("Peter Bum"), 1100);
  EXPECT_TRUE(bank_->Markers("Joe Moneylender").empty());
  EXPECT_TRUE(bank_->Markers("Peter Bum").empty());
  auto t = bank_->Txn(id);
  ASSERT_TRUE(t);
  EXPECT_EQ(*t->GetPath("recovery.outcome"), Value("committed"));
}

// ---- The schema-book application killed between any two of its steps -------------------

class SchemaBookApplicationKilled
    : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {};

TEST_P(SchemaBookApplicationKilled, TheDaemonEndsTheTransferCommittedOrCanceled) {
  auto [kind, c] = GetParam();
  auto backend = TestBackend::Create(kind);
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  WatchSpec watch = WatchFromToml(kSchemaBookWatch, backend->database());
  Bank bank(backend->store(), backend->database(), watch.profile, Bank::Dialect::kSchemaBook);
  bank.set_application("A1");
  bank.Open(2);
  Snapshot before = bank.Take();
  Value id = bank.Transfer("A0", "A1", 100, c.steps, c.age);
  SCOPED_TRACE(std::string("application killed after it ") + AppStepName(c.steps));

  SweepOnce(backend->store(), backend->clock(), watch, "daemon-1");

  ExpectTransferEnded(bank, id, c.expected, before);
}

INSTANTIATE_TEST_SUITE_P(EveryStepBoundary, SchemaBookApplicationKilled,
                         ::testing::Combine(::testing::Values("memory", "mongo"),
                                            ::testing::ValuesIn(KilledTransferCases("canceled"))),
                         KilledCaseName{"after"});

// ---- The daemon killed at every one of its writes --------------------------------------

class SchemaBookDaemonKilled
    : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {};

TEST_P(SchemaBookDaemonKilled, ASuccessorFinishesWhatTheKilledDaemonStarted) {
  auto [kind, c] = GetParam();
  CrashAtEveryWrite(kind, [c = c](TestBackend* backend) {
    WatchSpec watch = WatchFromToml(kSchemaBookWatch, backend->database());
    Bank bank(backend->store(), backend->database(), watch.profile, Bank::Dialect::kSchemaBook);
    return std::make_unique<StuckTransfer>(backend, bank, watch, c);
  });
}

INSTANTIATE_TEST_SUITE_P(EveryDaemonWrite, SchemaBookDaemonKilled,
                         ::testing::Combine(::testing::Values("memory", "mongo"),
                                            ::testing::Values(KilledCase{3, kStuck, "done"},
                                                              KilledCase{3, kExpired, "canceled"},
                                                              KilledCase{6, kStuck, "done"})),
                         KilledCaseName{"app"});

// ---- Funds ------------------------------------------------------------------------------

TEST_P(SchemaBook, APendingTransferWhoseDebitCanNeverApplyIsRolledBack) {
  bank_->OpenAccount("Joe Moneylender", 50);
  bank_->OpenAccount("Peter Bum", 1000);
  Snapshot before = bank_->Take();
  // Marked pending; the debit failed its `balance >= amount` guard and the app gave up.
  Value id = bank_->Transfer("Joe Moneylender", "Peter Bum", 100, 3, kStuck);
  ASSERT_EQ(bank_->Balance("Joe Moneylender"), 50) << "the book's guard refused the debit";

  std::vector<TxnReport> reports;
  Sweep(&reports);

  EXPECT_EQ(bank_->State(id), "canceled");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].result.action, Action::kRollback);
  EXPECT_NE(reports[0].result.detail.find("guard failed"), std::string::npos)
      << reports[0].result.detail;
  EXPECT_EQ(bank_->Balance("Joe Moneylender"), 50);
  EXPECT_EQ(bank_->Balance("Peter Bum"), 1000);
  ExpectInvariants(before);
}

TEST_P(SchemaBook, ADebitAlreadyAppliedIsNotJudgedAgainstTheBalanceItLeft) {
  bank_->OpenAccount("Joe Moneylender", 100);
  bank_->OpenAccount("Peter Bum", 1000);
  Snapshot before = bank_->Take();
  Value id = bank_->Transfer("Joe Moneylender", "Peter Bum", 100, 4, kStuck);  // Joe now at 0
  ASSERT_EQ(bank_->Balance("Joe Moneylender"), 0);

  Sweep();

  EXPECT_EQ(bank_->State(id), "done");
  EXPECT_EQ(bank_->Balance("Joe Moneylender"), 0);
  EXPECT_EQ(bank_->Balance("Peter Bum"), 1100);
  ExpectInvariants(before);
}

// ---- Participants the schema book's own text gets wrong ------------------------------------

TEST_P(SchemaBook, TheSchemaBooksOwnTransactionNamesAccountsThatDoNotExistAndIsRolledBack) {
  // The book opens "Joe Moneylender" and "Peter Bum", then inserts a transfer from "Joe"
  // to "Peter".
  InsertBookAccount("Joe Moneylender", 1000);
  InsertBookAccount("Peter Bum", 1000);
  Snapshot before = bank_->Take();
  Value id = InsertBookTransaction("Joe", "Peter", 100, "pending", kStuck);

  std::vector<TxnReport> reports;
  Sweep(&reports);

  EXPECT_EQ(bank_->State(id), "canceled");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(reports[0].result.detail.find("participant not found"), std::string::npos)
      << reports[0].result.detail;
  ExpectInvariants(before);
}

TEST_P(SchemaBook, TwoAccountsWithTheSameNameAreNeverGuessedBetween) {
  InsertBookAccount("Joe Moneylender", 1000);
  InsertBookAccount("Joe Moneylender", 1000);
  InsertBookAccount("Peter Bum", 1000);
  Value id = InsertBookTransaction("Joe Moneylender", "Peter Bum", 100, "pending", kStuck);
  std::vector<Document> accounts_before = AllDocs(store(), bank_->accounts());

  std::vector<TxnReport> reports;
  WatchSummary s = Sweep(&reports);

  EXPECT_EQ(s.quarantined, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].result.outcome, Outcome::kQuarantined);
  EXPECT_NE(reports[0].result.detail.find("2 documents"), std::string::npos)
      << reports[0].result.detail;
  EXPECT_EQ(bank_->State(id), "resuming") << "taken over by its claim, kept so for an operator";
  EXPECT_EQ(AllDocs(store(), bank_->accounts()), accounts_before) << "no account was touched";
  auto t = bank_->Txn(id);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->GetPath("recovery.lease"), nullptr) << "the lease was released";
}

// ---- Time taken from the ObjectId ---------------------------------------------------------

TEST_P(SchemaBook, AMissingTimeIsTakenFromTheObjectIdAndAPresentOneWins) {
  bank_->Open(8);
  Value young = bank_->Transfer("A0", "A1", 10, 3, seconds(5));
  Value old = bank_->Transfer("A2", "A3", 10, 3, kStuck);
  Value old_but_touched = bank_->Transfer("A4", "A5", 10, 3, kStuck);
  bank_->Age(old_but_touched, seconds(5));  // a lastModified written since: it wins
  Value long_finished = bank_->Transfer("A6", "A7", 10, kAppStepCount, minutes(120));
  Must(store()->InsertMany(bank_->txns(), {Document{{"_id", "string-id"},
                                                    {"source", "A0"},
                                                    {"destination", "A1"},
                                                    {"amount", 10},
                                                    {"state", "pending"}}}));

  std::vector<TxnReport> reports;
  WatchSummary s = Sweep(&reports);

  EXPECT_EQ(bank_->State(young), "pending");
  EXPECT_EQ(bank_->State(old), "done");
  EXPECT_EQ(bank_->State(old_but_touched), "pending");
  EXPECT_EQ(bank_->State(long_finished), "done");
  EXPECT_EQ(s.examined, 2) << "only the old pending one and the unreadable one are read";
  auto t = bank_->Txn(Value("string-id"));
  ASSERT_TRUE(t && t->GetPath("recovery.quarantine.reason"));
  EXPECT_NE(t->GetPath("recovery.quarantine.reason")->as_string()->find("not an ObjectId"),
            std::string::npos);
}

// ---- Ownership ------------------------------------------------------------------------------

class SchemaBookOwners : public SchemaBook {
 protected:
  // Three stuck pending transfers: claimed by A1, by A2, and by nobody.
  void SetUpOwners() {
    bank_->Open(6);
    bank_->set_application("A1");
    by_a1_ = bank_->Transfer("A0", "A1", 10, 3, kStuck);
    bank_->set_application("A2");
    by_a2_ = bank_->Transfer("A2", "A3", 10, 3, kStuck);
    bank_->set_application(std::nullopt);
    unowned_ = bank_->Transfer("A4", "A5", 10, 3, kStuck);
  }
  Value by_a1_, by_a2_, unowned_;
};

TEST_P(SchemaBookOwners, OnlyTheListedApplicationsTransactionsAreRecovered) {
  std::string toml = kSchemaBookWatch;
  toml.insert(toml.find("[watch.states]"), "applications = [\"A1\"]\n");
  Use(toml);
  SetUpOwners();

  Sweep();

  EXPECT_EQ(bank_->State(by_a1_), "done");
  EXPECT_EQ(bank_->State(by_a2_), "pending") << "A2 recovers its own";
  EXPECT_EQ(bank_->State(unowned_), "pending");
}

TEST_P(SchemaBookOwners, IncludeUnownedAddsTransactionsNobodyClaimed) {
  std::string toml = kSchemaBookWatch;
  toml.insert(toml.find("[watch.states]"), "applications = [\"A1\"]\ninclude_unowned = true\n");
  Use(toml);
  SetUpOwners();

  Sweep();

  EXPECT_EQ(bank_->State(by_a1_), "done");
  EXPECT_EQ(bank_->State(by_a2_), "pending");
  EXPECT_EQ(bank_->State(unowned_), "done");
}

TEST_P(SchemaBookOwners, IncludeUnownedAloneRecoversOnlyTransactionsNobodyClaimed) {
  std::string toml = kSchemaBookWatch;
  toml.insert(toml.find("[watch.states]"), "include_unowned = true\n");
  Use(toml);
  SetUpOwners();

  Sweep();

  EXPECT_EQ(bank_->State(by_a1_), "pending");
  EXPECT_EQ(bank_->State(by_a2_), "pending");
  EXPECT_EQ(bank_->State(unowned_), "done");
}

TEST_P(SchemaBookOwners, WithoutAnOwnerSettingEveryTransactionIsRecovered) {
  SetUpOwners();

  Sweep();

  EXPECT_EQ(bank_->State(by_a1_), "done");
  EXPECT_EQ(bank_->State(by_a2_), "done");
  EXPECT_EQ(bank_->State(unowned_), "done");
}

INSTANTIATE_TEST_SUITE_P(Backends, SchemaBook, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Backends, SchemaBookOwners, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
