#include "chaos_app.h"

#include "support/bank.h"
#include "support/scenario.h"

namespace txn_recovery::chaos {
namespace {

using testing::AppStep;
using testing::Bank;

// Seeds 002/004: the MongoDB manual's transfer between accounts "A0".."A<n-1>".
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
      id = bank_.Begin("A" + std::to_string(from), "A" + std::to_string(to), amount);
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
    std::int64_t n = 0;
    const Profile& p = bank_.profile();
    Filter open;
    open.In(p.state_field, p.states.NonTerminalSpellings()).NotExists("recovery.quarantine");
    testing::Must(store_->Count(bank_.txns(), open, &n));
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

}  // namespace

std::vector<std::string> ChaosProfiles() {
  // operations (seed 000) and tagged-insert (seed 003) join here once their simulators
  // are in tests/support/.
  return {"transfer"};
}

std::unique_ptr<ChaosApp> MakeChaosApp(std::string_view profile, Store* store,
                                       const std::string& database, std::int64_t first_id) {
  if (profile == "transfer") return std::make_unique<TransferApp>(store, database, first_id);
  return nullptr;
}

}  // namespace txn_recovery::chaos
