#include "txn_recovery/config_problem.h"

#include <chrono>

#include "shapes/profile_parsing.h"
#include "txn_recovery/decision.h"

namespace txn_recovery {

std::string Describe(const ConfigProblems& problems) {
  std::string out;
  for (const auto& p : problems) {
    if (!out.empty()) out += "; ";
    out += p.key + ": " + p.problem;
  }
  return out;
}

namespace {

// "90s", "1500ms", "30m": a threshold as the configuration would write it, for messages.
std::string Millis(std::chrono::milliseconds d) {
  long long ms = d.count();
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace

ConfigProblems ValidateThresholds(const Thresholds& t) {
  ConfigProblems out;
  const std::pair<const char*, std::chrono::milliseconds> all[] = {
      {"resume_after", t.resume_after},
      {"rollback_after", t.rollback_after},
      {"initial_timeout", t.initial_timeout},
      {"late_write_window", t.late_write_window},
      {"max_clock_skew", t.max_clock_skew}};
  for (const auto& [key, value] : all)
    if (value.count() <= 0) out.push_back({key, "must be positive"});
  if (t.rollback_after <= t.resume_after)
    out.push_back({"rollback_after",
                   "must be longer than resume_after (" + Millis(t.rollback_after) +
                       " <= " + Millis(t.resume_after) + ")",
                   {"resume_after"}});
  return out;
}

bool FieldPathOk(std::string_view key, const std::string& value, ConfigProblems* out) {
  std::string problem;
  if (value.empty()) {
    problem = "is empty";
  } else if (value[0] == '$') {
    problem = "'" + value + "' must not start with '$'";
  } else if (value.front() == '.' || value.back() == '.' || value.find("..") != std::string::npos) {
    problem = "'" + value + "' is not a field path";
  } else {
    return true;
  }
  out->push_back({std::string(key), problem});
  return false;
}

bool PlainFieldOk(std::string_view key, const std::string& value, ConfigProblems* out) {
  if (!FieldPathOk(key, value, out)) return false;
  if (value.find('.') == std::string::npos) return true;
  out->push_back({std::string(key), "'" + value + "' must be a plain field name (no dots)"});
  return false;
}

bool CollectionNameOk(std::string_view key, const std::string& value, ConfigProblems* out) {
  std::string problem;
  if (value.empty()) {
    problem = "holds an empty name";
  } else if (value.find('$') != std::string::npos || value.find('\0') != std::string::npos) {
    problem = "'" + value + "' is not a collection name";
  } else if (value.rfind("system.", 0) == 0) {
    problem = "'" + value + "' is a system collection";
  } else {
    return true;
  }
  out->push_back({std::string(key), problem});
  return false;
}

}  // namespace txn_recovery
