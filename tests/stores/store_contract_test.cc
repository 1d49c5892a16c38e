// The Store contract, checked the same way against the in-memory store and against
// MongoStore on the test server: the engine's correctness rests on the two agreeing, so
// every query and update shape the engine uses is pinned here. Also MongoStore's own
// promises: URIs redacted, an unreachable server reported as Unavailable.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <set>

#include "support/bank.h"
#include "support/test_env.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::testing {
namespace {

class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    ns_ = {backend_->database(), "things"};
  }
  Store* store() { return backend_->store(); }
  // The _ids matching `f`, sorted by _id, as strings, each once: a scan may return a
  // document twice (DocumentDB does, even with no writer running; docs/compatibility.md),
  // which is not what these tests look at.
  std::vector<std::string> Ids(const Filter& f, FindOptions o = {}) {
    o.sort_ascending_by = "_id";
    std::unique_ptr<Cursor> c;
    Must(store()->Find(ns_, f, o, &c));
    std::vector<std::string> ids;
    std::set<std::string> seen;
    Document d;
    for (bool has = true;;) {
      Must(c->Next(&d, &has));
      if (!has) break;
      std::string id = *d.Get("_id")->as_string();
      if (seen.insert(id).second) ids.push_back(std::move(id));
    }
    return ids;
  }
  Document Get(const std::string& id) {
    std::optional<Document> d;
    Must(store()->FindOne(ns_, Filter().Eq("_id", id), &d));
    if (!d) throw std::runtime_error("no document " + id);
    return *d;
  }
  std::unique_ptr<TestBackend> backend_;
  Namespace ns_;
};

TEST_P(StoreContract, EveryValueTypeTheEngineUsesRoundTripsExactly) {
  ObjectId oid = *ObjectId::FromHex("65a1b2c3d4e5f60718293a4b");
  Document doc{{"_id", "all"},
               {"i32", std::int32_t{-7}},
               {"i64", std::int64_t{(1LL << 53) + 1}},  // not representable as a double
               {"dbl", 2.5},
               {"str", "h\xc3\xa9llo"},
               {"yes", true},
               {"nil", Null{}},
               {"when", DateTime{1'700'000'000'123}},
               {"oid", oid},
               {"arr", Array{Value(1), Value("two"), Value(Document{{"three", 3}})}},
               {"sub", Document{{"deep", Document{{"er", "x"}}}}}};
  Must(store()->InsertMany(ns_, {doc}));
  EXPECT_EQ(Get("all"), doc);
  EXPECT_EQ(Get("all").Get("i64")->type_name(), "int64");
  EXPECT_EQ(Get("all").Get("i32")->type_name(), "int32");
}

TEST_P(StoreContract, FiltersSelectTheSameDocumentsAsMongoDB) {
  Must(store()->InsertMany(
      ns_, {Document{{"_id", "a"}, {"n", 1}, {"tags", Array{Value("x"), Value("y")}}},
            Document{{"_id", "b"}, {"n", std::int64_t{5}}, {"tags", Array{Value("y")}}},
            Document{{"_id", "c"}, {"n", 9.5}, {"when", DateTime{1000}}},
            Document{{"_id", "d"}, {"n", "7"}, {"when", "yesterday"}},
            Document{{"_id", "e"}, {"sub", Document{{"k", "v"}}}, {"tags", Array{}}}}));
  using V = std::vector<std::string>;
  EXPECT_EQ(Ids(Filter().NonEmptyArray("tags")), (V{"a", "b"}))
      << "an empty array and an absent field are both 'no element'";
  EXPECT_EQ(Ids(Filter().Eq("tags", "y")), (V{"a", "b"})) << "equality on an array: contains";
  EXPECT_EQ(Ids(Filter().Ne("tags", "x")), (V{"b", "c", "d", "e"}));
  EXPECT_EQ(Ids(Filter().In("n", {Value(1), Value(9.5)})), (V{"a", "c"}));
  EXPECT_EQ(Ids(Filter().Nin("n", {Value(1), Value(5)})), (V{"c", "d", "e"}))
      << "$nin also matches an absent field";
  EXPECT_EQ(Ids(Filter().Lt("n", 6)), (V{"a", "b"})) << "a string is never less than a number";
  EXPECT_EQ(Ids(Filter().Gte("n", 5)), (V{"b", "c"}));
  EXPECT_EQ(Ids(Filter().Lt("when", DateTime{2000})), (V{"c"}));
  EXPECT_EQ(Ids(Filter().Exists("when")), (V{"c", "d"}));
  EXPECT_EQ(Ids(Filter().NotExists("n")), (V{"e"}));
  EXPECT_EQ(Ids(Filter().NotDateTime("when")), (V{"d"}));
  EXPECT_EQ(Ids(Filter().Eq("sub.k", "v")), (V{"e"}));
  EXPECT_EQ(Ids(Filter().Exists("n").AnyOf({Filter().Eq("_id", "a"), Filter().Gte("n", 9)})),
            (V{"a", "c"}));
}

TEST_P(StoreContract, SortLimitAndSmallBatchesReturnEveryDocumentOnce) {
  std::vector<Document> docs;
  for (int i = 0; i < 25; ++i) {
    char id[8];
    std::snprintf(id, sizeof id, "k%02d", 24 - i);
    docs.push_back(Document{{"_id", id}, {"i", i}});
  }
  Must(store()->InsertMany(ns_, docs));
  FindOptions o;
  o.batch_size = 4;
  o.limit = 10;
  std::vector<std::string> ids = Ids(Filter(), o);
  ASSERT_EQ(ids.size(), 10u);
  EXPECT_EQ(ids.front(), "k00");
  EXPECT_EQ(ids.back(), "k09");
  std::int64_t n = 0;
  Must(store()->Count(ns_, Filter().Lt("i", 5), &n));
  EXPECT_EQ(n, 5);
}

TEST_P(StoreContract, ConditionalUpdatesReportWhatTheyMatchedAndChanged) {
  Must(store()->InsertMany(
      ns_, {Document{{"_id", "acct"}, {"balance", std::int32_t{100}}, {"pending", Array{}}}}));
  WriteResult r;
  // The application's guarded debit: applies once, then the marker guard stops a repeat.
  Filter guard = Filter().Eq("_id", "acct").Ne("pending", "t1");
  Update debit = Update().Inc("balance", std::int32_t{-30}).Push("pending", "t1");
  Must(store()->UpdateOne(ns_, guard, debit, &r));
  EXPECT_EQ(r.matched, 1);
  EXPECT_EQ(r.modified, 1);
  Must(store()->UpdateOne(ns_, guard, debit, &r));
  EXPECT_EQ(r.matched, 0);
  EXPECT_EQ(*Get("acct").Get("balance"), Value(70));
  EXPECT_EQ(Get("acct").Get("balance")->type_name(), "int32") << "$inc keeps the stored type";

  // $pull of an absent element matches but modifies nothing.
  Must(store()->UpdateOne(ns_, Filter().Eq("_id", "acct"), Update().Pull("pending", "t9"), &r));
  EXPECT_EQ(r.matched, 1);
  EXPECT_EQ(r.modified, 0);

  std::optional<Document> after;
  Must(store()->FindOneAndUpdate(ns_, Filter().Eq("_id", "acct"),
                                 Update().Set("state", "x").Unset("pending"), &after));
  ASSERT_TRUE(after);
  EXPECT_EQ(*after->Get("state"), Value("x"));
  EXPECT_EQ(after->Get("pending"), nullptr);
  Must(store()->FindOneAndUpdate(ns_, Filter().Eq("_id", "nobody"), Update().Set("a", 1), &after));
  EXPECT_FALSE(after);
}

TEST_P(StoreContract, CurrentDateIsTheServersClock) {
  Must(store()->InsertMany(ns_, {Document{{"_id", "t"}}}));
  DateTime before, after;
  Must(store()->ServerTime(&before));
  WriteResult r;
  Must(store()->UpdateOne(ns_, Filter().Eq("_id", "t"), Update().CurrentDate("at"), &r));
  Must(store()->ServerTime(&after));
  // Keep the document: a pointer into Get()'s temporary would dangle (ASan caught it).
  const Document doc = Get("t");
  const DateTime* at = doc.Get("at")->as_datetime();
  ASSERT_NE(at, nullptr);
  EXPECT_GE(at->millis, before.millis - 1000);
  EXPECT_LE(at->millis, after.millis + 1000);
}

// Found by the chaos suite (a daemon that could never claim an application's stuck
// transaction): the test server keeps $currentDate below the millisecond, so the value read
// back (BSON dates are milliseconds) need not equal the stored one. What holds everywhere,
// and what the claim relies on: the stored time lies within the millisecond read back.
TEST_P(StoreContract, ChaosCurrentDateLiesWithinTheMillisecondReadBack) {
  Must(store()->InsertMany(ns_, {Document{{"_id", "t"}}}));
  WriteResult r;
  Must(store()->UpdateOne(ns_, Filter().Eq("_id", "t"), Update().CurrentDate("at"), &r));
  const DateTime at = *Get("t").Get("at")->as_datetime();
  Filter same_millisecond;
  same_millisecond.Gte("at", at).Lt("at", DateTime{at.millis + 1});
  std::optional<Document> claimed;
  Must(store()->FindOneAndUpdate(ns_, Filter().Eq("_id", "t").And(same_millisecond),
                                 Update().Set("claimed", true), &claimed));
  EXPECT_TRUE(claimed);
}

// Found by DocumentDB: a bulk's per-item refusal carried its reason through the URI
// redactor, which shows any text that is not a URI as "(a MongoDB URI that does not parse;
// not shown)": every refusal read the same, and none could be told from another.
TEST_P(StoreContract, ARefusedItemOfABulkSaysWhyTheServerRefusedIt) {
  Must(store()->InsertMany(
      ns_, {Document{{"_id", "s"}, {"balance", "100"}}, Document{{"_id", "n"}, {"balance", 100}}}));
  BulkResult b;
  Must(store()->UpdateEach(ns_,
                           {{Filter().Eq("_id", "s"), Update().Inc("balance", 5)},
                            {Filter().Eq("_id", "n"), Update().Inc("balance", 5)}},
                           &b));
  ASSERT_EQ(b.refused.size(), 1u);
  EXPECT_EQ(b.refused[0].first, 0u);
  const std::string why = b.refused[0].second.message();
  EXPECT_EQ(why.find("not shown"), std::string::npos) << why;
  EXPECT_NE(why.find("balance"), std::string::npos) << "the server's own reason: " << why;
  EXPECT_EQ(b.matched, 1);
}

TEST_P(StoreContract, UpdatesMongoDBRefusesFailAndChangeNothing) {
  Must(store()->InsertMany(ns_, {Document{{"_id", "s"}, {"balance", "100"}, {"list", 3}}}));
  WriteResult r;
  Status inc = store()->UpdateOne(ns_, Filter().Eq("_id", "s"),
                                  Update().Inc("balance", 5).Set("touched", true), &r);
  EXPECT_FALSE(inc.ok());
  Status push = store()->UpdateOne(ns_, Filter().Eq("_id", "s"), Update().Push("list", 1), &r);
  EXPECT_FALSE(push.ok());
  Document d = Get("s");
  EXPECT_EQ(*d.Get("balance"), Value("100"));
  EXPECT_EQ(d.Get("touched"), nullptr) << "a refused update changes nothing at all";
}

TEST_P(StoreContract, UpdateManyAndDeleteManyCountEachDocument) {
  Must(store()->InsertMany(
      ns_, {Document{{"_id", "1"}, {"tx", "T"}}, Document{{"_id", "2"}, {"tx", "T"}},
            Document{{"_id", "3"}, {"tx", "U"}}}));
  WriteResult r;
  Must(store()->UpdateMany(ns_, Filter().Eq("tx", "T"), Update().Set("valid", true), &r));
  EXPECT_EQ(r.matched, 2);
  EXPECT_EQ(r.modified, 2);
  Must(store()->DeleteMany(ns_, Filter().Eq("tx", "T"), &r));
  EXPECT_EQ(r.modified, 2);
  std::int64_t left = 0;
  Must(store()->Count(ns_, Filter(), &left));
  EXPECT_EQ(left, 1);
}

// The lease fence: conditions on the server's own clock, evaluated as it applies the write
// ($expr with $$NOW), alone, next to an _id, inside an $or, in a bulk and a findAndModify.
TEST_P(StoreContract, ConditionsOnTheServersClockAreCheckedByTheServer) {
  const DateTime now = ServerNow(store());
  const DateTime past{now.millis - 60'000}, future{now.millis + 60'000};
  Must(store()->InsertMany(
      ns_, {Document{{"_id", "expired"}, {"until", past}},
            Document{{"_id", "live"}, {"until", future}}, Document{{"_id", "never"}}}));
  using V = std::vector<std::string>;
  EXPECT_EQ(Ids(Filter().ServerNowBefore(future)), (V{"expired", "live", "never"}));
  EXPECT_EQ(Ids(Filter().ServerNowBefore(past)), (V{}));
  EXPECT_EQ(Ids(Filter().BeforeServerNow("until")), (V{"expired", "never"}))
      << "an absent date counts as passed";
  EXPECT_EQ(Ids(Filter().AnyOf({Filter().Eq("_id", "live"), Filter().BeforeServerNow("until")})),
            (V{"expired", "live", "never"}));
  EXPECT_EQ(Ids(Filter().BeforeServerNow("until").ServerNowBefore(future)), (V{"expired", "never"}))
      << "two clock conditions in one filter";

  WriteResult r;
  Must(store()->UpdateOne(ns_, Filter().Eq("_id", "live").ServerNowBefore(past),
                          Update().Set("x", 1), &r));
  EXPECT_EQ(r.matched, 0) << "a write reaching the server after its fence changes nothing";
  Must(store()->UpdateOne(ns_, Filter().Eq("_id", "live").ServerNowBefore(future),
                          Update().Set("x", 1), &r));
  EXPECT_EQ(r.matched, 1);
  BulkResult b;
  Must(store()->UpdateEach(
      ns_,
      {{Filter().Eq("_id", "live").ServerNowBefore(past), Update().Set("y", 1)},
       {Filter().Eq("_id", "never").ServerNowBefore(future), Update().Set("y", 1)}},
      &b));
  EXPECT_EQ(b.matched, 1);
  std::optional<Document> after;
  Must(store()->FindOneAndUpdate(
      ns_,
      Filter()
          .Eq("_id", "expired")
          .AnyOf({Filter().NotExists("lease"), Filter().BeforeServerNow("until")}),
      Update().Set("taken", true), &after));
  EXPECT_TRUE(after.has_value()) << "a claim of an expired lease";
}

TEST_P(StoreContract, PresentNotArraySelectsScalarMarkers) {
  Must(store()->InsertMany(
      ns_, {Document{{"_id", "array"}, {"m", Array{Value(1)}}},
            Document{{"_id", "empty"}, {"m", Array{}}}, Document{{"_id", "number"}, {"m", 606}},
            Document{{"_id", "none"}}}));
  EXPECT_EQ(Ids(Filter().PresentNotArray("m")), (std::vector<std::string>{"number"}));
}

// One request the server refuses (a $inc on a string) is reported by its index, and the
// others of the bulk are applied.
TEST_P(StoreContract, ABulkReportsTheRequestTheServerRefusedAndAppliesTheOthers) {
  Must(store()->InsertMany(ns_,
                           {Document{{"_id", "a"}, {"n", 1}}, Document{{"_id", "b"}, {"n", "x"}},
                            Document{{"_id", "c"}, {"n", 1}}}));
  BulkResult r;
  Must(store()->UpdateEach(ns_,
                           {{Filter().Eq("_id", "a"), Update().Inc("n", 1)},
                            {Filter().Eq("_id", "b"), Update().Inc("n", 1)},
                            {Filter().Eq("_id", "c"), Update().Inc("n", 1)}},
                           &r));
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_EQ(r.refused.front().first, 1u);
  EXPECT_TRUE(r.refused.front().second.IsServerError()) << r.refused.front().second.ToString();
  EXPECT_EQ(r.matched, 2);
  EXPECT_EQ(*Get("a").Get("n"), Value(2));
  EXPECT_EQ(*Get("b").Get("n"), Value("x"));
  EXPECT_EQ(*Get("c").Get("n"), Value(2));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreContract,
                         ::testing::Values("memory", "mongo", "mongo_daemon_clock"),
                         [](const auto& info) { return info.param; });

// RedactUri and every output that shows a URI: uri_secrets_test.cc.

TEST(MongoStore, ABadUriIsInvalidArgumentWithoutThePassword) {
  std::unique_ptr<MongoStore> store;
  MongoOptions o;
  o.uri = "mongodb://app:hunter2@/no-host";
  Status s = MongoStore::Open(o, &store);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(s.ToString().find("hunter2"), std::string::npos) << s.ToString();
}

// Durability is the configuration's to choose, once: a URI that asks for less (or other)
// than the configured write or read concern is refused, one that agrees is accepted.
TEST(MongoStore, AUriThatDisagreesWithTheConfiguredConcernsIsRefused) {
  auto open = [](const std::string& uri, const std::string& w, const std::string& read) {
    std::unique_ptr<MongoStore> store;
    MongoOptions o;
    o.uri = uri;
    o.write_concern = w;
    o.read_concern = read;
    return MongoStore::Open(o, &store);
  };
  EXPECT_TRUE(open("mongodb://db/", "majority", "majority").ok());
  EXPECT_TRUE(
      open("mongodb://db/?w=majority&readConcernLevel=majority", "majority", "majority").ok());
  EXPECT_TRUE(open("mongodb://db/?w=2", "2", "local").ok());
  Status s = open("mongodb://db/?w=1", "majority", "majority");
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("w=1"), std::string::npos) << s.message();
  EXPECT_TRUE(
      open("mongodb://db/?readConcernLevel=local", "majority", "majority").IsInvalidArgument());
  EXPECT_TRUE(open("mongodb://db/", "0", "majority").IsInvalidArgument())
      << "unacknowledged writes: the daemon could not tell which guard matched";
  EXPECT_TRUE(open("mongodb://db/", "majority", "available").IsInvalidArgument());
}

// An SRV name that does not resolve (a DNS outage at start; .invalid never resolves) is an
// unreachable database, retried at every call, not a bad configuration: before, the daemon
// exited 78 at start, which its unit never restarts.
TEST(MongoStore, AnSrvNameThatDoesNotResolveIsUnavailableNotABadConfiguration) {
  std::unique_ptr<MongoStore> store;
  MongoOptions o;
  o.uri = "mongodb+srv://app:hunter2@cluster0.nosuch.invalid/";
  o.server_selection_timeout = std::chrono::milliseconds(300);
  Must(MongoStore::Open(o, &store));
  for (int call = 0; call < 2; ++call) {
    Status s = store->Ping();
    EXPECT_TRUE(s.IsUnavailable()) << s.ToString();
    EXPECT_NE(s.message().find("SRV records"), std::string::npos) << s.ToString();
    EXPECT_EQ(s.ToString().find("hunter2"), std::string::npos) << s.ToString();
  }
}

TEST(MongoStore, AnUnreachableServerIsUnavailableWithinTheSelectionTimeout) {
  std::unique_ptr<MongoStore> store;
  MongoOptions o;
  o.uri = "mongodb://app:hunter2@127.0.0.1:1/";
  o.server_selection_timeout = std::chrono::milliseconds(300);
  Must(MongoStore::Open(o, &store));  // opening never needs the server
  auto t0 = std::chrono::steady_clock::now();
  Status s = store->Ping();
  EXPECT_TRUE(s.IsUnavailable()) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(s.ToString().find("hunter2"), std::string::npos) << s.ToString();
  DateTime now;
  EXPECT_TRUE(store->ServerTime(&now).IsUnavailable());
}

// The URI's own timeouts win over the options (the configuration's defaults): an
// operator who writes serverSelectionTimeoutMS=1000 into the URI hears about an unreachable
// database within a second, not after the configuration's 20 s.
TEST(MongoStore, TheUrisServerSelectionTimeoutWinsOverTheOptions) {
  std::unique_ptr<MongoStore> store;
  MongoOptions o;
  o.uri = "mongodb://app:hunter2@127.0.0.1:1/?serverSelectionTimeoutMS=1000";
  o.server_selection_timeout = std::chrono::seconds(20);
  Must(MongoStore::Open(o, &store));
  auto t0 = std::chrono::steady_clock::now();
  Status s = store->Ping();
  EXPECT_TRUE(s.IsUnavailable()) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
}

}  // namespace
}  // namespace txn_recovery::testing
