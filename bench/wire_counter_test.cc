// The statements the bench's wire counter sees in a request: an update command's `updates`,
// as an array in its body or as a document sequence; one per findAndModify; none otherwise.
#include "wire_counter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/wire/bson.h"
#include "support/wire/message.h"

namespace txn_recovery::bench {
namespace {

using testing::BsonWriter;

// An OP_MSG: `body`, then one document sequence per (name, documents) pair.
std::string OpMsg(const std::string& body,
                  const std::vector<std::pair<std::string, std::vector<std::string>>>& seqs) {
  return testing::BuildOpMsg(7, 0, 0, body, seqs);
}

std::string Statement(int id) {
  BsonWriter q;
  q.Int32("_id", id);
  BsonWriter u;
  u.Int32("balance", 1);
  BsonWriter inc;
  inc.Document("$inc", u.Finish());
  return BsonWriter().Document("q", q.Finish()).Document("u", inc.Finish()).Finish();
}

TEST(WireCounter, CountsTheStatementsOfAnUpdateInASequenceOrAnArray) {
  std::string body = BsonWriter()
                         .String("update", "accounts")
                         .Bool("ordered", false)
                         .String("$db", "bank")
                         .Finish();
  std::string collection;
  EXPECT_EQ(
      WireCounter::Statements(
          OpMsg(body, {{"updates", {Statement(1), Statement(2), Statement(3)}}}), &collection),
      3);
  EXPECT_EQ(collection, "accounts");

  BsonWriter array;
  array.Document("0", Statement(1)).Document("1", Statement(2));
  body = BsonWriter()
             .String("update", "transactions")
             .Array("updates", array.Finish())
             .String("$db", "bank")
             .Finish();
  EXPECT_EQ(WireCounter::Statements(OpMsg(body, {}), &collection), 2);
  EXPECT_EQ(collection, "transactions");
}

TEST(WireCounter, AFindAndModifyIsOneStatementAndAFindNone) {
  std::string collection;
  std::string body =
      BsonWriter().String("findAndModify", "transactions").String("$db", "bank").Finish();
  EXPECT_EQ(WireCounter::Statements(OpMsg(body, {}), &collection), 1);
  EXPECT_EQ(collection, "transactions");
  body = BsonWriter().String("find", "transactions").String("$db", "bank").Finish();
  EXPECT_EQ(WireCounter::Statements(OpMsg(body, {}), &collection), 0);
  EXPECT_EQ(WireCounter::Statements("not a message", &collection), 0);
}

TEST(WireCounter, ACommandIsTimedUnderTheCollectionItNames) {
  EXPECT_EQ(WireCounter::Target(OpMsg(
                BsonWriter().String("find", "transactions").String("$db", "bank").Finish(), {})),
            "find transactions");
  EXPECT_EQ(WireCounter::Target(OpMsg(BsonWriter()
                                          .Int64("getMore", 42)
                                          .String("collection", "accounts")
                                          .String("$db", "bank")
                                          .Finish(),
                                      {})),
            "getMore accounts");
  EXPECT_EQ(
      WireCounter::Target(OpMsg(BsonWriter().Int32("ping", 1).String("$db", "admin").Finish(), {})),
      "ping");
  EXPECT_EQ(WireCounter::Target("not a message"), "?");
}

}  // namespace
}  // namespace txn_recovery::bench
