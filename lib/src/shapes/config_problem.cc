#include "txn_recovery/shapes/config_problem.h"

#include <chrono>

#include "shapes/profile_parsing.h"
#include "txn_recovery/base/duration.h"
#include "txn_recovery/shapes/thresholds.h"

namespace txn_recovery {

std::string Describe(const ConfigProblems& problems) {
  std::string out;
  for (const auto& p : problems) {
    if (!out.empty()) out += "; ";
    out += p.key + ": " + p.problem;
  }
  return out;
}

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
                   "must be longer than resume_after (" + FormatDuration(t.rollback_after) +
                       " <= " + FormatDuration(t.resume_after) + ")",
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
