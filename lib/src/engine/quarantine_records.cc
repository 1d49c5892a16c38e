#include "txn_recovery/engine/quarantine_records.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/quarantine_write.h"

namespace txn_recovery {
namespace {

// The record's fields. It carries the mark's reason and author under the mark's own names
// (RecoveryPaths), so that a record and the mark it stands for read alike.
constexpr const char* kMarkBy = "markBy";
constexpr const char* kReason = RecoveryPaths::kQuarantineReason;
constexpr const char* kBy = RecoveryPaths::kQuarantineBy;
constexpr const char* kAt = "at";
constexpr const char* kFormatField = "format";

// The records of one watch: their _id names its transactions collection.
Filter RecordsOf(const WatchSpec& watch) {
  return Filter().Eq("_id.transactions", watch.ns.collection);
}

// The document saying that RecordEarlierQuarantines ran for `txn_ns`.
Document RecordedId(const Namespace& txn_ns) {
  return Document{{"recorded", txn_ns.collection}};
}

std::optional<DateTime> MarkByOf(const Document& record) {
  const Value* v = record.Get(kMarkBy);
  if (v == nullptr || v->as_datetime() == nullptr) return std::nullopt;
  return *v->as_datetime();
}

// The repair's last two steps for a record found with its markBy passed (`record`, as
// read): the transaction read after that, the record deleted as read when it carried no
// mark.
Status RepairRead(Store* store, const WatchSpec& watch, const Value& id, const Document& record,
                  bool* removed) {
  *removed = false;
  std::optional<Document> txn;
  if (Status s = store->FindOne(watch.ns, Filter().Eq("_id", id), &txn); !s.ok()) return s;
  if (txn && RecoveryRecord::ReadQuarantine(*txn, RecoveryPaths(watch.lease_field))) {
    return Status::Ok();  // a quarantine: the record stays
  }
  const Value* rid = record.Get("_id");
  const std::optional<DateTime> mark_by = MarkByOf(record);
  if (rid == nullptr) return Status::Ok();
  Filter as_read;
  as_read.Eq("_id", *rid);
  if (mark_by) {
    as_read.Eq(kMarkBy, *mark_by).BeforeServerNow(kMarkBy);
  } else {
    as_read.NotExists(kMarkBy);  // hand-written, or by no build of ours: read so
  }
  WriteResult r;
  if (Status s = store->DeleteMany(QuarantineRecordsOf(watch.ns), as_read, &r); !s.ok()) return s;
  *removed = r.modified > 0;
  return Status::Ok();
}

// The records of `watch` matching `filter` (besides being the watch's), each read whole.
Status ReadRecords(Store* store, const WatchSpec& watch, const Filter& filter,
                   const std::function<Status(const Document&)>& each) {
  std::unique_ptr<Cursor> cursor;
  Filter f = RecordsOf(watch);
  f.And(filter);
  if (Status s = store->Find(QuarantineRecordsOf(watch.ns), f, {}, &cursor); !s.ok()) return s;
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) return Status::Ok();
    if (Status s = each(d); !s.ok()) return s;
  }
}

// The record's markBy passed on the server's clock (compared by the server as it reads),
// or none at all.
Filter MarkByPassed() {
  return Filter().BeforeServerNow(kMarkBy);
}

const Value* TxnIdOf(const Document& record) {
  const Value* rid = record.Get("_id");
  const Document* d = rid ? rid->as_document() : nullptr;
  return d ? d->Get("txn") : nullptr;
}

}  // namespace

Namespace QuarantineRecordsOf(const Namespace& txn_ns) {
  return {txn_ns.database, kQuarantineCollection};
}

Document QuarantineRecordId(const Namespace& txn_ns, const Value& id) {
  return Document{{"transactions", txn_ns.collection}, {"txn", id}};
}

Status WriteQuarantineRecord(Store* store, LeaseFreeWriter* writer, const Namespace& txn_ns,
                             const Value& id, const Document& record, DateTime mark_by) {
  const Namespace ns = QuarantineRecordsOf(txn_ns);
  const Document rid = QuarantineRecordId(txn_ns, id);
  Document doc{{"_id", rid}, {kMarkBy, mark_by}};
  for (const auto& [k, v] : record) doc.Set(k, v);
  doc.Set(kFormatField, RecoveryRecord::kFormat);
  // Refused when the record exists (a duplicate _id): the raise below then does its work.
  (void)writer->Insert(ns, "record the quarantine", {doc});
  Update raise;
  for (const auto& [k, v] : record) raise.Set(k, v);
  raise.Set(kMarkBy, mark_by).Set(kFormatField, RecoveryRecord::kFormat).CurrentDate(kAt);
  WriteResult r;
  if (Status s = writer->One(
          ns,
          {"date the quarantine's record", {Filter().Eq("_id", rid).Lte(kMarkBy, mark_by), raise}},
          &r);
      !s.ok())
    return s;
  if (writer->recording()) return Status::Ok();
  std::optional<Document> back;
  if (Status s = store->FindOne(ns, Filter().Eq("_id", rid), &back); !s.ok()) return s;
  const std::optional<DateTime> held = back ? MarkByOf(*back) : std::nullopt;
  if (!held || held->millis < mark_by.millis)
    return Status::Conflict("the quarantine's record in " + ns.ToString() +
                            " could not be written: the transaction is not marked");
  return Status::Ok();
}

Status RepairQuarantineRecord(Store* store, const WatchSpec& watch, const Value& id,
                              bool* removed) {
  *removed = false;
  Filter f = MarkByPassed();
  f.Eq("_id", QuarantineRecordId(watch.ns, id));
  std::optional<Document> record;
  if (Status s = store->FindOne(QuarantineRecordsOf(watch.ns), f, &record); !s.ok()) return s;
  if (!record) return Status::Ok();
  return RepairRead(store, watch, id, *record, removed);
}

Status RepairQuarantineRecords(Store* store, const WatchSpec& watch, std::int64_t* removed) {
  *removed = 0;
  // Read whole first: the records are few (each one an operator's to release).
  std::vector<Document> passed;
  std::vector<Value> ids;
  if (Status s = ReadRecords(store, watch, MarkByPassed(),
                             [&](const Document& d) {
                               if (const Value* id = TxnIdOf(d)) {
                                 passed.push_back(d);
                                 ids.push_back(*id);
                               }
                               return Status::Ok();
                             });
      !s.ok())
    return s;
  if (passed.empty()) return Status::Ok();
  // The transactions, read after their records: one query for all, by _id. Only the
  // records of those read unmarked are looked at again, one by one.
  std::set<std::string> marked;
  std::unique_ptr<Cursor> cursor;
  Filter f;
  f.In("_id", ids).Exists(RecoveryPaths(watch.lease_field).Quarantine());
  if (Status s = store->Find(watch.ns, f, {}, &cursor); !s.ok()) return s;
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) break;
    if (const Value* id = d.Get("_id")) marked.insert(id->ToString());
  }
  for (const Document& record : passed) {
    const Value* id = TxnIdOf(record);
    if (marked.count(id->ToString()) > 0) continue;
    bool gone = false;
    if (Status s = RepairRead(store, watch, *id, record, &gone); !s.ok()) return s;
    *removed += gone ? 1 : 0;
  }
  return Status::Ok();
}

Status CountQuarantineRecords(Store* store, const WatchSpec& watch, std::int64_t* count) {
  return store->Count(QuarantineRecordsOf(watch.ns), RecordsOf(watch), count);
}

Status ForEachQuarantineRecord(
    Store* store, const WatchSpec& watch,
    const std::function<void(const Value& id, const RecoveryRecord::QuarantineRecord&)>& each) {
  return ReadRecords(store, watch, Filter(), [&](const Document& d) {
    const Value* id = TxnIdOf(d);
    if (id == nullptr) return Status::Ok();
    RecoveryRecord::QuarantineRecord q;
    const Value* reason = d.Get(kReason);
    q.reason = reason && reason->is_string() ? *reason->as_string() : "";
    if (const Value* by = d.Get(kBy); by && by->is_string()) q.by = *by->as_string();
    if (const Value* at = d.Get(kAt); at && at->is_datetime()) q.at = *at->as_datetime();
    each(*id, q);
    return Status::Ok();
  });
}

Status ForgetQuarantineRecords(Store* store, const Namespace& txn_ns) {
  WriteResult r;
  if (Status s = store->DeleteMany(QuarantineRecordsOf(txn_ns),
                                   Filter().Eq("_id.transactions", txn_ns.collection), &r);
      !s.ok())
    return s;
  return store->DeleteMany(QuarantineRecordsOf(txn_ns), Filter().Eq("_id", RecordedId(txn_ns)), &r);
}

Status RecordEarlierQuarantines(Store* store, const WatchSpec& watch, std::int64_t* recorded) {
  *recorded = 0;
  const Namespace ns = QuarantineRecordsOf(watch.ns);
  std::optional<Document> done;
  if (Status s = store->FindOne(ns, Filter().Eq("_id", RecordedId(watch.ns)), &done); !s.ok())
    return s;
  if (done) return Status::Ok();
  const RecoveryPaths paths(watch.lease_field);
  std::unique_ptr<Cursor> cursor;
  if (Status s = store->Find(watch.ns, Filter().Exists(paths.Quarantine()), {}, &cursor); !s.ok())
    return s;
  std::vector<Document> records;
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) break;
    const Value* id = d.Get("_id");
    const auto q = RecoveryRecord::ReadQuarantine(d, paths);
    if (id == nullptr || !q) continue;
    // markBy the epoch: passed already, as it should be: the mark is there, so the repair
    // keeps the record while it is, and deletes it once a release has removed it.
    Document r{{"_id", QuarantineRecordId(watch.ns, *id)},
               {kMarkBy, DateTime{0}},
               {kReason, q->reason},
               {kFormatField, RecoveryRecord::kFormat}};
    if (q->by) r.Set(kBy, *q->by);
    if (q->at) r.Set(kAt, *q->at);
    records.push_back(std::move(r));
  }
  // One at a time: a record that exists (written by this build since) refuses its insert,
  // and must not stop the others.
  for (const Document& r : records) {
    if (store->InsertMany(ns, {r}).ok()) ++*recorded;
  }
  const Document mark{{"_id", RecordedId(watch.ns)}, {kFormatField, RecoveryRecord::kFormat}};
  Status s = store->InsertMany(ns, {mark});
  // Another instance may have finished the same scan first: its document is as good.
  if (!s.ok() && !s.IsUnavailable()) return Status::Ok();
  return s;
}

}  // namespace txn_recovery
