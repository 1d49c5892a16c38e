// The transfer without a time field (the MongoDB manual's transfer as a Chinese blog retells
// it) exactly as it writes its documents: {_id: 1, source: "A", destination: "B", value: 100,
// state: "initial"}, the accounts' balances in `value`, and no time field anywhere. Such a
// transaction's age is measured from the daemon's first sighting of it (missing_time =
// "first_seen", the default of a watch that names no time field): the first sweep stamps
// recovery.firstSeen with the server's time and does nothing else, and the thresholds count
// from that stamp. Every scenario runs against both backends; "time passes" moves the stamp
// back, as other scenarios move lastModified back.
#include <gtest/gtest.h>

#include <thread>

#include "support/bank_test.h"
#include "support/crash_at_every_write.h"
#include "support/test_env.h"
#include "support/watch_config.h"
#include "txn_recovery/engine/one_transaction.h"
#include "txn_recovery/tools/inspect.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::minutes;

constexpr const char* kStamp = "recovery.firstSeen";

// Everything the transfer without a time field needs: its balances are in `value`. No time
// field is named, so missing_time defaults to first_seen.
constexpr const char* kNoTimeFieldWatch = R"(
[[watch]]
name = "no-time-field"
database = "bank"
profile = "transfer"
balance_field = "value"
)";

// The same application described as steps: the transfer profile is this description.
constexpr const char* kNoTimeFieldAsSteps = R"(
[[watch]]
name = "no-time-field-steps"
database = "bank"
profile = "steps"
steps = [
  {collection = "accounts", key_path = "source", inc = {value = "-value"}, positive = true},
  {collection = "accounts", key_path = "destination", inc = {value = "value"}, positive = true},
]
)";

Profile NoTimeFieldBank() {
  Profile p = Profile::Transfer();
  p.transfer()->balance_field = "value";
  p.missing_time = MissingTime::kFirstSeen;
  return p;
}

class TransferWithoutATimeField : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    watch_ = WatchFromToml(kNoTimeFieldWatch, backend_->database());
    bank_ = std::make_unique<Bank>(store(), backend_->database(), NoTimeFieldBank(),
                                   Bank::Dialect::kNoTime);
  }
  Store* store() { return backend_->store(); }
  WatchSummary Sweep(const std::string& owner = "daemon-1") {
    return SweepOnce(store(), backend_->clock(), watch_, owner);
  }
  std::optional<DateTime> Stamp(const Value& id) {
    auto t = bank_->Txn(id);
    const Value* v = t ? t->GetPath(kStamp) : nullptr;
    return v && v->is_datetime() ? std::optional<DateTime>(*v->as_datetime()) : std::nullopt;
  }

  std::unique_ptr<TestBackend> backend_;
  WatchSpec watch_;
  std::unique_ptr<Bank> bank_;
};

TEST_P(TransferWithoutATimeField, AWatchThatNamesNoTimeFieldAgesFromTheFirstSighting) {
  EXPECT_EQ(watch_.profile.missing_time, MissingTime::kFirstSeen);
  WatchSpec named = WatchFromToml(
      std::string(kNoTimeFieldWatch) + "time_field = \"lastModified\"\n", backend_->database());
  EXPECT_EQ(named.profile.missing_time, MissingTime::kQuarantine)
      << "an application that names its time field is trusted to write it";
}

TEST_P(TransferWithoutATimeField,
       AppKilledAfterTheDebitIsStampedFirstThenResumedOnceResumeAfterHasPassed) {
  bank_->Open(2);
  Snapshot before = bank_->Take();
  // The application's own document: {_id: 1, source, destination, value: 100, state}, no time.
  Value id = bank_->Transfer("A0", "A1", 100, 3);  // inserted, pending, A0 debited
  ASSERT_EQ(bank_->Txn(id)->GetPath("lastModified"), nullptr);

  const DateTime before_sweep = ServerNow(store());
  WatchSummary first = Sweep();
  EXPECT_EQ(first.first_sightings, 1);
  EXPECT_EQ(first.resolved, 0) << "its age starts now: nothing else happens";
  EXPECT_EQ(first.quarantined, 0);
  EXPECT_EQ(bank_->State(id), "pending");
  std::optional<DateTime> stamp = Stamp(id);
  ASSERT_TRUE(stamp) << "the first sweep stamps the first sighting";
  EXPECT_GE(stamp->millis, before_sweep.millis - 1000) << "with the server's time";
  EXPECT_LE(stamp->millis, ServerNow(store()).millis + 1000);

  WatchSummary second = Sweep("daemon-2");
  EXPECT_EQ(second.first_sightings, 0);
  EXPECT_EQ(Stamp(id), stamp) << "a stamp is written once and never moved";
  EXPECT_EQ(bank_->State(id), "pending") << "younger than resume_after since first seen";

  bank_->Age(id, kStuck);  // resume_after passes after the first sighting
  WatchSummary third = Sweep();
  EXPECT_EQ(third.resolved, 1);
  EXPECT_EQ(bank_->State(id), "done");
  EXPECT_EQ(bank_->Balance("A0"), 900);
  EXPECT_EQ(bank_->Balance("A1"), 1100);
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

TEST_P(TransferWithoutATimeField, ExplainAndInspectSayWhichClockTheAgeComesFrom) {
  bank_->Open(2);
  Value id = bank_->Transfer("A0", "A1", 100, 3);
  Explanation e;
  ManualClock clock;
  ASSERT_TRUE(Explain(store(), &clock, watch_, id, LeaseOptions{"operator"}, &e).ok());
  EXPECT_NE(e.age_source.find("not seen by a sweep yet"), std::string::npos) << e.age_source;
  EXPECT_FALSE(e.age) << "no age before the first sighting";
  EXPECT_EQ(e.action, Action::kNone);
  StuckReport report;
  ASSERT_TRUE(Inspect(store(), watch_, &report).ok());
  EXPECT_EQ(report.not_yet_seen, 1);

  Sweep();
  bank_->Age(id, kStuck);
  ASSERT_TRUE(Explain(store(), &clock, watch_, id, LeaseOptions{"operator"}, &e).ok());
  EXPECT_NE(e.age_source.find("first seen by the daemon (recovery.firstSeen"), std::string::npos)
      << e.age_source;
  ASSERT_TRUE(e.age);
  EXPECT_GE(*e.age, kStuck);
  EXPECT_EQ(e.action, Action::kResume);
  ASSERT_TRUE(Inspect(store(), watch_, &report).ok());
  EXPECT_EQ(report.not_yet_seen, 0);
  EXPECT_EQ(report.stuck[TxnState::kPending], 1);
  EXPECT_EQ(report.oldest_age_source, kStamp);
  EXPECT_NE(AgeSources(watch_).find("first sighting"), std::string::npos);
}

TEST_P(TransferWithoutATimeField, ARetryBeforeTheFirstSightingResumesNeverRollsBack) {
  bank_->Open(2);
  Snapshot before = bank_->Take();
  Value id = bank_->Transfer("A0", "A1", 100, 3);  // no time, no stamp: no age yet
  ManualClock clock;
  RetryResult r;
  ASSERT_TRUE(Retry(store(), &clock, watch_, id, LeaseOptions{"operator"}, &r).ok());
  EXPECT_EQ(r.action, Action::kResume) << "its age is not 56 years";
  EXPECT_EQ(bank_->State(id), "done");
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

TEST_P(TransferWithoutATimeField, AStampThatIsNotADateIsQuarantinedNamingIt) {
  bank_->Open(2);
  Snapshot before = bank_->Take();
  Value id = bank_->Transfer("A0", "A1", 100, 3);
  WriteResult r;
  ASSERT_TRUE(
      store()
          ->UpdateOne(bank_->txns(), Filter().Eq("_id", id), Update().Set(kStamp, "yesterday"), &r)
          .ok());
  WatchSummary s = Sweep();
  EXPECT_EQ(s.quarantined, 1);
  auto t = bank_->Txn(id);
  ASSERT_TRUE(t && t->GetPath("recovery.quarantine.reason"));
  EXPECT_NE(t->GetPath("recovery.quarantine.reason")->ToString().find(kStamp), std::string::npos);
  EXPECT_EQ(bank_->Balance("A0"), 900) << "nothing written to a participant";
  EXPECT_EQ(bank_->Balance("A1"), 1000);
}

TEST_P(TransferWithoutATimeField, ThreeDaemonsRacingToStampKeepOneStampAndRecoverEachTransferOnce) {
  bank_->Open(6);
  Snapshot before = bank_->Take();
  std::vector<Value> ids;
  for (int i = 0; i < 12; ++i)  // killed after each of the application's steps in turn
    ids.push_back(bank_->Transfer(Bank::Account(i % 6), Bank::Account((i + 1) % 6), 10 + i,
                                  1 + i % kAppStepCount));
  auto race = [&](const char* round) {
    std::vector<WatchSummary> summaries(3);
    std::vector<std::thread> daemons;
    for (int d = 0; d < 3; ++d)
      daemons.emplace_back([&, d] {
        summaries[d] = SweepOnce(store(), backend_->clock(), watch_,
                                 std::string(round) + "-daemon-" + std::to_string(d));
      });
    for (auto& t : daemons) t.join();
    return summaries;
  };

  std::int64_t stamped = 0;
  for (const WatchSummary& s : race("stamp")) stamped += s.first_sightings;
  std::int64_t without_time = 0;
  std::map<std::string, DateTime> stamps;
  for (const Value& id : ids) {
    if (bank_->Txn(id)->GetPath("lastModified") != nullptr) continue;
    ++without_time;
    ASSERT_TRUE(Stamp(id)) << id.ToString();
    stamps[id.ToString()] = *Stamp(id);
  }
  EXPECT_EQ(stamped, without_time) << "each transaction stamped by exactly one daemon";
  EXPECT_EQ(without_time, 12) << "no daemon acted before the first sighting";

  race("again");
  for (const Value& id : ids) {
    EXPECT_EQ(Stamp(id), stamps[id.ToString()]) << "the first stamp stays";
  }

  // Time passes for all; three daemons race again (a second round in case a lease held one
  // back): every transfer that had started ends done, applied once.
  for (int round = 0; round < 2; ++round) {
    for (const Value& id : ids) bank_->Age(id, kStuck);
    race(round == 0 ? "recover" : "finish");
    bank_->ExpireLeases();
  }
  for (std::size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(bank_->State(ids[i]), 1 + i % kAppStepCount == 1 ? "initial" : "done")
        << ids[i].ToString();
  for (const auto& v : bank_->Violations(before, /*all_terminal=*/false)) ADD_FAILURE() << v;
}

// Retention ages a finished transaction without a time field as the sweep does, from its
// first sighting: before, it filtered on the time field alone and kept such a transaction
// for ever.
TEST_P(TransferWithoutATimeField,
       AFinishedTransferWithoutATimeIsRemovedOnceItsFirstSightingIsOldEnough) {
  bank_->Open(2);
  Value id = bank_->Transfer("A0", "A1", 100, 8);  // done by the application, no time field
  ASSERT_EQ(bank_->State(id), "done");
  watch_.retention.retain_finished = std::chrono::hours(24);

  WatchSummary first = Sweep();
  EXPECT_EQ(first.first_sightings, 1) << "a finished transfer is stamped like any other";
  EXPECT_EQ(first.finished_deleted, 0);
  ASSERT_TRUE(Stamp(id));

  bank_->Age(id, std::chrono::hours(23));  // first seen 23 hours ago: inside the period
  EXPECT_EQ(Sweep().finished_deleted, 0);
  EXPECT_TRUE(bank_->Txn(id));

  bank_->Age(id, std::chrono::hours(25));
  WatchSummary removed = Sweep();
  EXPECT_TRUE(removed.status.ok()) << removed.status.ToString();
  EXPECT_EQ(removed.finished_deleted, 1);
  EXPECT_FALSE(bank_->Txn(id));
  EXPECT_EQ(bank_->Balance("A0"), 900) << "removing the record undoes nothing";
  EXPECT_EQ(bank_->Balance("A1"), 1100);
}

INSTANTIATE_TEST_SUITE_P(Backends, TransferWithoutATimeField, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

// ---- The application killed between any two of its steps --------------------------------

class TransferWithoutATimeFieldApplicationKilled
    : public ::testing::TestWithParam<std::tuple<std::string, const char*, KilledCase>> {};

TEST_P(TransferWithoutATimeFieldApplicationKilled, TheDaemonEndsTheTransferDoneOrCancelled) {
  auto [kind, watch_toml, c] = GetParam();
  auto backend = TestBackend::Create(kind);
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  WatchSpec watch = WatchFromToml(watch_toml, backend->database());
  Bank bank(backend->store(), backend->database(), NoTimeFieldBank(), Bank::Dialect::kNoTime);
  bank.Open(2);
  Snapshot before = bank.Take();
  Value id = bank.Transfer("A0", "A1", 100, c.steps);
  SCOPED_TRACE(std::string("application killed after it ") + AppStepName(c.steps));

  WatchSummary first = SweepOnce(backend->store(), backend->clock(), watch, "daemon-1");
  EXPECT_EQ(first.first_sightings, 1);
  bank.Age(id, c.age);
  SweepOnce(backend->store(), backend->clock(), watch, "daemon-1");

  ExpectTransferEnded(bank, id, c.expected, before);
}

INSTANTIATE_TEST_SUITE_P(
    EveryStepBoundary, TransferWithoutATimeFieldApplicationKilled,
    ::testing::Combine(::testing::Values("memory", "mongo"),
                       ::testing::Values(kNoTimeFieldWatch, kNoTimeFieldAsSteps),
                       ::testing::ValuesIn(KilledTransferCases())),
    [](const auto& info) {
      const KilledCase& c = std::get<2>(info.param);
      return std::get<0>(info.param) +
             (std::get<1>(info.param) == kNoTimeFieldWatch ? "_transfer" : "_steps") + "_after_" +
             std::to_string(c.steps) + "_steps_" + (c.age == kStuck ? "stuck" : "expired");
    });

// ---- The daemon killed at every one of its writes, stamp included ----------------------

class TransferWithoutATimeFieldDaemonKilled
    : public ::testing::TestWithParam<std::tuple<std::string, KilledCase>> {};

TEST_P(TransferWithoutATimeFieldDaemonKilled, ASuccessorFinishesWhatTheKilledDaemonStarted) {
  auto [kind, c] = GetParam();
  CrashAtEveryWrite(kind, [c = c](TestBackend* backend) {
    Bank bank(backend->store(), backend->database(), NoTimeFieldBank(), Bank::Dialect::kNoTime);
    return std::make_unique<StuckTransfer>(
        backend, bank, WatchFromToml(kNoTimeFieldWatch, backend->database()), c);
  });
}

INSTANTIATE_TEST_SUITE_P(EveryWrite, TransferWithoutATimeFieldDaemonKilled,
                         ::testing::Combine(::testing::Values("memory", "mongo"),
                                            ::testing::Values(KilledCase{3, kStuck, "done"},
                                                              KilledCase{3, kExpired,
                                                                         "cancelled"})),
                         KilledCaseDecisionName{});

}  // namespace
}  // namespace txn_recovery::testing
