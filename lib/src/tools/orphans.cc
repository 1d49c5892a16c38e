#include "txn_recovery/tools/orphans.h"

#include <set>

#include "engine/lease.h"
#include "engine/requests.h"

namespace txn_recovery {

std::string_view OrphanKindName(OrphanFinding::Kind k) noexcept {
  switch (k) {
    case OrphanFinding::Kind::kLateWriteUndone:
      return "late-write-undone";
    case OrphanFinding::Kind::kMissingTransaction:
      return "missing-transaction";
    case OrphanFinding::Kind::kForeignMarker:
      return "foreign-marker";
    case OrphanFinding::Kind::kTooManyMarkers:
      return "too-many-markers";
    case OrphanFinding::Kind::kQuarantined:
      return "quarantined";
    case OrphanFinding::Kind::kFailed:
      return "failed";
  }
  return "?";
}

namespace {

// Whether `txn`'s own steps name the participant `id` in `ns`: a terminal transaction's
// marker anywhere else was not written by its protocol, and the late-write undo (which only
// looks at the transaction's own participants) would never remove it.
bool NamesParticipant(const Transaction& txn, const Namespace& ns, const Document& participant) {
  for (const auto& step : txn.steps)
    if (step.ns == ns && step.target.Matches(participant)) return true;
  for (const auto& set : txn.tagged_sets)
    if (set.ns == ns && set.members.Matches(participant)) return true;
  return false;
}

// Participants whose `path` holds something other than an empty array: those carrying a
// marker (or a trace). Spelled {path: {$exists: true, $ne: []}}, which the index on `path`
// bounds on every engine; {"path.0": {$exists: true}} made DocumentDB read every participant.
// A value that is not an array is returned too, and skipped by the caller.
Filter PresentNotEmpty(const std::string& path) {
  Filter f;
  f.Exists(path).Ne(path, Value(Array{}));
  return f;
}

// One scan of one watch: its counters, its reports and the machine that undoes late writes.
class OrphanScan {
 public:
  OrphanScan(Store* store, Clock* clock, const WatchSpec& watch, const OrphanOptions& options,
             DateTime server_start, const std::function<void(const OrphanFinding&)>& on_finding,
             OrphanSummary* summary)
      : store_(store),
        watch_(watch),
        options_(options),
        machine_(store, clock, watch.ns, &watch.profile, watch.lease_field, options.lease,
                 ServerNowFrom(clock, server_start)),
        owned_(watch.profile.owner.Condition()),
        on_finding_(on_finding),
        summary_(summary) {}

  // Every participant of the array location `loc` carrying the trace of a finish: a trace of
  // a transaction that is terminal or gone is removed (no finish can follow any more).
  Status ScanTraces(const MarkerLocation& loc) {
    const RecoveryPaths paths(watch_.lease_field);
    FindOptions fo;
    fo.batch_size = options_.batch_size;
    std::unique_ptr<Cursor> cursor;
    if (Status s = store_->Find(loc.ns, PresentNotEmpty(paths.Finished()), fo, &cursor); !s.ok())
      return s;
    Document participant;
    for (bool has = true;;) {
      if (options_.stop != nullptr && options_.stop->load())
        return Status::Aborted("orphan scan stopped");
      if (Status s = cursor->Next(&participant, &has); !s.ok()) return s;
      if (!has) return Status::Ok();
      const Value* pid = participant.Get("_id");
      const Value* traces = participant.GetPath(paths.Finished());
      if (pid == nullptr || traces == nullptr || !traces->is_array()) continue;
      Array ended;  // the transactions of these traces that no finish can follow any more
      for (const Value& txn_id : *traces->as_array()) {
        std::optional<Document> doc;
        if (Status s = store_->FindOne(watch_.ns, Filter().Eq("_id", txn_id), &doc); !s.ok())
          return s;
        Transaction txn;
        if (doc && (!watch_.profile.Parse(*doc, watch_.ns, watch_.lease_field, &txn).ok() ||
                    !IsTerminal(txn.state)))
          continue;  // in flight (or the sweep's to quarantine): its finish may need it
        ended.push_back(txn_id);
      }
      if (ended.empty() || options_.dry_run) continue;
      for (const Value& txn_id : ended) {
        auto [whole, part] = requests::Untrace(Filter().Eq("_id", *pid), txn_id, paths);
        BulkResult r;
        if (Status s = LeaseFreeWriter(store_, LeaseFree::kOrphanScan)
                           .Each(loc.ns,
                                 {{"remove the finish's trace", std::move(whole)},
                                  {"or pull it from the daemon's sub-document", std::move(part)}},
                                 &r);
            !s.ok())
          return s;
        summary_->traces_removed += r.matched;
      }
    }
  }

  // Every participant of `loc` that carries a marker.
  Status ScanLocation(const MarkerLocation& loc) {
    FindOptions fo;
    fo.batch_size = options_.batch_size;
    Filter marked;
    if (loc.scalar) {
      marked.Exists(loc.field).Ne(loc.field, Null{});
    } else {
      marked = PresentNotEmpty(loc.field);
    }
    std::unique_ptr<Cursor> cursor;
    if (Status s = store_->Find(loc.ns, marked, fo, &cursor); !s.ok()) return s;
    Document participant;
    // A scan may return a document twice (DocumentDB does): each participant is checked,
    // counted and reported once.
    std::set<std::string> scanned;
    for (bool has = true;;) {
      if (options_.stop != nullptr && options_.stop->load())
        return Status::Aborted("orphan scan stopped");
      if (Status s = cursor->Next(&participant, &has); !s.ok()) return s;
      if (!has) return Status::Ok();
      if (const Value* pid = participant.Get("_id"); pid && !scanned.insert(pid->ToString()).second)
        continue;
      if (Status s = ScanParticipant(loc, participant); !s.ok()) return s;
    }
  }

 private:
  Status ScanParticipant(const MarkerLocation& loc, const Document& participant) {
    const Value* pid = participant.Get("_id");
    const Value* markers = participant.GetPath(loc.field);
    if (pid == nullptr || markers == nullptr) return Status::Ok();
    Array list;
    if (const Array* a = markers->as_array()) {
      list = *a;
    } else if (loc.scalar) {
      list.push_back(*markers);
    } else {
      return Status::Ok();
    }
    summary_->participants_scanned++;
    if (options_.progress) options_.progress();
    if (static_cast<std::int64_t>(list.size()) > options_.marker_cap)
      Report({OrphanFinding::Kind::kTooManyMarkers, loc.ns, *pid, Value(),
              std::to_string(list.size()) + " markers in " + loc.field + " (cap " +
                  std::to_string(options_.marker_cap) + ")"});
    std::set<std::string> seen;
    for (const Value& marker : list) {
      if (!seen.insert(marker.ToString()).second) continue;
      summary_->markers_checked++;
      if (Status s = CheckMarker(loc, participant, *pid, marker); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // One marker: the transaction it names decides what it is.
  Status CheckMarker(const MarkerLocation& loc, const Document& participant, const Value& pid,
                     const Value& marker) {
    std::optional<Document> doc;
    if (Status s = store_->FindOne(watch_.ns, Filter().Eq("_id", marker), &doc); !s.ok()) return s;
    if (!doc) {
      Report({OrphanFinding::Kind::kMissingTransaction, loc.ns, pid, marker,
              "no transaction " + marker.ToString() + " in " + watch_.ns.ToString() +
                  "; nothing undone: there is no record of the change"});
      return Status::Ok();
    }
    Transaction txn;
    // Another application's transaction, or one the sweep will quarantine: not ours.
    if (!owned_.Matches(*doc) ||
        !watch_.profile.Parse(*doc, watch_.ns, watch_.lease_field, &txn).ok() ||
        !IsTerminal(txn.state)) {
      summary_->in_flight++;
      return Status::Ok();
    }
    if (!NamesParticipant(txn, loc.ns, participant)) {
      Report({OrphanFinding::Kind::kForeignMarker, loc.ns, pid, marker,
              "transaction " + marker.ToString() + " is " + std::string(TxnStateName(txn.state)) +
                  " and does not name this document; nothing undone"});
      return Status::Ok();
    }
    if (options_.dry_run) {
      Report({OrphanFinding::Kind::kLateWriteUndone, loc.ns, pid, marker,
              "would undo the late write of " + std::string(TxnStateName(txn.state)) +
                  " transaction " + marker.ToString()});
      return Status::Ok();
    }
    ExecuteResult r = machine_.Execute(txn, Action::kCheckLateWrites);
    if (r.outcome == Outcome::kQuarantined) {
      Report({OrphanFinding::Kind::kQuarantined, loc.ns, pid, marker, r.detail});
    } else if (r.outcome == Outcome::kFailed) {
      Report({OrphanFinding::Kind::kFailed, loc.ns, pid, marker, r.status.ToString()});
      if (r.status.IsUnavailable()) return r.status;
    } else if (r.late_writes_undone > 0) {
      Report({OrphanFinding::Kind::kLateWriteUndone, loc.ns, pid, marker, r.detail});
    }
    return Status::Ok();
  }

  void Report(const OrphanFinding& f) {
    switch (f.kind) {
      case OrphanFinding::Kind::kLateWriteUndone:
        summary_->late_writes_undone++;
        break;
      case OrphanFinding::Kind::kMissingTransaction:
        summary_->missing_transactions++;
        break;
      case OrphanFinding::Kind::kForeignMarker:
        summary_->foreign_markers++;
        break;
      case OrphanFinding::Kind::kTooManyMarkers:
        summary_->crowded_participants++;
        break;
      case OrphanFinding::Kind::kQuarantined:
        summary_->quarantined++;
        break;
      case OrphanFinding::Kind::kFailed:
        summary_->failed++;
        break;
    }
    if (on_finding_) on_finding_(f);
  }

  Store* store_;
  const WatchSpec& watch_;
  const OrphanOptions& options_;
  StateMachine machine_;
  const Filter owned_;
  const std::function<void(const OrphanFinding&)>& on_finding_;
  OrphanSummary* summary_;
};

}  // namespace

Status ScanOrphans(Store* store, Clock* clock, const WatchSpec& watch, const OrphanOptions& options,
                   const std::function<void(const OrphanFinding&)>& on_finding,
                   OrphanSummary* summary) {
  *summary = OrphanSummary{};
  if (Status s = IsPaused(store, watch, &summary->paused); !s.ok() || summary->paused) return s;
  DateTime server_start;
  if (Status s = store->ServerTime(&server_start); !s.ok()) return s;
  OrphanScan scan(store, clock, watch, options, server_start, on_finding, summary);
  for (const MarkerLocation& loc : watch.profile.MarkerLocations(watch.ns)) {
    if (Status s = scan.ScanLocation(loc); !s.ok()) return s;
    if (!loc.scalar)
      if (Status s = scan.ScanTraces(loc); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace txn_recovery
