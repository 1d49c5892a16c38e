// An idle daemon costs the server nothing that grows with history, however many finished
// transactions the collection keeps: every read a sweep, `inspect` and the orphan scan send
// does work bounded by the transactions that need the daemon (in flight, or finished inside
// the late-write window). Proved by the server's own account: the reads are captured through
// the store as the engine built them (QueryLog) and each one is explained by the server
// (Explain, tests/support/server_probe.h) with 2,000 and then 20,000 finished transactions: the
// index entries, documents and storage pages each read touches must not grow with the history. The
// pages matter on DocumentDB, whose bitmap and RUM index scans count no keys (PostgreSQL's own
// buffer counts, which its explain reports); the embedded server answers explain with what
// its narrowed scans examine. Runs on every server that answers explain.
//
// One read may scan a collection: the orphan scan's look for markers and traces on the
// participants, unless the watch asks for their indexes (orphan_scan_indexes, on in the
// first shape). That scan reads the participants whole, which grows with the application's
// accounts, never with the history of transactions.
// And the daemon's own quarantine records may be read whole: one per transaction waiting
// for an operator, never more with the history.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/bank.h"
#include "support/database_suites.h"
#include "support/scenario.h"
#include "support/server_probe.h"
#include "support/test_env.h"
#include "support/watch_config.h"
#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/engine/quarantine_records.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/mongo_store.h"
#include "txn_recovery/tools/indexes.h"
#include "txn_recovery/tools/inspect.h"
#include "txn_recovery/tools/orphans.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

// Two sizes of history, ten times apart: what a read touches must not follow.
constexpr int kHistorySmall = 2000;
constexpr int kHistoryLarge = 20000;
constexpr int kFinishedLongAgo = 3000;  // the history among stuck transfers (last test)
constexpr int kInFlightYoung = 10;
// Keys and documents an index range may read beyond the documents it returns: the key past
// the end of each range, and a few per alternative of the candidate query.
constexpr std::int64_t kRangeSlack = 150;
// What a read may touch more with ten times the history: a few more keys at the ends of
// ranges. A scan that walks the history reads thousands more keys, or pages in proportion to
// it: ten times as many. Pages are bounded at half that growth, not tighter: besides an index
// one level deeper, DocumentDB's count (PostgreSQL's buffers) can include table pages the
// scan visits, and how many varies with what autovacuum has done; an orphan scan went from 6
// pages to 15 in one loaded run, then stayed within twice plus two when run alone.
constexpr double kGrowthFactor = 1.5;
constexpr std::int64_t kGrowthSlackKeys = 20;
constexpr std::int64_t kPagesGrowth = kHistoryLarge / kHistorySmall / 2;
constexpr std::int64_t kGrowthSlackBlocks = 2;

// A read of the daemon's own quarantine records may read them whole: there is one per
// transaction waiting for an operator, whatever the history (quarantine_records.h).
bool QuarantineRecordsRead(const ReadQuery& q, const WatchSpec& watch) {
  return q.ns == QuarantineRecordsOf(watch.ns);
}

struct Shape {
  const char* id;  // the test's name
  const char* name;
  const char* toml;
  // The application writes a time on every transaction, whatever the watch's fallback for
  // those without one says (the fallback then finds none: the default configuration of an
  // application that keeps lastModified).
  bool writes_times = false;
};

// One watch of each application shape and each way of telling a transaction's age.
const Shape kShapes[] = {
    {"ManualTransfer", "MongoDB manual transfer, with the orphan scan's indexes", R"([[watch]]
name = "w"
database = "d"
profile = "transfer"
orphan_scan_indexes = true
)",
     true},
    {"ManualTransferFirstSightings",
     "MongoDB manual transfer whose documents lost their time (ages from first sightings)",
     R"([[watch]]
name = "w"
database = "d"
profile = "transfer"
)"},
    {"SchemaBookTransfer", "schema-book transfer (participants by name, ages from the _id)",
     R"([[watch]]
name = "w"
database = "d"
profile = "transfer"
participant_key = "name"
missing_time = "object_id"
[watch.states]
applied = ["committed"]
cancelled = ["canceled"]
)"},
    {"TransferWithoutTime", "transfer without a time field (ages from the daemon's first sighting)",
     R"([[watch]]
name = "w"
database = "d"
profile = "transfer"
missing_time = "first_seen"
)"},
    {"MongooseOperations", "mongoose operations", R"([[watch]]
name = "w"
database = "d"
profile = "operations"
)"},
    {"TaggedInserts", "tagged inserts", R"([[watch]]
name = "w"
database = "d"
profile = "tagged-insert"
tagged_collections = ["orders", "lines"]
)"},
    {"DescribedSteps", "described steps (participants by a key other than _id)", R"([[watch]]
name = "w"
database = "d"
profile = "steps"
state_field = "status"
marker_field = "pendingTransaction"
steps = [
  {collection = "users", key = "login", key_path = "data.targetUser", inc = {money = "data.amount"}},
]
[watch.states]
new = ["new"]
)"},
};

TXN_RECOVERY_DATABASE_SUITE(IdleServerWork);

class IdleServerWork : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create("mongo");
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    mongo_ = dynamic_cast<MongoStore*>(backend_->store());
    ASSERT_NE(mongo_, nullptr);
    shape_ = kShapes[GetParam()];
    watch_ = WatchFromToml(shape_.toml, backend_->database());
    // Does this server answer explain at all?
    QueryPlan plan;
    Status s =
        Explain(mongo_, {ReadQuery::Kind::kFind, watch_.ns, Filter().Eq("_id", 1), {}}, &plan);
    if (!s.ok())
      GTEST_SKIP() << "this server does not answer explain (" << s.ToString()
                   << "); the benchmark's idle rows measure it instead";
  }

  // A document of `watch_`'s transactions collection in `state`, whose age (however the
  // watch reads it) is `age`. Its other fields do not matter: a sweep that reads it has
  // failed already.
  Document Txn(const Value& state, std::chrono::milliseconds age, DateTime now, int i) {
    const Profile& p = watch_.profile;
    const DateTime when = Minus(now, age);
    Document d;
    switch (shape_.writes_times ? MissingTime::kQuarantine : p.missing_time) {
      case MissingTime::kObjectIdTime: {
        ObjectId id = ObjectId::AtTime(when.millis);
        for (int b = 0; b < 4; ++b)
          id.bytes[11 - static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(i >> (8 * b));
        d.Set("_id", id);
        break;
      }
      case MissingTime::kFirstSeen:
        d.Set("_id", static_cast<std::int64_t>(i));
        d.Set(watch_.lease_field, Document{{"firstSeen", when}});
        break;
      default:
        d.Set("_id", static_cast<std::int64_t>(i));
        d.Set(p.time_field, when);
    }
    d.Set(p.state_field, state);
    return d;
  }

  // The history of a busy shop: transactions [from, to) finished long before the late-write
  // window; with from = 0, also a few in flight that are too young to need the daemon.
  void FillHistory(int from, int to) {
    const Profile& p = watch_.profile;
    DateTime now;
    Must(mongo_->ServerTime(&now));
    const std::vector<Value> finished = p.states.TerminalSpellings();
    const std::vector<Value> open = p.states.NonTerminalSpellings();
    std::vector<Document> docs;
    // Finished a second apart, a day and more before the late-write window.
    for (int i = from; i < to; ++i)
      docs.push_back(Txn(finished[static_cast<std::size_t>(i) % finished.size()],
                         watch_.thresholds.late_write_window + hours(24) + std::chrono::seconds(i),
                         now, i));
    if (from == 0)
      for (int i = 0; i < kInFlightYoung; ++i)
        docs.push_back(Txn(open[static_cast<std::size_t>(i) % open.size()], std::chrono::seconds(1),
                           now, 1000000 + i));
    for (std::size_t i = 0; i < docs.size(); i += 5000) {
      const auto end = docs.begin() + static_cast<std::ptrdiff_t>(std::min(docs.size(), i + 5000));
      Must(mongo_->InsertMany(
          watch_.ns, std::vector<Document>(docs.begin() + static_cast<std::ptrdiff_t>(i), end)));
    }
  }

  // The reads of one idle sweep, `inspect` and the orphan scan, each with the server's account
  // of it.
  struct Account {
    std::vector<ReadQuery> reads;
    std::vector<QueryPlan> plans;
  };
  Account IdleRound() {
    QueryLog log(mongo_);
    SweepOptions options;
    options.memory = memory_;  // as a `run` daemon keeps it across sweeps
    Sweeper sweeper(&log, backend_->clock(), options);
    WatchSummary summary;
    Must(sweeper.SweepWatch(watch_, nullptr, &summary));
    EXPECT_EQ(summary.examined, 0) << "nothing in this history needs the daemon";
    StuckReport report;
    Must(Inspect(&log, watch_, &report));
    OrphanSummary orphans;
    Must(ScanOrphans(&log, backend_->clock(), watch_, OrphanOptions{}, nullptr, &orphans));
    Account a;
    a.reads = log.reads();
    for (const ReadQuery& q : a.reads) {
      QueryPlan plan;
      Must(Explain(mongo_, q, &plan));
      a.plans.push_back(plan);
    }
    return a;
  }

  // Creates the watch's indexes and waits until the server plans with them (DocumentDB
  // builds an index in a background job, seconds after createIndexes returns).
  void BuildIndexes() {
    std::vector<IndexCheck> checks;
    Must(EnsureIndexes(mongo_, watch_, /*create=*/true, &checks));
    const Profile& p = watch_.profile;
    ReadQuery probe{ReadQuery::Kind::kFind,
                    watch_.ns,
                    Filter().Eq(p.state_field, p.states.TerminalSpellings().front()),
                    {}};
    QueryPlan plan;
    for (int i = 0; i < 120; ++i) {
      Must(Explain(mongo_, probe, &plan));
      if (!plan.collection_scan) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    FAIL() << "the index on the state is not used a minute after it was created: " << plan.summary;
  }

  // Every read recorded in `log`, explained: none may scan the collection or read more
  // than `bound` keys or documents.
  void ExpectBounded(const QueryLog& log, std::int64_t bound, const char* who) {
    const std::vector<ReadQuery> reads = log.reads();
    ASSERT_FALSE(reads.empty()) << who << " sent no read at all";
    for (const ReadQuery& q : reads) {
      QueryPlan plan;
      Must(Explain(mongo_, q, &plan));
      SCOPED_TRACE(std::string(who) + ": " + q.ToString() + "\n  plan: " + plan.summary);
      EXPECT_FALSE(plan.collection_scan) << "a collection scan";
      EXPECT_LE(plan.keys_examined, bound) << "index keys read beyond the work there is";
      EXPECT_LE(plan.docs_examined, bound) << "documents read beyond the work there is";
    }
  }

  std::unique_ptr<TestBackend> backend_;
  MongoStore* mongo_ = nullptr;
  std::shared_ptr<SweepMemory> memory_ = std::make_shared<SweepMemory>();
  Shape shape_{};
  WatchSpec watch_;
};

TEST_P(IdleServerWork, TenTimesTheHistoryCostsAnIdleSweepNoMore) {
  SCOPED_TRACE(shape_.name);
  FillHistory(0, kHistorySmall);
  BuildIndexes();
  // The daemon's first sweep asks what it needs to know of the collection once
  // (SweepMemory); the rounds measured are the sweeps of every interval after it.
  (void)IdleRound();
  const Account small = IdleRound();
  FillHistory(kHistorySmall, kHistoryLarge);
  const Account large = IdleRound();
  ASSERT_FALSE(large.reads.empty()) << "an idle round sent no read at all";
  ASSERT_EQ(small.reads.size(), large.reads.size()) << "the same reads at both sizes";
  auto allowed = [](std::int64_t before, std::int64_t slack) {
    return static_cast<std::int64_t>(kGrowthFactor * static_cast<double>(before)) + slack;
  };
  for (std::size_t i = 0; i < large.reads.size(); ++i) {
    const QueryPlan& was = small.plans[i];
    const QueryPlan& now = large.plans[i];
    SCOPED_TRACE(large.reads[i].ToString() + "\n  with " + std::to_string(kHistorySmall) +
                 " finished: " + was.summary + "\n  with " + std::to_string(kHistoryLarge) +
                 " finished: " + now.summary);
    // Only a read of a marker array's collection (the participants) may scan it, and only
    // when the watch does not ask for the orphan scan's indexes.
    bool unindexed_orphan_scan = false;
    for (const MarkerLocation& loc : watch_.profile.MarkerLocations(watch_.ns))
      if (!loc.scalar && loc.ns == large.reads[i].ns && !watch_.orphan_scan_indexes)
        unindexed_orphan_scan = true;
    if (!unindexed_orphan_scan && !QuarantineRecordsRead(large.reads[i], watch_)) {
      EXPECT_FALSE(now.collection_scan) << "a collection scan";
    }
    EXPECT_LE(now.keys_examined, allowed(was.keys_examined, kGrowthSlackKeys))
        << "index keys read grow with the history";
    EXPECT_LE(now.docs_examined, allowed(was.docs_examined, kGrowthSlackKeys))
        << "documents read grow with the history";
    // Scan by scan where the plans have the same scans, else the whole read.
    const bool same_scans = was.scan_blocks.size() == now.scan_blocks.size();
    for (std::size_t k = 0; same_scans && k < now.scan_blocks.size(); ++k)
      EXPECT_LE(now.scan_blocks[k], kPagesGrowth * was.scan_blocks[k] + kGrowthSlackBlocks)
          << "storage pages read by index scan " << k << " grow with the history";
    if (!same_scans && was.blocks >= 0 && now.blocks >= 0) {
      EXPECT_LE(now.blocks,
                kPagesGrowth * was.blocks +
                    kGrowthSlackBlocks * static_cast<std::int64_t>(now.scan_blocks.size() + 1))
          << "storage pages read grow with the history";
    }
    EXPECT_LE(now.keys_examined, kInFlightYoung + kRangeSlack) << "keys beyond the work there is";
    EXPECT_LE(now.docs_examined, kInFlightYoung + kRangeSlack) << "documents beyond the work";
  }
}

// What a daemon asks of a collection once (whether its finished transactions carry a time)
// is not asked again by its later sweeps.
TEST_P(IdleServerWork, TheDaemonAsksWhatItLearnsOfTheCollectionOnce) {
  FillHistory(0, kHistorySmall);
  BuildIndexes();
  const Account first = IdleRound();
  const Account next = IdleRound();
  // Once per watch, the look for an earlier build's quarantines without a record: whether it
  // was made, then its scan (quarantine_records.h); later sweeps read only the first.
  constexpr std::size_t kEarlierQuarantines = 1;
  if (watch_.profile.missing_time != MissingTime::kFirstSeen) {
    EXPECT_EQ(first.reads.size(), next.reads.size() + kEarlierQuarantines)
        << "nothing else to learn in this shape";
    return;
  }
  // The probe, once; where the finished carry no time, the question whether any finished at
  // all, once too.
  EXPECT_EQ(first.reads.size(),
            next.reads.size() + kEarlierQuarantines + (shape_.writes_times ? 1 : 2))
      << "the probes, once";
  EXPECT_TRUE(memory_->FinishedCarryTimes(watch_.ns).has_value());
  EXPECT_EQ(*memory_->FinishedCarryTimes(watch_.ns), shape_.writes_times);
}

// The measure itself must see a read that walks the history: a query on the finished
// states, which no bound limits, touches ten times more at ten times the history.
TEST_P(IdleServerWork, TheMeasureSeesAReadThatWalksTheHistory) {
  FillHistory(0, kHistorySmall);
  BuildIndexes();
  const Profile& p = watch_.profile;
  const ReadQuery walk{ReadQuery::Kind::kCount,
                       watch_.ns,
                       Filter().In(p.state_field, p.states.TerminalSpellings()),
                       {}};
  QueryPlan was, now;
  Must(Explain(mongo_, walk, &was));
  FillHistory(kHistorySmall, kHistoryLarge);
  Must(Explain(mongo_, walk, &now));
  SCOPED_TRACE("with " + std::to_string(kHistorySmall) + " finished: " + was.summary + "\n  with " +
               std::to_string(kHistoryLarge) + ": " + now.summary);
  const bool grew = now.keys_examined > 5 * was.keys_examined + kGrowthSlackKeys ||
                    now.docs_examined > 5 * was.docs_examined + kGrowthSlackKeys ||
                    (now.blocks >= 0 && now.blocks > 3 * was.blocks + kGrowthSlackBlocks);
  EXPECT_TRUE(grew) << "the server's account does not grow with the work: it cannot prove a bound";
}

std::string ShapeName(const ::testing::TestParamInfo<int>& info) {
  return kShapes[info.param].id;
}

INSTANTIATE_TEST_SUITE_P(EveryShape, IdleServerWork,
                         ::testing::Range(0, static_cast<int>(std::size(kShapes))), ShapeName);

TXN_RECOVERY_DATABASE_SUITE(IdleServerWorkWithStuckTransfers);

// Stuck transfers among the history: the sweep reads them and their participants, and
// nothing of the finished history.
TEST(IdleServerWorkWithStuckTransfers, TheSweepReadsTheStuckAndTheirParticipantsOnly) {
  std::unique_ptr<TestBackend> backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  auto* mongo = dynamic_cast<MongoStore*>(backend->store());
  ASSERT_NE(mongo, nullptr);
  Bank bank(mongo, backend->database());
  WatchSpec watch = bank.Watch();
  QueryPlan plan;
  if (!Explain(mongo, {ReadQuery::Kind::kFind, watch.ns, Filter().Eq("_id", 1), {}}, &plan).ok())
    GTEST_SKIP() << "this server does not answer explain";
  bank.Open(20);
  DateTime now;
  Must(mongo->ServerTime(&now));
  std::vector<Document> history;
  for (int i = 0; i < kFinishedLongAgo; ++i)
    history.push_back(Document{{"_id", static_cast<std::int64_t>(1000000 + i)},
                               {"state", i % 2 ? "done" : "cancelled"},
                               {"lastModified", Minus(now, hours(48))},
                               {"source", "A0"},
                               {"destination", "A1"},
                               {"value", 1}});
  Must(mongo->InsertMany(bank.txns(), history));
  constexpr int kStuck = 8;
  std::vector<Value> stuck;
  for (int i = 0; i < kStuck; ++i) {
    // From pending (2 steps done) to the markers half pulled (7): each old enough to need
    // the daemon.
    stuck.push_back(bank.Transfer(Bank::Account(i), Bank::Account(i + 10), 5, 2 + i % 6));
    bank.Age(stuck.back(), minutes(2));
  }
  std::vector<IndexCheck> checks;
  Must(EnsureIndexes(mongo, watch, /*create=*/true, &checks));
  for (int i = 0; i < 120; ++i) {
    Must(Explain(mongo, {ReadQuery::Kind::kFind, watch.ns, Filter().Eq("state", "done"), {}},
                 &plan));
    if (!plan.collection_scan) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }

  // Once per watch, the first sweep looks for what an earlier build quarantined without a
  // record (a scan of the transactions, once: quarantine_records.h); done before the sweep
  // measured, as it is before every later sweep of a daemon.
  std::int64_t recorded = 0;
  Must(RecordEarlierQuarantines(mongo, watch, &recorded));
  QueryLog log(mongo);
  Sweeper sweeper(&log, backend->clock(), SweepOptions{});
  WatchSummary summary;
  Must(sweeper.SweepWatch(watch, nullptr, &summary));
  EXPECT_EQ(summary.resolved, kStuck);
  std::int64_t total = 0;
  for (int i = 0; i < 20; ++i) total += bank.Balance(Bank::Account(i));
  EXPECT_EQ(total, 20 * 1000) << "money neither created nor lost";
  for (const Value& id : stuck) EXPECT_EQ(bank.State(id), "done") << id.ToString();
  for (const ReadQuery& q : log.reads()) {
    Must(Explain(mongo, q, &plan));
    SCOPED_TRACE(q.ToString() + "\n  plan: " + plan.summary);
    EXPECT_TRUE(!plan.collection_scan || QuarantineRecordsRead(q, watch));
    EXPECT_LE(plan.keys_examined, 2 * kStuck + kRangeSlack);
    EXPECT_LE(plan.docs_examined, 2 * kStuck + kRangeSlack);
  }
}

}  // namespace
}  // namespace txn_recovery::testing
