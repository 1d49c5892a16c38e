// An operator's commands on one transaction, found by its _id in a watch: why the daemon
// does what it does with it (Explain), do it now whatever its age (Retry), and hand a
// quarantined one back to the daemon (ReleaseQuarantine). The same parser, decision table,
// engine and request builders as a sweep: nothing here decides anything a sweep would not.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "txn_recovery/base/clock.h"
#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/engine/decision.h"
#include "txn_recovery/engine/state_machine.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

struct Explanation {
  Document doc;     // the transaction document as read
  Status fits;      // OK, or why the profile refuses it (a sweep would quarantine it)
  Transaction txn;  // when it fits
  DateTime server_now;
  // Where its age is measured from ("lastModified", "_id (ObjectId creation time)"), and
  // the age on the server's clock; nullopt when it does not fit.
  std::string age_source;
  std::optional<std::chrono::milliseconds> age;
  std::string decision;                 // the decision table's row and why (DecisionRow)
  Action action = Action::kNone;        // what a sweep would do now
  Action retry_action = Action::kNone;  // what `retry` would do now
  bool paused = false;                  // the watch's pause switch is on
  bool owned = true;                    // the watch's owner filter selects it
  std::optional<RecoveryRecord::QuarantineRecord> quarantine;
  RecoveryRecord record;             // the rest of the daemon's record, when readable
  std::vector<PlannedWrite> writes;  // what the sweep's action would send, in order
};

// Reads the transaction `id` of `watch` and its participants (reads only). NotFound when
// there is no such transaction.
Status Explain(Store* store, Clock* clock, const WatchSpec& watch, const Value& id,
               const LeaseOptions& lease, Explanation* out);

// What Retry did.
struct RetryResult {
  Action action = Action::kNone;
  ExecuteResult result;
  std::string refused;  // non-empty: nothing was done, and why (paused, quarantined, ...)
};

// Drives the transaction `id` now, as a sweep would once it is old enough
// (DecideIgnoringAge), under a lease like any sweep: a live lease of another daemon, or an
// application that moved it on, makes it busy. Refused (nothing written) while the watch is
// paused, for a quarantined transaction (release it first) and for one the owner filter
// does not select. A transaction that does not fit its profile is quarantined, as a sweep
// would. NotFound when there is no such transaction.
Status Retry(Store* store, Clock* clock, const WatchSpec& watch, const Value& id,
             const LeaseOptions& lease, RetryResult* out);

// Removes the quarantine record (and the failure count) of the transaction `id`, so that
// the next sweep considers it again; `released` says whether it was quarantined. NotFound
// when there is no such transaction.
Status ReleaseQuarantine(Store* store, const WatchSpec& watch, const Value& id, bool* released);

}  // namespace txn_recovery
