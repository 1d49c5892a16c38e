// Recovery of the `transfer` profile (the MongoDB manual transfer), each scenario run against
// the in-memory store and through libmongoc against the test server. docs/chaos.md's
// invariants are checked after every scenario.
#include <gtest/gtest.h>

#include <thread>

#include "support/bank_test.h"
#include "support/crash_at_every_write.h"
#include "support/fault_store.h"
#include "support/test_env.h"
#include "txn_recovery/engine/one_transaction.h"
#include "txn_recovery/engine/quarantine_records.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/memory_store.h"
#include "txn_recovery/tools/inspect.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

class TransferRecovery : public BankTest {
 protected:
  WatchSummary Sweep(const std::string& owner = "daemon-1", std::vector<TxnReport>* r = nullptr,
                     int workers = 1, bool dry_run = false) {
    return SweepOnce(backend_->store(), backend_->clock(), bank_->Watch(), owner, r, workers,
                     dry_run);
  }
  void ExpectInvariants(const Snapshot& before, bool all_terminal = true) {
    auto violations = bank_->Violations(before, all_terminal);
    for (const auto& v : violations) ADD_FAILURE() << v;
  }
};

// ---- The application killed between any two of its steps -------------------------------

class ApplicationKilled : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {};

TEST_P(ApplicationKilled, DaemonDrivesTransferToTerminalStateAndBalancesAreConserved) {
  auto [kind, c] = GetParam();
  auto backend = TestBackend::Create(kind);
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  Snapshot before = bank.Take();

  Value id = bank.Transfer("A0", "A1", 100, c.steps);
  bank.Age(id, c.age);
  SCOPED_TRACE(std::string("application killed after it ") + AppStepName(c.steps));

  SweepOnce(backend->store(), backend->clock(), bank.Watch(), "daemon-1");

  ExpectTransferEnded(bank, id, c.expected, before);
}

INSTANTIATE_TEST_SUITE_P(EveryStepBoundary, ApplicationKilled,
                         ::testing::Combine(::testing::Values("memory", "mongo",
                                                              "mongo_daemon_clock"),
                                            ::testing::ValuesIn(KilledTransferCases())),
                         KilledCaseName{"after"});

// ---- The daemon killed between any two of its own steps --------------------------------

class DaemonKilled : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {};

TEST_P(DaemonKilled, AtEveryWriteASecondDaemonCompletesTheSameDecision) {
  auto [kind, c] = GetParam();
  CrashAtEveryWrite(kind, [c = c](TestBackend* backend) {
    Bank bank(backend->store(), backend->database());
    return std::make_unique<StuckTransfer>(backend, bank, bank.Watch(), c);
  });
}

const KilledCase kDaemonKilledCases[] = {
    {1, kExpired, "cancelled"},  // cancel a stale initial
    {2, kStuck, "done"},         // resume with nothing applied
    {3, kStuck, "done"},         // resume after the debit
    {4, kStuck, "done"},         // resume with both applied
    {3, kExpired, "cancelled"},  // roll back after the debit
    {4, kExpired, "cancelled"},  // roll back with both applied
    {5, kStuck, "done"},         // finish applied
    {6, kStuck, "done"},         // finish with one marker pulled
    {2, kExpired, "cancelled"},  // roll back with nothing applied: cancelled in its claim
    {7, kStuck, "done"},         // finish with both markers pulled: done in its claim
};

INSTANTIATE_TEST_SUITE_P(EveryDaemonWrite, DaemonKilled,
                         ::testing::Combine(::testing::Values("memory", "mongo",
                                                              "mongo_daemon_clock"),
                                            ::testing::ValuesIn(kDaemonKilledCases)),
                         KilledCaseName{"app"});

// A quarantine is two writes to two collections (its record in the daemon's own, then the
// mark on the transaction): killed at each of them, the successor leaves the transaction
// marked, recorded and counted once (model/recovery.pml, -DQUAR_RECORD).
class QuarantineKilled : public ::testing::TestWithParam<std::string> {};

TEST_P(QuarantineKilled, AtEveryWriteTheSuccessorLeavesItMarkedRecordedAndCountedOnce) {
  CrashAtEveryWrite(GetParam(), [](TestBackend* backend) {
    Bank bank(backend->store(), backend->database());
    return std::make_unique<QuarantinedTransfer>(backend, bank, bank.Watch());
  });
}

// Named by the backend, so that the server's instances carry the `database` label
// (tests/CMakeLists.txt) and run on DocumentDB too.
INSTANTIATE_TEST_SUITE_P(EveryDaemonWrite, QuarantineKilled,
                         ::testing::Values("memory", "mongo", "mongo_daemon_clock"),
                         [](const auto& info) { return info.param; });

// ---- Single scenarios -----------------------------------------------------------------

TEST_P(TransferRecovery, YoungTransactionsAndFinishedOnesAreNotTouched) {
  bank_->Open(10);
  for (int steps = 1; steps <= kAppStepCount; ++steps)
    bank_->Transfer(Bank::Account(steps), "A0", 10, steps);
  bank_->AgeAll(seconds(20));  // younger than every threshold
  Snapshot before = bank_->Take();
  std::vector<Document> txns_before;
  for (int i = 1; i <= kAppStepCount; ++i) txns_before.push_back(*bank_->Txn(std::int32_t{i}));

  WatchSummary s = Sweep();

  EXPECT_EQ(s.resolved, 0);
  EXPECT_EQ(s.failed, 0);
  Snapshot after = bank_->Take();
  for (const auto& [id, doc] : before.accounts) EXPECT_EQ(after.accounts[id], doc) << id;
  for (int i = 1; i <= kAppStepCount; ++i)
    EXPECT_EQ(*bank_->Txn(std::int32_t{i}), txns_before[i - 1]) << "transaction " << i;
}

TEST_P(TransferRecovery, TerminalTransactionsOutsideTheLateWriteWindowAreNotRead) {
  bank_->Open(2);
  Value done = bank_->Transfer("A0", "A1", 5, kAppStepCount);
  bank_->Age(done, std::chrono::hours(2));
  WatchSummary s = Sweep();
  EXPECT_EQ(s.examined, 0) << "the candidate query must not return old terminal transactions";
}

TEST_P(TransferRecovery, PendingTransferToAMissingAccountIsRolledBackInsteadOfResumed) {
  bank_->Open(2);
  Snapshot before = bank_->Take();
  Value id = bank_->Transfer("A0", "ghost", 100, 3);  // debited A0; "ghost" does not exist
  EXPECT_EQ(bank_->Balance("A0"), 900);
  bank_->Age(id, kStuck);

  std::vector<TxnReport> reports;
  Sweep("daemon-1", &reports);

  EXPECT_EQ(bank_->State(id), "cancelled");
  EXPECT_EQ(bank_->Balance("A0"), 1000);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].result.action, Action::kRollback);
  EXPECT_NE(reports[0].result.detail.find("participant not found"), std::string::npos)
      << reports[0].result.detail;
  ExpectInvariants(before);
}

TEST_P(TransferRecovery, MalformedTransactionsAreQuarantinedAndTheSweepGoesOn) {
  bank_->Open(4);
  Snapshot before = bank_->Take();
  DateTime now;
  ASSERT_TRUE(backend_->store()->ServerTime(&now).ok());
  DateTime old{now.millis - std::chrono::milliseconds(minutes(5)).count()};
  const Namespace& txns = bank_->txns();
  struct Bad {
    Document doc;
    const char* reason;
  };
  std::vector<Bad> bad = {
      {{{"_id", "no-source"},
        {"destination", "A1"},
        {"value", 5},
        {"state", "pending"},
        {"lastModified", old}},
       "'source' is missing"},
      {{{"_id", "string-amount"},
        {"source", "A0"},
        {"destination", "A1"},
        {"value", "5"},
        {"state", "pending"},
        {"lastModified", old}},
       "'value' has type string"},
      {{{"_id", "negative"},
        {"source", "A0"},
        {"destination", "A1"},
        {"value", -5},
        {"state", "pending"},
        {"lastModified", old}},
       "positive"},
      {{{"_id", "self"},
        {"source", "A0"},
        {"destination", "A0"},
        {"value", 5},
        {"state", "pending"},
        {"lastModified", old}},
       "same participant"},
      {{{"_id", "unknown-state"},
        {"source", "A0"},
        {"destination", "A1"},
        {"value", 5},
        {"state", "intital"},
        {"lastModified", old}},
       "unknown state 'intital'"},
      {{{"_id", "no-time"},
        {"source", "A0"},
        {"destination", "A1"},
        {"value", 5},
        {"state", "pending"}},
       "'lastModified' is missing"},
      {{{"_id", "string-time"},
        {"source", "A0"},
        {"destination", "A1"},
        {"value", 5},
        {"state", "applied"},
        {"lastModified", "yesterday"}},
       "'lastModified' has type string"},
  };
  for (const auto& b : bad) ASSERT_TRUE(backend_->store()->InsertMany(txns, {b.doc}).ok());
  Value good = bank_->Transfer("A2", "A3", 50, 3);
  bank_->Age(good, kStuck);

  WatchSummary s = Sweep();

  EXPECT_EQ(s.quarantined, static_cast<std::int64_t>(bad.size()));
  EXPECT_EQ(s.quarantined_total, static_cast<std::int64_t>(bad.size()));
  EXPECT_EQ(bank_->State(good), "done") << "one bad document must not stop the sweep";
  for (const auto& b : bad) {
    auto t = bank_->Txn(*b.doc.Get("_id"));
    ASSERT_TRUE(t);
    const Value* reason = t->GetPath("recovery.quarantine.reason");
    ASSERT_NE(reason, nullptr) << b.doc.Get("_id")->ToString();
    EXPECT_NE(reason->as_string()->find(b.reason), std::string::npos) << *reason->as_string();
  }
  EXPECT_EQ(bank_->Balance("A0"), 1000);
  EXPECT_EQ(bank_->Balance("A1"), 1000);

  // A second sweep does not report them again as new, but still counts them.
  WatchSummary again = Sweep();
  EXPECT_EQ(again.quarantined, 0);
  EXPECT_EQ(again.quarantined_total, static_cast<std::int64_t>(bad.size()));
  EXPECT_EQ(again.examined, 0);
}

TEST_P(TransferRecovery, ATransactionThatFailsEverySweepIsQuarantinedAfterFiveAndTouchesNothing) {
  bank_->Open(4);
  // The server refuses every write to A1 (a validator, a document it cannot update).
  FaultStore server(backend_->store());
  server.RefuseUpdatesOf(bank_->accounts(), Value("A1"));
  Value broken = bank_->Transfer("A0", "A1", 100, 3);  // debited A0; the credit fails
  Value fine = bank_->Transfer("A2", "A3", 100, 3);
  bank_->Age(broken, kStuck);
  bank_->Age(fine, kStuck);
  auto sweep = [&](std::vector<TxnReport>* reports = nullptr) {
    return SweepOnce(&server, backend_->clock(), bank_->Watch(), "daemon-1", reports);
  };

  for (int n = 1; n <= 4; ++n) {
    WatchSummary s = sweep();
    EXPECT_EQ(s.failed, 1) << "sweep " << n;
    bank_->Age(broken, kStuck);
  }
  EXPECT_EQ(bank_->State(fine), "done") << "one failing transaction must not stop the others";
  std::vector<TxnReport> reports;
  WatchSummary fifth = sweep(&reports);
  EXPECT_EQ(fifth.failed, 0);
  EXPECT_EQ(fifth.quarantined, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(reports[0].result.detail.find("failed 5 times in a row"), std::string::npos)
      << reports[0].result.detail;
  auto t = bank_->Txn(broken);
  ASSERT_TRUE(t && t->GetPath("recovery.quarantine.reason"));
  EXPECT_EQ(bank_->State(broken), "resuming")
      << "taken over by the daemon before its credit was refused, kept so for an operator";
  EXPECT_EQ(bank_->Balance("A0"), 900) << "the debit stays until an operator decides";
  EXPECT_EQ(bank_->Balance("A1"), 1000);
  EXPECT_EQ(sweep().examined, 0) << "a quarantined transaction is not read again";
}

// A participant whose balance an old bug stored as a string: $inc could never apply. Read
// before anything is written, it is found at once: the transfer is quarantined in the first
// sweep, naming the account and the field, and nothing is written to either account.
TEST_P(TransferRecovery, ABalanceThatIsNotANumberIsQuarantinedAtOnceAndNothingIsWritten) {
  bank_->Open(4);
  WriteResult w;
  Must(backend_->store()->UpdateOne(bank_->accounts(), Filter().Eq("_id", "A1"),
                                    Update().Set("balance", "1000"), &w));
  Value broken = bank_->Transfer("A0", "A1", 100, 2);  // pending, nothing applied yet
  Value fine = bank_->Transfer("A2", "A3", 100, 3);
  bank_->Age(broken, kStuck);
  bank_->Age(fine, kStuck);
  std::vector<TxnReport> reports;
  WatchSummary s = Sweep("daemon-1", &reports);
  EXPECT_EQ(s.quarantined, 1);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(bank_->State(fine), "done");
  EXPECT_EQ(bank_->State(broken), "resuming") << "taken over by its claim, kept so for an operator";
  EXPECT_EQ(bank_->Balance("A0"), 1000) << "not debited: nothing is written to any participant";
  EXPECT_EQ(*bank_->Take().accounts["\"A1\""].Get("balance"), Value("1000"));
  auto t = bank_->Txn(broken);
  const Value* reason = t ? t->GetPath("recovery.quarantine.reason") : nullptr;
  ASSERT_TRUE(reason && reason->is_string());
  EXPECT_NE(reason->as_string()->find("\"A1\""), std::string::npos) << *reason->as_string();
  EXPECT_NE(reason->as_string()->find("'balance'"), std::string::npos) << *reason->as_string();
}

TEST_P(TransferRecovery, ThePauseSwitchStopsEveryInstanceUntilResumed) {
  bank_->Open(2);
  Value id = bank_->Transfer("A0", "A1", 100, 3);
  bank_->Age(id, kStuck);
  WatchSpec watch = bank_->Watch();
  ASSERT_TRUE(SetPaused(backend_->store(), watch, true, "operator").ok());
  ASSERT_TRUE(SetPaused(backend_->store(), watch, true, "operator").ok());  // twice

  WatchSummary s = Sweep();
  EXPECT_TRUE(s.paused);
  EXPECT_EQ(bank_->State(id), "pending");

  ASSERT_TRUE(SetPaused(backend_->store(), watch, false, "operator").ok());
  s = Sweep();
  EXPECT_FALSE(s.paused);
  EXPECT_EQ(bank_->State(id), "done");
}

// A paused watch is left alone, but what waits in its quarantine is still counted: the
// txn_recoveryd_quarantined_transactions gauge, and the alert on it, must not drop to
// zero because an operator paused the watch while deciding what to do.
TEST_P(TransferRecovery, WhatWaitsInQuarantineIsStillCountedWhileTheWatchIsPaused) {
  bank_->Open(2);
  ASSERT_TRUE(backend_->store()
                  ->InsertMany(bank_->txns(), {Document{{"_id", "no-time"},
                                                        {"source", "A0"},
                                                        {"destination", "A1"},
                                                        {"value", 5},
                                                        {"state", "pending"}}})
                  .ok());
  ASSERT_EQ(Sweep().quarantined_total, 1);
  ASSERT_TRUE(SetPaused(backend_->store(), bank_->Watch(), true, "operator").ok());

  WatchSummary s = Sweep();

  EXPECT_TRUE(s.paused);
  EXPECT_EQ(s.quarantined_total, 1);
}

// What is quarantined is counted and listed from the daemon's records (one per quarantined
// transaction and watch), not by an index on the application's transactions; release
// removes the mark and the record.
TEST_P(TransferRecovery, AQuarantineIsCountedFromItsRecordAndReleaseRemovesBoth) {
  bank_->Open(2);
  const Value id("no-time");
  Must(backend_->store()->InsertMany(bank_->txns(), {Document{{"_id", id},
                                                              {"source", "A0"},
                                                              {"destination", "A1"},
                                                              {"value", 5},
                                                              {"state", "pending"}}}));
  const WatchSpec watch = bank_->Watch();

  WatchSummary s = Sweep();

  EXPECT_EQ(s.quarantined, 1);
  EXPECT_EQ(s.quarantined_total, 1);
  ASSERT_TRUE(HasQuarantineRecord(backend_->store(), watch, id));
  auto record =
      FindById(backend_->store(), QuarantineRecordsOf(watch.ns), QuarantineRecordId(watch.ns, id));
  ASSERT_TRUE(record);
  ASSERT_TRUE(record->Get("reason") && record->Get("reason")->is_string());
  EXPECT_NE(record->Get("reason")->as_string()->find("'lastModified' is missing"),
            std::string::npos);
  EXPECT_EQ(*record->Get("by"), Value("daemon-1"));
  EXPECT_TRUE(record->Get("at") && record->Get("at")->is_datetime());
  EXPECT_EQ(*record->Get("format"), Value(RecoveryRecord::kFormat));
  StuckReport r;
  Must(Inspect(backend_->store(), watch, &r));
  EXPECT_EQ(r.quarantined, 1);
  std::vector<QuarantinedTxn> listed;
  Must(ListQuarantined(backend_->store(), watch,
                       [&](const QuarantinedTxn& q) { listed.push_back(q); }));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, id);
  EXPECT_EQ(listed[0].state, Value("pending"));
  EXPECT_NE(listed[0].record.reason.find("'lastModified' is missing"), std::string::npos);

  // A minute later (the record's deadline passed), the operator releases it: both go.
  ExpireQuarantineRecords(backend_->store(), watch.ns);
  bool released = false;
  Must(ReleaseQuarantine(backend_->store(), watch, id, &released));
  EXPECT_TRUE(released);
  EXPECT_EQ(bank_->Txn(id)->GetPath("recovery.quarantine"), nullptr);
  EXPECT_FALSE(HasQuarantineRecord(backend_->store(), watch, id));
  Must(Inspect(backend_->store(), watch, &r));
  EXPECT_EQ(r.quarantined, 0);
}

// Released before its record's deadline, a quarantine may still be between its two writes
// for all the release can tell: the record stays (counted once too often, never once too
// few) and the first sweep after the deadline removes it.
TEST_P(TransferRecovery, ARecordLeftByAReleaseBeforeItsDeadlineGoesAtTheFirstSweepAfterIt) {
  bank_->Open(2);
  const Value id("no-time");
  Must(backend_->store()->InsertMany(bank_->txns(), {Document{{"_id", id},
                                                              {"source", "A0"},
                                                              {"destination", "A1"},
                                                              {"value", 5},
                                                              {"state", "pending"}}}));
  const WatchSpec watch = bank_->Watch();
  ASSERT_EQ(Sweep().quarantined_total, 1);
  bool released = false;
  Must(ReleaseQuarantine(backend_->store(), watch, id, &released));
  EXPECT_TRUE(released);
  EXPECT_TRUE(HasQuarantineRecord(backend_->store(), watch, id)) << "its deadline is ahead";
  // The operator mends the transaction by hand (here: removes it), so that no sweep
  // quarantines it again.
  WriteResult w;
  Must(backend_->store()->DeleteMany(bank_->txns(), Filter().Eq("_id", id), &w));

  EXPECT_EQ(Sweep().quarantined_total, 1) << "the deadline is still ahead";
  ExpireQuarantineRecords(backend_->store(), watch.ns);
  EXPECT_EQ(Sweep().quarantined_total, 0);
  EXPECT_FALSE(HasQuarantineRecord(backend_->store(), watch, id));
}

// A daemon killed between the record and the mark leaves a record without a mark. Once its
// deadline has passed the next sweep removes it, unless that sweep quarantines the
// transaction again (then it is a record of a quarantine like any other).
TEST_P(TransferRecovery, ARecordWithoutItsMarkGoesAtTheNextSweepAfterItsDeadline) {
  bank_->Open(2);
  const Value id("no-time");
  Must(backend_->store()->InsertMany(bank_->txns(), {Document{{"_id", id},
                                                              {"source", "A0"},
                                                              {"destination", "A1"},
                                                              {"value", 5},
                                                              {"state", "pending"}}}));
  const WatchSpec watch = bank_->Watch();
  FaultStore dying(backend_->store());
  dying.CrashAfterWrites(2);  // the record inserted and dated, not the mark
  SweepOnce(&dying, backend_->clock(), watch, "daemon-killed");
  ASSERT_TRUE(HasQuarantineRecord(backend_->store(), watch, id));
  ASSERT_EQ(bank_->Txn(id)->GetPath("recovery.quarantine"), nullptr);
  // The application finishes the transaction meanwhile: it no longer needs an operator.
  WriteResult w;
  Must(backend_->store()->UpdateOne(bank_->txns(), Filter().Eq("_id", id),
                                    Update().Set("state", "done").CurrentDate("lastModified"), &w));

  EXPECT_EQ(Sweep().quarantined_total, 1) << "its deadline is ahead: it may be a quarantine";
  ExpireQuarantineRecords(backend_->store(), watch.ns);
  EXPECT_EQ(Sweep().quarantined_total, 0);
  EXPECT_FALSE(HasQuarantineRecord(backend_->store(), watch, id));
}

// Upgrading from a build that marked quarantined transactions without a record: the first
// sweep finds them (once) and records them, so that the count, inspect and the alert see
// them; release then removes both as for any other.
TEST_P(TransferRecovery, QuarantinesOfAnEarlierBuildAreRecordedByTheFirstSweep) {
  bank_->Open(2);
  const Value id("old");
  Must(backend_->store()->InsertMany(
      bank_->txns(),
      {Document{
          {"_id", id},
          {"source", "A0"},
          {"destination", "A1"},
          {"value", 5},
          {"state", "pending"},
          {"recovery", Document{{"quarantine", Document{{"reason", "set aside by an earlier build"},
                                                        {"by", "old-daemon"}}},
                                {"format", 1}}}}}));
  const WatchSpec watch = bank_->Watch();
  bank_->Age(id, kStuck);
  StuckReport r;
  Must(Inspect(backend_->store(), watch, &r));
  EXPECT_EQ(r.quarantined, 0) << "not recorded yet: inspect reads only";

  WatchSummary s = Sweep();

  EXPECT_EQ(s.quarantined, 0) << "not quarantined by this sweep";
  EXPECT_EQ(s.quarantined_total, 1);
  auto record =
      FindById(backend_->store(), QuarantineRecordsOf(watch.ns), QuarantineRecordId(watch.ns, id));
  ASSERT_TRUE(record);
  EXPECT_EQ(*record->Get("reason"), Value("set aside by an earlier build"));
  EXPECT_EQ(*record->Get("by"), Value("old-daemon"));
  EXPECT_EQ(Sweep().quarantined_total, 1) << "kept while the mark is there";
  EXPECT_EQ(bank_->State(id), "pending") << "left alone";

  bool released = false;
  Must(ReleaseQuarantine(backend_->store(), watch, id, &released));
  EXPECT_TRUE(released);
  EXPECT_FALSE(HasQuarantineRecord(backend_->store(), watch, id));
}

TEST_P(TransferRecovery, InspectCountsStuckTransactionsPerStateAndTheOldest) {
  bank_->Open(6);
  Value a = bank_->Transfer("A0", "A1", 1, 3);
  Value b = bank_->Transfer("A2", "A3", 1, 3);
  Value c = bank_->Transfer("A4", "A5", 1, 5);
  Value young = bank_->Transfer("A0", "A5", 1, 3);
  bank_->Age(a, minutes(3));
  bank_->Age(b, minutes(7));
  bank_->Age(c, minutes(2));
  bank_->Age(young, seconds(5));
  StuckReport r;
  ASSERT_TRUE(Inspect(backend_->store(), bank_->Watch(), &r).ok());
  EXPECT_EQ(r.stuck[TxnState::kPending], 2);
  EXPECT_EQ(r.stuck[TxnState::kApplied], 1);
  ASSERT_TRUE(r.oldest_age);
  EXPECT_NEAR(static_cast<double>(r.oldest_age->count()), 7 * 60 * 1000, 5000);
  EXPECT_EQ(r.quarantined, 0);
}

TEST_P(TransferRecovery, ALiveLeaseOfAnotherDaemonIsRespected) {
  bank_->Open(2);
  Value id = bank_->Transfer("A0", "A1", 100, 3);
  bank_->Age(id, kStuck);
  DateTime now;
  ASSERT_TRUE(backend_->store()->ServerTime(&now).ok());
  WriteResult r;
  ASSERT_TRUE(backend_->store()
                  ->UpdateOne(bank_->txns(), Filter().Eq("_id", id),
                              Update().Set("recovery.lease",
                                           Document{{"owner", "other-host:1:x"},
                                                    {"expires", DateTime{now.millis + 60000}}}),
                              &r)
                  .ok());
  WatchSummary s = Sweep();
  EXPECT_EQ(s.busy, 1);
  EXPECT_EQ(bank_->State(id), "pending");
  EXPECT_EQ(bank_->Balance("A1"), 1000);

  bank_->ExpireLeases();
  Sweep();
  EXPECT_EQ(bank_->State(id), "done");
}

TEST_P(TransferRecovery, AnApplicationThatMovedOnSinceTheReadWinsTheClaim) {
  bank_->Open(2);
  Value id = bank_->Transfer("A0", "A1", 100, 4);
  bank_->Age(id, kStuck);
  Transaction stale;
  ASSERT_TRUE(bank_->profile().Parse(*bank_->Txn(id), bank_->txns(), "recovery", &stale).ok());
  // The application wakes up and marks it applied before the daemon claims it.
  ASSERT_TRUE(bank_->RunStep(id, AppStep::kMarkApplied).ok());

  DateTime now;
  ASSERT_TRUE(backend_->store()->ServerTime(&now).ok());
  Profile profile = bank_->profile();
  LeaseOptions lease;
  lease.owner = "daemon-1";
  StateMachine machine(backend_->store(), backend_->clock(), bank_->txns(), &profile, "recovery",
                       lease, [now] { return now; });
  ExecuteResult r = machine.Execute(stale, Action::kRollback);
  EXPECT_EQ(r.outcome, Outcome::kBusy);
  EXPECT_EQ(bank_->State(id), "applied");
  EXPECT_EQ(bank_->Balance("A1"), 1100);
}

// Found by the chaos suite: an application killed after marking its transfer pending left
// the time the server's $currentDate wrote, and no daemon could ever claim it on the test
// server (which keeps that time below the millisecond, so it never equals the value read).
// Thresholds of zero let the sweep act on the time exactly as the application left it.
TEST_P(TransferRecovery, ChaosStuckTransferStampedByCurrentDateIsClaimedAndResumed) {
  bank_->Open(2);
  Snapshot before = bank_->Take();
  Value id = bank_->Transfer("A0", "A1", 100, 3);  // killed after debiting A0
  WatchSpec watch = bank_->Watch();
  watch.thresholds.resume_after = std::chrono::milliseconds(0);
  backend_->Advance(std::chrono::milliseconds(5));  // "older than" is strict
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  WatchSummary s = SweepOnce(backend_->store(), backend_->clock(), watch, "daemon-1");
  EXPECT_EQ(s.busy, 0);
  EXPECT_EQ(bank_->State(id), "done");
  ExpectInvariants(before);
}

// Found by the chaos suite: the application's first step is one insert carrying the time
// (as the MongoDB manual transfer does); a simulator that stamped the time in a second write
// left, when killed between the two, a transaction without one, which the daemon rightly
// quarantines.
TEST_P(TransferRecovery, ChaosApplicationKilledRightAfterItsInsertLeavesATransactionToCancel) {
  bank_->Open(2);
  Snapshot before = bank_->Take();
  FaultStore dying(backend_->store());
  Bank application(&dying, backend_->database());
  dying.CrashAfterWrites(1);
  Value id = application.Begin("A0", "A1", 100);
  bank_->Age(id, kExpired);
  Sweep();
  EXPECT_EQ(bank_->State(id), "cancelled");
  ExpectInvariants(before);
}

// Found by the long chaos run (10 accounts off by whole transfers, the total conserved):
// an application stalled after marking its transfer pending woke up once the daemon had
// finished it, applied both steps again, and -- ignoring that its "mark applied" matched
// nothing -- pulled the markers of those late writes itself, so no sweep could see them.
// The MongoDB manual transfer's application checks nMatched and stops there; the late writes
// keep their markers and the next sweep undoes them.
TEST_P(TransferRecovery, ChaosApplicationWakingAfterTheDaemonFinishedStopsAtItsFailedStateChange) {
  bank_->Open(2);
  Snapshot before = bank_->Take();
  Value id = bank_->Transfer("A0", "A1", 100, 2);  // stalled after marking it pending
  bank_->Age(id, kStuck);
  Sweep();
  ASSERT_EQ(bank_->State(id), "done");

  Status stopped;
  int step = static_cast<int>(AppStep::kDebitSource);
  for (; step < kAppStepCount && stopped.ok(); ++step)
    stopped = bank_->RunStep(id, static_cast<AppStep>(step));
  EXPECT_TRUE(stopped.IsConflict()) << stopped.ToString();
  EXPECT_EQ(step - 1, static_cast<int>(AppStep::kMarkApplied));
  EXPECT_EQ(bank_->Markers("A0").size(), 1u);
  EXPECT_EQ(bank_->Markers("A1").size(), 1u);

  bank_->Age(id, kStuck);
  WatchSummary s = Sweep();
  EXPECT_EQ(s.late_writes_undone, 2);
  ExpectInvariants(before);
  EXPECT_EQ(bank_->Balance("A0"), 900);
  EXPECT_EQ(bank_->Balance("A1"), 1100);
}

TEST_P(TransferRecovery, LateWriteByAStalledApplicationIsUndoneOnTheNextSweep) {
  bank_->Open(2);
  Snapshot before = bank_->Take();
  Value id = bank_->Transfer("A0", "A1", 100, 3);  // stalled after debiting A0
  bank_->Age(id, kStuck);
  Sweep();
  ASSERT_EQ(bank_->State(id), "done");
  EXPECT_EQ(bank_->Balance("A1"), 1100);

  // The application wakes up and credits A1: the marker is gone, so its guard passes.
  ASSERT_TRUE(bank_->RunStep(id, AppStep::kCreditDestination).ok());
  EXPECT_EQ(bank_->Balance("A1"), 1200);
  bank_->Age(id, kStuck);

  WatchSummary s = Sweep();
  EXPECT_EQ(s.late_writes_undone, 1);
  EXPECT_EQ(bank_->Balance("A1"), 1100);
  ExpectInvariants(before);
}

// A busy account: three applied transfers from A0, finished in one batch. Each finish
// leaves its trace on A0 and on its destination; once done, each trace costs one request,
// the one the participant's read calls for, and A0 is left as the application would have
// left it in that same sweep (its three traces removed by two pulls, then the sub-document).
TEST_P(TransferRecovery, TracesOfABusyAccountAreRemovedInTheSameSweepOneRequestEach) {
  bank_->Open(4);
  Snapshot before = bank_->Take();
  std::vector<Value> ids;
  for (const char* to : {"A1", "A2", "A3"}) {
    ids.push_back(bank_->Transfer("A0", to, 10, 5));  // applied, both markers still there
    bank_->Age(ids.back(), kStuck);
  }
  FaultStore counting(backend_->store());
  WatchSummary s =
      SweepOnce(&counting, backend_->clock(), bank_->Watch(), "daemon-1", nullptr, 1, false);
  EXPECT_EQ(s.resolved, 3);
  for (const Value& id : ids) EXPECT_EQ(bank_->State(id), "done");
  const Snapshot after = bank_->Take();
  for (const auto& [account, doc] : after.accounts)
    EXPECT_EQ(doc.Get("recovery"), nullptr) << account << ": " << Value(doc).ToString();
  // 3 claims, 6 pulls, 3 moves to done, 6 clean-ups (one per trace; two each before), and
  // the first sweep's note that it looked for an earlier build's quarantines.
  EXPECT_EQ(counting.writes(), 3 + 6 + 3 + 6 + 1);
  ExpectInvariants(before);
}

TEST_P(TransferRecovery, DryRunWritesNothingAndSaysWhatItWouldDo) {
  bank_->Open(6);
  Value resume = bank_->Transfer("A0", "A1", 10, 3);
  Value rollback = bank_->Transfer("A2", "A3", 10, 3);
  Value finish = bank_->Transfer("A4", "A5", 10, 5);
  bank_->Age(resume, kStuck);
  bank_->Age(rollback, kExpired);
  bank_->Age(finish, kStuck);
  Snapshot before = bank_->Take();
  std::vector<Document> txns_before = {*bank_->Txn(resume), *bank_->Txn(rollback),
                                       *bank_->Txn(finish)};

  std::vector<TxnReport> reports;
  Sweep("daemon-1", &reports, 1, /*dry_run=*/true);

  std::map<std::string, Action> planned;
  for (const auto& r : reports) {
    EXPECT_EQ(r.result.outcome, Outcome::kPlanned);
    planned[r.id.ToString()] = r.result.action;
  }
  EXPECT_EQ(planned[resume.ToString()], Action::kResume);
  EXPECT_EQ(planned[rollback.ToString()], Action::kRollback);
  EXPECT_EQ(planned[finish.ToString()], Action::kFinish);
  Snapshot after = bank_->Take();
  for (const auto& [k, d] : before.accounts) EXPECT_EQ(after.accounts[k], d);
  EXPECT_EQ(*bank_->Txn(resume), txns_before[0]);
  EXPECT_EQ(*bank_->Txn(rollback), txns_before[1]);
  EXPECT_EQ(*bank_->Txn(finish), txns_before[2]);
}

TEST_P(TransferRecovery, TwoSweepsAtOnceOnAThousandStuckTransfersApplyNothingTwice) {
  constexpr int kAccounts = 20, kTxns = 1000;
  bank_->Open(kAccounts);
  Snapshot before = bank_->Take();
  std::vector<Value> ids;
  for (int i = 0; i < kTxns; ++i) {
    std::string from = std::string("A").append(std::to_string(i % kAccounts));
    std::string to = std::string("A").append(std::to_string((i * 7 + 3) % kAccounts));
    if (from == to) to = std::string("A").append(std::to_string((i + 1) % kAccounts));
    int steps = 1 + i % kAppStepCount;  // every step boundary, evenly
    ids.push_back(bank_->Transfer(from, to, 1 + i % 50, steps));
  }
  // Half are merely stuck, half are expired.
  for (int i = 0; i < kTxns; ++i) bank_->Age(ids[i], i % 2 ? kStuck : kExpired);
  // Initial transfers only time out after 30 minutes; make all of them expired so that
  // every transaction must end terminal.
  for (int i = 0; i < kTxns; i += kAppStepCount) bank_->Age(ids[i], kExpired);

  WatchSummary a, b;
  std::thread t1([&] { a = Sweep("daemon-a", nullptr, 4); });
  std::thread t2([&] { b = Sweep("daemon-b", nullptr, 4); });
  t1.join();
  t2.join();
  EXPECT_EQ(a.failed + b.failed, 0);
  // Whatever one daemon found busy the other resolved; a third sweep finds nothing left.
  bank_->ExpireLeases();
  WatchSummary c = Sweep("daemon-c", nullptr, 4);
  EXPECT_EQ(c.failed, 0);
  ExpectInvariants(before);
  // Every transfer not already done was resolved exactly once, by one of the daemons.
  EXPECT_EQ(a.resolved + b.resolved + c.resolved, kTxns - kTxns / kAppStepCount);
}

TEST(ServerClock, AHostClockADayAheadDoesNotExpireLiveTransactions) {
  ManualClock server_clock;  // the database's clock
  MemoryStore store(&server_clock);
  Bank bank(&store, "test");
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 100, 3);
  bank.Age(id, seconds(5));
  ManualClock host_clock(server_clock.WallMillis() + std::chrono::hours(24).count());
  SweepOnce(&store, &host_clock, bank.Watch(), "daemon-1");
  EXPECT_EQ(bank.State(id), "pending");
  EXPECT_EQ(bank.Balance("A1"), 1000);
}

// Found on DocumentDB: a find may return a document twice when it is updated during the
// scan. Every stuck transfer read twice in a row (so both readings land in one chunk) is
// still driven once, and the balances add up.
TEST_P(TransferRecovery, ATransactionTheCursorReturnsTwiceIsDrivenOnce) {
  bank_->Open(6);
  Snapshot before = bank_->Take();
  std::vector<Value> ids;
  for (int i = 0; i < 12; ++i)
    ids.push_back(
        bank_->Transfer(Bank::Account(i % 6), Bank::Account((i + 1) % 6), 10 + i, 2 + i % 6));
  for (const Value& id : ids) bank_->Age(id, minutes(2));
  FaultStore repeating(backend_->store());
  repeating.RepeatEachDocument();
  std::vector<TxnReport> reports;
  WatchSummary s = SweepOnce(&repeating, backend_->clock(), bank_->Watch(), "daemon-1", &reports);
  std::string seen;
  for (const auto& r : reports)
    seen += r.id.ToString() + " " + std::string(ActionName(r.result.action)) + " " +
            std::string(OutcomeName(r.result.outcome)) + " " + r.result.detail + "\n";
  EXPECT_EQ(s.resolved, 12) << "each once\n" << seen;
  EXPECT_EQ(s.busy, 0);
  EXPECT_EQ(s.failed, 0);
  for (const Value& id : ids) EXPECT_EQ(bank_->State(id), "done");
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

// A write reply that reports fewer changes than were made, without an error (seen once on
// DocumentDB): the engine trusts a count only when every write of a bulk matched, and
// otherwise reads back what happened. Every reply here says nothing changed: each stuck
// transfer (resumed, finished, rolled back or cancelled) still ends once, and the money
// adds up.
TEST_P(TransferRecovery, AReplyThatReportsFewerChangesThanWereMadeMisleadsNothing) {
  bank_->Open(6);
  Snapshot before = bank_->Take();
  std::vector<Value> ids;
  for (int i = 0; i < 18; ++i)
    ids.push_back(
        bank_->Transfer(Bank::Account(i % 6), Bank::Account((i + 1) % 6), 10 + i, 2 + i % 6));
  for (std::size_t i = 0; i < ids.size(); ++i) bank_->Age(ids[i], i % 2 ? minutes(31) : minutes(2));
  FaultStore silent(backend_->store());
  silent.ReportNoChanges();
  WatchSummary s = SweepOnce(&silent, backend_->clock(), bank_->Watch(), "daemon-1");
  EXPECT_TRUE(s.status.ok()) << s.status.ToString();
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(s.busy, 0);
  for (const Value& id : ids) {
    const std::string state = bank_->State(id);
    EXPECT_TRUE(state == "done" || state == "cancelled") << id.ToString() << " " << state;
  }
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

INSTANTIATE_TEST_SUITE_P(Backends, TransferRecovery,
                         ::testing::Values("memory", "mongo", "mongo_daemon_clock"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
