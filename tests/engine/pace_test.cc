// The pace bound (sweep.pace): a backlog drains no faster than the bound, a fleet's members
// each at their part of it, no allowance builds up while nothing is driven, and a daemon
// told to stop while waiting for its slot stops. Timing is asserted on a ManualClock only,
// where it is exact; against the test server the sweep is checked for its result alone.
#include "txn_recovery/engine/pace.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "support/bank.h"
#include "support/bank_test.h"
#include "txn_recovery/engine/sweeper.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

milliseconds Since(ManualClock& clock, std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<milliseconds>(clock.MonotonicNow() - t0);
}

TEST(Pace, TheFirstBulkGoesAtOnceAndTheNextWaitsItsPartOfASecond) {
  ManualClock clock;
  Pace pace(&clock, 100);
  const auto t0 = clock.MonotonicNow();
  ASSERT_TRUE(pace.Take(50, 1, nullptr));
  EXPECT_EQ(Since(clock, t0), milliseconds(0));
  ASSERT_TRUE(pace.Take(50, 1, nullptr));
  EXPECT_GE(Since(clock, t0), milliseconds(500));
  EXPECT_LE(Since(clock, t0), milliseconds(510));
  EXPECT_GE(pace.waited(), milliseconds(500));
  ASSERT_TRUE(pace.Take(100, 1, nullptr));
  EXPECT_GE(Since(clock, t0), milliseconds(1000)) << "100 more at 100 per second: one second";
  EXPECT_LE(Since(clock, t0), milliseconds(1020));
}

TEST(Pace, AMemberOfAFleetOfFourDrivesAQuarterOfTheBound) {
  ManualClock clock;
  Pace pace(&clock, 100);
  const auto t0 = clock.MonotonicNow();
  ASSERT_TRUE(pace.Take(25, 4, nullptr));
  ASSERT_TRUE(pace.Take(25, 4, nullptr));
  // 25 transactions at 25 per second.
  EXPECT_GE(Since(clock, t0), milliseconds(1000));
  EXPECT_LE(Since(clock, t0), milliseconds(1010));
}

TEST(Pace, AnIdleHourBuildsNoAllowance) {
  ManualClock clock;
  Pace pace(&clock, 100);
  ASSERT_TRUE(pace.Take(100, 1, nullptr));
  clock.Advance(std::chrono::hours(1));
  const auto t0 = clock.MonotonicNow();
  ASSERT_TRUE(pace.Take(100, 1, nullptr));
  EXPECT_EQ(Since(clock, t0), milliseconds(0)) << "the first bulk after the pause goes at once";
  ASSERT_TRUE(pace.Take(100, 1, nullptr));
  EXPECT_GE(Since(clock, t0), milliseconds(1000)) << "the next waits: the idle hour is not saved";
}

TEST(Pace, UnboundedNeverWaits) {
  ManualClock clock;
  Pace pace(&clock, 0);
  const auto t0 = clock.MonotonicNow();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(pace.Take(10'000, 4, nullptr));
  EXPECT_EQ(Since(clock, t0), milliseconds(0));
  EXPECT_EQ(pace.waited(), milliseconds(0));
}

TEST(Pace, ANewRateTakesEffectAtTheNextTake) {
  ManualClock clock;
  Pace pace(&clock, 10);
  ASSERT_TRUE(pace.Take(10, 1, nullptr));  // the next slot is a second away
  pace.SetRate(0);
  const auto t0 = clock.MonotonicNow();
  ASSERT_TRUE(pace.Take(1'000, 1, nullptr));
  EXPECT_EQ(Since(clock, t0), milliseconds(0)) << "lifted for a maintenance window";
  EXPECT_EQ(pace.rate(), 0);
}

// A clock whose every sleep is interrupted by a stop request (SIGTERM arriving).
class StoppingClock final : public Clock {
 public:
  explicit StoppingClock(std::atomic<bool>* stop) : stop_(stop) {}
  std::chrono::steady_clock::time_point MonotonicNow() override { return inner_.MonotonicNow(); }
  std::int64_t WallMillis() override { return inner_.WallMillis(); }
  void SleepFor(milliseconds d) override {
    slept_ += d;
    inner_.Advance(d);
    *stop_ = true;
  }
  milliseconds slept() const { return slept_; }

 private:
  ManualClock inner_;
  std::atomic<bool>* stop_;
  milliseconds slept_{0};
};

TEST(Pace, AStopWhileWaitingIsAnsweredWithinATenthOfASecond) {
  std::atomic<bool> stop{false};
  StoppingClock clock(&stop);
  Pace pace(&clock, 1);
  ASSERT_TRUE(pace.Take(1, 1, &stop));
  EXPECT_FALSE(pace.Take(1'000, 1, &stop)) << "its slot is a second away: it stops instead";
  EXPECT_LE(clock.slept(), milliseconds(100));
}

class PacedSweep : public BankTest {
 protected:
  PacedSweep() : BankTest(8) {}
};

// An outage left 300 transfers stuck; a daemon with sweep.pace drains them all, balances
// conserved, and on a clock the test controls, no faster than the bound.
TEST_P(PacedSweep, ABacklogDrainsWholeAtTheBound) {
  const Snapshot before = bank_->Take();
  constexpr int kTransfers = 300;
  std::vector<Value> ids;
  for (int i = 0; i < kTransfers; ++i)
    ids.push_back(bank_->Transfer(Bank::Account(i % 8), Bank::Account((i + 3) % 8), 1,
                                  1 + i % (kAppStepCount - 1)));
  bank_->AgeAll(std::chrono::hours(1));

  // On the real clock (the test server) a bound the server would not reach anyway keeps
  // the test quick; it checks the sweep's result with the bound on, not its speed.
  const bool manual = GetParam() == "memory";
  const double rate = manual ? 100 : 100'000;
  SweepOptions o;
  o.lease.owner = "daemon-paced";
  o.workers = 1;
  o.batch_size = 100;
  o.bulk_size = 50;
  o.pace = std::make_shared<Pace>(backend_->clock(), rate);
  Sweeper sweeper(backend_->store(), backend_->clock(), o);
  const auto t0 = backend_->clock()->MonotonicNow();
  WatchSummary summary;
  Must(sweeper.SweepWatch(bank_->Watch(), nullptr, &summary));
  const auto elapsed = backend_->clock()->MonotonicNow() - t0;

  EXPECT_EQ(summary.resolved, kTransfers);
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
  if (manual) {
    // The first bulk goes at once; the other 250 transactions take 2.5 s at 100 per second.
    EXPECT_GE(elapsed, seconds(2) + milliseconds(500));
    EXPECT_GE(summary.pace_waited, seconds(2) + milliseconds(500));
  }
}

// Two members of a fleet share the bound: each drives its share at half of it.
TEST_P(PacedSweep, AMemberOfATwoMemberFleetDrivesItsShareAtHalfTheBound) {
  if (GetParam() != "memory") GTEST_SKIP() << "timing is exact on the test's own clock only";
  const Snapshot before = bank_->Take();
  constexpr int kTransfers = 300;
  std::vector<Value> ids;
  for (int i = 0; i < kTransfers; ++i)
    ids.push_back(bank_->Transfer(Bank::Account(i % 8), Bank::Account((i + 3) % 8), 1, 2));
  bank_->AgeAll(std::chrono::hours(1));
  const Share mine{0, 2};
  int owned = 0;
  for (const Value& id : ids) owned += mine.Owns(id) ? 1 : 0;
  ASSERT_GT(owned, 100);

  SweepOptions o;
  o.lease.owner = "member-0";
  o.workers = 1;
  o.batch_size = 50;
  o.bulk_size = 50;
  o.share = mine;
  o.pace = std::make_shared<Pace>(backend_->clock(), 100);
  Sweeper sweeper(backend_->store(), backend_->clock(), o);
  const auto t0 = backend_->clock()->MonotonicNow();
  WatchSummary summary;
  Must(sweeper.SweepWatch(bank_->Watch(), nullptr, &summary));
  const auto elapsed = backend_->clock()->MonotonicNow() - t0;
  EXPECT_EQ(summary.resolved, owned);
  // Its first bulk at once, the rest at 50 a second: half of the fleet's 100.
  const auto at_half = milliseconds((owned - 50) * 1000 / 50);
  EXPECT_GE(elapsed, at_half);
  EXPECT_LT(elapsed, at_half + seconds(1)) << "slower than its half of the bound";
  // The other member's share, by another sweep, leaves the bank whole.
  SweepOptions other = o;
  other.lease.owner = "member-1";
  other.share = Share{1, 2};
  Sweeper second(backend_->store(), backend_->clock(), other);
  Must(second.SweepWatch(bank_->Watch(), nullptr, &summary));
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

INSTANTIATE_TEST_SUITE_P(Backends, PacedSweep, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
