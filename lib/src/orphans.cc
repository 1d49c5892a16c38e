#include "txn_recovery/orphans.h"

#include <set>

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

}  // namespace

Status ScanOrphans(Store* store, Clock* clock, const WatchSpec& watch, const OrphanOptions& options,
                   const std::function<void(const OrphanFinding&)>& on_finding,
                   OrphanSummary* summary) {
  *summary = OrphanSummary{};
  if (Status s = Sweeper::IsPaused(store, watch, &summary->paused); !s.ok() || summary->paused)
    return s;
  DateTime server_start;
  if (Status s = store->ServerTime(&server_start); !s.ok()) return s;
  StateMachine machine(store, clock, watch.ns, &watch.profile, watch.lease_field, options.lease,
                       ServerNowFrom(clock, server_start));
  const Filter owned = watch.profile.owner.Condition();
  auto report = [&](OrphanFinding f) {
    switch (f.kind) {
      case OrphanFinding::Kind::kLateWriteUndone:
        summary->late_writes_undone++;
        break;
      case OrphanFinding::Kind::kMissingTransaction:
        summary->missing_transactions++;
        break;
      case OrphanFinding::Kind::kForeignMarker:
        summary->foreign_markers++;
        break;
      case OrphanFinding::Kind::kTooManyMarkers:
        summary->crowded_participants++;
        break;
      case OrphanFinding::Kind::kQuarantined:
        summary->quarantined++;
        break;
      case OrphanFinding::Kind::kFailed:
        summary->failed++;
        break;
    }
    if (on_finding) on_finding(f);
  };

  for (const MarkerLocation& loc : watch.profile.MarkerLocations(watch.ns)) {
    FindOptions fo;
    fo.batch_size = options.batch_size;
    std::unique_ptr<Cursor> cursor;
    Filter marked;
    if (loc.scalar) {
      marked.Exists(loc.field).Ne(loc.field, Null{});
    } else {
      marked.NonEmptyArray(loc.field);
    }
    if (Status s = store->Find(loc.ns, marked, fo, &cursor); !s.ok()) return s;
    Document participant;
    for (bool has = true;;) {
      if (options.stop != nullptr && options.stop->load())
        return Status::Aborted("orphan scan stopped");
      if (Status s = cursor->Next(&participant, &has); !s.ok()) return s;
      if (!has) break;
      const Value* pid = participant.Get("_id");
      const Value* markers = participant.GetPath(loc.field);
      if (pid == nullptr || markers == nullptr) continue;
      Array list;
      if (const Array* a = markers->as_array()) {
        list = *a;
      } else if (loc.scalar) {
        list.push_back(*markers);
      } else {
        continue;
      }
      summary->participants_scanned++;
      if (options.progress) options.progress();
      if (static_cast<std::int64_t>(list.size()) > options.marker_cap)
        report({OrphanFinding::Kind::kTooManyMarkers, loc.ns, *pid, Value(),
                std::to_string(list.size()) + " markers in " + loc.field + " (cap " +
                    std::to_string(options.marker_cap) + ")"});
      std::set<std::string> seen;
      for (const Value& marker : list) {
        if (!seen.insert(marker.ToString()).second) continue;
        summary->markers_checked++;
        std::optional<Document> doc;
        if (Status s = store->FindOne(watch.ns, Filter().Eq("_id", marker), &doc); !s.ok())
          return s;
        if (!doc) {
          report({OrphanFinding::Kind::kMissingTransaction, loc.ns, *pid, marker,
                  "no transaction " + marker.ToString() + " in " + watch.ns.ToString() +
                      "; nothing undone: there is no record of the change"});
          continue;
        }
        Transaction txn;
        // Another application's transaction, or one the sweep will quarantine: not ours.
        if (!owned.Matches(*doc) ||
            !watch.profile.Parse(*doc, watch.ns, watch.lease_field, &txn).ok() ||
            !IsTerminal(txn.state)) {
          summary->in_flight++;
          continue;
        }
        if (!NamesParticipant(txn, loc.ns, participant)) {
          report({OrphanFinding::Kind::kForeignMarker, loc.ns, *pid, marker,
                  "transaction " + marker.ToString() + " is " +
                      std::string(TxnStateName(txn.state)) +
                      " and does not name this document; nothing undone"});
          continue;
        }
        if (options.dry_run) {
          report({OrphanFinding::Kind::kLateWriteUndone, loc.ns, *pid, marker,
                  "would undo the late write of " + std::string(TxnStateName(txn.state)) +
                      " transaction " + marker.ToString()});
          continue;
        }
        ExecuteResult r = machine.Execute(txn, Action::kCheckLateWrites);
        if (r.outcome == Outcome::kQuarantined) {
          report({OrphanFinding::Kind::kQuarantined, loc.ns, *pid, marker, r.detail});
        } else if (r.outcome == Outcome::kFailed) {
          report({OrphanFinding::Kind::kFailed, loc.ns, *pid, marker, r.status.ToString()});
          if (r.status.IsUnavailable()) return r.status;
        } else if (r.late_writes_undone > 0) {
          report({OrphanFinding::Kind::kLateWriteUndone, loc.ns, *pid, marker, r.detail});
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace txn_recovery
