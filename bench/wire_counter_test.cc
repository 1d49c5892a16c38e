// The statements the bench's wire counter sees in a request: an update command's `updates`,
// as an array in its body or as a document sequence; one per findAndModify; none otherwise.
#include "wire_counter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/wire_proxy.h"

namespace txn_recovery::bench {
namespace {

using testing::BsonWriter;

void Put32(std::string* s, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// An OP_MSG: `body`, then one document sequence per (name, documents) pair.
std::string OpMsg(const std::string& body,
                  const std::vector<std::pair<std::string, std::vector<std::string>>>& seqs) {
  std::string sections;
  sections.push_back('\0');
  sections += body;
  for (const auto& [name, docs] : seqs) {
    std::string payload = name + std::string(1, '\0');
    for (const auto& d : docs) payload += d;
    sections.push_back('\1');
    Put32(&sections, static_cast<std::uint32_t>(payload.size() + 4));
    sections += payload;
  }
  std::string m;
  Put32(&m, static_cast<std::uint32_t>(16 + 4 + sections.size()));
  Put32(&m, 7);     // requestID
  Put32(&m, 0);     // responseTo
  Put32(&m, 2013);  // OP_MSG
  Put32(&m, 0);     // flagBits
  return m + sections;
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

}  // namespace
}  // namespace txn_recovery::bench
