// The quarantine's records: what `inspect`, the quarantine gauge and its alert count.
//
// A quarantined transaction carries a mark in its own document (RecoveryPaths::Quarantine),
// which the claim's filter reads so that no daemon drives it. Counting the marks would need
// an index on the application's transactions collection, which every write of the
// application maintains (docs/benchmarks.md, "What the daemon's indexes cost the
// application"). So each quarantine also writes a record in a collection of the daemon's
// own, in the watch's database, one document per quarantined transaction and watch:
//
//   {_id: {transactions: <collection>, txn: <the transaction's _id>},
//    reason: string, by: owner, at: date, markBy: date, format: 1}
//
// and the count and the listing read those. Two writes to two collections are not atomic;
// their rule, checked by model/recovery.pml (-DQUAR_RECORD; docs/proof.md):
//  - the record first, carrying `markBy`, a date on the server's clock that only grows; the
//    mark after it, fenced by `markBy` (it lands only while the server's now < markBy);
//  - a record is deleted only once its `markBy` has passed on the server's clock, the
//    transaction read unmarked after that, and only as read (the same `markBy`).
// So a mark never exists without its record (the count never misses a quarantine), and a
// record without a mark (a crash between the two writes, a release stopped after removing
// the mark) is deleted by the next sweep, or by the release itself.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "txn_recovery/base/document.h"
#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

// The collection of the records, beside txn_recoveryd_control and txn_recoveryd_members.
inline constexpr const char* kQuarantineCollection = "txn_recoveryd_quarantine";

// The records of the transactions of `txn_ns`, in its database.
Namespace QuarantineRecordsOf(const Namespace& txn_ns);
// The _id of the record of transaction `id` of `txn_ns`.
Document QuarantineRecordId(const Namespace& txn_ns, const Value& id);

// Deletes the record of transaction `id` if it is no longer a quarantine, by the rule
// above: its `markBy` passed on the server's clock, the transaction read unmarked (or gone)
// after that, the record deleted as read. A record whose `markBy` has not passed stays (a
// quarantine may be between its two writes): the next sweep repairs it. `*removed`: whether
// this call deleted it. What `release` runs after removing the mark, and the sweep for
// each record.
Status RepairQuarantineRecord(Store* store, const WatchSpec& watch, const Value& id, bool* removed);

// The sweep's repair: every record of `watch` whose `markBy` has passed, repaired as
// RepairQuarantineRecord does; `*removed` counts the records deleted.
Status RepairQuarantineRecords(Store* store, const WatchSpec& watch, std::int64_t* removed);

// How many transactions of `watch` are quarantined: its records.
Status CountQuarantineRecords(Store* store, const WatchSpec& watch, std::int64_t* count);

// Calls `each` for each record of `watch` (the transaction's _id, and the reason, owner and
// time as recorded), streaming. Stops at the first read error and returns it.
Status ForEachQuarantineRecord(
    Store* store, const WatchSpec& watch,
    const std::function<void(const Value& id, const RecoveryRecord::QuarantineRecord&)>& each);

// The upgrade from a build that marked quarantined transactions without a record: once per
// watch, every marked transaction of `watch` read (a scan of the transactions collection:
// the partial index such builds made serves it while it exists) and given a record, then a
// document {_id: {recorded: <collection>}, at, format} saying it was done, so that no later
// sweep scans again. Idempotent: a scan stopped before that document is run again whole.
// `*recorded`: the records this call created (0 when done before).
Status RecordEarlierQuarantines(Store* store, const WatchSpec& watch, std::int64_t* recorded);

// Deletes every record of `txn_ns`, and its note of the upgrade: for a transactions
// collection that is gone (rehearse's scratch collections), whose records no repair reads.
Status ForgetQuarantineRecords(Store* store, const Namespace& txn_ns);

}  // namespace txn_recovery
