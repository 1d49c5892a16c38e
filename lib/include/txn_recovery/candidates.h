// The queries that find the transactions a sweep acts on, built from the decision table's
// age rule (EligibleAges in decision.h) so that what a sweep reads, what Decide acts on and
// what `inspect` calls stuck agree by construction.
#pragma once

#include <vector>

#include "txn_recovery/decision.h"
#include "txn_recovery/recovery_record.h"
#include "txn_recovery/store.h"
#include "txn_recovery/watch.h"

namespace txn_recovery {

// Transactions with neither a time nor a first-sighting stamp (missing_time = "first_seen":
// the next sweep stamps them). The one spelling of that condition: the candidate query, the
// stamp's own guard and inspect's count use it.
Filter NotYetSeen(const Profile& profile, const RecoveryPaths& paths);

// The transactions of `watch` in one of `states` whose age at server time `now`, measured
// from `clock` (kNotYetSeen: none), is one the decision table acts on: one alternative per
// group of states that share an age window. Empty when no state has a spelling, or `clock`
// does not apply to the watch's missing_time.
std::vector<Filter> AgedAlternatives(const WatchSpec& watch, const std::vector<TxnState>& states,
                                     DateTime now, AgeSource clock);

// The query that selects a sweep's candidates at server time `now`: transactions the
// decision table acts on, and every document whose state or time cannot be read (so that
// it is quarantined rather than left stuck in silence), minus quarantined ones and those
// another application owns.
Filter CandidateFilter(const WatchSpec& watch, DateTime now);

}  // namespace txn_recovery
