// The orphan scan: markers no sweep will look at again (a late write after the late-write
// window, a transaction document that was deleted, a marker on a document its transaction
// does not name), found from the participants' side. Against the in-memory store and the
// test server.
#include <gtest/gtest.h>

#include "support/bank_test.h"
#include "support/fault_store.h"
#include "support/test_env.h"
#include "txn_recovery/tools/orphans.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

class OrphanScan : public BankTest {
 protected:
  OrphanScan() : BankTest(4) {}
  OrphanSummary Scan(OrphanOptions options = {}, Store* store = nullptr) {
    options.lease.owner = "orphan-scanner";
    findings_.clear();
    OrphanSummary s;
    Status st = ScanOrphans(
        store ? store : backend_->store(), backend_->clock(), bank_->Watch(), options,
        [&](const OrphanFinding& f) { findings_.push_back(f); }, &s);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return s;
  }
  void PushMarker(const std::string& account, const Value& txn) {
    WriteResult r;
    Must(backend_->store()->UpdateOne(bank_->accounts(), Filter().Eq("_id", account),
                                      Update().Push("pendingTransactions", txn), &r));
  }
  std::vector<OrphanFinding> findings_;
};

TEST_P(OrphanScan, ALateWriteAfterTheWindowIsUndoneOnceAndBalancesAreConserved) {
  Snapshot before = bank_->Take();
  Value id = bank_->Transfer("A0", "A1", 100, kAppStepCount);
  bank_->Age(id, hours(5));  // long past the 1h late-write window: no sweep reads it
  // The application, stalled for hours, wakes up and credits A1 a second time.
  ASSERT_TRUE(bank_->RunStep(id, AppStep::kCreditDestination).ok());
  ASSERT_EQ(bank_->Balance("A1"), 1200);

  OrphanSummary s = Scan();
  EXPECT_EQ(s.late_writes_undone, 1);
  ASSERT_EQ(findings_.size(), 1u);
  EXPECT_EQ(findings_[0].kind, OrphanFinding::Kind::kLateWriteUndone);
  EXPECT_EQ(findings_[0].participant, Value("A1"));
  EXPECT_EQ(findings_[0].transaction, id);
  EXPECT_EQ(bank_->Balance("A1"), 1100);
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;

  EXPECT_EQ(Scan().late_writes_undone, 0) << "a second scan finds nothing left";
  EXPECT_EQ(bank_->Balance("A1"), 1100);
}

TEST_P(OrphanScan, AMarkerOfADeletedTransactionIsReportedWithBothIdsAndNothingIsTouched) {
  PushMarker("A2", Value("gone-42"));
  Snapshot before = bank_->Take();
  OrphanSummary s = Scan();
  EXPECT_EQ(s.missing_transactions, 1);
  ASSERT_EQ(findings_.size(), 1u);
  EXPECT_EQ(findings_[0].kind, OrphanFinding::Kind::kMissingTransaction);
  EXPECT_EQ(findings_[0].participant, Value("A2"));
  EXPECT_EQ(findings_[0].transaction, Value("gone-42"));
  EXPECT_EQ(bank_->Take().accounts, before.accounts) << "no record of the change: hands off";
}

// A scan that returns each participant twice (DocumentDB may) reports each finding once.
TEST_P(OrphanScan, AParticipantTheCursorReturnsTwiceIsReportedOnce) {
  PushMarker("A2", Value("gone-42"));
  FaultStore repeating(backend_->store());
  repeating.RepeatEachDocument();
  OrphanSummary s = Scan({}, &repeating);
  EXPECT_EQ(s.participants_scanned, 1);
  EXPECT_EQ(s.missing_transactions, 1);
  EXPECT_EQ(findings_.size(), 1u);
}

TEST_P(OrphanScan, InFlightTransactionsAreTheSweepsAndAreLeftAlone) {
  Value young = bank_->Transfer("A0", "A1", 10, 3);  // debited A0, in flight right now
  Snapshot before = bank_->Take();
  OrphanSummary s = Scan();
  EXPECT_EQ(s.in_flight, 1);
  EXPECT_TRUE(findings_.empty());
  EXPECT_EQ(bank_->Take().accounts, before.accounts);
  EXPECT_EQ(bank_->State(young), "pending");
}

TEST_P(OrphanScan, AFinishedTransactionsMarkerOnADocumentItDoesNotNameIsReportedNotUndone) {
  Value id = bank_->Transfer("A0", "A1", 10, kAppStepCount);
  bank_->Age(id, hours(5));
  PushMarker("A3", id);
  Snapshot before = bank_->Take();
  OrphanSummary s = Scan();
  EXPECT_EQ(s.foreign_markers, 1);
  ASSERT_EQ(findings_.size(), 1u);
  EXPECT_EQ(findings_[0].kind, OrphanFinding::Kind::kForeignMarker);
  EXPECT_EQ(findings_[0].participant, Value("A3"));
  EXPECT_EQ(bank_->Take().accounts, before.accounts);
}

TEST_P(OrphanScan, AParticipantCarryingMoreMarkersThanTheCapIsReported) {
  std::vector<Value> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(bank_->Transfer("A0", "A1", 1, 3));  // in flight
  OrphanOptions o;
  o.marker_cap = 2;
  OrphanSummary s = Scan(o);
  EXPECT_EQ(s.crowded_participants, 1);
  EXPECT_EQ(s.in_flight, 3);
  ASSERT_EQ(findings_.size(), 1u);
  EXPECT_EQ(findings_[0].kind, OrphanFinding::Kind::kTooManyMarkers);
  EXPECT_EQ(findings_[0].participant, Value("A0"));
}

TEST_P(OrphanScan, ADryRunReportsTheLateWriteAndUndoesNothing) {
  Value id = bank_->Transfer("A0", "A1", 100, kAppStepCount);
  bank_->Age(id, hours(5));
  ASSERT_TRUE(bank_->RunStep(id, AppStep::kCreditDestination).ok());
  OrphanOptions o;
  o.dry_run = true;
  Scan(o);
  ASSERT_EQ(findings_.size(), 1u);
  EXPECT_NE(findings_[0].detail.find("would undo"), std::string::npos) << findings_[0].detail;
  EXPECT_EQ(bank_->Balance("A1"), 1200);
}

INSTANTIATE_TEST_SUITE_P(Backends, OrphanScan, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
