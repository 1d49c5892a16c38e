// Sweeps that divide the work (docs/fleet.md): with a share, a sweep reads the candidates'
// _ids alone and drives only its share's transactions; two sweeps with complementary shares
// resolve everything between them, each only its own, and the bank's invariants hold.
#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "support/bank_test.h"
#include "support/fault_store.h"
#include "support/scenario.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/engine/sweeper.h"

namespace txn_recovery::testing {
namespace {

class FleetSweep : public BankTest {
 protected:
  FleetSweep() : BankTest(4) {}

  WatchSummary SweepShare(const std::string& owner, std::optional<Share> share,
                          std::vector<TxnReport>* reports, bool dry_run = false,
                          const std::function<void(SweepOptions*)>& tune = nullptr,
                          Store* store = nullptr) {
    SweepOptions o;
    if (tune) tune(&o);
    o.dry_run = dry_run;
    o.lease.owner = owner;
    o.workers = 2;
    o.batch_size = 16;
    o.bulk_size = 5;
    o.share = share;
    Sweeper sweeper(store != nullptr ? store : backend_->store(), backend_->clock(), o);
    WatchSummary summary;
    std::mutex mu;
    (void)sweeper.SweepWatch(
        bank_->Watch(),
        [&](const TxnReport& r) {
          std::lock_guard lock(mu);
          reports->push_back(r);
        },
        &summary);
    return summary;
  }
};

TEST_P(FleetSweep, AFindWithAProjectionReturnsTheIdAndThoseFieldsOnly) {
  const Namespace ns{backend_->database(), "projected"};
  Must(backend_->store()->InsertMany(
      ns, {Document{{"_id", std::int32_t{1}},
                    {"a", Document{{"b", std::int32_t{2}}, {"c", std::int32_t{3}}}},
                    {"d", std::int32_t{4}}}}));
  FindOptions options;
  options.projection = {"a.b"};
  std::unique_ptr<Cursor> cursor;
  Must(backend_->store()->Find(ns, Filter(), options, &cursor));
  Document doc;
  bool has = false;
  Must(cursor->Next(&doc, &has));
  ASSERT_TRUE(has);
  EXPECT_EQ(doc, (Document{{"_id", std::int32_t{1}}, {"a", Document{{"b", std::int32_t{2}}}}}))
      << Value(doc).ToString();
}

TEST_P(FleetSweep, TwoComplementarySharesResolveEverythingEachOnlyItsOwn) {
  const Snapshot before = bank_->Take();
  constexpr int kTransfers = 40;
  std::vector<Value> ids;
  for (int i = 0; i < kTransfers; ++i)
    ids.push_back(bank_->Transfer(Bank::Account(i % 4), Bank::Account((i + 1) % 4), 1,
                                  1 + i % (kAppStepCount - 1)));
  bank_->AgeAll(std::chrono::hours(1));

  const Share shares[] = {{0, 2}, {1, 2}};
  // Rehearsed alone, a share reads every candidate's id and fetches its own only.
  std::vector<TxnReport> planned;
  const WatchSummary rehearsal = SweepShare("daemon-0", shares[0], &planned, /*dry_run=*/true);
  int owned = 0;
  for (const Value& id : ids) owned += shares[0].Owns(id) ? 1 : 0;
  EXPECT_EQ(rehearsal.examined, owned);
  EXPECT_EQ(rehearsal.outside_share, kTransfers - owned);

  std::vector<TxnReport> reports[2];
  WatchSummary summaries[2];
  {
    std::jthread first([&] { summaries[0] = SweepShare("daemon-0", shares[0], &reports[0]); });
    std::jthread second([&] { summaries[1] = SweepShare("daemon-1", shares[1], &reports[1]); });
  }

  std::set<std::string> resolved;
  for (int d = 0; d < 2; ++d) {
    EXPECT_TRUE(summaries[d].status.ok()) << summaries[d].status.ToString();
    // What the other resolved first is no longer a candidate: at most every transfer.
    EXPECT_LE(summaries[d].examined + summaries[d].outside_share, kTransfers);
    EXPECT_EQ(summaries[d].examined, summaries[d].resolved);
    EXPECT_GT(summaries[d].resolved, 0) << "daemon-" << d << " drove nothing";
    for (const TxnReport& r : reports[d]) {
      EXPECT_TRUE(shares[d].Owns(r.id)) << "daemon-" << d << " drove " << r.id.ToString();
      EXPECT_EQ(r.result.outcome, Outcome::kResolved) << r.id.ToString();
      resolved.insert(r.id.ToString());
    }
  }
  EXPECT_EQ(resolved.size(), static_cast<std::size_t>(kTransfers));
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

// A member that stays live but never drives its share (its writes keep failing in a way it
// does not recognise, it hangs between heartbeats): the other member takes what it has seen
// stuck outside its own share for overdue_after, counted from its own first sighting, so
// that an old backlog is still divided while its holder drains it.
TEST_P(FleetSweep, AMemberThatDoesNotDriveItsShareLeavesWhatStaysStuckToTheOther) {
  const Snapshot before = bank_->Take();
  constexpr int kTransfers = 40;
  std::vector<Value> ids;
  for (int i = 0; i < kTransfers; ++i) {
    // Pending or applied (steps 2 to 7), far older than resume_after + overdue_after: a
    // backlog left by an outage.
    ids.push_back(bank_->Transfer(Bank::Account(i % 4), Bank::Account((i + 1) % 4), 1, 2 + i % 6));
    bank_->Age(ids.back(), std::chrono::minutes(20));
  }
  const Share mine{1, 2};  // member 0, holding the rest, is hung
  int in_share = 0;
  for (const Value& id : ids) in_share += mine.Owns(id) ? 1 : 0;
  const int elsewhere = kTransfers - in_share;
  ASSERT_GT(elsewhere, 0);
  // One memory across the member's sweeps, as a `run` daemon keeps it. Time passes for the
  // member through the server's time it reads (a real server's clock cannot be moved),
  // in steps far longer than a sweep takes, so that how long the sweeps themselves take on a
  // loaded machine cannot make a transaction overdue early.
  auto memory = std::make_shared<SweepMemory>();
  FaultStore store(backend_->store());
  constexpr std::chrono::milliseconds kOverdueAfter = std::chrono::minutes(1);
  auto sweep = [&](std::vector<TxnReport>* reports) {
    WatchSummary s = SweepShare(
        "daemon-1", mine, reports, false,
        [&](SweepOptions* o) {
          o->memory = memory;
          o->overdue_after = kOverdueAfter;
        },
        &store);
    EXPECT_TRUE(s.status.ok()) << s.status.ToString();
    return s;
  };
  auto pass = [&](std::chrono::milliseconds d) { store.ShiftServerTime(d); };

  // However old, what was first seen now is not overdue: its holder may be draining it.
  std::vector<TxnReport> first;
  WatchSummary s = sweep(&first);
  EXPECT_EQ(s.resolved, in_share);
  EXPECT_EQ(s.overdue_taken, 0);
  EXPECT_EQ(s.outside_share, elsewhere);
  pass(std::chrono::seconds(20));
  std::vector<TxnReport> second;
  s = sweep(&second);
  EXPECT_EQ(s.resolved, 0);
  EXPECT_EQ(s.overdue_taken, 0) << "seen stuck for less than overdue_after";
  pass(std::chrono::seconds(45));

  // Still stuck overdue_after after this member first saw it: taken, and said whose it was.
  std::vector<TxnReport> third;
  s = sweep(&third);
  EXPECT_EQ(s.overdue_taken, elsewhere);
  EXPECT_EQ(s.resolved, elsewhere);
  EXPECT_EQ(s.outside_share, 0);
  for (const TxnReport& r : third) {
    EXPECT_EQ(r.result.outcome, Outcome::kResolved) << r.id.ToString();
    EXPECT_FALSE(mine.Owns(r.id)) << r.id.ToString() << " was resolved by the first sweep";
    ASSERT_TRUE(r.overdue_in_share_of) << r.id.ToString();
    EXPECT_EQ(*r.overdue_in_share_of, 0u) << "the hung member's share holds it";
  }
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

// A transaction its holder drives between two sweeps of the other member is forgotten by the
// other: if it is stuck again later, its overdue clock starts again.
TEST_P(FleetSweep, ASightingIsForgottenOnceASweepNoLongerFindsIt) {
  const Namespace ns{backend_->database(), "transactions"};
  SweepMemory memory;
  const DateTime t0{1'000'000};
  memory.BeginSightings(ns);
  EXPECT_EQ(memory.SightedOutsideShare(ns, "a", t0).millis, t0.millis);
  EXPECT_EQ(memory.SightedOutsideShare(ns, "b", t0).millis, t0.millis);
  memory.EndSightings(ns);
  memory.BeginSightings(ns);  // sights a again, not b
  EXPECT_EQ(memory.SightedOutsideShare(ns, "a", DateTime{t0.millis + 10}).millis, t0.millis);
  memory.EndSightings(ns);
  memory.BeginSightings(ns);
  EXPECT_EQ(memory.SightedOutsideShare(ns, "a", DateTime{t0.millis + 20}).millis, t0.millis);
  EXPECT_EQ(memory.SightedOutsideShare(ns, "b", DateTime{t0.millis + 20}).millis, t0.millis + 20)
      << "b was not sighted by the sweep before: its clock starts again";
  memory.EndSightings(ns);
  // A sweep cut short before it reached a (no EndSightings) neither forgets it nor starts
  // its clock again: a member whose sweeps are often stopped still takes it in time.
  memory.BeginSightings(ns);
  memory.BeginSightings(ns);
  EXPECT_EQ(memory.SightedOutsideShare(ns, "a", DateTime{t0.millis + 40}).millis, t0.millis);
  memory.EndSightings(ns);
  memory.BeginSightings(ns);
  memory.EndSightings(ns);  // a complete sweep that did not find a
  memory.BeginSightings(ns);
  EXPECT_EQ(memory.SightedOutsideShare(ns, "a", DateTime{t0.millis + 60}).millis, t0.millis + 60);
}

// Members started together list the fleet before the others have heartbeated: the view is
// refreshed before each batch, so that a member which saw itself alone leaves the others'
// buckets from its next batch instead of holding everything for its whole first sweep.
TEST_P(FleetSweep, AViewRefreshedBetweenBatchesLeavesTheNewcomersBucketsFromTheNextBatch) {
  const Snapshot before = bank_->Take();
  constexpr int kTransfers = 40;
  std::vector<Value> ids;
  for (int i = 0; i < kTransfers; ++i)
    ids.push_back(bank_->Transfer(Bank::Account(i % 4), Bank::Account((i + 1) % 4), 1, 3));
  bank_->AgeAll(kStuck);
  int refreshes = 0;
  std::vector<TxnReport> reports;
  const WatchSummary s = SweepShare("daemon-0", Share{0, 1}, &reports, false, [&](SweepOptions* o) {
    o->workers = 1;  // the batches in the order they are fetched
    o->refresh_share = [&refreshes] { return ++refreshes == 1 ? Share{0, 1} : Share{0, 2}; };
  });
  ASSERT_TRUE(s.status.ok()) << s.status.ToString();
  EXPECT_GT(refreshes, 1);
  int newcomers = 0;  // driven from the newcomer's buckets: the first batch's only
  for (const TxnReport& r : reports)
    if (!Share{0, 2}.Owns(r.id)) ++newcomers;
  EXPECT_LE(newcomers, 5) << "more than the first batch (bulk_size 5)";
  EXPECT_GT(s.outside_share, 0);
  EXPECT_EQ(s.resolved + s.outside_share, kTransfers);
  EXPECT_EQ(s.overdue_taken, 0);
  // The newcomer drives its share.
  std::vector<TxnReport> theirs;
  EXPECT_EQ(SweepShare("daemon-1", Share{1, 2}, &theirs).resolved, s.outside_share);
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

// A member of two sees the other leave (killed; its record expired) in the middle of a
// backlog: the ids it passed over as the other's are read again in the same sweep and
// driven, instead of waiting for its next sweep.
TEST_P(FleetSweep, WhenAMemberLeavesMidSweepItsSharePassedOverIsDrivenInTheSameSweep) {
  const Snapshot before = bank_->Take();
  constexpr int kTransfers = 40;
  for (int i = 0; i < kTransfers; ++i)
    bank_->Transfer(Bank::Account(i % 4), Bank::Account((i + 1) % 4), 1, 3);
  bank_->AgeAll(kStuck);
  int refreshes = 0;
  std::vector<TxnReport> reports;
  const WatchSummary s = SweepShare("daemon-0", Share{0, 2}, &reports, false, [&](SweepOptions* o) {
    o->workers = 1;
    o->refresh_share = [&refreshes] { return ++refreshes <= 2 ? Share{0, 2} : Share{0, 1}; };
  });
  ASSERT_TRUE(s.status.ok()) << s.status.ToString();
  EXPECT_EQ(s.resolved, kTransfers) << "the departed member's share waited for the next sweep";
  EXPECT_EQ(s.outside_share, 0);
  std::set<std::string> once;
  for (const TxnReport& r : reports)
    EXPECT_TRUE(once.insert(r.id.ToString()).second) << r.id.ToString();
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

TEST_P(FleetSweep, WithoutAShareASweepDrivesEverything) {
  const Snapshot before = bank_->Take();
  for (int i = 0; i < 10; ++i) bank_->Transfer("A0", "A1", 1, 3);
  bank_->AgeAll(std::chrono::hours(1));
  std::vector<TxnReport> reports;
  const WatchSummary s = SweepShare("daemon-0", std::nullopt, &reports);
  EXPECT_EQ(s.resolved, 10);
  EXPECT_EQ(s.outside_share, 0);
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

INSTANTIATE_TEST_SUITE_P(Backends, FleetSweep, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
