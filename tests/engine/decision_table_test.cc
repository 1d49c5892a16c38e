// docs/state-machine.md's decision table, row by row, at the edges of each threshold.
#include <gtest/gtest.h>

#include "txn_recovery/engine/state_machine.h"

namespace txn_recovery {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;

Action DecideAt(TxnState state, milliseconds age) {
  Transaction t;
  t.state = state;
  t.last_modified = DateTime{1'000'000'000};
  return Decide(t, DateTime{1'000'000'000 + age.count()}, Thresholds{});
}

TEST(DecisionTable, StaleInitialIsCancelledOnlyAfterInitialTimeout) {
  EXPECT_EQ(DecideAt(TxnState::kInitial, minutes(30) - milliseconds(1)), Action::kNone);
  EXPECT_EQ(DecideAt(TxnState::kInitial, minutes(30)), Action::kCancel);
}

TEST(DecisionTable, PendingIsResumedAfterResumeAfterAndRolledBackOnceExpired) {
  EXPECT_EQ(DecideAt(TxnState::kPending, minutes(1) - milliseconds(1)), Action::kNone);
  EXPECT_EQ(DecideAt(TxnState::kPending, minutes(1)), Action::kResume);
  EXPECT_EQ(DecideAt(TxnState::kPending, minutes(30) - milliseconds(1)), Action::kResume);
  EXPECT_EQ(DecideAt(TxnState::kPending, minutes(30)), Action::kRollback);
}

TEST(DecisionTable, AppliedIsFinishedAndNeverRolledBack) {
  EXPECT_EQ(DecideAt(TxnState::kApplied, minutes(1) - milliseconds(1)), Action::kNone);
  EXPECT_EQ(DecideAt(TxnState::kApplied, minutes(1)), Action::kFinish);
  EXPECT_EQ(DecideAt(TxnState::kApplied, std::chrono::hours(48)), Action::kFinish);
}

TEST(DecisionTable, CancelingFinishesTheRollback) {
  EXPECT_EQ(DecideAt(TxnState::kCanceling, minutes(1) - milliseconds(1)), Action::kNone);
  EXPECT_EQ(DecideAt(TxnState::kCanceling, minutes(1)), Action::kFinishRollback);
}

TEST(DecisionTable, TerminalTransactionsAreOnlyCheckedForLateWritesInsideTheWindow) {
  for (TxnState s : {TxnState::kDone, TxnState::kCancelled}) {
    EXPECT_EQ(DecideAt(s, minutes(1) - milliseconds(1)), Action::kNone);
    EXPECT_EQ(DecideAt(s, minutes(1)), Action::kCheckLateWrites);
    EXPECT_EQ(DecideAt(s, minutes(60) - milliseconds(1)), Action::kCheckLateWrites);
    EXPECT_EQ(DecideAt(s, minutes(60)), Action::kNone);
  }
}

TEST(DecisionTable, ATimeInTheFutureIsNeverOld) {
  // An application host whose clock runs ahead of the server's writes future times.
  for (TxnState s : {TxnState::kInitial, TxnState::kPending, TxnState::kApplied,
                     TxnState::kCanceling, TxnState::kDone})
    EXPECT_EQ(DecideAt(s, -minutes(45)), Action::kNone);
}

}  // namespace
}  // namespace txn_recovery
