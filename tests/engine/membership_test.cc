// Fleet membership (docs/fleet.md): member records heartbeated on the server's clock, the
// live list, expiry and removal, and the division of the 256 buckets by stride. Against the
// in-memory store and the test server; the bucket function itself needs neither.
#include "txn_recovery/engine/membership.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <set>
#include <thread>

#include "support/fault_store.h"
#include "support/scenario.h"
#include "support/test_env.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kExpiry = seconds(30);

DateTime Plus(DateTime t, milliseconds d) {
  return DateTime{t.millis + d.count()};
}

MemberRecord Member(std::string id, std::vector<std::string> watches = {"transactions"}) {
  return MemberRecord{std::move(id), "db-1", "txn-recoveryd test", std::move(watches), {}};
}

class Membership : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    ns_ = {backend_->database(), "txn_recoveryd_members"};
  }
  Store* store() { return backend_->store(); }
  DateTime ServerNow() {
    DateTime now;
    EXPECT_TRUE(store()->ServerTime(&now).ok());
    return now;
  }
  std::vector<MemberRecord> Live(DateTime server_now) {
    std::vector<MemberRecord> live;
    EXPECT_TRUE(LiveMembers(store(), ns_, kExpiry, server_now, &live).ok());
    return live;
  }
  static std::vector<std::string> Ids(const std::vector<MemberRecord>& members) {
    std::vector<std::string> ids;
    for (const MemberRecord& m : members) ids.push_back(m.id);
    return ids;
  }
  // Ages a member's last heartbeat, as a member that stopped heartbeating would leave it.
  void BackdateHeartbeat(const std::string& id, DateTime to) {
    WriteResult r;
    Must(store()->UpdateOne(ns_, Filter().Eq("_id", id), Update().Set("heartbeat", to), &r));
    ASSERT_EQ(r.matched, 1);
  }

  std::unique_ptr<TestBackend> backend_;
  Namespace ns_;
};

TEST_P(Membership, AHeartbeatCreatesTheRecordStampedWithTheServersTime) {
  const DateTime before = ServerNow();
  Must(Heartbeat(store(), ns_, Member("m-a")));
  const DateTime after = ServerNow();
  const std::vector<MemberRecord> live = Live(after);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].id, "m-a");
  EXPECT_EQ(live[0].host, "db-1");
  EXPECT_EQ(live[0].watches, std::vector<std::string>{"transactions"});
  EXPECT_GE(live[0].heartbeat.millis, before.millis - 1);
  EXPECT_LE(live[0].heartbeat.millis, after.millis + 1);

  // The next heartbeat updates the one record, its fields rewritten.
  MemberRecord moved = Member("m-a");
  moved.watches = {"transactions", "orders"};
  Must(Heartbeat(store(), ns_, moved));
  std::int64_t n = 0;
  Must(store()->Count(ns_, Filter(), &n));
  EXPECT_EQ(n, 1);
  EXPECT_EQ(Live(ServerNow())[0].watches, moved.watches);
}

TEST_P(Membership, ARecordExpiresOnTheServersClockAndIsRemovedThenComesBackAtItsNextHeartbeat) {
  Must(Heartbeat(store(), ns_, Member("m-a")));
  const DateTime now = ServerNow();
  EXPECT_EQ(Ids(Live(Plus(now, kExpiry - seconds(1)))), std::vector<std::string>{"m-a"});
  EXPECT_TRUE(Live(Plus(now, kExpiry + seconds(1))).empty());

  std::int64_t removed = -1;
  Must(RemoveExpired(store(), ns_, kExpiry, now, &removed));
  EXPECT_EQ(removed, 0);
  Must(RemoveExpired(store(), ns_, kExpiry, Plus(now, kExpiry + seconds(1)), &removed));
  EXPECT_EQ(removed, 1);

  Must(Heartbeat(store(), ns_, Member("m-a")));
  EXPECT_EQ(Ids(Live(ServerNow())), std::vector<std::string>{"m-a"});
}

TEST_P(Membership, TwoMembersSplitTheBucketsEvenlyAndEveryIdHasOneOwner) {
  Must(Heartbeat(store(), ns_, Member("m-b")));
  Must(Heartbeat(store(), ns_, Member("m-a")));
  const std::vector<MemberRecord> live = Live(ServerNow());
  ASSERT_EQ(Ids(live), (std::vector<std::string>{"m-a", "m-b"}));
  const Share a = ShareOf(live, "m-a", "transactions"), b = ShareOf(live, "m-b", "transactions");
  EXPECT_EQ(a, (Share{0, 2}));
  EXPECT_EQ(b, (Share{1, 2}));
  EXPECT_EQ(a.Buckets(), 128u);
  EXPECT_EQ(b.Buckets(), 128u);
  int owned_by_a = 0;
  for (std::int64_t i = 0; i < 2000; ++i) {
    const Value id(i);
    EXPECT_NE(a.Owns(id), b.Owns(id)) << i;
    owned_by_a += a.Owns(id) ? 1 : 0;
  }
  EXPECT_GT(owned_by_a, 850);  // about half of 2000
  EXPECT_LT(owned_by_a, 1150);
}

// A rolling upgrade: a member of a newer version, which writes a newer format, is listed
// and shares the buckets like any other (a share only divides the work; the lease decides),
// and a record says the format its member writes.
TEST_P(Membership, AMemberOfANewerFormatIsListedAndSharesLikeAnyOther) {
  Must(Heartbeat(store(), ns_, Member("m-old")));
  Must(Heartbeat(store(), ns_, Member("m-new")));
  WriteResult r;
  Must(store()->UpdateOne(ns_, Filter().Eq("_id", "m-new"),
                          Update().Set("format", std::int64_t{2}).Set("version", "9.0.0"), &r));
  const std::vector<MemberRecord> live = Live(ServerNow());
  ASSERT_EQ(Ids(live), (std::vector<std::string>{"m-new", "m-old"}));
  EXPECT_EQ(live[0].format, 2);
  EXPECT_EQ(live[1].format, RecoveryRecord::kFormat) << "what this version's heartbeat writes";
  EXPECT_EQ(ShareOf(live, "m-old", "transactions").Buckets(), kFleetBuckets / 2);
}

TEST_P(Membership, AMemberThatExpiresGivesItsBucketsToTheOther) {
  Must(Heartbeat(store(), ns_, Member("m-a")));
  Must(Heartbeat(store(), ns_, Member("m-b")));
  const DateTime now = ServerNow();
  BackdateHeartbeat("m-a", Plus(now, -(kExpiry + seconds(1))));
  const std::vector<MemberRecord> live = Live(now);
  EXPECT_EQ(Ids(live), std::vector<std::string>{"m-b"});
  const Share b = ShareOf(live, "m-b", "transactions");
  EXPECT_EQ(b, (Share{0, 1}));
  EXPECT_EQ(b.Buckets(), kFleetBuckets);
  for (std::int64_t i = 0; i < 300; ++i) EXPECT_TRUE(b.Owns(Value(i)));
  // Its stale view does not make it lose anything: a member counts itself, listed or not.
  EXPECT_EQ(ShareOf(live, "m-a", "transactions"), (Share{0, 2}));
}

TEST_P(Membership, LeavingDeletesOnlyOnesOwnRecord) {
  Must(Heartbeat(store(), ns_, Member("m-a")));
  Must(Heartbeat(store(), ns_, Member("m-b")));
  Must(Leave(store(), ns_, "m-a"));
  EXPECT_EQ(Ids(Live(ServerNow())), std::vector<std::string>{"m-b"});
}

TEST_P(Membership, OneNumericIdIsOneBucketWhateverItsTypeAsTheServerStoresIt) {
  const Namespace txns{backend_->database(), "transactions"};
  Must(store()->InsertMany(txns, {Document{{"_id", std::int32_t{1}}}}));
  // The server finds the int32 1 by 1L and by 1.0: one _id, so one bucket.
  for (const Value& spelling : {Value(std::int64_t{1}), Value(1.0)}) {
    std::optional<Document> doc;
    Must(store()->FindOne(txns, Filter().Eq("_id", spelling), &doc));
    ASSERT_TRUE(doc.has_value()) << spelling.ToString();
    EXPECT_EQ(BucketOf(*doc->Get("_id")), BucketOf(spelling));
  }
  EXPECT_EQ(BucketOf(Value(std::int32_t{1})), BucketOf(Value(std::int64_t{1})));
  EXPECT_EQ(BucketOf(Value(std::int32_t{1})), BucketOf(Value(1.0)));
}

INSTANTIATE_TEST_SUITE_P(Backends, Membership, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

// ---- The bucket function and shares: pure ------------------------------------------------

// The orphan scan reads every marked participant whatever the share: one member per period
// runs it, whichever claims it first. A member that keeps heartbeating but stops scanning
// (hung in a long batch, its scans failing) holds it up for one period, not for as long as
// it lives. The server's time as the members read it is moved on (a real server's clock
// cannot be); its own stamps keep its clock.
TEST_P(Membership, OneMemberPerPeriodRunsTheOrphanScanAndAnotherTakesItOverWhenItStops) {
  FaultStore server(store());
  constexpr milliseconds kPeriod = seconds(60);
  Must(Heartbeat(store(), ns_, Member("m-a")));
  Must(Heartbeat(store(), ns_, Member("m-b")));
  auto claim = [&](const std::string& collection, const std::string& member) {
    bool claimed = false;
    Must(ClaimOrphanScan(&server, ns_, collection, member, kPeriod, &claimed));
    return claimed;
  };
  EXPECT_TRUE(claim("transactions", "m-a")) << "the first claim of a watch never scanned";
  EXPECT_FALSE(claim("transactions", "m-b")) << "m-a claimed it within the period";
  EXPECT_TRUE(claim("orders", "m-b")) << "each watch has its own claims";

  // m-a heartbeats on, and never scans again.
  server.ShiftServerTime(kPeriod - seconds(5));
  Must(Heartbeat(store(), ns_, Member("m-a")));
  EXPECT_FALSE(claim("transactions", "m-b")) << "within m-a's period still";
  server.ShiftServerTime(seconds(10));
  EXPECT_TRUE(claim("transactions", "m-b")) << "m-a held the scan up for one period, no longer";

  // The claims are kept beside the member records, never listed or removed as members.
  EXPECT_EQ(Ids(Live(ServerNow())), (std::vector<std::string>{"m-a", "m-b"}));
  std::int64_t removed = 0;
  Must(RemoveExpired(store(), ns_, kExpiry, Plus(ServerNow(), seconds(3600)), &removed));
  EXPECT_EQ(removed, 2);
  std::int64_t left = 0;
  Must(store()->Count(ns_, Filter(), &left));
  EXPECT_EQ(left, 2) << "the orphan scan records of the two watches";
}

// Members that claim a watch's first orphan scan at once (its record not created yet): one
// runs it.
TEST_P(Membership, OfMembersClaimingTheFirstOrphanScanAtOnceOneRunsIt) {
  constexpr int kMembers = 4;
  std::atomic<int> claimed{0};
  std::latch start(kMembers);
  {
    std::vector<std::jthread> members;
    for (int i = 0; i < kMembers; ++i)
      members.emplace_back([&, i] {
        start.arrive_and_wait();
        bool mine = false;
        Must(ClaimOrphanScan(store(), ns_, "ledger", "m-" + std::to_string(i), seconds(60), &mine));
        if (mine) ++claimed;
      });
  }
  EXPECT_EQ(claimed.load(), 1);
}

TEST(Buckets, NumbersEqualToMongoDbAreOneBucket) {
  EXPECT_EQ(BucketOf(Value(std::int32_t{-7})), BucketOf(Value(-7.0)));
  EXPECT_EQ(BucketOf(Value(std::int64_t{1} << 60)), BucketOf(Value(1152921504606846976.0)));
  EXPECT_EQ(BucketOf(Value(0.0)), BucketOf(Value(-0.0)));
  EXPECT_EQ(BucketOf(Value(std::int32_t{0})), BucketOf(Value(-0.0)));
}

TEST(Buckets, AreStableAcrossReleases) {
  // Golden values: a change here is a protocol change (members of two releases would divide
  // the buckets differently while they run together).
  EXPECT_EQ(BucketOf(Value(std::int32_t{1})), 244u);
  EXPECT_EQ(BucketOf(Value("T-1")), 144u);
  EXPECT_EQ(BucketOf(Value(*ObjectId::FromHex("5f0c4d2e9b1e8a3c4d5e6f70"))), 225u);
  EXPECT_EQ(BucketOf(Value(Document{{"a", std::int32_t{1}}, {"b", "x"}})), 137u);
  EXPECT_EQ(BucketOf(Value(1.5)), 57u);
}

TEST(Buckets, DistinguishTypesAndFieldOrder) {
  EXPECT_NE(BucketOf(Value("1")), BucketOf(Value(std::int32_t{1})));
  // 256 buckets: a few pairs may collide by chance; the encodings must differ, so most do.
  int differ = 0;
  for (int i = 0; i < 50; ++i) {
    const std::string s = std::to_string(i);
    differ += BucketOf(Value(Document{{"a", s}, {"b", "x"}})) !=
              BucketOf(Value(Document{{"b", "x"}, {"a", s}}));
  }
  EXPECT_GT(differ, 40);
}

TEST(Shares, EveryBucketHasExactlyOneOwnerAndSharesDifferByOneAtMost) {
  for (std::uint32_t n = 1; n <= 7; ++n) {
    std::uint32_t total = 0, least = kFleetBuckets, most = 0;
    for (std::uint32_t p = 0; p < n; ++p) {
      const std::uint32_t b = Share{p, n}.Buckets();
      total += b;
      least = std::min(least, b);
      most = std::max(most, b);
    }
    EXPECT_EQ(total, kFleetBuckets) << n;
    EXPECT_LE(most - least, 1u) << n;
  }
}

TEST(Shares, DependOnTheSetOfMembersNotTheirOrderOrRepeats) {
  const std::vector<MemberRecord> listed = {Member("c"), Member("a"), Member("b"), Member("a")};
  EXPECT_EQ(ShareOf(listed, "b", "transactions"), (Share{1, 3}));
  EXPECT_EQ(ShareOf(listed, "d", "transactions"), (Share{3, 4}));  // itself, unlisted
  EXPECT_EQ(ShareOf({}, "z", "transactions"), (Share{0, 1}));
}

// Host a sweeps two collections of a database, host b only one of them (or its sweeps of
// the other fail, so it stopped listing it): a's share of the other is all of it, or half
// of those transactions would wait for a member that never sweeps them.
TEST(Shares, AreDividedOnlyAmongTheMembersThatSweepTheCollection) {
  const std::vector<MemberRecord> live = {Member("a", {"transfers", "orders"}),
                                          Member("b", {"transfers"})};
  EXPECT_EQ(ShareOf(live, "a", "transfers"), (Share{0, 2}));
  EXPECT_EQ(ShareOf(live, "b", "transfers"), (Share{1, 2}));
  EXPECT_EQ(ShareOf(live, "a", "orders"), (Share{0, 1}));
  for (std::int64_t i = 0; i < 300; ++i)
    EXPECT_TRUE(ShareOf(live, "a", "orders").Owns(Value(i))) << i;
  // A member that lists nothing is counted for nothing but itself.
  EXPECT_EQ(ShareOf({Member("a", {}), Member("b")}, "b", "transactions"), (Share{0, 1}));
}

}  // namespace
}  // namespace txn_recovery::testing
