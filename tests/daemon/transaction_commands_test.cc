// `txn-recoveryd explain ID`, `retry ID` and `release ID`, as an operator runs them against
// the test server: one stuck transfer explained, retried before the sweep would touch it,
// a quarantined one released and then recovered.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/test_env.h"
#include "txn_recovery/engine/membership.h"

namespace txn_recovery::testing {
namespace {

TXN_RECOVERY_DATABASE_SUITE(OneTransaction);

class OneTransaction : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create("mongo");
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    bank_ = std::make_unique<Bank>(backend_->store(), backend_->database());
    bank_->Open(4);
    config_ = WriteTestFile(".toml", "[mongodb]\nuri = \"" + FindTestUri().uri_or_reason +
                                         "\"\nserver_selection_timeout = \"2s\"\n[[watch]]\n"
                                         "name = \"bank\"\ndatabase = \"" +
                                         backend_->database() + "\"\n");
  }
  ProcessResult Run(const std::string& command, const std::string& id) {
    return RunTxnRecoveryd({command, "--config", config_, id});
  }
  // Two hosts of a fleet that sweep the bank's transactions: host-a at position 0 (its id
  // sorts first), host-b at 1.
  void JoinTwoMembers() {
    const Namespace members{backend_->database(), "txn_recoveryd_members"};
    for (const char* member : {"host-b:2:x", "host-a:1:y"})
      ASSERT_TRUE(
          Heartbeat(
              backend_->store(), members,
              MemberRecord{member, std::string(member).substr(0, 6), "v", {"transactions"}, {}})
              .ok());
  }
  std::unique_ptr<TestBackend> backend_;
  std::unique_ptr<Bank> bank_;
  std::string config_;
};

// A transfer the application left after debiting the source, 10 seconds ago: too young for
// a sweep. explain says so, and what a retry would do, write by write; retry does it.
TEST_F(OneTransaction, AYoungStuckTransferIsExplainedThenRetriedBeforeASweepWouldTouchIt) {
  Value id = bank_->Transfer("A0", "A1", 100, 3);
  bank_->Age(id, std::chrono::seconds(10));
  ProcessResult e = Run("explain", id.ToString());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("state: pending"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("from lastModified"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("under resume_after (1m)"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("a sweep now would: none"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("retry would: resume"), std::string::npos) << e.out;
  // The writes, in the order the engine sends them: the debit is there already.
  const auto claim = e.out.find("claim the lease and mark resuming");
  const auto already = e.out.find("(nothing: already applied) debit 100");
  const auto credit = e.out.find("apply: credit 100");
  const auto done = e.out.find("mark done");
  ASSERT_NE(claim, std::string::npos) << "taken over in its claim: " << e.out;
  EXPECT_LT(claim, already);
  EXPECT_LT(already, credit);
  EXPECT_LT(credit, done);
  EXPECT_NE(e.out.find("pendingTransactions: {$ne: 1}"), std::string::npos)
      << "the credit's filter as sent: " << e.out;
  EXPECT_EQ(bank_->State(id), "pending") << "explain writes nothing";

  ProcessResult j = RunTxnRecoveryd({"explain", "--json", "--config", config_, "1"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["_id"], 1);
  EXPECT_EQ(doc["retry_action"], "resume");
  EXPECT_EQ(doc["age_source"], "lastModified");
  EXPECT_GE(doc["writes"].size(), 6u);

  ProcessResult r = Run("retry", id.ToString());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("resume  resolved  -> done"), std::string::npos) << r.out;
  EXPECT_EQ(bank_->State(id), "done");
  EXPECT_EQ(bank_->Balance("A0"), 900);
  EXPECT_EQ(bank_->Balance("A1"), 1100);
}

// A transaction quarantined for a missing amount: retry refuses it; once an operator has
// fixed the document, release hands it back and retry recovers it.
TEST_F(OneTransaction, AQuarantinedTransferIsRefusedByRetryUntilReleased) {
  Value id = bank_->Transfer("A2", "A3", 50, 2);
  bank_->Age(id, std::chrono::minutes(2));
  WriteResult w;
  Must(backend_->store()->UpdateOne(bank_->txns(), Filter().Eq("_id", id), Update().Unset("value"),
                                    &w));
  ProcessResult first = Run("retry", id.ToString());
  EXPECT_EQ(first.exit_code, 1);
  EXPECT_NE(first.out.find("quarantine  quarantined"), std::string::npos) << first.out;
  ProcessResult refused = Run("retry", id.ToString());
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.out.find("refused  (quarantined (field 'value' is missing): release it first)"),
            std::string::npos)
      << refused.out;
  ProcessResult e = Run("explain", id.ToString());
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_NE(e.out.find("quarantined: field 'value' is missing"), std::string::npos) << e.out;

  Must(backend_->store()->UpdateOne(bank_->txns(), Filter().Eq("_id", id),
                                    Update().Set("value", 50), &w));  // the operator's fix
  ProcessResult rel = Run("release", id.ToString());
  EXPECT_EQ(rel.exit_code, 0) << rel.err;
  EXPECT_NE(rel.out.find("released"), std::string::npos);
  EXPECT_EQ(Run("release", id.ToString()).exit_code, 1) << "nothing left to release";
  ProcessResult r = Run("retry", id.ToString());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(bank_->State(id), "done");
  EXPECT_EQ(bank_->Balance("A2"), 950);
  EXPECT_EQ(bank_->Balance("A3"), 1050);
}

TEST_F(OneTransaction, AnIdThatNamesNothingExits1AndOneThatIsNoIdExits64) {
  ProcessResult none = Run("explain", "no-such-id");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no transaction with _id no-such-id in watch bank"), std::string::npos)
      << none.err;
  ProcessResult bad = Run("retry", "[1, 2]");
  EXPECT_EQ(bad.exit_code, 64);
  EXPECT_NE(bad.err.find("is JSON but not an _id"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace txn_recovery::testing

namespace txn_recovery::testing {
namespace {

// A transfer without a time field has no time of its own and no sweep has seen it yet: explain says
// so (no age to print) and shows what a retry would do; a retry resumes it.
TEST_F(OneTransaction, ATransferNoSweepHasSeenIsExplainedWithoutAnAge) {
  WriteResult w;
  Value id = bank_->Transfer("A0", "A1", 100, 3);
  Must(backend_->store()->UpdateOne(bank_->txns(), Filter().Eq("_id", id),
                                    Update().Unset("lastModified"), &w));
  ProcessResult e = Run("explain", id.ToString());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("age: none yet: not seen by a sweep yet"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("retry would: resume"), std::string::npos) << e.out;
  ProcessResult j = RunTxnRecoveryd({"explain", "--json", "--config", config_, id.ToString()});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_TRUE(nlohmann::json::parse(j.out)["age_seconds"].is_null()) << j.out;
  ProcessResult r = Run("retry", id.ToString());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(bank_->State(id), "done");
}

// Two hosts sweep the bank in a fleet: explain names the bucket of a stuck transfer and the
// member whose share holds it, the one every member computes from the same records; JSON
// says the same. With no live member it says that a starting one takes it.
TEST_F(OneTransaction, ExplainNamesTheMemberOfTheFleetWhoseShareHoldsTheTransaction) {
  Value id = bank_->Transfer("A0", "A1", 100, 3);
  ProcessResult alone = Run("explain", id.ToString());
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_NE(alone.out.find("no live member sweeps this watch"), std::string::npos) << alone.out;

  ASSERT_NO_FATAL_FAILURE(JoinTwoMembers());
  const Namespace members{backend_->database(), "txn_recoveryd_members"};
  // A member of the database that sweeps another collection holds nothing here.
  ASSERT_TRUE(Heartbeat(backend_->store(), members,
                        MemberRecord{"host-c:3:z", "host-c", "v", {"other"}, {}})
                  .ok());
  const std::uint32_t bucket = BucketOf(id);
  const std::string holder = bucket % 2 == 0 ? "host-a:1:y" : "host-b:2:x";
  ProcessResult text = Run("explain", id.ToString());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("fleet: bucket " + std::to_string(bucket) + " of 256; held by " + holder +
                          " (host " + holder.substr(0, 6) + ") of 2 live members"),
            std::string::npos)
      << text.out;
  ProcessResult json = RunTxnRecoveryd({"explain", "--json", "--config", config_, id.ToString()});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto fleet = nlohmann::json::parse(json.out)["fleet"];
  EXPECT_EQ(fleet["bucket"], bucket) << json.out;
  EXPECT_EQ(fleet["members"], 2) << json.out;
  EXPECT_EQ(fleet["held_by"]["id"], holder) << json.out;
}

// The same fleet seen by the commands that list transactions: a dry run lists each stuck
// transfer with its bucket and the member whose share holds it (it is no member itself and
// would act on all of them), and inspect lists a quarantined one the same way, so that an
// operator sees which host is behind.
TEST_F(OneTransaction, ADryRunAndInspectListEachTransactionWithItsBucketAndHolder) {
  std::vector<Value> ids;
  for (int i = 0; i < 6; ++i) {
    ids.push_back(bank_->Transfer("A0", "A1", 1, 3));
    bank_->Age(ids.back(), std::chrono::minutes(2));
  }
  ASSERT_NO_FATAL_FAILURE(JoinTwoMembers());
  auto holder_of = [](const Value& id) {
    return BucketOf(id) % 2 == 0 ? std::string("host-a:1:y") : std::string("host-b:2:x");
  };
  ProcessResult dry = RunTxnRecoveryd({"sweep", "--dry-run", "--config", config_});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  for (const Value& id : ids)
    EXPECT_NE(dry.out.find("_id=" + id.ToString() +
                           "  pending -> done  resume  planned  [fleet: bucket " +
                           std::to_string(BucketOf(id)) + " of 256; held by " + holder_of(id)),
              std::string::npos)
        << dry.out;
  ProcessResult json = RunTxnRecoveryd({"sweep", "--dry-run", "--json", "--config", config_});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto listed = nlohmann::json::parse(json.out)["watches"][0]["transactions"];
  ASSERT_EQ(listed.size(), ids.size()) << json.out;
  for (const auto& t : listed) {
    EXPECT_EQ(t["fleet"]["members"], 2) << t.dump();
    EXPECT_TRUE(t["fleet"]["held_by"]["id"] == "host-a:1:y" ||
                t["fleet"]["held_by"]["id"] == "host-b:2:x")
        << t.dump();
  }

  WriteResult w;
  Must(backend_->store()->UpdateOne(bank_->txns(), Filter().Eq("_id", ids[0]),
                                    Update().Unset("value"), &w));
  ASSERT_EQ(Run("retry", ids[0].ToString()).exit_code, 1) << "quarantined for the missing amount";
  ProcessResult inspect = RunTxnRecoveryd({"inspect", "--config", config_});
  EXPECT_NE(inspect.out.find("_id=" + ids[0].ToString()), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("[fleet: bucket " + std::to_string(BucketOf(ids[0])) +
                             " of 256; held by " + holder_of(ids[0])),
            std::string::npos)
      << inspect.out;
  ProcessResult ij = RunTxnRecoveryd({"inspect", "--json", "--config", config_});
  const auto q = nlohmann::json::parse(ij.out)["watches"][0]["quarantined"][0];
  EXPECT_EQ(q["fleet"]["bucket"], BucketOf(ids[0])) << ij.out;
  EXPECT_EQ(q["fleet"]["held_by"]["id"], holder_of(ids[0])) << ij.out;
}

}  // namespace
}  // namespace txn_recovery::testing
