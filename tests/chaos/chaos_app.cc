#include "chaos_app.h"

#include <chrono>
#include <thread>

#include "support/bank.h"
#include "support/scenario.h"

// The simulators of the mongoose operations and the tagged inserts (branch `profiles`): their
// apps join the suite as soon as they are in the tree.
#if __has_include("support/operations_app.h") && __has_include("support/tagged_insert_app.h")
#define TXN_RECOVERY_CHAOS_ALL_PROFILES 1
#include "support/operations_app.h"
#include "support/tagged_insert_app.h"
#endif

namespace txn_recovery::chaos {
namespace {

using testing::AppStep;
using testing::Bank;

std::int64_t OpenTransactions(Store* store, const Namespace& txns, const Profile& p);
std::int64_t CountThroughOutages(Store* store, const Namespace& ns, const Filter& filter);

// The MongoDB manual transfer (and the one without a time field) between accounts
// "A0".."A<n-1>".
class TransferApp final : public ChaosApp {
 public:
  TransferApp(Store* store, const std::string& database, std::int64_t first_id)
      : store_(store), bank_(store, database) {
    bank_.set_next_id(first_id);
  }

  const Profile& profile() const override { return bank_.profile(); }
  Namespace transactions() const override { return bank_.txns(); }
  std::string WatchKeys() const override {
    return "profile = \"transfer\"\nparticipants = \"" + bank_.accounts().collection + "\"\n";
  }

  void Setup(const AppParams& params) override {
    bank_.Open(params.participants, 1000);
    before_ = bank_.Take();
  }

  Status RunOne(std::mt19937_64& rng, const AppParams& params,
                const std::function<void(const Value&, int)>& step_done) override {
    std::uniform_int_distribution<int> any(0, params.participants - 1);
    std::uniform_int_distribution<int> hot(0, std::max(1, params.hot) - 1);
    std::bernoulli_distribution use_hot(0.5);
    int from = use_hot(rng) ? hot(rng) : any(rng);
    int to = any(rng);
    while (to == from) to = any(rng);
    if (use_hot(rng)) std::swap(from, to);
    std::int32_t amount = std::uniform_int_distribution<std::int32_t>(1, 50)(rng);
    Value id;
    try {
      id = bank_.Begin(std::string("A").append(std::to_string(from)),
                       std::string("A").append(std::to_string(to)), amount);
    } catch (const std::exception& e) {
      // The insert may or may not have reached the server: the transaction, if any, is
      // left in `initial` for the daemon to cancel.
      return Status::Unavailable(e.what());
    }
    step_done(id, 1);
    for (int s = 1; s < testing::kAppStepCount; ++s) {
      if (Status st = bank_.RunStep(id, static_cast<AppStep>(s)); !st.ok()) return st;
      step_done(id, s + 1);
    }
    return Status::Ok();
  }
  int step_count() const override { return testing::kAppStepCount; }
  std::string StepName(int steps_done) const override { return testing::AppStepName(steps_done); }

  std::vector<std::string> Violations() override {
    return bank_.Violations(before_, /*all_terminal=*/true);
  }

  std::int64_t InFlight() override {
    const Profile& p = bank_.profile();
    std::int64_t n = OpenTransactions(store_, bank_.txns(), p);
    for (const Document& a : testing::AllDocs(store_, bank_.accounts()))
      if (const Value* m = a.GetPath(p.transfer()->marker_field); m && m->is_array())
        n += static_cast<std::int64_t>(m->as_array()->size());
    return n;
  }

 private:
  Store* store_;
  Bank bank_;
  testing::Snapshot before_;
};

// A count that waits out an outage (a failover round kills the primary under it) for up
// to a minute, then fails like any other.
std::int64_t CountThroughOutages(Store* store, const Namespace& ns, const Filter& filter) {
  std::int64_t n = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  Status s = store->Count(ns, filter, &n);
  while (s.IsUnavailable() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    s = store->Count(ns, filter, &n);
  }
  testing::Must(s);
  return n;
}

// Non-terminal transactions that are not quarantined.
std::int64_t OpenTransactions(Store* store, const Namespace& txns, const Profile& p) {
  Filter open;
  open.In(p.state_field, p.states.NonTerminalSpellings()).NotExists("recovery.quarantine");
  return CountThroughOutages(store, txns, open);
}

#ifdef TXN_RECOVERY_CHAOS_ALL_PROFILES

// Mongoose operations: each transaction moves `money` between two users with two `inc`
// operations, so that conservation is checked as for transfers.
class OperationsChaosApp final : public ChaosApp {
 public:
  OperationsChaosApp(Store* store, const std::string& database, std::int64_t first_id)
      : store_(store), app_(store, database), next_id_(first_id) {}

  const Profile& profile() const override { return app_.profile(); }
  Namespace transactions() const override { return app_.txns(); }
  std::string WatchKeys() const override {
    return "profile = \"operations\"\nallowed_collections = [\"users\"]\n";
  }

  void Setup(const AppParams& params) override {
    std::vector<Document> users;
    for (int i = 0; i < params.participants; ++i)
      users.push_back(Document{{"_id", std::string("u").append(std::to_string(i))},
                               {"money", std::int32_t{1000}}});
    users.push_back(Document{{"_id", "bystander"}, {"money", std::int32_t{777}}});
    testing::Must(store_->InsertMany(app_.Collection("users"), users));
    before_ = app_.Take({"users"});
  }

  Status RunOne(std::mt19937_64& rng, const AppParams& params,
                const std::function<void(const Value&, int)>& step_done) override {
    auto [from, to] = PickPair(rng, params);
    std::int32_t amount = std::uniform_int_distribution<std::int32_t>(1, 50)(rng);
    std::vector<testing::Operation> ops = {
        testing::Operation::Inc("users", Value(std::string("u").append(std::to_string(from))),
                                "money", Value(static_cast<std::int32_t>(-amount))),
        testing::Operation::Inc("users", Value(std::string("u").append(std::to_string(to))),
                                "money", Value(amount))};
    Value id;
    try {
      id = app_.InsertNew(ops, Value(next_id_++));
    } catch (const std::exception& e) {
      return Status::Unavailable(e.what());
    }
    step_done(id, 1);
    for (int step = 2; step <= step_count(); ++step) {
      if (Status s = app_.RunStep(id, step, ops.size()); !s.ok()) return s;
      step_done(id, step);
    }
    return Status::Ok();
  }
  int step_count() const override { return testing::OperationsApp::StepCount(2); }
  std::string StepName(int steps_done) const override {
    return testing::OperationsApp::StepName(steps_done, 2);
  }

  std::vector<std::string> Violations() override { return app_.Violations(before_, true); }
  std::int64_t InFlight() override {
    std::int64_t n = OpenTransactions(store_, app_.txns(), app_.profile());
    for (const Document& d : testing::AllDocs(store_, app_.Collection("users")))
      if (const Value* m = d.GetPath(app_.profile().operations()->marker_field); m && m->is_array())
        n += static_cast<std::int64_t>(m->as_array()->size());
    return n;
  }

 private:
  static std::pair<int, int> PickPair(std::mt19937_64& rng, const AppParams& params) {
    std::uniform_int_distribution<int> any(0, params.participants - 1);
    std::uniform_int_distribution<int> hot(0, std::max(1, params.hot) - 1);
    std::bernoulli_distribution use_hot(0.5);
    int from = use_hot(rng) ? hot(rng) : any(rng);
    int to = any(rng);
    while (to == from) to = any(rng);
    return {from, to};
  }

  Store* store_;
  testing::OperationsApp app_;
  std::int64_t next_id_;
  testing::OperationsSnapshot before_;
};

// Tagged inserts: each transaction inserts two documents into each of two collections. The
// application's "finishing" step is the checked variant the docs recommend: the application's
// unconditional one would let a stalled application finish a transaction the daemon had
// already rolled back, which no daemon can prevent.
class TaggedInsertChaosApp final : public ChaosApp {
 public:
  TaggedInsertChaosApp(Store* store, const std::string& database)
      : store_(store), app_(store, database, Profile_()) {
    app_.set_checked_finishing(true);
  }

  const Profile& profile() const override { return app_.profile(); }
  Namespace transactions() const override { return app_.txns(); }
  std::string WatchKeys() const override {
    return "profile = \"tagged-insert\"\ntagged_collections = [\"orders\", \"order_lines\"]\n";
  }

  void Setup(const AppParams&) override {
    app_.AddBystanders();
    before_ = app_.Take();
  }

  Status RunOne(std::mt19937_64&, const AppParams&,
                const std::function<void(const Value&, int)>& step_done) override {
    Value id;
    try {
      id = app_.InsertTransaction();
    } catch (const std::exception& e) {
      return Status::Unavailable(e.what());
    }
    step_done(id, 1);
    for (int step = 2; step <= 5; ++step) {
      Status s = app_.RunStep(id, step);
      if (!s.ok()) {
        // The application's catch block covers steps 2 and 3: roll back (steps 6-8).
        if (step <= 3 && !s.IsConflict()) (void)app_.RollBack(id);
        return s;
      }
      step_done(id, step);
    }
    return Status::Ok();
  }
  int step_count() const override { return 5; }
  std::string StepName(int steps_done) const override {
    static const char* kNames[] = {
        "nothing",          "inserted (started)",     "inserted the documents",
        "marked finishing", "untagged the documents", "marked done"};
    return steps_done >= 0 && steps_done <= 5 ? kNames[steps_done] : "?";
  }

  std::vector<std::string> Violations() override { return app_.Violations(before_, true); }
  std::int64_t InFlight() override {
    std::int64_t n = OpenTransactions(store_, app_.txns(), app_.profile());
    for (const auto& c : app_.collections()) {
      n += CountThroughOutages(store_, app_.Collection(c),
                               Filter().Exists(app_.profile().tagged_insert()->tag_field));
    }
    return n;
  }

 private:
  static Profile Profile_() {
    Profile p = Profile::TaggedInsert();
    p.tagged_insert()->tagged_collections = {"orders", "order_lines"};
    return p;
  }

  Store* store_;
  testing::TaggedInsertApp app_;
  testing::TaggedSnapshot before_;
};

#endif  // TXN_RECOVERY_CHAOS_ALL_PROFILES

}  // namespace

std::vector<std::string> ChaosProfiles() {
#ifdef TXN_RECOVERY_CHAOS_ALL_PROFILES
  return {"transfer", "operations", "tagged-insert"};
#else
  return {"transfer"};
#endif
}

std::unique_ptr<ChaosApp> MakeChaosApp(std::string_view profile, Store* store,
                                       const std::string& database, std::int64_t first_id) {
  if (profile == "transfer") return std::make_unique<TransferApp>(store, database, first_id);
#ifdef TXN_RECOVERY_CHAOS_ALL_PROFILES
  if (profile == "operations")
    return std::make_unique<OperationsChaosApp>(store, database, first_id);
  if (profile == "tagged-insert") return std::make_unique<TaggedInsertChaosApp>(store, database);
#endif
  return nullptr;
}

}  // namespace txn_recovery::chaos
