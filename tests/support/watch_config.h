// Watches built from configuration text exactly as the daemon loads it, so that a scenario
// shows an application's documents being recovered with nothing but configuration.
#pragma once

#include <string>
#include <vector>

#include "txn_recovery/engine/sweeper.h"

namespace txn_recovery::testing {

// Loads `watches_toml` (one or more [[watch]] tables) through the daemon's configuration
// loader and returns the watches, each with its database replaced by `database` (the
// test's own). Throws std::runtime_error with the loader's message if it refuses the text.
std::vector<WatchSpec> WatchesFromToml(const std::string& watches_toml,
                                       const std::string& database);
// The single watch of `watch_toml`.
WatchSpec WatchFromToml(const std::string& watch_toml, const std::string& database);

}  // namespace txn_recovery::testing
