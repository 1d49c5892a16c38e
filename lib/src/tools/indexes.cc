#include "txn_recovery/tools/indexes.h"

#include <map>
#include <optional>

#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/engine/candidates.h"

namespace txn_recovery {

namespace {

// A tagged-insert's tag is how its documents are found (finished, deleted, counted), so
// it is always required. A marker array is only read by with the participant's key, which
// its own index serves; the marker and the trace a finish leaves (only the participants
// carrying one are in its index) serve the orphan scan alone, and only when the operator
// asks for them (WatchSpec::orphan_scan_indexes): on DocumentDB every application write
// of a participant would maintain them.
void AddMarkerIndexes(const WatchSpec& watch, std::vector<RequiredIndex>* out) {
  const RecoveryPaths paths(watch.lease_field);
  for (const MarkerLocation& loc : watch.profile.MarkerLocations(watch.ns)) {
    if (loc.scalar) {
      out->push_back({loc.ns, IndexSpec{{{loc.field, 1}}, ""},
                      "finding the documents a transaction inserted, to finish, delete or count "
                      "them"});
    } else if (watch.orphan_scan_indexes) {
      out->push_back({loc.ns, IndexSpec{{{loc.field, 1}}, ""},
                      "the orphan scan's look for markers left behind (orphan_scan_indexes)"});
      out->push_back({loc.ns, IndexSpec{{{paths.Finished(), 1}}, "", true},
                      "the orphan scan's look for traces of finished transactions (only the "
                      "participants carrying one are in it; orphan_scan_indexes)"});
    }
  }
}

// Participants found by a key other than _id (a transfer's participant_key, a described
// step's key): every step's write and read names its participant by it.
void AddParticipantKeyIndexes(const WatchSpec& watch, std::vector<RequiredIndex>* out) {
  const Profile& p = watch.profile;
  std::vector<std::pair<Namespace, std::string>> keys;
  if (const TransferProfile* t = p.transfer())
    keys.emplace_back(Namespace{watch.ns.database, t->participants_collection}, t->participant_key);
  if (const StepsProfile* st = p.steps())
    for (const StepSpec& step : st->steps)
      keys.emplace_back(Namespace{watch.ns.database, step.collection}, step.key);
  for (const auto& [ns, key] : keys) {
    if (key == "_id") continue;
    bool seen = false;
    for (const RequiredIndex& r : *out)
      seen = seen || (r.ns == ns && r.spec.keys.size() == 1 && r.spec.keys[0].first == key);
    if (!seen)
      out->push_back({ns, IndexSpec{{{key, 1}}, ""}, "finding each participant by " + key});
  }
}

}  // namespace

std::vector<RequiredIndex> RequiredIndexes(const WatchSpec& watch) {
  const Profile& p = watch.profile;
  std::vector<RequiredIndex> out;
  // Every alternative of the candidate query is a range of one of these: a state, then a
  // range of what its age is read from. Ordered (IndexSpec::ordered), or DocumentDB walks
  // every transaction older than the cut-off. Without a time field the age comes from the
  // _id or the daemon's first sighting: an index of its own with that as the second key,
  // since a range of a third key under "time absent" is no range on DocumentDB (it walks
  // every entry of the state without a time, the whole history).
  out.push_back({watch.ns, AgeIndex(watch, AgeSource::kTimeField),
                 "the sweep's candidate query (stale states by age, states that are none of the "
                 "profile's spellings) and inspect's counts"});
  if (p.missing_time == MissingTime::kObjectIdTime)
    out.push_back({watch.ns, AgeIndex(watch, AgeSource::kObjectId),
                   "the same for transactions without a time field (ages from the _id), once "
                   "there is one",
                   /*only_with_timeless=*/true});
  if (p.missing_time == MissingTime::kFirstSeen)
    out.push_back({watch.ns, AgeIndex(watch, AgeSource::kFirstSeen),
                   "the same for transactions without a time field (ages from the first "
                   "sighting), once there is one",
                   /*only_with_timeless=*/true});
  // No index on the quarantine's mark: what is quarantined is counted and listed from the
  // daemon's own records (quarantine_records.h), so that the application's writes do not
  // maintain one more index (docs/benchmarks.md, "What the daemon's indexes cost the
  // application"). The partial index earlier builds made is left to the operator.
  AddMarkerIndexes(watch, &out);
  AddParticipantKeyIndexes(watch, &out);
  return out;
}

Status EnsureIndexes(Store* store, const WatchSpec& watch, bool create,
                     std::vector<IndexCheck>* checks) {
  checks->clear();
  Status first;
  auto note = [&first](const Status& s) {
    if (!s.ok() && first.ok()) first = s;
  };
  std::map<std::string, std::vector<IndexSpec>> existing;  // by namespace
  std::map<std::string, Status> list_status;
  std::optional<bool> timeless;  // asked at most once
  auto any_timeless = [&](bool* out) -> Status {
    if (!timeless) {
      bool found = false;
      if (Status s = AnyMatches(store, watch.ns, TimelessProbe(watch), &found); !s.ok()) return s;
      timeless = found;
    }
    *out = *timeless;
    return Status::Ok();
  };
  for (RequiredIndex& r : RequiredIndexes(watch)) {
    IndexCheck c;
    c.index = std::move(r);
    const std::string key = c.index.ns.ToString();
    if (!list_status.count(key)) {
      Status s = store->ListIndexes(c.index.ns, &existing[key]);
      note(s);
      list_status[key] = s;
    }
    c.status = list_status[key];
    if (c.status.ok())
      for (const IndexSpec& e : existing[key])
        if (c.index.spec.ServedBy(e)) c.present = true;
    if (c.status.ok() && !c.present && c.index.only_with_timeless) {
      c.status = any_timeless(&c.needed);
      note(c.status);
    }
    if (c.status.ok() && !c.present && c.needed && create) {
      c.status = store->CreateIndexes(c.index.ns, {c.index.spec});
      note(c.status);
      c.created = c.status.ok();
    }
    checks->push_back(std::move(c));
  }
  return first;
}

}  // namespace txn_recovery
