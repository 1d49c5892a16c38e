// Rehearse: prove on the operator's own server what the tests prove here, for one watch.
//
// Creates scratch collections beside the watched ones (same database, named
// `txn_recoveryd_rehearsal_<token>_<original>`, which no application writes), plants
// transactions of the watch's own shape (its field names, spellings and profile) stuck at
// every point its application can crash, runs the sweep's engine on them (SweepAndRetain,
// lease and fence included) through a copy of the watch that names the scratch collections,
// and checks the invariants: every transaction terminal as expected, every participant's
// amounts as if each transaction had applied exactly once or not at all, no marker left.
// Then drops what it created. Never reads or writes the watched collections themselves.
//
// Every profile: transfer, operations and steps (every participant step built by the one
// step builder: each step applied, finished or undone with the update the daemon sends), and
// tagged-insert (each tagged collection's documents inserted, untagged or deleted).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "txn_recovery/base/status.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

struct RehearsalScenario {
  std::string name;      // "pending, 1 of 2 steps applied, stuck"
  std::string expected;  // "done" / "cancelled"
  std::string reached;   // the state it ended in, as read
  bool passed = false;
  std::vector<std::string> violations;  // each invariant that did not hold
};

struct RehearsalReport {
  std::string watch;
  std::string prefix;  // of every scratch collection
  std::vector<std::string> created;
  // Scratch collections whose drop failed (the server gone): some may never have been
  // created, none is known to be gone.
  std::vector<std::string> left_behind;
  std::vector<RehearsalScenario> scenarios;
  std::string unsupported;  // why the watch's profile is not rehearsed (then no scenario)
  std::int64_t millis = 0;
  bool Passed() const;
};

struct RehearseOptions {
  SweepOptions sweep;  // as `sweep` would run (lease duration, workers, bulk size)
  // Checked between phases; once true the rehearsal stops planting and sweeping and drops
  // what it created. May be null.
  const std::atomic<bool>* stop = nullptr;
  // The scratch collections' token; empty: a random one.
  std::string token;
};

// The prefix of every scratch collection of every rehearsal: what an operator drops by
// hand when a rehearsal could not drop its own (the server went away).
inline constexpr const char* kRehearsalPrefix = "txn_recoveryd_rehearsal_";

// Rehearses `watch`. The returned status is an error only when the rehearsal could not be
// run (the server unreachable, a privilege missing); an invariant that did not hold is a
// failed scenario of the report.
Status Rehearse(Store* store, Clock* clock, const WatchSpec& watch, const RehearseOptions& options,
                RehearsalReport* report);

}  // namespace txn_recovery
