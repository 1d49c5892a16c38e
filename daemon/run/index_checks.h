// When `run` checks the watches' indexes (PrepareIndexes): once per configuration, at the
// first round that reaches the database, and again after a sweep that read a transaction
// without a time when the check had left an index for that moment.
#pragma once

#include "daemon/configuration/config.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::daemon {

class IndexChecks {
 public:
  // Checks, unless done for this configuration; a check the database did not answer is
  // tried again at the next round.
  void CheckOnce(const Config& config, txn_recovery::Store* store);
  // After the sweep of a watch.
  void Swept(const txn_recovery::WatchSummary& summary) {
    if (deferred_ && summary.without_time > 0) checked_ = false;
  }
  // A new configuration: its watches are checked at the next round.
  void ConfigurationChanged() { checked_ = false; }

 private:
  bool checked_ = false;  // PrepareIndexes ran for the current configuration
  // It left an index for when a transaction without a time appears.
  bool deferred_ = false;
};

}  // namespace txn_recovery::daemon
