// The queries that find the transactions a sweep acts on, built from the decision table's
// age rule (EligibleAges in decision.h) so that what a sweep reads, what Decide acts on and
// what `inspect` calls stuck agree by construction.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/engine/decision.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/stores/store.h"

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

// The BSON types, other than strings and null, a state that is no spelling may hold, by
// their $type aliases. Not looked for: an array with no element (an array of values is
// found by its elements); the deprecated symbol, DBPointer, JavaScript-with-scope and
// undefined types and JavaScript code, which DocumentDB finds only by reading its whole
// index (symbol) or mongo-java-server refuses as a $type (the others): a $type a server
// does not know fails the whole query, and with it every sweep.
inline constexpr const char* kOtherStateTypes[] = {"number",   "bool",    "object", "date",
                                                   "objectId", "binData", "regex",  "timestamp",
                                                   "minKey",   "maxKey"};

// Documents whose state is none of the profile's spellings, as alternatives that each read
// only such documents from the ordered {state, time} index: the strings below, between and
// above the known spellings (in the server's binary order), absent, null, and each other
// type. Not `$nin` of the spellings: mongod reads it as ranges too, but DocumentDB reads its
// whole ordered index for it (docs/compatibility.md). Below a finished spelling the range
// ends at a string nobody writes, so no read walks the finished history; a state that begins
// with that spelling's last character lowered by one and then sixteen of the greatest
// character is past that end and not found (docs/state-machine.md, "What a sweep reads").
std::vector<Filter> UnknownStates(const Profile& profile);

// The query that selects a sweep's candidates at server time `now`: transactions the
// decision table acts on, and every document whose state or time cannot be read (so that
// it is quarantined rather than left stuck in silence), minus quarantined ones and those
// another application owns. What a document must match to be one (a share's sweep
// fetches its candidates by _id and this); a sweep reads them by CandidateReads.
Filter CandidateFilter(const WatchSpec& watch, DateTime now);

// The transactions the decision table has acted on for `overdue_after` already at server
// time `now`: aged past their threshold by that much more (a sweep at now - overdue_after
// would have taken them), the application's own, not quarantined. What `inspect` calls
// overdue in a fleet member's share. Nullopt when no state can age (no spelling).
std::optional<Filter> OverdueFilter(const WatchSpec& watch, DateTime now,
                                    std::chrono::milliseconds overdue_after);

// One read of a sweep: a filter, and the index the server must read it from (empty: the
// planner's choice).
struct CandidateRead {
  Filter filter;
  std::vector<std::pair<std::string, int>> hint;
};

// The ordered index {state, <what ages are read from>} (RequiredIndexes), as reads name it.
IndexSpec AgeIndex(const WatchSpec& watch, AgeSource clock);

// The read that tells whether the finished transactions carry a time (one document at most,
// a range of AgeIndex(kTimeField)): where they do, "no time" is the few not yet seen;
// where they do not, "no stamp" is. CandidateReads needs the answer with missing_time =
// "first_seen".
CandidateRead FinishedTimesProbe(const WatchSpec& watch);

// The read that tells whether there is any finished transaction at all (one document at
// most, points of AgeIndex(kTimeField)): when FinishedTimesProbe finds none with a time,
// this says whether that is what the application writes, or only that nothing has finished
// yet (then the answer is not known, and "no time" is the few in flight).
CandidateRead FinishedProbe(const WatchSpec& watch);

// Whether any document of `ns` matches `read`: one _id at most, read on its hint. What the
// probes below are asked with.
Status AnyMatches(Store* store, const Namespace& ns, const CandidateRead& read, bool* found);

// The read that tells whether any transaction lacks a time (one document at most, points
// of AgeIndex(kTimeField)): until one does, the first sightings' index is not needed
// (RequiredIndex::only_with_timeless).
CandidateRead TimelessProbe(const WatchSpec& watch);

// The candidates of CandidateFilter as the reads a sweep sends, each bounded by an index
// range: the known states by state and age (the planner chooses among the AgeIndex
// indexes), then the unknown states (UnknownStates) on the ordered {state, time} index,
// named in a hint (a planner left to choose may take another index that starts with the
// state, where the same ranges are not bounded the same way; docs/compatibility.md), then with
// missing_time = "first_seen" those not seen yet, on the AgeIndex whose second key the
// finished transactions carry (`finished_carry_times`, FinishedTimesProbe). A document may
// be in two reads (a state that is an array): the reader sees it twice.
std::vector<CandidateRead> CandidateReads(const WatchSpec& watch, DateTime now,
                                          bool finished_carry_times);

}  // namespace txn_recovery
