// The first of a quarantine's two writes, the record (txn_recovery/engine/
// quarantine_records.h); the mark that follows is StateMachine's.
#pragma once

#include "engine/lease.h"
#include "txn_recovery/base/document.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

// Writes transaction `id`'s record: inserted if absent (`record`'s reason and owner, its
// `markBy` `mark_by`), then its `markBy` raised to `mark_by` where it held no later one,
// with the reason, the owner and the server's time, then read back. Ok only when the
// record read back holds a `markBy` no earlier than `mark_by`: only then may the mark be
// sent, fenced by `mark_by` (Filter::ServerNowBefore), for no repair deletes the record
// before that date has passed. A recording writer notes the two writes and reads nothing.
Status WriteQuarantineRecord(Store* store, LeaseFreeWriter* writer, const Namespace& txn_ns,
                             const Value& id, const Document& record, DateTime mark_by);

}  // namespace txn_recovery
