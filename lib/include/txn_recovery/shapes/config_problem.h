// ConfigProblem: what the Validate() functions of the library's configuration types return,
// one entry per problem found, keyed by the configuration key it concerns. The daemon maps
// each key to its position in the TOML file (file, line, column) without reading the
// English of the message back into a key.
//
// Keys are spelt as the configuration file spells them, relative to the table that holds
// them: "state_field", "participants", "allowed_collections", "states.pending" (the state
// list of the canonical state; the file may call it by another of its names, e.g.
// "started"), "resume_after". A problem that involves several keys names the one to fix
// first in `key` and the others in `related`, so that the caller can point at whichever
// of them the file actually sets.
#pragma once

#include <string>
#include <vector>

namespace txn_recovery {

struct ConfigProblem {
  std::string key;
  std::string problem;                 // "must differ from state_field ('state')"
  std::vector<std::string> related{};  // other keys the problem involves

  bool operator==(const ConfigProblem&) const = default;
};

using ConfigProblems = std::vector<ConfigProblem>;

// "key: problem; key: problem" (tests, logs).
std::string Describe(const ConfigProblems& problems);

struct Thresholds;
// The thresholds of one watch (thresholds.h): every one positive, rollback_after longer
// than resume_after.
ConfigProblems ValidateThresholds(const Thresholds& thresholds);

}  // namespace txn_recovery
