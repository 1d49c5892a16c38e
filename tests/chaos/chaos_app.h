// One protocol profile as a chaos run needs it: the shape's application (run by the worker
// processes, one transaction at a time, step by step) and docs/chaos.md's invariant checker
// (run by the driver after quiescence). The driver and the fault schedule know nothing of
// any profile; a profile joins the suite by implementing ChaosApp and adding one line to
// MakeChaosApp (chaos_app.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::chaos {

struct AppParams {
  int participants = 16;  // documents the transactions move things between
  int hot = 2;            // of which this many take part in about half of all transactions
};

class ChaosApp {
 public:
  virtual ~ChaosApp() = default;

  // The profile of the transactions collection (how the checker reads the documents).
  virtual const Profile& profile() const = 0;
  virtual Namespace transactions() const = 0;
  // The profile-specific keys of the daemon's [[watch]] table (everything but name,
  // database, thresholds and lease_field), as TOML lines.
  virtual std::string WatchKeys() const = 0;

  // Driver, before anything runs: creates the participants and the bystanders (documents
  // no transaction may touch) and remembers their contents for Violations.
  virtual void Setup(const AppParams& params) = 0;

  // Worker: one transaction of the shape's application with random participants, every
  // step in the application's order. `step_done(id, n)` is called after the n-th step (so the
  // driver knows where a SIGKILL landed). A step that fails (connection lost) makes the
  // application give up on the transaction, as a crashed one would: the error is returned.
  virtual Status RunOne(std::mt19937_64& rng, const AppParams& params,
                        const std::function<void(const Value& id, int steps_done)>& step_done) = 0;
  virtual int step_count() const = 0;
  virtual std::string StepName(int steps_done) const = 0;

  // Driver, after quiescence: docs/chaos.md's invariants against Setup's snapshot (empty when
  // all hold). Transactions still in flight count as violations.
  virtual std::vector<std::string> Violations() = 0;
  // How many transactions are still non-terminal (and not quarantined) plus how many
  // participants still carry a marker or tag: 0 once the daemons have nothing left to do.
  virtual std::int64_t InFlight() = 0;
};

// The profiles the suite can run.
std::vector<std::string> ChaosProfiles();

// The app for `profile` on `database`; `first_id` is where this process's transaction ids
// start (each worker gets its own range). Null for an unknown profile.
std::unique_ptr<ChaosApp> MakeChaosApp(std::string_view profile, Store* store,
                                       const std::string& database, std::int64_t first_id);

}  // namespace txn_recovery::chaos
