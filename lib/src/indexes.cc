#include "txn_recovery/indexes.h"

#include <map>

namespace txn_recovery {

std::vector<RequiredIndex> RequiredIndexes(const WatchSpec& watch) {
  const Profile& p = watch.profile;
  std::vector<RequiredIndex> out;
  out.push_back({watch.ns, IndexSpec{{{p.state_field, 1}, {p.time_field, 1}}, ""},
                 "the sweep's candidate query (stale states by age) and inspect's counts"});
  // Every place the profile marks: transfer's and operations' marker arrays (operations: the
  // allowed_collections it is told about), tagged-insert's tag.
  for (const MarkerLocation& loc : p.MarkerLocations(watch.ns))
    out.push_back({loc.ns, IndexSpec{{{loc.field, 1}}, ""},
                   "the guards of applying, undoing and finishing a step, late-write checks "
                   "and the orphan scan"});
  if (const TransferProfile* t = p.transfer()) {
    Namespace participants{watch.ns.database, t->participants_collection};
    if (t->participant_key != "_id")
      out.push_back({participants, IndexSpec{{{t->participant_key, 1}}, ""},
                     "finding each participant by " + t->participant_key});
  }
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
    if (c.status.ok() && !c.present && create) {
      c.status = store->CreateIndexes(c.index.ns, {c.index.spec});
      note(c.status);
      c.created = c.status.ok();
    }
    checks->push_back(std::move(c));
  }
  return first;
}

}  // namespace txn_recovery
