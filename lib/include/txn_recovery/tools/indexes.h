// The indexes a watch's queries need, and checking or creating them.
//
// Without them every sweep scans the transactions collection (the candidate query filters
// on state and time), and participants found by a key other than _id, or by a tag, are
// found by a collection scan. The daemon creates them at start when the operator lets it
// (`manage_indexes`), and otherwise reports each missing one, since building an index on
// a large production collection is an operator's decision.
//
// Indexes on an application's collections are paid by the application's every write (on
// DocumentDB a fifth to two and a half times, docs/benchmarks.md), so none is asked for that
// only the hourly orphan scan would read by, unless the watch says so
// (WatchSpec::orphan_scan_indexes).
#pragma once

#include <string>
#include <vector>

#include "txn_recovery/base/status.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

struct RequiredIndex {
  Namespace ns;
  IndexSpec spec;
  std::string why;  // which queries need it, for the operator
  // Needed once the transactions collection holds a transaction without a time field, and
  // not before: the index ages are read from without one ({state, _id} with missing_time =
  // "object_id", the first sightings' with "first_seen"). Until then every read it would
  // serve is an empty point ("no time") of the {state, time} index, and it would cost every
  // write of the application's transactions for nothing (+82 % on DocumentDB for the first
  // sightings', docs/benchmarks.md).
  bool only_with_timeless = false;
};

// Every index `watch` needs, in a stable order: on the transactions collection
// {<state_field>: 1, <time_field>: 1} (with missing_time "object_id" then _id, with
// "first_seen" then <lease_field>.firstSeen, both only_with_timeless) and
// {<lease_field>.quarantine: 1} over the
// quarantined only; per tagged collection the tag field; with orphan_scan_indexes, per
// participant collection the marker array and {<lease_field>.finished: 1} over the
// participants carrying a trace; and each participant key that is not _id (a transfer's
// participant_key, a described step's key).
std::vector<RequiredIndex> RequiredIndexes(const WatchSpec& watch);

struct IndexCheck {
  RequiredIndex index;
  bool present = false;  // an existing index serves it (IndexSpec::ServedBy)
  bool created = false;  // it was missing and EnsureIndexes created it
  // False for a missing RequiredIndex::only_with_timeless while no transaction lacks a
  // time: neither created nor reported missing.
  bool needed = true;
  Status status;  // the error listing or creating it, OK otherwise
};

// Lists the indexes of every collection `watch` uses and compares. With `create`, builds
// the missing ones. Never stops at the first problem: one IndexCheck per required index.
// Returns the first error (also in its IndexCheck), OK if every list and create worked.
// Whether a transaction lacks a time is asked (TimelessProbe: one _id at most, on the
// {state, time} index) only when an only_with_timeless index is missing.
Status EnsureIndexes(Store* store, const WatchSpec& watch, bool create,
                     std::vector<IndexCheck>* checks);

}  // namespace txn_recovery
