// The Filter/Update algebra's reference semantics (what the in-memory store does and the
// MongoDB store must match), and the document model's number rules.
#include <gtest/gtest.h>

#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/stores/memory_store.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {
namespace {

TEST(Filter, EqualityOnAnArrayFieldMeansContains) {
  Document d{{"markers", Array{Value(1), Value("x")}}};
  EXPECT_TRUE(Filter().Eq("markers", 1).Matches(d));
  EXPECT_FALSE(Filter().Eq("markers", 2).Matches(d));
  EXPECT_TRUE(Filter().Ne("markers", 2).Matches(d));
  EXPECT_FALSE(Filter().Ne("markers", "x").Matches(d));
}

TEST(Filter, ComparisonsRespectTypeBracketing) {
  Document d{{"t", DateTime{100}}, {"s", "yesterday"}, {"n", 5}};
  EXPECT_TRUE(Filter().Lt("t", DateTime{200}).Matches(d));
  EXPECT_FALSE(Filter().Lt("s", DateTime{200}).Matches(d));
  EXPECT_TRUE(Filter().Gte("n", 5.0).Matches(d));
  EXPECT_FALSE(Filter().Gte("n", 5.5).Matches(d));
  EXPECT_TRUE(Filter().NotDateTime("s").Matches(d));
  EXPECT_FALSE(Filter().NotDateTime("t").Matches(d));
  EXPECT_FALSE(Filter().NotDateTime("absent").Matches(d));
}

TEST(Filter, NinMatchesAbsentFieldsAndAnyOfNeedsOneAlternative) {
  Document d{{"a", 1}};
  EXPECT_TRUE(Filter().Nin("state", {Value("x")}).Matches(d));
  EXPECT_TRUE(Filter().AnyOf({Filter().Eq("a", 2), Filter().Eq("a", 1)}).Matches(d));
  EXPECT_FALSE(Filter().AnyOf({Filter().Eq("a", 2), Filter().Exists("b")}).Matches(d));
}

TEST(Update, IncKeepsTheStoredNumberTypeAndPromotesOnOverflow) {
  Document d{{"b", std::int32_t{1000}}, {"big", std::int32_t{2147483600}}};
  ASSERT_TRUE(Update()
                  .Inc("b", std::int32_t{-100})
                  .Inc("big", std::int32_t{100})
                  .ApplyTo(&d, DateTime{0})
                  .ok());
  EXPECT_TRUE(std::holds_alternative<std::int32_t>(d.Get("b")->storage()));
  EXPECT_EQ(*d.Get("b"), Value(900));
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(d.Get("big")->storage()));
}

TEST(Update, RefusesWhatMongoDBRefuses) {
  Document d{{"b", "text"}, {"m", 5}};
  EXPECT_FALSE(Update().Inc("b", 1).ApplyTo(&d, DateTime{0}).ok());
  EXPECT_FALSE(Update().Push("m", 1).ApplyTo(&d, DateTime{0}).ok());
}

TEST(Update, PushPullAndDottedPaths) {
  Document d;
  ASSERT_TRUE(Update()
                  .Push("m", 7)
                  .Set("r.lease.owner", "me")
                  .CurrentDate("r.at")
                  .ApplyTo(&d, DateTime{42})
                  .ok());
  EXPECT_EQ(*d.GetPath("r.lease.owner"), Value("me"));
  EXPECT_EQ(*d.GetPath("r.at"), Value(DateTime{42}));
  ASSERT_TRUE(Update().Pull("m", 7).Unset("r.lease").ApplyTo(&d, DateTime{0}).ok());
  EXPECT_TRUE(d.Get("m")->as_array()->empty());
  EXPECT_EQ(d.GetPath("r.lease"), nullptr);
}

TEST(MemoryStore, AFailedUpdateLeavesTheDocumentUnchanged) {
  ManualClock clock;
  MemoryStore store(&clock);
  Namespace ns{"db", "c"};
  ASSERT_TRUE(store.InsertMany(ns, {Document{{"_id", 1}, {"a", 1}, {"b", "x"}}}).ok());
  WriteResult r;
  EXPECT_FALSE(
      store.UpdateOne(ns, Filter().Eq("_id", 1), Update().Inc("a", 1).Inc("b", 1), &r).ok());
  EXPECT_EQ(store.Dump(ns)[0], (Document{{"_id", 1}, {"a", 1}, {"b", "x"}}));
}

TEST(ObjectId, HexRoundTripAndCreationTime) {
  auto oid = ObjectId::FromHex("54fd7392742abeef6186a68e");
  ASSERT_TRUE(oid);
  EXPECT_EQ(oid->Hex(), "54fd7392742abeef6186a68e");
  EXPECT_EQ(oid->CreationMillis(), 0x54fd7392LL * 1000);
  EXPECT_FALSE(ObjectId::FromHex("xyz"));
}

TEST(StateAliases, ASpellingMayBelongToOneStateOnly) {
  StateAliases a;
  EXPECT_TRUE(a.Validate().empty());
  EXPECT_EQ(a.Parse("canceled"), TxnState::kCancelled);
  a.done.push_back("canceled");
  EXPECT_FALSE(a.Validate().empty());
}

}  // namespace
}  // namespace txn_recovery
