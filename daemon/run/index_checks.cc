#include "daemon/run/index_checks.h"

#include "daemon/commands/index_check.h"

namespace txn_recovery::daemon {

void IndexChecks::CheckOnce(const Config& config, txn_recovery::Store* store) {
  if (!checked_) checked_ = !PrepareIndexes(config, store, false, &deferred_).IsUnavailable();
}

}  // namespace txn_recovery::daemon
