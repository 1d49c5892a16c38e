// Sweeps that divide the work (docs/fleet.md): with a share, a sweep reads the candidates'
// _ids alone and drives only its share's transactions; two sweeps with complementary shares
// resolve everything between them, each only its own, and the bank's invariants hold.
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "support/bank_test.h"
#include "support/scenario.h"
#include "txn_recovery/membership.h"
#include "txn_recovery/sweeper.h"

namespace txn_recovery::testing {
namespace {

class FleetSweep : public BankTest {
 protected:
  FleetSweep() : BankTest(4) {}

  WatchSummary SweepShare(const std::string& owner, std::optional<Share> share,
                          std::vector<TxnReport>* reports, bool dry_run = false) {
    SweepOptions o;
    o.dry_run = dry_run;
    o.lease.owner = owner;
    o.workers = 2;
    o.batch_size = 16;
    o.bulk_size = 5;
    o.share = share;
    Sweeper sweeper(backend_->store(), backend_->clock(), o);
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
