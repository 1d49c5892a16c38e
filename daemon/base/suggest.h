// "Did you mean ...": the one place that finds, among the names a thing may have, the one
// a misspelt name resembles. Used for environment variables, commands and configuration
// keys alike.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace txn_recovery::daemon {

// Levenshtein distance between `a` and `b`.
std::size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `name` when it is a near miss (an edit distance of at most 3,
// and less than half the name, so that a short unrelated word is not "resembled"); empty
// otherwise, or when `name` is itself a candidate. The first of equally close ones wins.
std::string Closest(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace txn_recovery::daemon
