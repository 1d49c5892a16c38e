#include "txn_recovery/shapes/retention_policy.h"

#include <algorithm>

namespace txn_recovery {

ConfigProblems RetentionPolicy::Validate(const std::vector<std::string>& in_use) const {
  ConfigProblems out;
  if (retain_finished.count() < 0) out.push_back({"retain_finished", "must not be negative"});
  if (batch_size < 1) out.push_back({"retention_batch_size", "must be at least 1"});
  if (max_batches < 0) out.push_back({"retention_max_batches", "must not be negative"});
  if (pause_between_batches.count() < 0) out.push_back({"retention_pause", "must not be negative"});
  if (archive_collection.empty()) return out;
  if (!enabled()) {
    out.push_back({"archive_collection",
                   "needs retain_finished (retention is off without it)",
                   {"retain_finished"}});
  } else if (archive_collection[0] == '$' || archive_collection.find('\0') != std::string::npos ||
             archive_collection.rfind("system.", 0) == 0) {
    out.push_back(
        {"archive_collection", "'" + archive_collection + "' is not a usable collection name"});
  } else if (std::find(in_use.begin(), in_use.end(), archive_collection) != in_use.end()) {
    out.push_back(
        {"archive_collection",
         "'" + archive_collection +
             "' is a collection this watch already uses; the archive needs one of its own"});
  }
  return out;
}

}  // namespace txn_recovery
