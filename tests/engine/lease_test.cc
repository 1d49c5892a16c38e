// The lease as a type (lib/src/engine/lease.h), on its own: the lease arithmetic, and the
// sender keeping every write to what it says it goes under. That a write naming no lease
// does not compile is tested by compiling it (tests/engine/lease_compile/).
#include "engine/lease.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <vector>

#include "engine/batch_item.h"
#include "engine/batch_trace.h"
#include "engine/leased_sender.h"
#include "txn_recovery/stores/memory_store.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// One transaction of a batch, its participant document {_id: 1, v: 0}, and the sender.
struct OneLeasedTransaction {
  explicit OneLeasedTransaction(std::vector<PlannedWrite>* record = nullptr)
      : send(record ? Writer(&store, record) : Writer(&store), keeper, trace) {
    txn.id = Value("t1");
    item.txn = &txn;
    item.result = &result;
    EXPECT_TRUE(store.InsertMany(ns, {Document{{"_id", 1}, {"v", 0}}}).ok());
  }
  // The lease a claim sent now took.
  void Claimed() {
    DateTime now;
    ASSERT_TRUE(store.ServerTime(&now).ok());
    item.lease = keeper.Take(keeper.Offer("nonce", now), keeper.Now());
  }
  std::vector<Write> SetV(int v, Under under, bool best_effort = false) {
    UpdateRequest r{Filter().Eq("_id", 1), Update().Set("v", Value(v))};
    return {Write{&item, nullptr, ns, std::move(r), under, best_effort, "set v"}};
  }
  int V() {
    std::optional<Document> d;
    EXPECT_TRUE(store.FindOne(ns, Filter().Eq("_id", 1), &d).ok());
    return d && d->Get("v") ? static_cast<int>(*d->Get("v")->as_double()) : -1;
  }

  ManualClock clock;
  MemoryStore store{&clock};
  Namespace ns{"bank", "accounts"};
  LeaseOptions options{"daemon-a", seconds(60), seconds(10)};
  LeaseKeeper keeper{&clock, options};
  RecoveryPaths paths{"txnRecovery"};
  BatchTrace trace{options.owner, paths};
  LeasedSender send;
  Transaction txn;
  ExecuteResult result;
  Item item;
};

const Predicate* Fence(const Filter& f) {
  for (const Predicate& p : f.all())
    if (p.op == Predicate::Op::kServerNowBefore) return &p;
  return nullptr;
}

TEST(LeaseAsAType, AClaimsTermsExpireAfterTheDurationAndAreFencedHalfTheMarginBefore) {
  OneLeasedTransaction t;
  const DateTime now{1'700'000'000'000};
  const requests::LeaseTerms terms = t.keeper.Offer("n1", now);
  EXPECT_EQ(terms.owner, "daemon-a");
  EXPECT_EQ(terms.claim, "n1");
  EXPECT_EQ(terms.expires.millis, now.millis + 60'000);
  EXPECT_EQ(terms.fence.millis, now.millis + 60'000 - 5'000);
}

TEST(LeaseAsAType, ATakenLeaseIsWrittenUnderUntilTheMarginBeforeItExpiresAndNotAfter) {
  OneLeasedTransaction t;
  t.Claimed();
  t.clock.Advance(milliseconds(49'999));
  EXPECT_TRUE(t.keeper.Live(*t.item.lease));
  t.clock.Advance(milliseconds(1));
  EXPECT_FALSE(t.keeper.Live(*t.item.lease)) << "duration 60 s less the margin 10 s";
}

TEST(LeaseAsAType, ARenewalMovesTheDeadlineAndTheExpiryFromWhenItWasSent) {
  OneLeasedTransaction t;
  t.Claimed();
  t.clock.Advance(seconds(40));
  const DateTime now{t.clock.WallMillis()};
  t.keeper.Renew(&*t.item.lease, now, t.keeper.Now());
  EXPECT_EQ(t.item.lease->terms().expires.millis, now.millis + 60'000);
  EXPECT_EQ(t.item.lease->terms().fence.millis, now.millis + 55'000);
  t.clock.Advance(seconds(49));
  EXPECT_TRUE(t.keeper.Live(*t.item.lease)) << "89 s after the claim, 49 s after the renewal";
}

TEST(LeaseAsAType, AWriteUnderALeasePastItsDeadlineIsNotSentAndFailsItsTransaction) {
  OneLeasedTransaction t;
  t.Claimed();
  t.clock.Advance(seconds(51));
  std::vector<Write> writes = t.SetV(1, Under::TheLease(*t.item.lease));
  const Sent sent = t.send.Send(writes);
  EXPECT_TRUE(sent.accepted.empty());
  EXPECT_EQ(sent.fate[0], Sent::Fate::kNotSent);
  EXPECT_EQ(t.V(), 0) << "nothing reached the participant";
  EXPECT_TRUE(t.item.ended);
  EXPECT_NE(t.result.detail.find("expired before the work was done"), std::string::npos)
      << t.result.detail;
}

TEST(LeaseAsAType, ABestEffortWritePastTheDeadlineIsLeftUnsentWithoutFailingItsTransaction) {
  OneLeasedTransaction t;
  t.Claimed();
  t.clock.Advance(seconds(51));
  std::vector<Write> writes = t.SetV(1, Under::TheLease(*t.item.lease), /*best_effort=*/true);
  EXPECT_EQ(t.send.Send(writes).fate[0], Sent::Fate::kNotSent);
  EXPECT_EQ(t.V(), 0);
  EXPECT_FALSE(t.item.ended);
}

TEST(LeaseAsAType, AWriteUnderALiveLeaseIsSentFencedByItsTerms) {
  std::vector<PlannedWrite> record;
  OneLeasedTransaction t(&record);
  t.Claimed();
  std::vector<Write> writes = t.SetV(1, Under::TheLease(*t.item.lease));
  EXPECT_EQ(t.send.Send(writes).fate[0], Sent::Fate::kMatched);
  ASSERT_EQ(record.size(), 1U);
  const Predicate* fence = Fence(record[0].filter);
  ASSERT_NE(fence, nullptr) << record[0].filter.ToString();
  EXPECT_EQ(fence->value, Value(t.item.lease->terms().fence));
}

TEST(LeaseAsAType, AClaimIsFencedByTheTermsItOffersBeforeItHoldsAnyLease) {
  std::vector<PlannedWrite> record;
  OneLeasedTransaction t(&record);
  t.item.offered = t.keeper.Offer("n2", DateTime{t.clock.WallMillis()});
  std::vector<Write> writes = t.SetV(1, Under::TheClaim(t.item.offered));
  (void)t.send.Send(writes);
  ASSERT_EQ(record.size(), 1U);
  const Predicate* fence = Fence(record[0].filter);
  ASSERT_NE(fence, nullptr);
  EXPECT_EQ(fence->value, Value(t.item.offered.fence));
}

TEST(LeaseAsAType, ALeaseFreeWriteOfATransactionHoldingNoLeaseIsSentUnfencedAtAnyTime) {
  OneLeasedTransaction t;
  t.clock.Advance(seconds(3600));
  std::vector<Write> writes = t.SetV(1, Under::NoLease(LeaseFree::kLateWrite, t.item.lease));
  EXPECT_EQ(t.send.Send(writes).fate[0], Sent::Fate::kMatched);
  EXPECT_EQ(t.V(), 1);
}

TEST(LeaseAsAType, ALeaseFreeCleanUpOfATransactionStillHoldingALeaseKeepsThatLeasesDeadline) {
  OneLeasedTransaction t;
  t.Claimed();
  t.clock.Advance(seconds(51));
  std::vector<Write> writes =
      t.SetV(1, Under::NoLease(LeaseFree::kUntrace, t.item.lease), /*best_effort=*/true);
  EXPECT_EQ(t.send.Send(writes).fate[0], Sent::Fate::kNotSent)
      << "a daemon stalled past its deadline writes nothing more";
  EXPECT_EQ(t.V(), 0);
}

}  // namespace
}  // namespace txn_recovery::testing
