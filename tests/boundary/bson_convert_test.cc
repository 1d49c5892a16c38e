// The conversion boundary on BSON no real server would send: replies nested far deeper than
// mongod stores, and keys that appear twice. The reader must neither overflow its stack nor
// guess which copy of a key counts; a profile reading such a field must report it.
#include <bson/bson.h>
#include <gtest/gtest.h>

#include <pthread.h>

#include <functional>
#include <string>

#include "stores/mongo_handles.h"
#include "support/wire_proxy.h"
#include "txn_recovery/shapes/profile.h"

namespace txn_recovery {
namespace {

using testing::BsonWriter;
using testing::NestedDocument;

// The document model of raw BSON bytes, as the store hands replies over.
Document Read(const std::string& bytes) {
  bson_t b;
  EXPECT_TRUE(
      bson_init_static(&b, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  return mongo::FromBson(&b);
}

// Follows the chain {a: {a: ...}} of NestedDocument from `v`, `levels` times.
const Value* Descend(const Value* v, int levels) {
  for (int i = 0; i < levels && v != nullptr; ++i) {
    const Document* d = v->as_document();
    v = d ? d->Get("a") : nullptr;
  }
  return v;
}

// Runs `fn` on a thread with a 512 KiB stack and waits for it.
void RunOnSmallStack(std::function<void()> fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  pthread_t thread;
  auto trampoline = [](void* arg) -> void* {
    (*static_cast<std::function<void()>*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, trampoline, &fn), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

std::string TypeName(const Value* v) {
  return v ? std::string(v->type_name()) : "<absent>";
}

TEST(BsonConvert, AReplyNested20000LevelsDeepIsReadWithoutOverflowingTheStack) {
  // Read on a thread with a 512 KiB stack: an unbounded recursion of 20,000 levels cannot
  // fit there (nor, at a few hundred bytes a level, far deeper replies in a worker's 8 MiB),
  // a recursion bounded at 100 levels does.
  std::string bytes =
      BsonWriter().String("_id", "T1").Document("note", NestedDocument(20000)).Finish();
  Document doc;
  RunOnSmallStack([&] { doc = Read(bytes); });
  ASSERT_NE(doc.Get("_id"), nullptr);
  EXPECT_EQ(*doc.Get("_id"), Value("T1"));
  // "note" is level 1; the chain is kept down to level 100 and cut below it.
  const Value* level100 = Descend(doc.Get("note"), 99);
  ASSERT_NE(level100, nullptr);
  EXPECT_TRUE(level100->is_document()) << TypeName(level100);
  const Value* level101 = Descend(doc.Get("note"), 100);
  EXPECT_EQ(TypeName(level101), "nested deeper than 100 levels");
}

TEST(BsonConvert, ANestingOfExactly100LevelsIsKeptWhole) {
  // NestedDocument(99) as the value of a top-level field: levels 1 to 100.
  Document doc = Read(BsonWriter().Document("note", NestedDocument(99)).Finish());
  const Value* deepest = Descend(doc.Get("note"), 99);
  ASSERT_NE(deepest, nullptr);
  ASSERT_TRUE(deepest->is_document()) << TypeName(deepest);
  EXPECT_TRUE(deepest->as_document()->empty());
}

TEST(BsonConvert, ArraysCountAsLevelsToo) {
  // [[[...]]] 150 deep: level 101 is cut.
  std::string inner = BsonWriter().Finish();
  for (int i = 0; i < 150; ++i) inner = BsonWriter().Array("0", inner).Finish();
  Document doc = Read(BsonWriter().Array("list", inner).Finish());
  const Value* v = doc.Get("list");
  int levels = 1;
  while (v && v->is_array() && !v->as_array()->empty()) {
    v = &v->as_array()->front();
    ++levels;
  }
  EXPECT_EQ(levels, 101);
  EXPECT_EQ(TypeName(v), "nested deeper than 100 levels");
}

TEST(BsonConvert, AKeyThatAppearsTwiceIsNeitherCopyButADuplicatedKey) {
  // {_id: "T1", value: 10, state: "pending", value: 1000}: the last copy used to win.
  Document doc = Read(BsonWriter()
                          .String("_id", "T1")
                          .Int32("value", 10)
                          .String("state", "pending")
                          .Int32("value", 1000)
                          .Finish());
  ASSERT_EQ(doc.size(), 3u) << "one field per key, in first-seen order";
  auto it = doc.begin();
  EXPECT_EQ(it->first, "_id");
  EXPECT_EQ((++it)->first, "value");
  EXPECT_EQ(TypeName(&it->second), "duplicated key");
  EXPECT_EQ((++it)->first, "state");
  EXPECT_EQ(it->second, Value("pending"));
}

TEST(BsonConvert, ADuplicatedKeyInASubDocumentSpoilsOnlyThatField) {
  std::string lease = BsonWriter()
                          .String("owner", "daemon-a")
                          .Int64("expires", 1)
                          .String("owner", "daemon-b")
                          .String("owner", "daemon-c")
                          .Finish();
  Document doc = Read(
      BsonWriter().Document("recovery", BsonWriter().Document("lease", lease).Finish()).Finish());
  const Value* owner = doc.GetPath("recovery.lease.owner");
  EXPECT_EQ(TypeName(owner), "duplicated key");
  const Value* expires = doc.GetPath("recovery.lease.expires");
  ASSERT_NE(expires, nullptr);
  EXPECT_EQ(*expires, Value(std::int64_t{1}));
  EXPECT_EQ(doc.GetPath("recovery.lease")->as_document()->size(), 2u);
}

TEST(BsonConvert, AWideDocumentKeepsEveryDistinctField) {
  BsonWriter w;
  for (int i = 0; i < 50000; ++i) w.Int32(std::string("f").append(std::to_string(i)), i);
  Document doc = Read(w.Finish());
  ASSERT_EQ(doc.size(), 50000u);
  EXPECT_EQ(*doc.Get("f49999"), Value(49999));
}

TEST(BsonConvert, AProfileReadingADuplicatedAmountReportsItAsTheWrongType) {
  Document doc = Read(BsonWriter()
                          .String("_id", "T1")
                          .String("source", "A0")
                          .String("destination", "A1")
                          .Int32("value", 10)
                          .Int32("value", 1000)
                          .String("state", "pending")
                          .DateTime("lastModified", 1'700'000'000'000)
                          .Finish());
  Profile profile = Profile::Transfer();
  Transaction txn;
  Status s = profile.Parse(doc, {"bank", "transactions"}, "recovery", &txn);
  ASSERT_TRUE(s.IsMalformed()) << s.ToString();
  EXPECT_NE(s.message().find("value"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("duplicated key"), std::string::npos) << s.message();
}

TEST(BsonConvert, ATooDeepFieldTheProfileDoesNotReadLeavesTheTransactionRecoverable) {
  // The cut is where the nesting goes too deep, not the whole document: a transfer with a
  // 20,000-deep note is still parsed (and recovered) on its own fields.
  Document doc = Read(BsonWriter()
                          .String("_id", "T1")
                          .String("source", "A0")
                          .String("destination", "A1")
                          .Int32("value", 10)
                          .String("state", "pending")
                          .DateTime("lastModified", 1'700'000'000'000)
                          .Document("note", NestedDocument(20000))
                          .Finish());
  Transaction txn;
  Status s = Profile::Transfer().Parse(doc, {"bank", "transactions"}, "recovery", &txn);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(txn.steps.size(), 2u);
}

}  // namespace
}  // namespace txn_recovery
