// A fleet member as `run` keeps it (txn_recovery::FleetMember, docs/fleet.md): members that
// heartbeat divide each watch's buckets, a member that cannot drive a watch gives its share
// up, one that joins is seen between two batches, one that leaves hands its share over at
// once, and a member that loses its view of the fleet sweeps everything. Against the
// in-memory store and the test server.
#include "txn_recovery/engine/fleet_member.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/fault_store.h"
#include "support/scenario.h"
#include "support/test_env.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

MemberRecord Identity(const std::string& id) {
  return MemberRecord{id, "host-" + id, "txn-recoveryd test", {}, {}};
}

// What a member reported, as the daemon would log it.
struct Heard {
  int share_changes = 0;
  Share last_share;
  std::vector<std::string> failures;  // members namespaces whose membership failed
  std::int64_t expired_removed = 0;
  std::vector<std::string> leave_failures;

  FleetEvents Events() {
    FleetEvents e;
    e.share = [this](const WatchSpec&, const Share& s, bool changed) {
      last_share = s;
      share_changes += changed ? 1 : 0;
    };
    e.membership_failed = [this](const Namespace& ns, const Status&, bool) {
      failures.push_back(ns.ToString());
    };
    e.expired_removed = [this](const std::string&, std::int64_t n) { expired_removed += n; };
    e.leave_failed = [this](const std::string& db, const Status&) { leave_failures.push_back(db); };
    return e;
  }
};

class FleetMemberTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    watch_.name = "bank";
    watch_.ns = {backend_->database(), "transactions"};
    watch_.profile = Profile::Transfer();
    watches_ = {watch_};
  }
  Store* store() { return backend_->store(); }
  FleetMemberOptions Options() const {
    FleetMemberOptions o;
    o.heartbeat = seconds(60);  // no heartbeat falls due by itself within a test
    o.expiry = seconds(180);
    return o;
  }
  std::vector<std::string> RecordIds() {
    std::vector<std::string> ids;
    for (const Document& d : AllDocs(store(), {backend_->database(), "txn_recoveryd_members"}))
      if (const Value* id = d.Get("_id"); id != nullptr && id->is_string())
        ids.push_back(*id->as_string());
    return ids;
  }

  std::unique_ptr<TestBackend> backend_;
  WatchSpec watch_;
  std::vector<WatchSpec> watches_;
};

TEST_P(FleetMemberTest, TwoMembersThatHeartbeatDivideTheBucketsBetweenThem) {
  Heard a_heard, b_heard;
  FleetMember a(store(), Identity("a"), Options(), a_heard.Events());
  FleetMember b(store(), Identity("b"), Options(), b_heard.Events());
  a.Heartbeat(watches_);
  b.Heartbeat(watches_);
  a.Heartbeat(watches_);  // a sees b only from its second heartbeat

  ASSERT_TRUE(a.ShareOf(watch_).has_value());
  ASSERT_TRUE(b.ShareOf(watch_).has_value());
  EXPECT_EQ(*a.ShareOf(watch_), (Share{0, 2}));
  EXPECT_EQ(*b.ShareOf(watch_), (Share{1, 2}));
  EXPECT_EQ(a.ShareOf(watch_)->Buckets() + b.ShareOf(watch_)->Buckets(), kFleetBuckets);
  // a's share changed once (alone, then one of two): said twice in all, not at every beat.
  EXPECT_EQ(a_heard.share_changes, 2);
  a.Heartbeat(watches_);
  EXPECT_EQ(a_heard.share_changes, 2);
  // The overdue log names the member whose share held a transaction.
  ASSERT_TRUE(a.SweeperAt(watch_, 1).has_value());
  EXPECT_EQ(a.SweeperAt(watch_, 1)->id, "b");
  EXPECT_EQ(a.SweeperAt(watch_, 1)->host, "host-b");
  EXPECT_FALSE(a.SweeperAt(watch_, 2).has_value());
  EXPECT_TRUE(a_heard.failures.empty());
}

TEST_P(FleetMemberTest, AMemberThatJoinsIsSeenBetweenTwoBatchesWithoutAHeartbeatOfTheOthers) {
  FleetMember a(store(), Identity("a"), Options());
  FleetMember b(store(), Identity("b"), Options());
  a.Heartbeat(watches_);
  EXPECT_EQ(a.Refresh(watches_, watch_), (Share{0, 1}));
  EXPECT_FALSE(a.HeartbeatDue());
  b.Heartbeat(watches_);
  // The list read between batches, placed on the server's clock of a's last heartbeat.
  EXPECT_EQ(a.Refresh(watches_, watch_), (Share{0, 2}));
}

TEST_P(FleetMemberTest, AMemberWhoseSweepFailedGivesItsShareUpUntilACleanSweepResolvesSomething) {
  FleetMember a(store(), Identity("a"), Options());
  FleetMember b(store(), Identity("b"), Options());
  a.Heartbeat(watches_);
  b.Heartbeat(watches_);
  a.Heartbeat(watches_);
  ASSERT_EQ(b.ShareOf(watch_)->count, 2u);

  a.NoteSweep(watch_, /*clean=*/false, 0);
  a.Heartbeat(watches_);  // a's record no longer lists the watch
  b.Heartbeat(watches_);
  EXPECT_EQ(*b.ShareOf(watch_), (Share{0, 1})) << "b holds every bucket";
  EXPECT_EQ(*a.ShareOf(watch_), (Share{0, 2}))
      << "a still sweeps its own share (the claims decide)";

  // A clean sweep that resolved nothing proves nothing (the others drove a's old buckets).
  a.NoteSweep(watch_, /*clean=*/true, 0);
  a.Heartbeat(watches_);
  b.Heartbeat(watches_);
  EXPECT_EQ(b.ShareOf(watch_)->count, 1u);
  a.NoteSweep(watch_, /*clean=*/true, 3);
  a.Heartbeat(watches_);
  b.Heartbeat(watches_);
  EXPECT_EQ(b.ShareOf(watch_)->count, 2u);
}

TEST_P(FleetMemberTest, AMemberThatLeavesHandsItsShareOverAtTheOthersNextList) {
  FleetMember a(store(), Identity("a"), Options());
  FleetMember b(store(), Identity("b"), Options());
  a.Heartbeat(watches_);
  b.Heartbeat(watches_);
  ASSERT_EQ(b.ShareOf(watch_)->count, 2u);
  a.Leave();
  EXPECT_EQ(RecordIds(), std::vector<std::string>{"b"});
  EXPECT_FALSE(a.ShareOf(watch_).has_value());
  EXPECT_EQ(b.Refresh(watches_, watch_), (Share{0, 1}));
}

TEST_P(FleetMemberTest, ADatabaseNoLongerWatchedIsLeftAtTheNextHeartbeat) {
  FleetMember a(store(), Identity("a"), Options());
  a.Heartbeat(watches_);
  ASSERT_EQ(RecordIds(), std::vector<std::string>{"a"});
  a.Heartbeat({});  // a reload removed the last watch of the database
  EXPECT_TRUE(RecordIds().empty());
}

TEST_P(FleetMemberTest, AMemberThatLosesItsViewOfTheFleetSweepsEverythingAndSaysSo) {
  FaultStore faulty(store());
  Heard heard;
  FleetMember a(&faulty, Identity("a"), Options(), heard.Events());
  FleetMember b(store(), Identity("b"), Options());
  b.Heartbeat(watches_);
  a.Heartbeat(watches_);
  ASSERT_EQ(a.ShareOf(watch_)->count, 2u);

  faulty.CrashAfterWrites(0);
  a.Heartbeat(watches_);
  EXPECT_FALSE(a.ShareOf(watch_).has_value());
  EXPECT_EQ(a.Refresh(watches_, watch_), (Share{0, 1})) << "everything, while it has no view";
  ASSERT_EQ(heard.failures.size(), 1u);
  EXPECT_EQ(heard.failures.front(), backend_->database() + ".txn_recoveryd_members");
  a.Leave();  // the record expires instead; said
  EXPECT_EQ(heard.leave_failures, std::vector<std::string>{backend_->database()});
}

TEST_P(FleetMemberTest, OfTwoMembersOneRunsTheOrphanScanOfAPeriodAndALoneDaemonAlwaysDoes) {
  FleetMember a(store(), Identity("a"), Options());
  FleetMember b(store(), Identity("b"), Options());
  bool mine = false;
  // No view of a fleet yet: as a lone daemon, which scans whenever it tries.
  ASSERT_TRUE(a.ClaimOrphanScan(watch_, seconds(60), &mine).ok());
  EXPECT_TRUE(mine);
  a.Heartbeat(watches_);
  b.Heartbeat(watches_);
  bool a_mine = false, b_mine = false;
  ASSERT_TRUE(a.ClaimOrphanScan(watch_, seconds(60), &a_mine).ok());
  ASSERT_TRUE(b.ClaimOrphanScan(watch_, seconds(60), &b_mine).ok());
  EXPECT_TRUE(a_mine);
  EXPECT_FALSE(b_mine) << "claimed by a for the period";
}

INSTANTIATE_TEST_SUITE_P(Backends, FleetMemberTest, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
