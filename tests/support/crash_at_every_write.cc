#include "support/crash_at_every_write.h"

#include <gtest/gtest.h>

#include "support/bank_test.h"
#include "support/fault_store.h"
#include "txn_recovery/engine/conformance_trace.h"
#include "txn_recovery/engine/quarantine_records.h"

namespace txn_recovery::testing {

void TraceWorld(const std::string& what) {
  if (!conformance::On()) return;
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  conformance::Write("world " + std::string(t->test_suite_name()) + "." + t->name() + " " + what);
}

void CrashAtEveryWrite(const std::string& backend_kind, const KilledDaemonSetUp& set_up) {
  int clean_writes = 0;
  {
    TraceWorld(backend_kind + " never killed");
    auto backend = TestBackend::Create(backend_kind);
    ASSERT_TRUE(backend->error().empty()) << backend->error();
    auto scenario = set_up(backend.get());
    FaultStore counting(backend->store());
    SweepOnce(&counting, backend->clock(), scenario->watch(), "daemon-killed");
    clean_writes = counting.writes();
    ASSERT_GT(clean_writes, 0) << "the daemon wrote nothing: the transaction was not stuck";
    SCOPED_TRACE("a daemon never killed, " + std::to_string(clean_writes) + " writes");
    scenario->ExpectRecovered();
  }
  // Last, after all of them: a successor sweeping after a daemon that finished changes nothing.
  for (int crash_after = 0; crash_after <= clean_writes; ++crash_after) {
    SCOPED_TRACE("daemon killed after " + std::to_string(crash_after) + " of " +
                 std::to_string(clean_writes) + " writes");
    TraceWorld(backend_kind + " killed after " + std::to_string(crash_after));
    auto backend = TestBackend::Create(backend_kind);
    ASSERT_TRUE(backend->error().empty()) << backend->error();
    auto scenario = set_up(backend.get());
    FaultStore dying(backend->store());
    dying.CrashAfterWrites(crash_after);
    SweepOnce(&dying, backend->clock(), scenario->watch(), "daemon-killed");

    // Time passes: the dead daemon's lease expires and the transaction looks stuck again;
    // the deadline of a quarantine record it wrote passes too.
    ExpireLeases(backend->store(), scenario->watch().ns, scenario->watch().lease_field);
    ExpireQuarantineRecords(backend->store(), scenario->watch().ns);
    backend->Advance(std::chrono::minutes(2));
    scenario->Age();
    SweepOnce(backend->store(), backend->clock(), scenario->watch(), "daemon-successor");

    scenario->ExpectRecovered();
    ExpectQuarantineRecordsMatchMarks(backend->store(), scenario->watch());
  }
}

void ExpectQuarantineRecordsMatchMarks(Store* store, const WatchSpec& watch) {
  const std::string mark = RecoveryPaths(watch.lease_field).Quarantine();
  std::int64_t marked = 0;
  for (const Document& t : AllDocs(store, watch.ns)) {
    if (t.GetPath(mark) == nullptr) continue;
    ++marked;
    EXPECT_TRUE(HasQuarantineRecord(store, watch, *t.Get("_id")))
        << "marked without its record: " << t.Get("_id")->ToString();
  }
  EXPECT_EQ(QuarantineRecords(store, watch), marked) << "records without their mark";
}

StuckTransfer::StuckTransfer(TestBackend* backend, Bank bank, WatchSpec watch, const KilledCase& c)
    : KilledDaemonScenario(std::move(watch), c), bank_(std::move(bank)) {
  bank_.Open(2);
  before_ = bank_.Take();
  id_ = bank_.Transfer("A0", "A1", 100, c.steps, c.age);
  switch (bank_.dialect()) {
    case Bank::Dialect::kManual:
      Age();
      break;
    case Bank::Dialect::kNoTime:
      SweepOnce(backend->store(), backend->clock(), watch_, "daemon-stamping");
      Age();
      break;
    case Bank::Dialect::kSchemaBook:
      break;  // as old as its ObjectId
  }
}

void StuckTransfer::ExpectRecovered() {
  ExpectTransferEnded(bank_, id_, c_.expected, before_);
}

QuarantinedTransfer::QuarantinedTransfer(TestBackend* backend, Bank bank, WatchSpec watch)
    : KilledDaemonScenario(std::move(watch), KilledCase{}),
      backend_(backend),
      bank_(std::move(bank)) {
  bank_.Open(2);
  id_ = Value("no-time");
  Must(backend->store()->InsertMany(bank_.txns(), {Document{{"_id", id_},
                                                            {"source", "A0"},
                                                            {"destination", "A1"},
                                                            {"value", 5},
                                                            {"state", "pending"}}}));
}

void QuarantinedTransfer::ExpectRecovered() {
  auto t = bank_.Txn(id_);
  ASSERT_TRUE(t);
  EXPECT_NE(t->GetPath(RecoveryPaths(watch_.lease_field).Quarantine()), nullptr) << "marked";
  EXPECT_TRUE(HasQuarantineRecord(backend_->store(), watch_, id_)) << "recorded";
  EXPECT_EQ(QuarantineRecords(backend_->store(), watch_), 1) << "counted once";
  EXPECT_EQ(bank_.Balance("A0"), 1000);
}

}  // namespace txn_recovery::testing
