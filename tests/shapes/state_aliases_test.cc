// State spellings: every state accepts a list of spellings, the first one is what the daemon
// writes, and a spelling in no list is set aside, never guessed at. Applications disagree (the
// schema-book transfer inserts "intital", writes "committed", "canceled" and "cancel"; the
// MongoDB manual transfer "cancelled").
#include <gtest/gtest.h>

#include "support/bank.h"
#include "support/test_env.h"
#include "support/watch_config.h"

namespace txn_recovery::testing {
namespace {

TEST(StateAliases, EverySpellingIsReadAndTheFirstIsWritten) {
  StateAliases s;
  s.cancelled = {"cancelled", "canceled", "cancel"};
  s.applied = {"applied", "committed"};
  EXPECT_EQ(s.Parse("cancel"), TxnState::kCancelled);
  EXPECT_EQ(s.Parse("canceled"), TxnState::kCancelled);
  EXPECT_EQ(s.Parse("committed"), TxnState::kApplied);
  EXPECT_EQ(s.Written(TxnState::kCancelled), "cancelled");
  EXPECT_EQ(s.Written(TxnState::kApplied), "applied");
}

TEST(StateAliases, NothingCloseToASpellingIsGuessed) {
  StateAliases s;
  for (const char* near : {"Pending", "PENDING", " pending", "pending ", "intital", "cancel", ""})
    EXPECT_EQ(s.Parse(near), std::nullopt) << "'" << near << "'";
}

TEST(StateAliases, ASpellingOfTwoStatesOrAStateWithoutSpellingIsRefused) {
  StateAliases twice;
  twice.done = {"done", "finished"};
  twice.cancelled = {"finished"};
  EXPECT_FALSE(twice.Validate().empty());
  StateAliases none;
  none.pending.clear();
  EXPECT_FALSE(none.Validate().empty());
  EXPECT_TRUE(none.Validate({TxnState::kPending}).empty()) << "a profile may do without a state";
}

TEST(StateAliases, ConfigurationAcceptsEachStateUnderTheNamesApplicationsGiveIt) {
  WatchSpec w = WatchFromToml(R"(
[[watch]]
name = "w"
database = "d"
[watch.states]
new = ["new", "initial"]
committed = ["committed", "applied"]
canceled = ["cancelled", "canceled", "cancel"]
)",
                              "d");
  EXPECT_EQ(w.profile.states.Written(TxnState::kInitial), "new");
  EXPECT_EQ(w.profile.states.Written(TxnState::kApplied), "committed");
  EXPECT_EQ(w.profile.states.Parse("cancel"), TxnState::kCancelled);
  EXPECT_EQ(w.profile.states.Written(TxnState::kCancelled), "cancelled");
  EXPECT_EQ(w.profile.states.Written(TxnState::kPending), "pending") << "defaults kept";
}

TEST(StateAliases, TwoNamesOfOneStateInTheSameTableAreRefused) {
  EXPECT_THROW(WatchFromToml(R"(
[[watch]]
name = "w"
database = "d"
[watch.states]
cancelled = ["cancelled"]
canceled = ["canceled"]
)",
                             "d"),
               std::runtime_error);
}

class StateSpellings : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
  }
  void Use(const std::string& states_toml) {
    watch_ = WatchFromToml("[[watch]]\nname = \"bank\"\ndatabase = \"d\"\n" + states_toml,
                           backend_->database());
    bank_ = std::make_unique<Bank>(backend_->store(), backend_->database(), watch_.profile);
    bank_->Open(4);
  }
  // A transaction the application left in `state` (spelled as given), `age` old.
  Value Stuck(const std::string& state, int steps, std::chrono::milliseconds age) {
    Value id = bank_->Transfer("A0", "A1", 100, steps);
    WriteResult r;
    Must(backend_->store()->UpdateOne(bank_->txns(), Filter().Eq("_id", id),
                                      Update().Set("state", state), &r));
    bank_->Age(id, age);
    return id;
  }
  WatchSummary Sweep(std::vector<TxnReport>* reports = nullptr) {
    return SweepOnce(backend_->store(), backend_->clock(), watch_, "daemon-1", reports);
  }

  std::unique_ptr<TestBackend> backend_;
  WatchSpec watch_;
  std::unique_ptr<Bank> bank_;
};

TEST_P(StateSpellings, ATransactionInAnAliasIsDrivenOnAndTheFirstSpellingsAreWritten) {
  Use("[watch.states]\npending = [\"pending\", \"in-progress\"]\n"
      "applied = [\"applied\", \"committed\"]\n");
  Snapshot before = bank_->Take();
  Value resumed = Stuck("in-progress", 3, kStuck);  // debited, credit missing
  Value finished = Stuck("committed", 5, kStuck);   // both applied

  Sweep();

  EXPECT_EQ(bank_->State(resumed), "done");
  EXPECT_EQ(bank_->State(finished), "done");
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

TEST_P(StateSpellings, TheRollbackWritesTheFirstCancelledSpelling) {
  Use("[watch.states]\ncanceled = [\"canceled\", \"cancel\", \"cancelled\"]\n");
  Snapshot before = bank_->Take();
  Value id = Stuck("pending", 3, kExpired);

  Sweep();

  EXPECT_EQ(bank_->State(id), "canceled");
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

TEST_P(StateSpellings, AStateThatMatchesNoSpellingIsQuarantinedAndNothingIsTouched) {
  Use("");
  Value typo = Stuck("intital", 1, kExpired);                  // the schema book's insert
  Value upper = Stuck("Pending", 3, kStuck);                   // debited
  Value book_cancel = Stuck("cancel", kAppStepCount, kStuck);  // not a default spelling
  Snapshot before = bank_->Take();

  std::vector<TxnReport> reports;
  WatchSummary s = Sweep(&reports);

  EXPECT_EQ(s.quarantined, 3);
  for (const Value& id : {typo, upper, book_cancel}) {
    auto t = bank_->Txn(id);
    ASSERT_TRUE(t && t->GetPath("recovery.quarantine.reason")) << id.ToString();
    EXPECT_NE(t->GetPath("recovery.quarantine.reason")->as_string()->find("unknown state"),
              std::string::npos);
  }
  EXPECT_EQ(bank_->State(upper), "Pending") << "never rewritten to a guess";
  Snapshot after = bank_->Take();
  for (const auto& [k, d] : before.accounts) EXPECT_EQ(after.accounts[k], d) << k;
}

TEST_P(StateSpellings, AnApplicationsMisspeltInitialIsCancelledOnceConfiguredAsAnAlias) {
  Use("[watch.states]\ninitial = [\"initial\", \"intital\"]\n"
      "canceled = [\"canceled\", \"cancel\"]\n");
  Snapshot before = bank_->Take();
  Value id = Stuck("intital", 1, kExpired);

  Sweep();

  EXPECT_EQ(bank_->State(id), "canceled");
  for (const auto& v : bank_->Violations(before)) ADD_FAILURE() << v;
}

INSTANTIATE_TEST_SUITE_P(Backends, StateSpellings, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
