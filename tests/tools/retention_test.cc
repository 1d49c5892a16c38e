// Retention of finished transactions: removed (or archived) only once older than both the
// retention period and the late-write window, in batches, never while leased, quarantined
// or still running. Against the in-memory store and the test server.
#include <gtest/gtest.h>

#include "support/bank_test.h"
#include "support/scenario.h"
#include "support/test_env.h"
#include "txn_recovery/tools/retention.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

class Retention : public BankTest {
 protected:
  Retention() : BankTest(4) {}
  RetentionTarget Target() const {
    RetentionTarget t;
    t.transactions = bank_->txns();
    t.finished = Filter().In("state", {Value("done"), Value("cancelled")});
    t.time_field = "lastModified";
    t.lease_field = "recovery";
    t.late_write_window = hours(1);
    return t;
  }
  RetentionResult Run(const RetentionPolicy& policy) {
    DateTime now;
    Must(backend_->store()->ServerTime(&now));
    RetentionResult r;
    Must(RemoveFinished(backend_->store(), backend_->clock(), Target(), policy, now, nullptr, &r));
    return r;
  }
  std::int64_t Count(const Namespace& ns) {
    std::int64_t n = 0;
    Must(backend_->store()->Count(ns, Filter(), &n));
    return n;
  }
  WriteResult wr_;
};

TEST_P(Retention, IsOffByDefaultAndTouchesNothing) {
  Value done = bank_->Transfer("A0", "A1", 1, 8);
  bank_->Age(done, hours(24 * 30));
  RetentionResult r = Run(RetentionPolicy{});
  EXPECT_EQ(r.deleted + r.archived, 0);
  EXPECT_EQ(bank_->State(done), "done");
}

TEST_P(Retention, DeletesOnlyFinishedTransactionsOlderThanBothThePeriodAndTheLateWriteWindow) {
  Value old_done = bank_->Transfer("A0", "A1", 1, 8);
  Value old_cancelled = bank_->Transfer("A1", "A2", 1, 1);
  Must(backend_->store()->UpdateOne(bank_->txns(), Filter().Eq("_id", old_cancelled),
                                    Update().Set("state", Value("cancelled")), &wr_));
  Value young_done = bank_->Transfer("A2", "A3", 1, 8);       // inside the period
  Value in_window = bank_->Transfer("A3", "A0", 1, 8);        // past the period, in the window
  Value old_pending = bank_->Transfer("A0", "A2", 1, 3);      // never removed: not finished
  Value old_leased = bank_->Transfer("A1", "A3", 1, 8);       // another daemon holds it
  Value old_quarantined = bank_->Transfer("A2", "A0", 1, 8);  // kept for an operator
  for (const Value& id : {old_done, old_cancelled, old_pending, old_leased, old_quarantined})
    bank_->Age(id, hours(48));
  bank_->Age(young_done, minutes(30));
  bank_->Age(in_window, minutes(45));
  Must(backend_->store()->UpdateOne(
      bank_->txns(), Filter().Eq("_id", old_leased),
      Update().Set("recovery.lease", Value(Document{{"owner", "other"}})), &wr_));
  Must(backend_->store()->UpdateOne(
      bank_->txns(), Filter().Eq("_id", old_quarantined),
      Update().Set("recovery.quarantine", Value(Document{{"reason", "r"}})), &wr_));

  RetentionPolicy policy;
  policy.retain_finished = minutes(40);  // shorter than the 1h late-write window: it wins
  RetentionResult r = Run(policy);
  EXPECT_EQ(r.deleted, 2);
  EXPECT_FALSE(bank_->Txn(old_done));
  EXPECT_FALSE(bank_->Txn(old_cancelled));
  for (const Value& id : {young_done, in_window, old_pending, old_leased, old_quarantined})
    EXPECT_TRUE(bank_->Txn(id)) << id.ToString();
  EXPECT_EQ(Run(policy).deleted, 0) << "a second run finds nothing more";
}

TEST_P(Retention, ArchivesInBatchesAndAnInterruptedMoveCompletesWithoutDuplicates) {
  std::vector<Value> ids;
  for (int i = 0; i < 7; ++i) ids.push_back(bank_->Transfer("A0", "A1", 1, 8));
  bank_->AgeAll(hours(48));
  Namespace archive{backend_->database(), "transactions_archive"};
  // An earlier run was killed after copying the first one but before deleting it.
  std::optional<Document> first = bank_->Txn(ids[0]);
  ASSERT_TRUE(first);
  Must(backend_->store()->InsertMany(archive, {*first}));

  RetentionPolicy policy;
  policy.retain_finished = hours(24);
  policy.archive_collection = "transactions_archive";
  policy.batch_size = 3;
  policy.pause_between_batches = std::chrono::milliseconds(1);
  RetentionResult r = Run(policy);
  EXPECT_EQ(r.archived, 7);
  EXPECT_EQ(Count(bank_->txns()), 0);
  EXPECT_EQ(Count(archive), 7) << "each transaction archived exactly once";
  std::optional<Document> moved;
  Must(backend_->store()->FindOne(archive, Filter().Eq("_id", ids[3]), &moved));
  ASSERT_TRUE(moved);
  EXPECT_EQ(*moved->Get("state")->as_string(), "done");
}

TEST_P(Retention, ASweepWithRetentionOnRemovesOldFinishedTransactionsAndCountsThem) {
  Value old_done = bank_->Transfer("A0", "A1", 5, 8);
  Value old_cancelled = bank_->Transfer("A1", "A2", 5, 1);
  Must(backend_->store()->UpdateOne(bank_->txns(), Filter().Eq("_id", old_cancelled),
                                    Update().Set("state", Value("canceled")), &wr_));
  Value recent_done = bank_->Transfer("A2", "A3", 5, 8);
  bank_->Age(old_done, hours(72));
  bank_->Age(old_cancelled, hours(72));
  bank_->Age(recent_done, hours(2));
  Snapshot before = bank_->Take();

  WatchSpec watch = bank_->Watch();
  watch.retention.retain_finished = hours(24);
  watch.retention.archive_collection = "transactions_archive";
  WatchSummary dry = SweepOnce(backend_->store(), backend_->clock(), watch, "daemon-1", nullptr, 1,
                               /*dry_run=*/true);
  EXPECT_EQ(dry.finished_archived + dry.finished_deleted, 0) << "a dry run removes nothing";
  EXPECT_TRUE(bank_->Txn(old_done));

  WatchSummary s = SweepOnce(backend_->store(), backend_->clock(), watch, "daemon-1");
  EXPECT_TRUE(s.status.ok()) << s.status.ToString();
  EXPECT_EQ(s.finished_archived, 2) << "done and the alias 'canceled' of cancelled";
  EXPECT_EQ(s.finished_deleted, 0);
  EXPECT_FALSE(bank_->Txn(old_done));
  EXPECT_FALSE(bank_->Txn(old_cancelled));
  EXPECT_TRUE(bank_->Txn(recent_done));
  EXPECT_EQ(Count({backend_->database(), "transactions_archive"}), 2);
  EXPECT_EQ(bank_->Take().accounts, before.accounts) << "retention never touches accounts";
}

TEST_P(Retention, ABacklogDrainsOverSeveralSweepsOfAtMostMaxBatches) {
  for (int i = 0; i < 9; ++i) bank_->Transfer("A0", "A1", 1, 8);
  bank_->AgeAll(hours(48));
  WatchSpec watch = bank_->Watch();
  watch.retention.retain_finished = hours(24);
  watch.retention.batch_size = 2;
  watch.retention.max_batches = 2;
  watch.retention.pause_between_batches = std::chrono::milliseconds(1);
  std::vector<std::int64_t> removed;
  for (int sweep = 0; sweep < 4; ++sweep)
    removed.push_back(
        SweepOnce(backend_->store(), backend_->clock(), watch, "daemon-1").finished_deleted);
  EXPECT_EQ(removed, (std::vector<std::int64_t>{4, 4, 1, 0}));
  EXPECT_EQ(Count(bank_->txns()), 0);
}

// An application that writes no time and ObjectId _ids (the schema book's): with
// missing_time = "object_id" the sweep ages its transactions from the _id, and so does
// retention; a finished one with no time at all under "quarantine" is kept for an operator.
TEST_P(Retention, AFinishedTransactionWithoutATimeFieldIsAgedFromItsObjectIdWhenTheWatchSaysSo) {
  const DateTime now = ServerNow(backend_->store());
  const Value old_id(ObjectIdAged(backend_->store(), hours(48)));
  const Value young_id(ObjectIdAged(backend_->store(), minutes(10)));
  Must(backend_->store()->InsertMany(bank_->txns(), {Document{{"_id", old_id},
                                                              {"source", "A0"},
                                                              {"destination", "A1"},
                                                              {"value", 1},
                                                              {"state", "done"}},
                                                     Document{{"_id", young_id},
                                                              {"source", "A0"},
                                                              {"destination", "A1"},
                                                              {"value", 1},
                                                              {"state", "done"}}}));
  RetentionPolicy policy;
  policy.retain_finished = hours(24);
  RetentionTarget quarantine = Target();
  RetentionResult kept;
  Must(RemoveFinished(backend_->store(), backend_->clock(), quarantine, policy, now, nullptr,
                      &kept));
  EXPECT_EQ(kept.deleted, 0) << "no clock to age it by";

  RetentionTarget by_id = Target();
  by_id.missing_time = MissingTime::kObjectIdTime;
  RetentionResult r;
  Must(RemoveFinished(backend_->store(), backend_->clock(), by_id, policy, now, nullptr, &r));
  EXPECT_EQ(r.deleted, 1);
  EXPECT_FALSE(bank_->Txn(old_id));
  EXPECT_TRUE(bank_->Txn(young_id));
}

INSTANTIATE_TEST_SUITE_P(Backends, Retention, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
