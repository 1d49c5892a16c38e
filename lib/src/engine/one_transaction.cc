#include "txn_recovery/engine/one_transaction.h"

#include "engine/lease.h"
#include "engine/requests.h"
#include "txn_recovery/engine/quarantine_records.h"

namespace txn_recovery {
namespace {

Status Read(Store* store, const WatchSpec& watch, const Value& id, Document* doc) {
  std::optional<Document> found;
  if (Status s = store->FindOne(watch.ns, Filter().Eq("_id", id), &found); !s.ok()) return s;
  if (!found)
    return Status::NotFound("no transaction " + id.ToString() + " in " + watch.ns.ToString());
  *doc = std::move(*found);
  return Status::Ok();
}

}  // namespace

Status Explain(Store* store, Clock* clock, const WatchSpec& watch, const Value& id,
               const LeaseOptions& lease, Explanation* out) {
  *out = Explanation{};
  if (Status s = Read(store, watch, id, &out->doc); !s.ok()) return s;
  if (Status s = IsPaused(store, watch, &out->paused); !s.ok()) return s;
  if (Status s = store->ServerTime(&out->server_now); !s.ok()) return s;
  const RecoveryPaths paths(watch.lease_field);
  out->quarantine = RecoveryRecord::ReadQuarantine(out->doc, paths);
  out->owned = watch.profile.owner.Condition().Matches(out->doc);
  out->fits = watch.profile.Parse(out->doc, watch.ns, watch.lease_field, &out->txn);
  if (!out->fits.ok()) {
    out->decision =
        "does not fit the profile: a sweep quarantines it (" + out->fits.message() + ")";
    out->action = out->retry_action = Action::kQuarantine;
    return Status::Ok();
  }
  out->record = out->txn.record;
  out->age_source = DescribeAgeSource(out->txn, watch.profile, watch.lease_field);
  // Not seen by a sweep yet: as young as can be (a forced retry resumes it, never rolls it
  // back for an age it does not have).
  if (out->txn.age_source == AgeSource::kNotYetSeen) out->txn.last_modified = out->server_now;
  if (out->txn.age_source == AgeSource::kNotYetSeen) {
    // No age yet: a sweep stamps the first sighting and acts only once it is old enough.
    out->decision = "not seen by a sweep yet: the next sweep stamps its first sighting, and " +
                    std::string(TxnStateName(out->txn.state)) +
                    " transactions are acted on once the thresholds have passed since then";
    out->action = Action::kNone;
  } else {
    out->age = AgeOf(out->server_now, out->txn.last_modified);
    out->decision = DecisionRow(out->txn, out->server_now, watch.thresholds);
    out->action = AheadOfTheClock(out->txn, out->server_now, watch.thresholds)
                      ? Action::kNone
                      : Decide(out->txn, out->server_now, watch.thresholds);
  }
  out->retry_action = DecideIgnoringAge(out->txn, out->server_now, watch.thresholds);
  const DateTime now = out->server_now;
  StateMachine machine(store, clock, watch.ns, &watch.profile, watch.lease_field, lease,
                       ServerNowFrom(clock, now));
  const Action rehearsed = out->action == Action::kNone ? out->retry_action : out->action;
  const ExecuteResult r = machine.RehearseBatch({&out->txn}, {rehearsed}, &out->writes).front();
  // A read the rehearsal could not make is the operator's answer, not a plan.
  if (r.outcome == Outcome::kFailed) return r.status;
  return Status::Ok();
}

Status Retry(Store* store, Clock* clock, const WatchSpec& watch, const Value& id,
             const LeaseOptions& lease, RetryResult* out) {
  *out = RetryResult{};
  Document doc;
  if (Status s = Read(store, watch, id, &doc); !s.ok()) return s;
  bool paused = false;
  if (Status s = IsPaused(store, watch, &paused); !s.ok()) return s;
  if (paused) {
    out->refused = "the watch is paused (txn-recoveryd resume)";
    return Status::Ok();
  }
  const RecoveryPaths paths(watch.lease_field);
  if (auto q = RecoveryRecord::ReadQuarantine(doc, paths)) {
    out->refused = "quarantined (" + q->reason + "): release it first";
    return Status::Ok();
  }
  if (!watch.profile.owner.Condition().Matches(doc)) {
    out->refused = "owned by an application this watch does not recover";
    return Status::Ok();
  }
  DateTime now;
  if (Status s = store->ServerTime(&now); !s.ok()) return s;
  StateMachine machine(store, clock, watch.ns, &watch.profile, watch.lease_field, lease,
                       ServerNowFrom(clock, now));
  Transaction txn;
  if (Status parsed = watch.profile.Parse(doc, watch.ns, watch.lease_field, &txn); !parsed.ok()) {
    out->action = out->result.action = Action::kQuarantine;
    out->result.detail = parsed.message();
    if (Status q = machine.Quarantine(id, parsed.message()); !q.ok()) return q;
    out->result.outcome = Outcome::kQuarantined;
    return Status::Ok();
  }
  if (txn.age_source == AgeSource::kNotYetSeen) txn.last_modified = now;  // as young as can be
  out->action = DecideIgnoringAge(txn, now, watch.thresholds);
  if (out->action == Action::kNone) {
    out->refused = "nothing to do: " + DecisionRow(txn, now, watch.thresholds);
    return Status::Ok();
  }
  out->result = machine.Execute(txn, out->action);
  return Status::Ok();
}

Status ReleaseQuarantine(Store* store, const WatchSpec& watch, const Value& id, bool* released) {
  *released = false;
  Document doc;
  if (Status s = Read(store, watch, id, &doc); !s.ok()) return s;
  WriteResult r;
  if (Status s = LeaseFreeWriter(store, LeaseFree::kOperator)
                     .One(watch.ns,
                          {"release the quarantine",
                           requests::ReleaseQuarantine(id, RecoveryPaths(watch.lease_field))},
                          &r);
      !s.ok())
    return s;
  *released = r.matched == 1;
  // Then the record, by the repair's rule: it stays while a quarantine of the transaction
  // may be between its two writes (its deadline ahead), and the next sweep removes it.
  bool removed = false;
  return RepairQuarantineRecord(store, watch, id, &removed);
}

}  // namespace txn_recovery
