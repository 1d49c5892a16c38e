// The indexes of every watch at start: created when `sweep.manage_indexes` is on, otherwise
// each missing one reported. A missing index makes the daemon slow, never wrong, so
// nothing here stops it from starting.
#pragma once

#include <vector>

#include "daemon/configuration/config.h"
#include "txn_recovery/stores/store.h"
#include "txn_recovery/tools/indexes.h"

namespace txn_recovery::daemon {

// Checks every watch's indexes and, with config.sweep.manage_indexes and not `dry_run`,
// creates the missing ones. Logs a warning per missing index (naming the collection, the
// keys and what needs it), an info line per created one, an error per failure. Returns
// Unavailable when the database could not be reached (the caller may try again later),
// OK otherwise, even when some index is missing or could not be created. `deferred`, when
// given, says whether an index was left for later (IndexCheck::needed false: no
// transaction without a time yet); the caller checks again once a sweep reads one
// (WatchSummary::without_time).
txn_recovery::Status PrepareIndexes(const Config& config, txn_recovery::Store* store, bool dry_run,
                                    bool* deferred = nullptr);

// "missing index {state: 1, lastModified: 1} on bank.transactions (needed by ...)"
std::string DescribeMissing(const txn_recovery::IndexCheck& check);

}  // namespace txn_recovery::daemon
