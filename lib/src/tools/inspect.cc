#include "txn_recovery/tools/inspect.h"

#include "txn_recovery/engine/candidates.h"
#include "txn_recovery/engine/quarantine_records.h"

namespace txn_recovery {
namespace {

const std::vector<TxnState> kNonTerminal(kInFlightTxnStates.begin(), kInFlightTxnStates.end());

// The first document of `f` sorted by `sort_by`, if any.
Status First(Store* store, const Namespace& ns, const Filter& f, const std::string& sort_by,
             std::optional<Document>* out) {
  FindOptions o;
  o.sort_ascending_by = sort_by;
  o.limit = 1;
  std::unique_ptr<Cursor> cursor;
  if (Status s = store->Find(ns, f, o, &cursor); !s.ok()) return s;
  Document d;
  bool has = false;
  if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
  *out = has ? std::optional<Document>(std::move(d)) : std::nullopt;
  return Status::Ok();
}

}  // namespace

Status LoadByShare(Store* store, const WatchSpec& watch, const std::vector<MemberRecord>& sweepers,
                   DateTime now, std::chrono::milliseconds overdue_after,
                   std::vector<ShareLoad>* loads) {
  loads->assign(sweepers.size(), ShareLoad{});
  if (sweepers.empty()) return Status::Ok();
  auto count = [&](const CandidateRead& read, std::int64_t ShareLoad::*field) -> Status {
    FindOptions o;
    o.projection = {"_id"};
    o.hint = read.hint;
    std::unique_ptr<Cursor> cursor;
    if (Status s = store->Find(watch.ns, read.filter, o, &cursor); !s.ok()) return s;
    Document d;
    bool has = false;
    while (true) {
      if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
      if (!has) return Status::Ok();
      // The holder's position, as Share::Owns and HolderOf place it.
      if (const Value* id = d.Get("_id")) ++((*loads)[BucketOf(*id) % sweepers.size()].*field);
    }
  };
  // The sweep's own reads, each on the index it names: CandidateFilter read as one $or lets
  // DocumentDB walk the finished history for the unknown states' ranges. As a one-shot
  // sweep does, the finished transactions are taken to carry times. (A state that is an
  // array can match two reads and is counted in both: an id set would grow with the backlog.)
  for (const CandidateRead& read : CandidateReads(watch, now, /*finished_carry_times=*/true))
    if (Status s = count(read, &ShareLoad::stuck); !s.ok()) return s;
  if (std::optional<Filter> overdue = OverdueFilter(watch, now, overdue_after))
    return count({*overdue, {}}, &ShareLoad::overdue);
  return Status::Ok();
}

Status Inspect(Store* store, const WatchSpec& watch, StuckReport* report) {
  *report = StuckReport{};
  DateTime now;
  if (Status s = store->ServerTime(&now); !s.ok()) return s;
  const Profile& p = watch.profile;
  const RecoveryPaths paths(watch.lease_field);
  Filter base;
  base.NotExists(paths.Quarantine()).And(p.owner.Condition());
  auto matching = [&](std::vector<Filter> alternatives) {
    return alternatives.size() == 1 ? Filter(base).And(alternatives.front())
                                    : Filter(base).AnyOf(std::move(alternatives));
  };

  for (TxnState st : kNonTerminal) {
    std::vector<Filter> alts = AgedAlternatives(watch, {st}, now, AgeSource::kTimeField);
    for (AgeSource clock : {AgeSource::kObjectId, AgeSource::kFirstSeen})
      for (Filter& f : AgedAlternatives(watch, {st}, now, clock)) alts.push_back(std::move(f));
    if (alts.empty()) continue;
    std::int64_t n = 0;
    if (Status s = store->Count(watch.ns, matching(std::move(alts)), &n); !s.ok()) return s;
    if (n > 0) report->stuck[st] = n;
  }

  // The oldest: the first by time, and (ObjectId time) the first by _id among those without.
  auto oldest = [&](AgeSource clock, const std::string& sort_by) -> Status {
    std::vector<Filter> alts = AgedAlternatives(watch, kNonTerminal, now, clock);
    if (alts.empty()) return Status::Ok();
    std::optional<Document> doc;
    if (Status s = First(store, watch.ns, matching(std::move(alts)), sort_by, &doc); !s.ok())
      return s;
    if (!doc) return Status::Ok();
    std::optional<DateTime> since;
    if (const Value* t = doc->GetPath(p.time_field); t && t->is_datetime())
      since = *t->as_datetime();
    if (const Value* id = doc->Get("_id");
        !since && clock == AgeSource::kObjectId && id && id->is_object_id())
      since = DateTime{id->as_object_id()->CreationMillis()};
    if (const Value* seen = doc->GetPath(paths.FirstSeen());
        !since && clock == AgeSource::kFirstSeen && seen && seen->is_datetime())
      since = *seen->as_datetime();
    if (!since) return Status::Ok();
    const std::chrono::milliseconds age = AgeOf(now, *since);
    if (!report->oldest_age || age > *report->oldest_age) {
      report->oldest_age = age;
      report->oldest_age_source = sort_by;
    }
    return Status::Ok();
  };
  if (Status s = oldest(AgeSource::kTimeField, p.time_field); !s.ok()) return s;
  if (Status s = oldest(AgeSource::kObjectId, "_id"); !s.ok()) return s;
  if (Status s = oldest(AgeSource::kFirstSeen, paths.FirstSeen()); !s.ok()) return s;
  if (p.missing_time == MissingTime::kFirstSeen) {
    Filter unseen = Filter(base).And(NotYetSeen(p, paths));
    unseen.In(p.state_field, p.states.NonTerminalSpellings());
    if (Status s = store->Count(watch.ns, unseen, &report->not_yet_seen); !s.ok()) return s;
  }
  return CountQuarantineRecords(store, watch, &report->quarantined);
}

Status Probe(Store* store, const WatchSpec& watch, std::int64_t limit, std::size_t keep,
             ProbeResult* out) {
  *out = ProbeResult{};
  const RecoveryPaths paths(watch.lease_field);
  FindOptions o;
  o.limit = limit;
  std::unique_ptr<Cursor> cursor;
  Filter ours;
  ours.NotExists(paths.Quarantine()).And(watch.profile.owner.Condition());
  if (Status s = store->Find(watch.ns, ours, o, &cursor); !s.ok()) return s;
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) return Status::Ok();
    out->examined++;
    Value id = d.Get("_id") ? *d.Get("_id") : Value(Null{});
    Transaction txn;
    if (Status parsed = watch.profile.Parse(d, watch.ns, watch.lease_field, &txn); !parsed.ok()) {
      if (out->misfits.size() < keep) out->misfits.push_back({id, parsed.message()});
      out->misfit_total++;
      continue;
    }
    out->fit++;
    if (IsTerminal(txn.state)) continue;
    for (std::size_t i = 0; i < txn.steps.size(); ++i) {
      const ParticipantStep& step = txn.steps[i];
      std::optional<Document> participant;
      if (Status s = store->FindOne(step.ns, step.target, &participant); !s.ok()) return s;
      out->participants_checked++;
      // A marker field the participant does not even have: the description may name the
      // wrong one, and the guards would then look where the application never writes.
      if (participant && participant->GetPath(step.marker_field) == nullptr &&
          txn.state != TxnState::kInitial) {
        if (out->unmarked_participants.size() < keep)
          out->unmarked_participants.push_back(
              {id, "step " + std::to_string(i) + " (" + step.describe + "): " + step.ns.ToString() +
                       " " + step.target.ToString() + " has no field '" + step.marker_field +
                       "': is the marker field right?"});
        out->unmarked_participant_total++;
      }
      if (participant) continue;
      if (out->missing_participants.size() < keep)
        out->missing_participants.push_back(
            {id, "step " + std::to_string(i) + " (" + step.describe + "): no document in " +
                     step.ns.ToString() + " matches " + step.target.ToString()});
      out->missing_participant_total++;
    }
  }
}

std::string AgeSources(const WatchSpec& watch) {
  const Profile& p = watch.profile;
  switch (p.missing_time) {
    case MissingTime::kObjectIdTime:
      return p.time_field + ", else the ObjectId _id's creation time";
    case MissingTime::kFirstSeen:
      return p.time_field + ", else the daemon's first sighting (" +
             RecoveryPaths(watch.lease_field).FirstSeen() + ")";
    case MissingTime::kQuarantine:
      break;
  }
  return p.time_field + " (a transaction without it is quarantined)";
}

Status ListQuarantined(Store* store, const WatchSpec& watch,
                       const std::function<void(const QuarantinedTxn&)>& each) {
  // From the daemon's records (quarantine_records.h), each with its transaction's state as
  // it is now (absent when the transaction is gone).
  Status read;
  Status s = ForEachQuarantineRecord(
      store, watch, [&](const Value& id, const RecoveryRecord::QuarantineRecord& record) {
        if (!read.ok()) return;
        QuarantinedTxn q;
        q.id = id;
        q.record = record;
        std::optional<Document> txn;
        read = store->FindOne(watch.ns, Filter().Eq("_id", id), &txn);
        if (const Value* st = txn ? txn->GetPath(watch.profile.state_field) : nullptr)
          q.state = *st;
        if (read.ok()) each(q);
      });
  return s.ok() ? read : s;
}

}  // namespace txn_recovery
