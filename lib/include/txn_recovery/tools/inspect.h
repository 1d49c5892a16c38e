// What an operator asks of a watch, read-only: what is stuck (`inspect`, the daemon's
// gauges) and what is quarantined, and why.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

// What is stuck in one watch right now: non-terminal transactions old enough for the
// daemon to act on (the decision table's age rule), by state, and the age of the oldest.
// Quarantined ones are counted apart.
struct StuckReport {
  std::map<TxnState, std::int64_t> stuck;
  std::optional<std::chrono::milliseconds> oldest_age;
  std::string oldest_age_source;  // where the oldest one's age comes from ("lastModified", ...)
  std::int64_t quarantined = 0;
  // missing_time = "first_seen": transactions without a time that no sweep has stamped yet
  // (their age starts at the next sweep).
  std::int64_t not_yet_seen = 0;
};

// Where the ages of `watch`'s transactions come from: "lastModified", then (when it is
// absent) the ObjectId's creation time or the daemon's first sighting.
std::string AgeSources(const WatchSpec& watch);

// A count query per state, one sorted find with limit 1 per age clock, one count of the
// quarantined; reads only.
Status Inspect(Store* store, const WatchSpec& watch, StuckReport* report);

// What a watch's profile (a described shape above all) makes of the documents already in
// its collection, before the daemon is turned on: reads only.
struct ProbeResult {
  struct Finding {
    Value id;            // the transaction
    std::string detail;  // why it does not fit (naming the path), or the participant missing
  };
  std::int64_t examined = 0;     // transaction documents read
  std::int64_t fit = 0;          // parsed as a sweep would, without a problem
  std::vector<Finding> misfits;  // the first `keep` that do not fit (a sweep quarantines them)
  std::int64_t misfit_total = 0;
  std::int64_t participants_checked = 0;
  std::vector<Finding> missing_participants;  // steps whose participant is not there
  std::int64_t missing_participant_total = 0;
  // Participants of transactions under way that have no marker field at all.
  std::vector<Finding> unmarked_participants;
  std::int64_t unmarked_participant_total = 0;
};

// Parses up to `limit` transaction documents of `watch` that are not quarantined and that
// it owns (in the collection's natural order) with its profile, as a sweep would, and, for
// those that fit and are not terminal, looks up the participant of each step (missing, or
// without the marker field the description names). Keeps the first `keep`
// findings of each kind. Reads only.
Status Probe(Store* store, const WatchSpec& watch, std::int64_t limit, std::size_t keep,
             ProbeResult* out);

// How a watch's stuck transactions fall into a fleet's shares, for one member: what a
// sweep would take now in its share, and of those the overdue ones (OverdueFilter: stuck
// past their threshold by overdue_after more, which a member that drives its share leaves
// to nobody for that long).
struct ShareLoad {
  std::int64_t stuck = 0;
  std::int64_t overdue = 0;
};

// One ShareLoad per member of `sweepers` (as SweepersOf returns them, at the same
// positions), from the sweep's reads of the candidates' ids at server time `now` and one
// read of the overdue ones' ids. Memory: the counts. Reads only.
Status LoadByShare(Store* store, const WatchSpec& watch, const std::vector<MemberRecord>& sweepers,
                   DateTime now, std::chrono::milliseconds overdue_after,
                   std::vector<ShareLoad>* loads);

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
