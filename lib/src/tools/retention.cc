#include "txn_recovery/tools/retention.h"

#include "engine/lease.h"

#include <algorithm>
#include <set>
#include <vector>

namespace txn_recovery {

namespace {

// The ids among `ids` already present in the archive (moved by an earlier, interrupted run
// or by another instance).
Status AlreadyArchived(Store* store, const Namespace& archive, const std::vector<Value>& ids,
                       std::set<std::string>* present) {
  std::unique_ptr<Cursor> cursor;
  if (Status s = store->Find(archive, Filter().In("_id", ids), {}, &cursor); !s.ok()) return s;
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) return Status::Ok();
    if (const Value* id = d.Get("_id")) present->insert(id->ToString());
  }
}

// The finished transactions of `target` old enough to go before `cutoff`, on the clock the
// sweep ages the transaction with (AgedAlternatives): its time field, else, as the watch
// says, its first sighting or its ObjectId. Never one under a lease or in quarantine.
Filter Eligible(const RetentionTarget& target, DateTime cutoff) {
  std::vector<Filter> old_enough;
  old_enough.push_back(Filter().Lt(target.time_field, cutoff));
  const RecoveryPaths paths(target.lease_field);
  if (target.missing_time == MissingTime::kFirstSeen)
    old_enough.push_back(Filter().NotExists(target.time_field).Lt(paths.FirstSeen(), cutoff));
  if (target.missing_time == MissingTime::kObjectIdTime)
    old_enough.push_back(
        Filter().NotExists(target.time_field).Lt("_id", ObjectId::AtTime(cutoff.millis)));
  Filter eligible;
  eligible.And(target.finished)
      .AnyOf(std::move(old_enough))
      .NotExists(paths.Lease())
      .NotExists(paths.Quarantine());
  return eligible;
}

// The next batch of at most `batch` eligible transactions, by _id, each once.
Status ReadBatch(Store* store, const Namespace& transactions, const Filter& eligible,
                 std::int32_t batch, std::vector<Document>* docs, std::vector<Value>* ids) {
  FindOptions fo;
  fo.sort_ascending_by = "_id";
  fo.limit = batch;
  fo.batch_size = batch;
  std::unique_ptr<Cursor> cursor;
  if (Status s = store->Find(transactions, eligible, fo, &cursor); !s.ok()) return s;
  std::set<std::string> seen;  // a scan may return a document twice (DocumentDB)
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) return Status::Ok();
    const Value* id = d.Get("_id");
    if (id == nullptr || !seen.insert(id->ToString()).second) continue;
    ids->push_back(*id);
    docs->push_back(std::move(d));
  }
}

// Copies `docs` (of `ids`) into the archive, but those already there.
Status Archive(Store* store, const Namespace& archive_ns, std::vector<Document> docs,
               const std::vector<Value>& ids) {
  std::set<std::string> present;
  if (Status s = AlreadyArchived(store, archive_ns, ids, &present); !s.ok()) return s;
  std::vector<Document> to_insert;
  for (auto& doc : docs)
    if (!present.count(doc.Get("_id")->ToString())) to_insert.push_back(std::move(doc));
  if (to_insert.empty()) return Status::Ok();
  Status s = LeaseFreeWriter(store, LeaseFree::kRetention).Insert(archive_ns, "archive", to_insert);
  if (s.ok()) return s;
  // Another instance may have archived some of them meanwhile: fine if every one is there
  // now; otherwise nothing is deleted and the error is reported.
  std::set<std::string> now_present;
  if (Status again = AlreadyArchived(store, archive_ns, ids, &now_present);
      !again.ok() || now_present.size() < ids.size())
    return s;
  return Status::Ok();
}

}  // namespace

Status RemoveFinished(Store* store, Clock* clock, const RetentionTarget& target,
                      const RetentionPolicy& policy, DateTime now, const std::atomic<bool>* stop,
                      RetentionResult* result) {
  *result = {};
  if (!policy.enabled()) return Status::Ok();
  auto keep = std::max(policy.retain_finished, target.late_write_window);
  const Filter eligible = Eligible(target, DateTime{now.millis - keep.count()});
  const bool archive = !policy.archive_collection.empty();
  const Namespace archive_ns{target.transactions.database, policy.archive_collection};
  std::int32_t batch = std::max<std::int32_t>(1, policy.batch_size);

  for (std::int32_t batches = 0;; ++batches) {
    if (stop != nullptr && stop->load()) return Status::Aborted("retention stopped");
    if (policy.max_batches > 0 && batches >= policy.max_batches) {
      result->more = true;
      return Status::Ok();
    }
    const bool first = batches == 0;
    if (!first) clock->SleepFor(policy.pause_between_batches);
    std::vector<Document> docs;
    std::vector<Value> ids;
    if (Status s = ReadBatch(store, target.transactions, eligible, batch, &docs, &ids); !s.ok())
      return s;
    if (ids.empty()) return Status::Ok();
    if (archive)
      if (Status s = Archive(store, archive_ns, std::move(docs), ids); !s.ok()) return s;
    // The same conditions again: a transaction leased or changed since it was read stays.
    Filter remove = eligible;
    remove.In("_id", ids);
    WriteResult wr;
    if (Status s = LeaseFreeWriter(store, LeaseFree::kRetention)
                       .Many(target.transactions, "delete", remove, nullptr, &wr);
        !s.ok())
      return s;
    (archive ? result->archived : result->deleted) += wr.modified;
    if (static_cast<std::int64_t>(ids.size()) < batch) return Status::Ok();
  }
}

Status SweepAndRetain(Sweeper* sweeper, const WatchSpec& watch,
                      const std::function<void(const TxnReport&)>& on_txn, WatchSummary* summary) {
  Status status = sweeper->SweepWatch(watch, on_txn, summary);
  if (!status.ok() || summary->paused || sweeper->options().dry_run || !watch.retention.enabled())
    return status;
  RetentionTarget target;
  target.transactions = watch.ns;
  target.finished.In(watch.profile.state_field, watch.profile.states.TerminalSpellings());
  target.time_field = watch.profile.time_field;
  target.missing_time = watch.profile.missing_time;
  target.lease_field = watch.lease_field;
  target.late_write_window = watch.thresholds.late_write_window;
  RetentionResult removed;
  status = RemoveFinished(sweeper->store(), sweeper->clock(), target, watch.retention,
                          sweeper->ServerNow(), sweeper->options().stop, &removed);
  summary->finished_deleted = removed.deleted;
  summary->finished_archived = removed.archived;
  if (!status.ok() && !status.IsAborted()) status = status.WithContext("retention");
  summary->status = status;
  return status;
}

}  // namespace txn_recovery
