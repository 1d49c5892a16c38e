// Indexes, batched updates and wire accounting: the store features the daemon's speed rests
// on, checked against the in-memory store and against MongoStore on the test server; and
// the operator's view of them (sweep.manage_indexes, the warnings, `inspect`).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/test_env.h"
#include "support/watch_config.h"
#include "txn_recovery/stores/memory_store.h"
#include "txn_recovery/stores/mongo_store.h"
#include "txn_recovery/tools/indexes.h"

namespace txn_recovery::testing {
namespace {

class Indexes : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
  }
  Store* store() { return backend_->store(); }
  std::vector<IndexSpec> List(const Namespace& ns) {
    std::vector<IndexSpec> out;
    Must(store()->ListIndexes(ns, &out));
    return out;
  }
  static bool HasKeys(const std::vector<IndexSpec>& list, const IndexSpec& want) {
    for (const auto& i : list)
      if (i.keys == want.keys) return true;
    return false;
  }
  std::unique_ptr<TestBackend> backend_;
};

TEST_P(Indexes, ACreatedIndexIsListedWithTheIdIndexAndCreatingItAgainIsHarmless) {
  Namespace ns{backend_->database(), "things"};
  EXPECT_TRUE(List(ns).empty()) << "a collection that does not exist has no index";
  IndexSpec compound{{{"state", 1}, {"lastModified", 1}}, ""};
  Must(store()->CreateIndexes(ns, {compound}));
  Must(store()->CreateIndexes(ns, {compound}));
  std::vector<IndexSpec> list = List(ns);
  EXPECT_TRUE(HasKeys(list, IndexSpec{{{"_id", 1}}, ""}));
  ASSERT_TRUE(HasKeys(list, compound));
  for (const auto& i : list) {
    if (i.keys == compound.keys) {
      EXPECT_EQ(i.name, "state_1_lastModified_1");
    }
  }
  EXPECT_EQ(list.size(), 2u) << "created twice, listed once";
}

TEST_P(Indexes, AWatchNeedsStateAndTimeOnTransactionsAndNothingOnParticipantsFoundById) {
  WatchSpec w = Bank(store(), backend_->database()).Watch();
  std::vector<RequiredIndex> req = RequiredIndexes(w);
  // Nothing on the quarantine's mark: what is quarantined is counted from the daemon's own
  // records, so that the application's writes maintain no index for it.
  ASSERT_EQ(req.size(), 1u) << "every write and read of an account names it by its _id";
  EXPECT_EQ(req[0].ns.ToString(), backend_->database() + ".transactions");
  EXPECT_EQ(req[0].spec.ToString(), "{state: 1, lastModified: 1} ordered");
  EXPECT_TRUE(req[0].spec.hinted) << "the read of unknown states names it";

  // The operator who would rather pay on every application write than scan the accounts
  // once per orphan scan asks for the marker and trace indexes.
  w.orphan_scan_indexes = true;
  req = RequiredIndexes(w);
  ASSERT_EQ(req.size(), 3u);
  EXPECT_EQ(req[0].ns.ToString(), backend_->database() + ".transactions");
  EXPECT_EQ(req[0].spec.ToString(), "{state: 1, lastModified: 1} ordered");
  EXPECT_EQ(req[1].ns.ToString(), backend_->database() + ".accounts");
  EXPECT_EQ(req[1].spec.ToString(), "{pendingTransactions: 1}");
  EXPECT_EQ(req[2].ns.ToString(), backend_->database() + ".accounts");
  EXPECT_EQ(req[2].spec.ToString(), "{recovery.finished: 1} where present");

  // The schema-book transfer's names, configured: its own fields, and the participant key it
  // looks up by.
  WatchSpec book = WatchFromToml(R"(
    [[watch]]
    name = "book"
    database = "x"
    profile = "transfer"
    time_field = "updatedAt"
    participants = "wallets"
    participant_key = "name"
    marker_field = "pendingTx"
    orphan_scan_indexes = true
  )",
                                 backend_->database());
  req = RequiredIndexes(book);
  ASSERT_EQ(req.size(), 4u);
  EXPECT_EQ(req[0].spec.ToString(), "{state: 1, updatedAt: 1} ordered");
  EXPECT_EQ(req[1].ns.collection, "wallets");
  EXPECT_EQ(req[1].spec.ToString(), "{pendingTx: 1}");
  EXPECT_EQ(req[2].spec.ToString(), "{recovery.finished: 1} where present");
  EXPECT_EQ(req[3].spec.ToString(), "{name: 1}");
  book.orphan_scan_indexes = false;
  req = RequiredIndexes(book);
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[1].ns.collection, "wallets");
  EXPECT_EQ(req[1].spec.ToString(), "{name: 1}") << "the key every step's write names";
}

TEST_P(Indexes, ATaggedInsertAlwaysNeedsItsTagSinceItsDocumentsAreFoundByIt) {
  std::vector<RequiredIndex> req = RequiredIndexes(WatchFromToml(R"([[watch]]
name = "w"
database = "x"
profile = "tagged-insert"
tagged_collections = ["orders"]
)",
                                                                 backend_->database()));
  int tag = 0;
  for (const RequiredIndex& r : req)
    if (r.ns.collection == "orders") {
      ++tag;
      EXPECT_EQ(r.spec.ToString(), "{tx: 1}");
    }
  EXPECT_EQ(tag, 1);
}

TEST_P(Indexes, AWatchWithoutATimeFieldNeedsWhatItsAgesComeFromInTheIndex) {
  // Finished transactions are read only inside their late-write window: the range of that
  // window must be a range of an index, whatever the age is read from: the state, then what
  // the age is read from, as the second key (a range of a third key under "no time" is no
  // range on DocumentDB).
  auto age_indexes = [&](const char* missing_time) {
    std::string out;
    for (const RequiredIndex& r :
         RequiredIndexes(WatchFromToml(std::string("[[watch]]\nname = \"w\"\ndatabase = "
                                                   "\"x\"\nprofile = \"transfer\"\n"
                                                   "missing_time = \"") +
                                           missing_time + "\"\n",
                                       backend_->database())))
      if (r.spec.ordered) out += (out.empty() ? "" : " + ") + r.spec.ToString();
    return out;
  };
  EXPECT_EQ(age_indexes("quarantine"), "{state: 1, lastModified: 1} ordered");
  EXPECT_EQ(age_indexes("object_id"),
            "{state: 1, lastModified: 1} ordered + {state: 1, _id: 1} ordered");
  EXPECT_EQ(age_indexes("first_seen"),
            "{state: 1, lastModified: 1} ordered + {state: 1, recovery.firstSeen: 1} ordered");

  // A described step that finds its participant by another key needs that key's index.
  std::vector<RequiredIndex> req = RequiredIndexes(WatchFromToml(R"([[watch]]
name = "w"
database = "x"
profile = "steps"
steps = [
  {collection = "users", key = "login", key_path = "to", inc = {money = "amount"}},
  {collection = "users", key = "login", key_path = "from", inc = {money = "-amount"}},
]
)",
                                                                 backend_->database()));
  int login = 0;
  for (const RequiredIndex& r : req)
    if (r.ns.collection == "users" && r.spec.ToString() == "{login: 1}") ++login;
  EXPECT_EQ(login, 1) << "one index for the key both steps use";
}

TEST_P(Indexes, TheIndexAgesWithoutATimeComeFromIsNeededOnceATransactionHasNoTime) {
  // An application that writes a time on every transaction never reads by the index of
  // ages from the _id or from first sightings, and would pay for it on every write of its
  // transactions: it is neither created nor reported missing until one lacks a time.
  for (const char* missing_time : {"object_id", "first_seen"}) {
    SCOPED_TRACE(missing_time);
    WatchSpec w = WatchFromToml(std::string("[[watch]]\nname = \"w\"\ndatabase = \"x\"\n"
                                            "profile = \"transfer\"\ncollection = \"txns_") +
                                    missing_time + "\"\nmissing_time = \"" + missing_time + "\"\n",
                                backend_->database());
    Must(store()->InsertMany(
        w.ns,
        {Document{{"_id", 1}, {"state", "done"}, {"lastModified", DateTime{1'800'000'000'000}}}}));
    std::vector<IndexCheck> checks;
    Must(EnsureIndexes(store(), w, /*create=*/true, &checks));
    ASSERT_EQ(checks.size(), 2u);
    EXPECT_TRUE(checks[0].created) << checks[0].index.spec.ToString();
    EXPECT_TRUE(checks[1].index.only_with_timeless) << checks[1].index.spec.ToString();
    EXPECT_FALSE(checks[1].needed);
    EXPECT_FALSE(checks[1].created);
    EXPECT_FALSE(HasKeys(List(w.ns), checks[1].index.spec)) << "nothing reads by it yet";

    Must(store()->InsertMany(w.ns, {Document{{"_id", 2}, {"state", "pending"}}}));
    Must(EnsureIndexes(store(), w, /*create=*/false, &checks));
    EXPECT_TRUE(checks[1].needed) << "a transaction without a time is there now";
    EXPECT_FALSE(checks[1].present);
    Must(EnsureIndexes(store(), w, /*create=*/true, &checks));
    EXPECT_TRUE(checks[1].created);
    EXPECT_TRUE(HasKeys(List(w.ns), checks[1].index.spec));
  }
}

TEST_P(Indexes, AnIndexOfDocumentsWithTheKeyIsListedSoAndAPlainOneDoesNotServeItsNeed) {
  Namespace ns{backend_->database(), "things"};
  IndexSpec quarantined_only{{{"recovery.quarantine", 1}}, "", true};
  Must(store()->CreateIndexes(ns, {quarantined_only}));
  bool listed = false;
  for (const IndexSpec& i : List(ns))
    if (i.keys == quarantined_only.keys) listed = quarantined_only.ServedBy(i);
  EXPECT_TRUE(listed) << "created with its condition, listed with it";
  EXPECT_FALSE(quarantined_only.ServedBy(IndexSpec{{{"recovery.quarantine", 1}}, ""}))
      << "a plain index is read whole for \"the key exists\"";
}

TEST_P(Indexes, MissingIndexesAreReportedAndCreatedOnlyWhenAsked) {
  Bank bank(store(), backend_->database());
  bank.Open(2);
  WatchSpec w = bank.Watch();
  w.orphan_scan_indexes = true;
  std::vector<IndexCheck> checks;
  Must(EnsureIndexes(store(), w, /*create=*/false, &checks));
  ASSERT_EQ(checks.size(), 3u);
  for (const auto& c : checks) {
    EXPECT_FALSE(c.present) << c.index.spec.ToString();
    EXPECT_FALSE(c.created);
  }
  EXPECT_FALSE(HasKeys(List(bank.accounts()), checks[1].index.spec)) << "a check writes nothing";

  Must(EnsureIndexes(store(), w, /*create=*/true, &checks));
  for (const auto& c : checks) EXPECT_TRUE(c.created) << c.index.spec.ToString();
  EXPECT_TRUE(HasKeys(List(bank.txns()), checks[0].index.spec)) << checks[0].index.spec.ToString();
  EXPECT_TRUE(HasKeys(List(bank.accounts()), checks[1].index.spec));

  Must(EnsureIndexes(store(), w, /*create=*/true, &checks));
  for (const auto& c : checks) {
    EXPECT_TRUE(c.present);
    EXPECT_FALSE(c.created) << "nothing is created twice";
  }
}

TEST_P(Indexes, AnIndexStartingWithTheNeededKeysServesThemButAReorderedOneDoesNot) {
  Bank bank(store(), backend_->database());
  WatchSpec w = bank.Watch();
  w.orphan_scan_indexes = true;
  Must(store()->CreateIndexes(bank.txns(), {IndexSpec{{{"lastModified", 1}, {"state", 1}}, ""}}));
  Must(store()->CreateIndexes(bank.accounts(),
                              {IndexSpec{{{"pendingTransactions", 1}, {"balance", 1}}, ""}}));
  std::vector<IndexCheck> checks;
  Must(EnsureIndexes(store(), w, /*create=*/false, &checks));
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_FALSE(checks[0].present) << "{lastModified, state} cannot serve a query by state";
  EXPECT_TRUE(checks[1].present) << "{pendingTransactions, balance} serves the marker guards";
}

TEST_P(Indexes, AReadThatNamesAnIndexTheCollectionLacksIsReadWithoutIt) {
  // An operator who creates the indexes by hand may not have the one a read names in its
  // hint; the server refuses such a read, and every sweep with it, unless it is sent again
  // without the hint.
  Bank bank(store(), backend_->database());
  bank.Open(3);
  FindOptions options;
  options.hint = {{"noSuchKey", 1}};
  std::unique_ptr<Cursor> cursor;
  Must(store()->Find(bank.accounts(), Filter().Exists("balance"), options, &cursor));
  std::int64_t n = 0, accounts = 0;
  Document d;
  for (bool has = true;;) {
    Must(cursor->Next(&d, &has));
    if (!has) break;
    ++n;
  }
  Must(store()->Count(bank.accounts(), Filter().Exists("balance"), &accounts));
  EXPECT_GT(n, 0);
  EXPECT_EQ(n, accounts);
}

TEST_P(Indexes, UpdateEachAppliesEveryRequestOnItsOwnAndSumsWhatMatched) {
  Namespace ns{backend_->database(), "accounts"};
  Must(store()->InsertMany(ns, {Document{{"_id", "A"}, {"balance", 10}, {"m", Array{}}},
                                Document{{"_id", "B"}, {"balance", 10}, {"m", Array{}}}}));
  std::vector<UpdateRequest> batch = {
      {Filter().Eq("_id", "A").Ne("m", 1), Update().Inc("balance", -5).Push("m", 1)},
      {Filter().Eq("_id", "B").Ne("m", 1), Update().Inc("balance", 5).Push("m", 1)},
      {Filter().Eq("_id", "missing"), Update().Inc("balance", 5)},
  };
  BulkResult r;
  Must(store()->UpdateEach(ns, batch, &r));
  EXPECT_TRUE(r.refused.empty());
  EXPECT_EQ(r.matched, 2);
  EXPECT_EQ(r.modified, 2);
  // Repeated, the guards refuse every request: the batch is as idempotent as each request.
  Must(store()->UpdateEach(ns, batch, &r));
  EXPECT_EQ(r.matched, 0);
  std::optional<Document> a;
  Must(store()->FindOne(ns, Filter().Eq("_id", "A"), &a));
  EXPECT_EQ(a->Get("balance")->as_double(), 5.0);
  Must(store()->UpdateEach(ns, {}, &r));
  EXPECT_EQ(r.matched, 0) << "an empty batch sends nothing and matches nothing";
}

INSTANTIATE_TEST_SUITE_P(Backends, Indexes, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

TXN_RECOVERY_DATABASE_SUITE(WireStats);

TEST(WireStats, MongoStoreCountsCommandsAndTheDocumentsTheyReturn) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Store* store = backend->store();
  Namespace ns{backend->database(), "things"};
  std::vector<Document> docs;
  for (int i = 0; i < 7; ++i) docs.push_back(Document{{"_id", i}});
  Must(store->InsertMany(ns, docs));
  Store::WireStats before, after;
  ASSERT_TRUE(store->GetWireStats(&before));
  FindOptions o;
  o.batch_size = 3;  // 7 documents: find + 2 getMore
  std::unique_ptr<Cursor> c;
  Must(store->Find(ns, Filter(), o, &c));
  Document d;
  int n = 0;
  for (bool has = true;; ++n) {
    Must(c->Next(&d, &has));
    if (!has) break;
  }
  c.reset();
  ASSERT_EQ(n, 7);
  ASSERT_TRUE(store->GetWireStats(&after));
  EXPECT_EQ(after.documents_returned - before.documents_returned, 7);
  EXPECT_GE(after.round_trips - before.round_trips, 3);
  EXPECT_LE(after.round_trips - before.round_trips, 4) << "a killCursors at most on top";

  std::optional<Document> one;
  ASSERT_TRUE(store->GetWireStats(&before));
  Must(store->FindOneAndUpdate(ns, Filter().Eq("_id", 3), Update().Set("x", 1), &one));
  ASSERT_TRUE(store->GetWireStats(&after));
  EXPECT_EQ(after.round_trips - before.round_trips, 1);
  EXPECT_EQ(after.documents_returned - before.documents_returned, 1);

  MemoryStore memory(Clock::Real());
  EXPECT_FALSE(memory.GetWireStats(&before)) << "nothing crosses a wire in memory";
}

// ---- The operator's view ----------------------------------------------------------------

std::string WriteConfig(const std::string& database, bool manage,
                        const std::string& watch_lines = "") {
  return WriteTestFile(".toml", "[mongodb]\nuri = \"" + FindTestUri().uri_or_reason +
                                    "\"\nserver_selection_timeout = \"2s\"\n[sweep]\n"
                                    "manage_indexes = " +
                                    (manage ? "true" : "false") +
                                    "\n[[watch]]\nname = \"bank\"\ndatabase = \"" + database +
                                    "\"\n" + watch_lines);
}

TXN_RECOVERY_DATABASE_SUITE(IndexesCli);

TEST(IndexesCli, WithoutManageIndexesTheSweepWarnsAndInspectListsWhatIsMissing) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  std::string path = WriteConfig(backend->database(), /*manage=*/false);

  ProcessResult s = RunTxnRecoveryd({"sweep", "--config", path});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  // Without the {state, time} index that the read of unknown states names, that read goes
  // on without it (the server would otherwise refuse it, and every sweep).
  EXPECT_NE(
      s.err.find("missing index {state: 1, lastModified: 1} ordered on " + bank.txns().ToString()),
      std::string::npos)
      << s.err;
  // The configuration names no time field: ages may come from the first sighting, but no
  // transaction lacks a time yet, and the index of first sightings would cost every write
  // of the application's transactions for nothing.
  EXPECT_EQ(s.err.find("missing index {state: 1, recovery.firstSeen: 1}"), std::string::npos)
      << s.err;
  EXPECT_EQ(s.err.find("recovery.quarantine"), std::string::npos)
      << "the quarantine is counted from the daemon's records, not by an index\n"
      << s.err;
  EXPECT_EQ(s.err.find(bank.accounts().ToString()), std::string::npos)
      << "no index is asked of the application's accounts by default\n"
      << s.err;

  ProcessResult i = RunTxnRecoveryd({"inspect", "--config", path});
  EXPECT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("indexes: 1 missing"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("not needed yet: {state: 1, recovery.firstSeen: 1} ordered on " +
                       bank.txns().ToString()),
            std::string::npos)
      << i.out;
  ProcessResult j = RunTxnRecoveryd({"inspect", "--json", "--config", path});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["watches"][0]["missing_indexes"].size(), 1u);
  ASSERT_EQ(doc["watches"][0]["indexes_not_needed_yet"].size(), 1u);
  EXPECT_EQ(doc["watches"][0]["indexes_not_needed_yet"][0]["keys"],
            "{state: 1, recovery.firstSeen: 1} ordered");
  EXPECT_EQ(doc["watches"][0]["missing_indexes"][0]["keys"], "{state: 1, lastModified: 1} ordered");

  // The application writes its first transaction without a time: from now on the first
  // sightings' index is needed, and said missing.
  Must(backend->store()->InsertMany(bank.txns(), {Document{{"_id", "no time"},
                                                           {"source", Bank::Account(0)},
                                                           {"destination", Bank::Account(1)},
                                                           {"value", 1},
                                                           {"state", "initial"}}}));
  i = RunTxnRecoveryd({"inspect", "--config", path});
  EXPECT_NE(i.out.find("indexes: 2 missing"), std::string::npos) << i.out;
  EXPECT_EQ(i.out.find("not needed yet"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("missing index {state: 1, recovery.firstSeen: 1} ordered"),
            std::string::npos)
      << i.out;

  std::vector<IndexSpec> list;
  Must(backend->store()->ListIndexes(bank.txns(), &list));
  for (const auto& idx : list) EXPECT_EQ(idx.keys.front().first, "_id") << "nothing created";
}

TEST(IndexesCli, WithManageIndexesTheSweepCreatesThemAndInspectFindsNoneMissing) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  std::string path = WriteConfig(backend->database(), /*manage=*/true);

  ProcessResult dry = RunTxnRecoveryd({"sweep", "--dry-run", "--config", path});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  std::vector<IndexCheck> checks;
  Must(EnsureIndexes(backend->store(), bank.Watch(), false, &checks));
  EXPECT_FALSE(checks[0].present) << "a dry run writes nothing, indexes included";

  ProcessResult s = RunTxnRecoveryd({"sweep", "--json", "--config", path});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  auto doc = nlohmann::json::parse(s.out);
  EXPECT_GT(doc["wire"]["round_trips"].get<int>(), 0) << "the sweep reports what it cost";
  Must(EnsureIndexes(backend->store(), bank.Watch(), false, &checks));
  for (const auto& c : checks) EXPECT_TRUE(c.present) << c.index.spec.ToString();

  ProcessResult i = RunTxnRecoveryd({"inspect", "--config", path});
  EXPECT_NE(i.out.find("indexes: all present"), std::string::npos) << i.out;
  std::vector<IndexSpec> accounts;
  Must(backend->store()->ListIndexes(bank.accounts(), &accounts));
  EXPECT_EQ(accounts.size(), 1u) << "the accounts keep their _id index alone";
  std::vector<IndexSpec> txns;
  Must(backend->store()->ListIndexes(bank.txns(), &txns));
  for (const auto& idx : txns)
    EXPECT_NE(idx.keys.front().first, "recovery.quarantine")
        << "the quarantine is counted from the daemon's records, not by an index";
}

TEST(IndexesCli, AWatchAskingForTheOrphanScanIndexesGetsThemOnItsParticipants) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  const std::string lines = "orphan_scan_indexes = true\n";

  ProcessResult s =
      RunTxnRecoveryd({"sweep", "--config", WriteConfig(backend->database(), false, lines)});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.err.find("missing index {pendingTransactions: 1} on " + bank.accounts().ToString()),
            std::string::npos)
      << s.err;

  s = RunTxnRecoveryd({"sweep", "--config", WriteConfig(backend->database(), true, lines)});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  std::vector<IndexSpec> accounts;
  Must(backend->store()->ListIndexes(bank.accounts(), &accounts));
  std::string keys;
  for (const IndexSpec& i : accounts) keys += i.ToString() + " ";
  EXPECT_EQ(accounts.size(), 3u) << keys;
  EXPECT_NE(keys.find("{pendingTransactions: 1}"), std::string::npos) << keys;
  EXPECT_NE(keys.find("{recovery.finished: 1} where present"), std::string::npos) << keys;
}

}  // namespace
}  // namespace txn_recovery::testing
