// The daemon's records are written by the engine's requests (engine/requests.cc) and read
// back by other code: the recovery sub-document by RecoveryRecord::Read, a member record by
// the fleet's membership. Both sides take their keys from one place; these round trips fail
// if a key is ever spelled one way by the writer and another by the reader (a lease left
// unseen would be taken twice, an outcome unread would be guessed).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/requests.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/stores/memory_store.h"

namespace txn_recovery {
namespace {

class RecordNames : public ::testing::Test {
 protected:
  // Applies what `request` writes to the transaction, as the server would.
  void Write(const UpdateRequest& request) {
    ASSERT_TRUE(request.update.ApplyTo(&txn_doc_, now_).ok()) << request.update.ToString();
  }
  RecoveryRecord Read() const {
    RecoveryRecord record;
    const Status s = RecoveryRecord::Read(txn_doc_, paths_, &record);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return record;
  }

  const Profile profile_ = Profile::Transfer();
  const RecoveryPaths paths_{"recovery"};
  const DateTime now_{1'700'000'000'000};
  const requests::LeaseTerms lease_{"daemon-a", "claim-1", DateTime{1'700'000'030'000},
                                    DateTime{1'700'000'020'000}};
  Document txn_doc_{{"_id", 1}, {"state", "pending"}};
};

TEST_F(RecordNames, TheLeaseAClaimTakesIsTheLeaseTheReaderSees) {
  Transaction txn;
  txn.id = Value(1);
  txn.state = TxnState::kPending;
  txn.state_as_read = Value("pending");
  Write(requests::Claim(txn, Action::kRollback, false, profile_, paths_, lease_));

  const RecoveryRecord record = Read();
  ASSERT_TRUE(record.lease.has_value());
  EXPECT_EQ(record.lease->owner, "daemon-a");
  EXPECT_EQ(record.lease->expires, lease_.expires);
  EXPECT_EQ(record.lease->claim, "claim-1");
  EXPECT_EQ(record.format, RecoveryRecord::kFormat);
  EXPECT_FALSE(record.outcome.has_value());
}

TEST_F(RecordNames, HowATransactionEndedIsReadAsTheEndingMoveRecordedIt) {
  Transaction txn;
  txn.id = Value(1);
  txn.state = TxnState::kPending;
  txn.state_as_read = Value("pending");
  Write(requests::Claim(txn, Action::kRollback, false, profile_, paths_, lease_));
  Write(requests::Transition(Value(1), Value("canceling"), TxnState::kCancelled, Action::kRollback,
                             profile_, paths_, lease_, lease_.expires));

  const RecoveryRecord record = Read();
  EXPECT_FALSE(record.lease.has_value()) << "an ending move gives the lease back";
  EXPECT_EQ(record.outcome, std::string(RecoveryPaths::kRolledBack));
  EXPECT_EQ(record.resolved_by, "daemon-a");
  EXPECT_EQ(record.resolved_action, std::string(ActionName(Action::kRollback)));
  EXPECT_EQ(record.resolved_at, now_);
  EXPECT_EQ(txn_doc_.GetPath(paths_.ResolvedClaim())->ToString(), Value("claim-1").ToString());
}

TEST_F(RecordNames, FailuresAQuarantineAndAFirstSightingAreReadAsWritten) {
  Write(requests::StampFirstSeen(Value(1), profile_, paths_));
  Write(requests::RecordFailure(Value(1), "first", paths_));
  Write(requests::RecordFailure(Value(1), "second", paths_));
  const Document quarantine{{RecoveryPaths::kQuarantineReason, "too many failures"},
                            {RecoveryPaths::kQuarantineBy, "daemon-a"}};
  Write(requests::Quarantine(Value(1), quarantine, paths_));

  const RecoveryRecord record = Read();
  EXPECT_EQ(record.first_seen, now_);
  EXPECT_EQ(record.failures, 2);
  EXPECT_EQ(record.last_error, "second");
  ASSERT_TRUE(record.quarantine.has_value());
  EXPECT_EQ(record.quarantine->reason, "too many failures");
  EXPECT_EQ(record.quarantine->by, "daemon-a");
  EXPECT_EQ(record.quarantine->at, now_);

  Write(requests::ReleaseQuarantine(Value(1), paths_));
  const RecoveryRecord released = Read();
  EXPECT_FALSE(released.quarantine.has_value());
  EXPECT_EQ(released.failures, 0);
  EXPECT_FALSE(released.last_error.has_value());
}

TEST_F(RecordNames, AQuarantineThatReplacedAForeignValueIsReadAsAQuarantine) {
  txn_doc_.Set("recovery", Value("written by someone else"));
  const Document quarantine{{RecoveryPaths::kQuarantineReason, "not ours"}};
  Write(requests::QuarantineReplacing(Value(1), Value("written by someone else"), quarantine,
                                      paths_));
  const RecoveryRecord record = Read();
  ASSERT_TRUE(record.quarantine.has_value());
  EXPECT_EQ(record.quarantine->reason, "not ours");
}

TEST(MemberRecordNames, EveryFieldAHeartbeatWritesIsReadBack) {
  ManualClock clock;
  MemoryStore store(&clock);
  const Namespace ns{"app", "txn_recovery_members"};
  MemberRecord self;
  self.id = "daemon-a";
  self.host = "db-1";
  self.version = "1.2.3";
  self.watches = {"transactions", "orders"};
  ASSERT_TRUE(Heartbeat(&store, ns, self).ok());

  std::vector<MemberRecord> live;
  ASSERT_TRUE(
      LiveMembers(&store, ns, std::chrono::seconds(30), DateTime{clock.WallMillis()}, &live).ok());
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].id, self.id);
  EXPECT_EQ(live[0].host, self.host);
  EXPECT_EQ(live[0].version, self.version);
  EXPECT_EQ(live[0].watches, self.watches);
  EXPECT_EQ(live[0].heartbeat.millis, clock.WallMillis());
  EXPECT_EQ(live[0].format, RecoveryRecord::kFormat);
}

}  // namespace
}  // namespace txn_recovery
