// Recovery of the `tagged-insert` profile (tagged inserts): the application inserts its
// documents tagged `tx: <txId>` and untags them (or deletes them) at the end. One test per
// crash point its description lists: 1-8 in the application, 1'-5' in the recovery thread
// (here: the daemon, killed at the corresponding write and finished by a successor). Every
// test runs against the in-memory store and the test server, with the watch loaded from
// configuration text; docs/chaos.md's invariants are checked after each.
#include <gtest/gtest.h>

#include "support/fault_store.h"
#include "support/tagged_insert_app.h"
#include "support/test_env.h"
#include "support/watch_config.h"
#include "txn_recovery/tools/inspect.h"
#include "txn_recovery/tools/orphans.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::minutes;

// The tagged inserts' names are the profile's defaults; only the collections must be named.
constexpr const char* kTaggedInsertsWatch = R"(
[[watch]]
name = "orders"
database = "shop"
profile = "tagged-insert"
tagged_collections = ["orders", "lines"]
rollback_after = "30m"
)";

class TaggedInsert : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    watch_ = WatchFromToml(kTaggedInsertsWatch, backend_->database());
    app_ = std::make_unique<TaggedInsertApp>(store(), backend_->database(), watch_.profile);
    app_->AddBystanders();
    before_ = app_->Take();
  }
  Store* store() { return backend_->store(); }
  WatchSummary Sweep(std::vector<TxnReport>* reports = nullptr, Store* through = nullptr,
                     const std::string& owner = "daemon-1") {
    return SweepOnce(through ? through : store(), backend_->clock(), watch_, owner, reports);
  }
  void ExpectInvariants(bool all_terminal = true) {
    for (const auto& v : app_->Violations(before_, all_terminal)) ADD_FAILURE() << v;
  }
  std::string Outcome(const Value& tx) {
    auto t = app_->Txn(tx);
    const Value* o = t ? t->GetPath("recovery.outcome") : nullptr;
    return o && o->is_string() ? *o->as_string() : "<none>";
  }
  // All of the transaction's documents there, untagged and valid; or none of them.
  void ExpectCommitted(const Value& tx) {
    auto d = app_->DocsOf(tx);
    EXPECT_EQ(d.present, app_->DocsPerTransaction());
    EXPECT_EQ(d.tagged, 0);
    EXPECT_EQ(d.valid, app_->DocsPerTransaction());
  }
  void ExpectRolledBack(const Value& tx) { EXPECT_EQ(app_->DocsOf(tx).present, 0); }

  std::unique_ptr<TestBackend> backend_;
  WatchSpec watch_;
  std::unique_ptr<TaggedInsertApp> app_;
  TaggedSnapshot before_;
};

TEST_P(TaggedInsert, TheApplicationsNamesAreTheProfilesDefaults) {
  const Profile& p = watch_.profile;
  ASSERT_NE(p.tagged_insert(), nullptr);
  EXPECT_EQ(p.kind(), "tagged-insert");
  EXPECT_EQ(p.state_field, "status");
  EXPECT_EQ(p.time_field, "lastUpdate");
  EXPECT_EQ(p.states.Parse("started"), TxnState::kPending);
  EXPECT_EQ(p.states.Parse("finishing"), TxnState::kApplied);
  EXPECT_EQ(p.states.Parse("rollback"), TxnState::kCanceling);
  EXPECT_EQ(p.states.Written(TxnState::kCancelled), "done")
      << "the tagged inserts end rollbacks in done";
  EXPECT_EQ(p.tagged_insert()->tag_field, "tx");
  EXPECT_EQ(p.tagged_insert()->valid_field, "valid");
  EXPECT_FALSE(p.ResumesPending());
}

// ---- Crash points of the application ---------------------------------------------------

TEST_P(TaggedInsert, CrashPoint1Before_NothingWasWrittenAndNothingIsDone) {
  WatchSummary s = Sweep();
  EXPECT_EQ(s.examined, 0);
  ExpectInvariants();
}

TEST_P(TaggedInsert, CrashPoint1After_AnEmptyStartedTransactionIsCleanedUpAfter30Minutes) {
  Value tx = app_->InsertTransaction();
  app_->Age(tx, kStuck);
  Sweep();
  EXPECT_EQ(app_->State(tx), "started") << "younger than rollback_after: the application's";

  app_->Age(tx, kExpired);
  Sweep();
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "rolled back");
  ExpectInvariants();
}

TEST_P(TaggedInsert, CrashPoint2_DocumentsPartlyInsertedAreDeletedAfter30Minutes) {
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx, 1).ok());  // "orders" inserted, "lines" not yet
  app_->Age(tx, kStuck);
  Sweep();
  EXPECT_EQ(app_->State(tx), "started");
  EXPECT_EQ(app_->DocsOf(tx).tagged, 2) << "nothing is guessed before rollback_after";

  app_->Age(tx, kExpired);
  Sweep();
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "rolled back");
  ExpectRolledBack(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, CrashPoint3_AllDocumentsInsertedButNotFinishingAreDeletedAfter30Minutes) {
  // "pas moyen de faire autrement, on ne peut pas savoir si on a fini de faire les
  // insertions": the daemon cannot tell this from crash point 2, so it rolls back too.
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  app_->Age(tx, kExpired);
  Sweep();
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "rolled back");
  ExpectRolledBack(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, CrashPoint4_APartlyUntaggedFinishingTransactionIsFinished) {
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  ASSERT_TRUE(app_->MarkFinishing(tx).ok());
  ASSERT_TRUE(app_->Untag(tx, 1).ok());  // "orders" untagged, "lines" still tagged
  app_->Age(tx, kStuck);
  Sweep();
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "committed");
  ExpectCommitted(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, CrashPoint5_AnUntaggedFinishingTransactionIsMarkedDone) {
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  ASSERT_TRUE(app_->MarkFinishing(tx).ok());
  ASSERT_TRUE(app_->Untag(tx).ok());
  // Even after 30 minutes a finishing transaction is finished, never rolled back.
  app_->Age(tx, kExpired);
  Sweep();
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "committed");
  ExpectCommitted(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, CrashPoint6_KilledInTheCatchBlockBeforeMarkingRollback) {
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx, 1).ok());  // step 2 threw after the first collection
  // ... and the process died before step 6 reached the database.
  app_->Age(tx, kExpired);
  Sweep();
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "rolled back");
  ExpectRolledBack(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, CrashPoint7_APartlyDeletedRollbackIsFinished) {
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  // Step 3 threw; the catch block marked rollback and deleted one collection's documents.
  ASSERT_TRUE(app_->MarkRollback(tx).ok());
  ASSERT_TRUE(app_->DeleteTagged(tx, 1).ok());
  app_->Age(tx, kStuck);
  Sweep();
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "rolled back");
  ExpectRolledBack(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, CrashPoint8_ADeletedRollbackIsMarkedDone) {
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  ASSERT_TRUE(app_->MarkRollback(tx).ok());
  ASSERT_TRUE(app_->DeleteTagged(tx).ok());
  app_->Age(tx, kStuck);
  Sweep();
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "rolled back");
  ExpectRolledBack(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, ARollbackInProgressIsLeftToTheApplicationsRetriesForResumeAfter) {
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  ASSERT_TRUE(app_->MarkRollback(tx).ok());  // the catch block is backing off between tries
  Sweep();
  EXPECT_EQ(app_->State(tx), "rollback");
  EXPECT_EQ(app_->DocsOf(tx).present, app_->DocsPerTransaction());
  // Its retry succeeds on its own.
  ASSERT_TRUE(app_->DeleteTagged(tx).ok());
  ASSERT_TRUE(app_->MarkRolledBackDone(tx).ok());
  ExpectInvariants();
}

TEST_P(TaggedInsert, AStartedTransactionIsNeverCommittedByTheDaemonOnlyRolledBack) {
  // Between resume_after and rollback_after a started transaction is the application's:
  // only it knows whether it has inserted everything.
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  app_->Age(tx, minutes(29));
  std::vector<TxnReport> reports;
  WatchSummary s = Sweep(&reports);
  EXPECT_EQ(s.examined, 0) << "not even read before rollback_after";
  EXPECT_TRUE(reports.empty());
  StuckReport stuck;
  ASSERT_TRUE(Inspect(store(), watch_, &stuck).ok());
  EXPECT_EQ(stuck.stuck.count(TxnState::kPending), 0u) << "not stuck while it may be working";
  EXPECT_FALSE(stuck.oldest_age.has_value());

  // The application carries on normally.
  ASSERT_TRUE(app_->MarkFinishing(tx).ok());
  ASSERT_TRUE(app_->Untag(tx).ok());
  ASSERT_TRUE(app_->MarkDone(tx).ok());
  ExpectCommitted(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, TransactionsTheApplicationEndedItselfAreLeftAsTheyAre) {
  Value committed = app_->Commit();
  Value rolled_back = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(rolled_back, 1).ok());  // step 2 threw midway
  ASSERT_TRUE(app_->RollBack(rolled_back).ok());
  app_->Age(committed, kStuck);  // inside the late-write window: checked, not changed
  app_->Age(rolled_back, kStuck);
  std::vector<Document> txns_before = {*app_->Txn(committed), *app_->Txn(rolled_back)};

  WatchSummary s = Sweep();

  EXPECT_EQ(s.examined, 2);
  EXPECT_EQ(s.resolved + s.quarantined + s.failed + s.late_writes_undone, 0);
  EXPECT_EQ(*app_->Txn(committed), txns_before[0]);
  EXPECT_EQ(*app_->Txn(rolled_back), txns_before[1]);
  ExpectCommitted(committed);
  ExpectRolledBack(rolled_back);
  ExpectInvariants();
}

// ---- Crash points of the recovery thread (the daemon) ----------------------------------
//
// Rolling back a started transaction the daemon writes: its lease and 1' (-> rollback) in
// one claim, 2' (delete in "orders", then in "lines"), 3' (-> done). Finishing: its lease, 4'
// (untag in "orders", then in "lines"), 5' (-> done). Each test kills it before the write named,
// lets its lease expire, and shows a successor finishing the job.

class TaggedInsertDaemonKilled : public TaggedInsert {
 protected:
  // Sweeps through a store that dies after `writes` writes; returns whether it died.
  bool SweepDyingAfter(int writes) {
    FaultStore dying(store());
    dying.CrashAfterWrites(writes);
    Sweep(nullptr, &dying, "daemon-killed");
    return dying.crashed();
  }
  void Successor(const Value& tx, std::chrono::minutes age) {
    ExpireLeases(store(), app_->txns());
    app_->Age(tx, age);
    Sweep(nullptr, nullptr, "daemon-successor");
  }
  Value Started() {
    Value tx = app_->InsertTransaction();
    Must(app_->InsertTagged(tx));
    app_->Age(tx, kExpired);
    return tx;
  }
  Value Finishing() {
    Value tx = app_->InsertTransaction();
    Must(app_->InsertTagged(tx));
    Must(app_->MarkFinishing(tx));
    app_->Age(tx, kStuck);
    return tx;
  }
};

TEST_P(TaggedInsertDaemonKilled, CrashPoint1Prime_RightAfterTheClaimMarkedRollback) {
  Value tx = Started();
  ASSERT_TRUE(SweepDyingAfter(1));  // the claim, with 1'
  EXPECT_EQ(app_->State(tx), "rollback");
  EXPECT_EQ(app_->DocsOf(tx).present, app_->DocsPerTransaction());
  Successor(tx, kExpired);
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "rolled back");
  ExpectRolledBack(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsertDaemonKilled, CrashPoint2Prime_DuringTheDeletes) {
  Value tx = Started();
  ASSERT_TRUE(SweepDyingAfter(2));  // the claim with 1', the deletes in "orders"
  EXPECT_EQ(app_->State(tx), "rollback") << "la tx est toujours en rollback";
  EXPECT_EQ(app_->DocsOf(tx).present, 2) << "the documents in \"lines\" remain";
  Successor(tx, kStuck);
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "rolled back");
  ExpectRolledBack(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsertDaemonKilled, CrashPoint3Prime_BeforeMarkingDone) {
  Value tx = Started();
  ASSERT_TRUE(SweepDyingAfter(3));  // the claim with 1', both deletes
  EXPECT_EQ(app_->State(tx), "rollback") << "la tx est toujours en rollback";
  EXPECT_EQ(app_->DocsOf(tx).present, 0);
  Successor(tx, kStuck);
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "rolled back");
  ExpectInvariants();
}

TEST_P(TaggedInsertDaemonKilled, CrashPoint4Prime_DuringTheUntagging) {
  Value tx = Finishing();
  ASSERT_TRUE(SweepDyingAfter(2));  // lease, the untagging in "orders"
  EXPECT_EQ(app_->State(tx), "finishing") << "la tx est toujours en finalisation";
  EXPECT_EQ(app_->DocsOf(tx).tagged, 2);
  Successor(tx, kStuck);
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "committed");
  ExpectCommitted(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsertDaemonKilled, CrashPoint5Prime_BeforeMarkingDone) {
  Value tx = Finishing();
  ASSERT_TRUE(SweepDyingAfter(3));  // lease, both untaggings
  EXPECT_EQ(app_->State(tx), "finishing") << "la tx est toujours en finalisation";
  EXPECT_EQ(app_->DocsOf(tx).tagged, 0);
  Successor(tx, kStuck);
  EXPECT_EQ(app_->State(tx), "done");
  EXPECT_EQ(Outcome(tx), "committed");
  ExpectCommitted(tx);
  ExpectInvariants();
}

// ---- Late writes -----------------------------------------------------------------------

TEST_P(TaggedInsert, DocumentsInsertedAfterTheDaemonRolledBackAreDeletedByTheNextSweep) {
  Value tx = app_->InsertTransaction();  // the application stalls before step 2
  app_->Age(tx, kExpired);
  Sweep();
  ASSERT_EQ(app_->State(tx), "done");
  ASSERT_EQ(Outcome(tx), "rolled back");

  // It wakes up and inserts its documents, tagged with a transaction that is over.
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  app_->Age(tx, kStuck);
  WatchSummary s = Sweep();

  EXPECT_EQ(s.late_writes_undone, app_->DocsPerTransaction());
  ExpectRolledBack(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, DocumentsInsertedHoursAfterTheRollbackAreFoundByTheOrphanScanAndDeleted) {
  Value tx = app_->InsertTransaction();
  app_->Age(tx, kExpired);
  Sweep();
  ASSERT_EQ(Outcome(tx), "rolled back");
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  app_->Age(tx, std::chrono::hours(6));  // past the late-write window: no sweep looks
  EXPECT_EQ(Sweep().late_writes_undone, 0);
  ASSERT_EQ(app_->DocsOf(tx).present, app_->DocsPerTransaction());

  OrphanOptions o;
  o.lease.owner = "orphan-scanner";
  OrphanSummary s;
  ASSERT_TRUE(ScanOrphans(store(), backend_->clock(), watch_, o, nullptr, &s).ok());
  EXPECT_GE(s.late_writes_undone, 1);
  EXPECT_EQ(s.missing_transactions, 0);
  ExpectRolledBack(tx);
  ExpectInvariants();
}

// The tagged inserts' step 3 is unconditional: an application carrying on after the rollback would
// set finishing on the done transaction and validate its late documents, leaving no trace
// for the daemon to find (docs/state-machine.md). With step 3 checked it stops there.
TEST_P(TaggedInsert, WithACheckedStep3AnApplicationWakingAfterTheRollbackStopsThere) {
  app_->set_checked_finishing(true);
  Value tx = app_->InsertTransaction();  // stalls before step 2
  app_->Age(tx, kExpired);
  Sweep();
  ASSERT_EQ(Outcome(tx), "rolled back");

  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  Status step3 = app_->MarkFinishing(tx);
  EXPECT_TRUE(step3.IsConflict()) << step3.ToString();
  EXPECT_EQ(app_->State(tx), "done");
  app_->Age(tx, kStuck);
  WatchSummary s = Sweep();

  EXPECT_EQ(s.late_writes_undone, app_->DocsPerTransaction());
  ExpectRolledBack(tx);
  ExpectInvariants();
}

TEST_P(TaggedInsert, ADocumentTaggedAfterTheDaemonCommittedIsFinishedLikeTheRest) {
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  ASSERT_TRUE(app_->MarkFinishing(tx).ok());
  app_->Age(tx, kStuck);
  Sweep();
  ASSERT_EQ(Outcome(tx), "committed");

  // A straggler of the same insert (a retried write landing late) still carries the tag.
  Must(
      store()->InsertMany(app_->Collection("lines"), {Document{{"_id", "straggler"}, {"tx", tx}}}));
  app_->Age(tx, kStuck);
  WatchSummary s = Sweep();

  EXPECT_EQ(s.late_writes_undone, 1);
  std::optional<Document> d;
  Must(store()->FindOne(app_->Collection("lines"), Filter().Eq("_id", "straggler"), &d));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->Get("tx"), nullptr);
  EXPECT_EQ(*d->Get("valid"), Value(true));
}

TEST_P(TaggedInsert, ATaggedDocumentOfATransactionTheApplicationEndedItselfIsNeverGuessedAt) {
  Value tx = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(tx).ok());
  ASSERT_TRUE(app_->MarkFinishing(tx).ok());
  ASSERT_TRUE(app_->Untag(tx).ok());
  ASSERT_TRUE(app_->MarkDone(tx).ok());
  // "done" written by the application says nothing of the direction (step 5 and step 8
  // both write it): a tagged document now could be kept or deleted.
  Must(store()->InsertMany(app_->Collection("orders"),
                           {Document{{"_id", "unexplained"}, {"tx", tx}}}));
  app_->Age(tx, kStuck);
  std::vector<TxnReport> reports;
  WatchSummary s = Sweep(&reports);

  EXPECT_EQ(s.quarantined, 1);
  auto t = app_->Txn(tx);
  const Value* reason = t->GetPath("recovery.quarantine.reason");
  ASSERT_NE(reason, nullptr);
  EXPECT_NE(reason->as_string()->find("nothing records whether it committed or rolled back"),
            std::string::npos)
      << *reason->as_string();
  std::optional<Document> d;
  Must(store()->FindOne(app_->Collection("orders"), Filter().Eq("_id", "unexplained"), &d));
  ASSERT_TRUE(d) << "left as it was for an operator";
  EXPECT_EQ(*d->Get("tx"), tx);
}

// ---- Documents that do not fit ---------------------------------------------------------

TEST_P(TaggedInsert, TransactionsThatDoNotFitAreQuarantinedAndTheirDocumentsLeftAlone) {
  const DateTime old{ServerNow(store()).millis - std::chrono::milliseconds(kExpired).count()};
  struct Bad {
    Document doc;
    const char* reason;
  };
  std::vector<Bad> bad = {
      {{{"_id", NewObjectId(old.millis)}, {"status", "canceled"}, {"lastUpdate", old}},
       "unknown state 'canceled'"},
      {{{"_id", NewObjectId(old.millis)}, {"status", "started"}}, "'lastUpdate' is missing"},
      {{{"_id", NewObjectId(old.millis)}, {"status", "rollback"}, {"lastUpdate", "yesterday"}},
       "'lastUpdate' has type string"},
      {{{"_id", Document{{"batch", 7}}}, {"status", "started"}, {"lastUpdate", old}},
       "'_id' has type object"},
  };
  for (const auto& b : bad) {
    Must(store()->InsertMany(app_->txns(), {b.doc}));
    // Each has a tagged document the daemon must not touch.
    Must(store()->InsertMany(app_->Collection("orders"), {Document{{"_id", NewObjectId(old.millis)},
                                                                   {"tx", *b.doc.Get("_id")}}}));
  }
  TaggedSnapshot with_docs = app_->Take();
  Value good = app_->InsertTransaction();
  ASSERT_TRUE(app_->InsertTagged(good).ok());
  app_->Age(good, kExpired);

  WatchSummary s = Sweep();

  EXPECT_EQ(s.quarantined, static_cast<std::int64_t>(bad.size()));
  EXPECT_EQ(app_->State(good), "done") << "a bad document does not stop the sweep";
  for (const auto& b : bad) {
    auto t = app_->Txn(*b.doc.Get("_id"));
    ASSERT_TRUE(t);
    const Value* reason = t->GetPath("recovery.quarantine.reason");
    ASSERT_NE(reason, nullptr) << b.doc.Get("_id")->ToString();
    EXPECT_NE(reason->as_string()->find(b.reason), std::string::npos) << *reason->as_string();
  }
  for (const auto& v : app_->Violations(with_docs)) ADD_FAILURE() << v;
}

// The decision table's row for a started transaction, whatever finds it (the candidate
// query already leaves younger ones out).
TEST(TaggedInsertDecision, AStartedTransactionIsOnlyEverRolledBackOnceExpired) {
  Transaction t;
  Profile p = Profile::TaggedInsert();
  p.tagged_insert()->tagged_collections = {"orders"};
  ASSERT_TRUE(p.Parse(Document{{"_id", 1}, {"status", "started"}, {"lastUpdate", DateTime{0}}},
                      Namespace{"d", "transactions"}, "recovery", &t)
                  .ok());
  EXPECT_FALSE(t.resumable);
  Thresholds th;
  auto at = [&](std::chrono::milliseconds age) { return Decide(t, DateTime{age.count()}, th); };
  EXPECT_EQ(at(minutes(2)), Action::kNone);
  EXPECT_EQ(at(minutes(30) - std::chrono::milliseconds(1)), Action::kNone);
  EXPECT_EQ(at(minutes(30)), Action::kRollback);
}

INSTANTIATE_TEST_SUITE_P(Backends, TaggedInsert, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Backends, TaggedInsertDaemonKilled, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
