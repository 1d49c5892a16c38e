#include "daemon/commands/index_check.h"

#include <spdlog/spdlog.h>

#include "daemon/logging/logging.h"

namespace txn_recovery::daemon {

std::string DescribeMissing(const txn_recovery::IndexCheck& c) {
  return "missing index " + c.index.spec.ToString() + " on " + c.index.ns.ToString() +
         " (needed by " + c.index.why + ")";
}

txn_recovery::Status PrepareIndexes(const Config& config, txn_recovery::Store* store, bool dry_run,
                                    bool* deferred) {
  const bool create = config.sweep.manage_indexes && !dry_run;
  if (deferred != nullptr) *deferred = false;
  for (const auto& w : config.watches) {
    std::vector<txn_recovery::IndexCheck> checks;
    txn_recovery::Status s = txn_recovery::EnsureIndexes(store, w, create, &checks);
    if (s.IsUnavailable()) return s;
    LogFields f({{"watch", w.name}});
    for (const auto& c : checks) {
      if (!c.status.ok()) {
        spdlog::error("{} {} on {}: {}", create ? "cannot create index" : "cannot check index",
                      c.index.spec.ToString(), c.index.ns.ToString(), c.status.ToString());
      } else if (!c.present && !c.needed) {
        if (deferred != nullptr) *deferred = true;
        spdlog::info(
            "index {} on {} not needed yet: every transaction there has a time field; {} "
            "once one without it is seen (a run daemon looks again after a sweep that reads "
            "one)",
            c.index.spec.ToString(), c.index.ns.ToString(),
            create ? "created" : "reported missing");
      } else if (c.created) {
        spdlog::info("created index {} on {}", c.index.spec.ToString(), c.index.ns.ToString());
      } else if (!c.present) {
        spdlog::warn(
            "{}; every sweep scans the collection without it: create it, or set "
            "sweep.manage_indexes = true",
            DescribeMissing(c));
      }
    }
  }
  return txn_recovery::Status::Ok();
}

}  // namespace txn_recovery::daemon
