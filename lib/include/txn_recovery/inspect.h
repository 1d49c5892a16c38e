// What an operator asks of a watch, read-only: what is stuck (`inspect`, the daemon's
// gauges) and what is quarantined, and why.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "txn_recovery/recovery_record.h"
#include "txn_recovery/status.h"
#include "txn_recovery/store.h"
#include "txn_recovery/watch.h"

namespace txn_recovery {

// What is stuck in one watch right now: non-terminal transactions old enough for the
// daemon to act on (the decision table's age rule), by state, and the age of the oldest.
// Quarantined ones are counted apart.
struct StuckReport {
  std::map<TxnState, std::int64_t> stuck;
  std::optional<std::chrono::milliseconds> oldest_age;
  std::int64_t quarantined = 0;
};

// A count query per state, one sorted find with limit 1 per age clock, one count of the
// quarantined; reads only.
Status Inspect(Store* store, const WatchSpec& watch, StuckReport* report);

struct QuarantinedTxn {
  Value id;
  std::optional<Value> state;  // the state field as stored (absent: nullopt)
  RecoveryRecord::QuarantineRecord record;
};

// Calls `each` for every quarantined transaction of `watch`, streaming (memory does not
// grow with their number). Stops at the first read error and returns it.
Status ListQuarantined(Store* store, const WatchSpec& watch,
                       const std::function<void(const QuarantinedTxn&)>& each);

}  // namespace txn_recovery
