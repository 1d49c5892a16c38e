#include "txn_recovery/tools/rehearse.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>

#include "txn_recovery/engine/quarantine_records.h"
#include "txn_recovery/tools/retention.h"

namespace txn_recovery {

bool RehearsalReport::Passed() const {
  return unsupported.empty() && left_behind.empty() && !scenarios.empty() &&
         std::all_of(scenarios.begin(), scenarios.end(),
                     [](const RehearsalScenario& s) { return s.passed; });
}

namespace {

std::string RandomToken() {
  std::random_device rd;
  const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 10; ++i) out += hex[rd() % 16];
  return out;
}

ObjectId NewId(std::mt19937_64* rng, std::int64_t millis) {
  ObjectId id = ObjectId::AtTime(millis);
  for (std::size_t i = 4; i < id.bytes.size(); ++i)
    id.bytes[i] = static_cast<std::uint8_t>((*rng)() & 0xff);
  return id;
}

// The watch, every collection it names replaced by its scratch twin. Empty `unsupported`
// when the profile can be rehearsed.
WatchSpec ScratchWatch(const WatchSpec& w, const std::string& prefix, std::string* unsupported,
                       std::set<std::string>* collections) {
  WatchSpec s = w;
  auto scratch = [&](const std::string& name) {
    collections->insert(prefix + name);
    return prefix + name;
  };
  s.ns.collection = scratch(w.ns.collection);
  s.control_collection = scratch(w.control_collection);
  s.retention = RetentionPolicy{};
  s.orphan_scan_indexes = false;
  if (TransferProfile* t = s.profile.transfer()) {
    t->participants_collection = scratch(t->participants_collection);
  } else if (StepsProfile* st = s.profile.steps()) {
    for (StepSpec& step : st->steps) step.collection = scratch(step.collection);
  } else if (OperationsProfile* op = s.profile.operations()) {
    if (op->collections.empty()) op->collections = {"participants"};
    for (std::string& c : op->collections) c = scratch(c);
  } else if (TaggedInsertProfile* ti = s.profile.tagged_insert()) {
    for (std::string& c : ti->tagged_collections) c = scratch(c);
  } else {
    *unsupported = "the " + std::string(w.profile.kind()) + " profile is not rehearsed";
  }
  return s;
}

// One planted transaction: what the application had done when it crashed, and what the
// daemon must leave.
struct Plan {
  std::string name;
  TxnState state = TxnState::kPending;
  std::size_t applied = 0;   // steps applied (in order)
  std::size_t finished = 0;  // of them, markers pulled (in order)
  std::size_t undone = 0;    // of them, undone (in order)
  bool late = false;         // step 0 applied again after the transaction finished
  std::chrono::milliseconds age{};
  TxnState expect = TxnState::kDone;
};

std::vector<Plan> Plans(const Profile& p, const Thresholds& t, std::size_t n) {
  using std::chrono::milliseconds;
  const milliseconds stuck = t.resume_after + (t.rollback_after - t.resume_after) / 2;
  const milliseconds expired =
      std::max(t.rollback_after, t.initial_timeout) + std::chrono::minutes(1);
  const std::string of = " of " + std::to_string(n);
  std::vector<Plan> plans;
  if (!p.states.For(TxnState::kInitial).empty())
    plans.push_back({"initial, older than initial_timeout", TxnState::kInitial, 0, 0, 0, false,
                     expired, TxnState::kCancelled});
  for (std::size_t k = 0; k <= n; ++k) {
    plans.push_back({"pending, " + std::to_string(k) + of + " steps applied, stuck",
                     TxnState::kPending, k, 0, 0, false, stuck, TxnState::kDone});
    plans.push_back({"pending, " + std::to_string(k) + of + " steps applied, expired",
                     TxnState::kPending, k, 0, 0, false, expired, TxnState::kCancelled});
  }
  for (std::size_t j = 0; j <= n; ++j)
    plans.push_back({"applied, " + std::to_string(j) + of + " markers pulled, stuck",
                     TxnState::kApplied, n, j, 0, false, stuck, TxnState::kDone});
  if (!p.states.For(TxnState::kCanceling).empty())
    for (std::size_t k = 0; k <= n; ++k)
      plans.push_back({"canceling, " + std::to_string(k) + of + " steps undone, stuck",
                       TxnState::kCanceling, n, 0, k, false, stuck, TxnState::kCancelled});
  // A finished transaction is checked for late writes while its age is between
  // resume_after and late_write_window (none when the window is no wider).
  if (t.late_write_window > t.resume_after)
    plans.push_back({"done, its first step applied again after it finished (a late write)",
                     TxnState::kDone, n, n, 0, true,
                     t.resume_after + (t.late_write_window - t.resume_after) / 2, TxnState::kDone});
  return plans;
}

// The participants of one scenario as they were before it (by collection, then key value),
// each made on first use, with an empty marker array.
struct ParticipantsBefore {
  std::map<std::string, std::map<std::string, Document>>* all;
  std::mt19937_64* rng;
  std::int64_t now_millis;

  Document& Of(const std::string& coll, const std::string& key, const std::string& value,
               const std::string& marker) {
    Document& d = (*all)[coll][value];
    if (d.empty()) {
      if (key == "_id") {
        d.Set("_id", value);
      } else {
        d.Set("_id", NewId(rng, now_millis));
        d.SetPath(key, value);
      }
      d.SetPath(marker, Array{});
    }
    return d;
  }
};

void ShapeTransfer(const TransferProfile& t, const std::string& tag, ParticipantsBefore* before,
                   Document* doc) {
  doc->SetPath(t.source_field, tag + "0");
  doc->SetPath(t.destination_field, tag + "1");
  doc->SetPath(t.amount_field, std::int32_t{10});
  for (const char* i : {"0", "1"})
    before->Of(t.participants_collection, t.participant_key, tag + i, t.marker_field)
        .SetPath(t.balance_field, std::int32_t{1000});
}

void ShapeSteps(const StepsProfile& st, const std::string& tag, ParticipantsBefore* before,
                Document* doc) {
  int i = 0;
  for (const StepSpec& step : st.steps) {
    const Value* existing = doc->GetPath(step.key_path);
    const std::string value =
        existing && existing->is_string() ? *existing->as_string() : tag + std::to_string(i++);
    if (!existing) doc->SetPath(step.key_path, value);
    Document& d = before->Of(step.collection, step.key, value,
                             step.marker_field.empty() ? st.marker_field : step.marker_field);
    for (const StepSpec::Inc& inc : step.inc) {
      if (!doc->GetPath(inc.path)) doc->SetPath(inc.path, std::int32_t{10});
      d.SetPath(inc.field, std::int32_t{1000});
    }
    for (const StepSpec::Set& set : step.set) {
      doc->SetPath(set.path, "new");
      doc->SetPath(set.previous_path, "old");
      d.SetPath(set.field, "old");
    }
    for (const StepSpec::Guard& g : step.guards)
      if (!doc->GetPath(g.path)) doc->SetPath(g.path, std::int32_t{10});
  }
}

void ShapeOperations(const OperationsProfile& op, const std::string& tag,
                     ParticipantsBefore* before, Document* doc) {
  Array ops;
  for (int i = 0; i < 2; ++i) {
    const std::string id = tag + std::to_string(i);
    Document o;
    o.Set(op.collection_key, op.collections.front());
    o.Set(op.id_key, id);
    o.Set(op.inc_key, Document{{"amount", std::int32_t{10}}});
    ops.push_back(o);
    before->Of(op.collections.front(), "_id", id, op.marker_field)
        .Set("amount", std::int32_t{1000});
  }
  doc->SetPath(op.operations_field, ops);
}

// The transaction document of the watch's shape for scenario `s`, and its participants as
// they were before it (by collection, then key value).
Document Shape(const Profile& p, const std::string& database, int s,
               std::map<std::string, std::map<std::string, Document>>* participants,
               std::mt19937_64* rng, std::int64_t now_millis) {
  Document doc;
  const std::string tag = "r" + std::to_string(s) + "p";
  ParticipantsBefore before{participants, rng, now_millis};
  (void)database;
  if (const TransferProfile* t = p.transfer())
    ShapeTransfer(*t, tag, &before, &doc);
  else if (const StepsProfile* st = p.steps())
    ShapeSteps(*st, tag, &before, &doc);
  else if (const OperationsProfile* op = p.operations())
    ShapeOperations(*op, tag, &before, &doc);
  return doc;
}

// Tagged inserts: each transaction inserts kTaggedPerCollection documents into each tagged
// collection, each carrying (besides the tag) kOrigin, so that they are found whatever the
// daemon did to the tag.
constexpr int kTaggedPerCollection = 2;
constexpr const char* kOrigin = "rehearsalOrigin";

struct TaggedPlan {
  std::string name;
  TxnState state = TxnState::kPending;
  std::size_t inserted = 0;  // collections whose documents were inserted
  std::size_t untagged = 0;  // of them, untagged (finishing)
  std::size_t deleted = 0;   // of them, deleted (rollback)
  std::chrono::milliseconds age{};
  TxnState expect = TxnState::kDone;
};

// Only the application knows which documents it still meant to insert: a started
// transaction is never resumed, only rolled back once expired.
std::vector<TaggedPlan> TaggedPlans(const Thresholds& t, std::size_t c) {
  const std::chrono::milliseconds stuck = t.resume_after + (t.rollback_after - t.resume_after) / 2;
  const std::chrono::milliseconds expired = t.rollback_after + std::chrono::minutes(1);
  const std::string of = " of " + std::to_string(c);
  std::vector<TaggedPlan> plans;
  for (std::size_t k = 0; k <= c; ++k)
    plans.push_back({"started, " + std::to_string(k) + of + " collections inserted, expired",
                     TxnState::kPending, k, 0, 0, expired, TxnState::kCancelled});
  for (std::size_t k = 0; k <= c; ++k)
    plans.push_back({"finishing, " + std::to_string(k) + of + " collections untagged, stuck",
                     TxnState::kApplied, c, k, 0, stuck, TxnState::kDone});
  for (std::size_t k = 0; k <= c; ++k)
    plans.push_back({"rollback, " + std::to_string(k) + of + " collections deleted, stuck",
                     TxnState::kCanceling, c, 0, k, stuck, TxnState::kCancelled});
  return plans;
}

// The sweep's engine, as `sweep` runs it; twice, so that nothing is applied twice either.
Status SweepTwice(Store* store, Clock* clock, const WatchSpec& w, const RehearseOptions& options) {
  Status status = Status::Ok();
  for (int pass = 0; pass < 2 && status.ok(); ++pass) {
    if (options.stop != nullptr && options.stop->load()) break;
    SweepOptions so = options.sweep;
    so.dry_run = false;
    so.stop = options.stop;
    Sweeper sweeper(store, clock, so);
    WatchSummary summary;
    status = SweepAndRetain(
        &sweeper, w, [](const TxnReport&) {}, &summary);
  }
  return status;
}

// The transaction `id` as the sweeps left it: the state it must have reached, not
// quarantined.
Status CheckEnd(Store* store, const WatchSpec& w, const Value& id, TxnState expect,
                RehearsalScenario* sc) {
  sc->expected = std::string(TxnStateName(expect));
  std::optional<Document> after;
  if (Status s = store->FindOne(w.ns, Filter().Eq("_id", id), &after); !s.ok()) return s;
  Transaction t;
  if (!after) {
    sc->violations.push_back("the transaction is gone");
    return Status::Ok();
  }
  if (Status parsed = w.profile.Parse(*after, w.ns, w.lease_field, &t); !parsed.ok()) {
    sc->violations.push_back("it no longer parses: " + parsed.ToString());
    return Status::Ok();
  }
  const Value* state = after->GetPath(w.profile.state_field);
  sc->reached = state && state->is_string() ? *state->as_string() : "?";
  if (w.profile.tagged_insert() && t.state == TxnState::kCancelled) sc->reached += " (rolled back)";
  if (t.record.quarantine) sc->violations.push_back("quarantined: " + t.record.quarantine->reason);
  if (t.state != expect)
    sc->violations.push_back("ended " + std::string(TxnStateName(t.state)) + ", not " +
                             sc->expected);
  return Status::Ok();
}

// The documents of one tagged insert's transaction, in each tagged collection, as the
// application had left them at `plan`'s crash point.
Status PlantTagged(Store* store, const WatchSpec& w, const TaggedPlan& plan, const Value& id,
                   DateTime now, std::mt19937_64* rng) {
  const TaggedInsertProfile& ti = *w.profile.tagged_insert();
  Document doc{{"_id", id}};
  doc.SetPath(w.profile.state_field, w.profile.states.Written(plan.state));
  doc.SetPath(w.profile.time_field, DateTime{now.millis - plan.age.count()});
  Status status = store->InsertMany(w.ns, {doc});
  for (std::size_t c = 0; status.ok() && c < plan.inserted; ++c) {
    std::vector<Document> docs;
    for (int i = 0; i < kTaggedPerCollection; ++i) {
      Document d{{"_id", NewId(rng, now.millis)}, {kOrigin, id}, {"part", i}};
      d.SetPath(ti.tag_field, id);
      docs.push_back(std::move(d));
    }
    const Namespace ns{w.ns.database, ti.tagged_collections[c]};
    status = store->InsertMany(ns, docs);
    WriteResult r;
    if (status.ok() && c < plan.untagged)
      status = store->UpdateMany(ns, Filter().Eq(ti.tag_field, id),
                                 Update().Unset(ti.tag_field).Set(ti.valid_field, true), &r);
    if (status.ok() && c < plan.deleted)
      status = store->DeleteMany(ns, Filter().Eq(ti.tag_field, id), &r);
  }
  return status;
}

// All of a tagged insert's documents, untagged and valid (done), or none (rolled back).
Status CheckTagged(Store* store, const WatchSpec& w, const Value& id, TxnState expect,
                   RehearsalScenario* sc) {
  const TaggedInsertProfile& ti = *w.profile.tagged_insert();
  for (const std::string& coll : ti.tagged_collections) {
    const Namespace ns{w.ns.database, coll};
    std::int64_t all = 0, tagged = 0, valid = 0;
    Status s = store->Count(ns, Filter().Eq(kOrigin, id), &all);
    if (s.ok()) s = store->Count(ns, Filter().Eq(ti.tag_field, id), &tagged);
    if (s.ok()) s = store->Count(ns, Filter().Eq(kOrigin, id).Eq(ti.valid_field, true), &valid);
    if (!s.ok()) return s;
    const std::int64_t want = expect == TxnState::kDone ? kTaggedPerCollection : 0;
    if (all != want)
      sc->violations.push_back(coll + ": " + std::to_string(all) + " of its documents, not " +
                               std::to_string(want));
    if (tagged > 0)
      sc->violations.push_back(coll + ": " + std::to_string(tagged) + " documents still tagged");
    if (expect == TxnState::kDone && valid != want)
      sc->violations.push_back(coll + ": " + std::to_string(valid) + " of " + std::to_string(want) +
                               " documents valid");
  }
  return Status::Ok();
}

Status RehearseTagged(Store* store, Clock* clock, const WatchSpec& w,
                      const RehearseOptions& options, DateTime now, std::mt19937_64* rng,
                      RehearsalReport* report) {
  auto stopped = [&] { return options.stop != nullptr && options.stop->load(); };
  const auto plans =
      TaggedPlans(w.thresholds, w.profile.tagged_insert()->tagged_collections.size());
  std::vector<Value> ids;
  Status status = Status::Ok();
  for (std::size_t s = 0; status.ok() && s < plans.size() && !stopped(); ++s) {
    ids.emplace_back(NewId(rng, now.millis - plans[s].age.count()));
    status = PlantTagged(store, w, plans[s], ids.back(), now, rng);
  }
  if (status.ok()) status = SweepTwice(store, clock, w, options);
  for (std::size_t s = 0; status.ok() && s < ids.size() && !stopped(); ++s) {
    RehearsalScenario sc;
    sc.name = plans[s].name;
    status = CheckEnd(store, w, ids[s], plans[s].expect, &sc);
    if (status.ok()) status = CheckTagged(store, w, ids[s], plans[s].expect, &sc);
    sc.passed = sc.violations.empty();
    report->scenarios.push_back(std::move(sc));
  }
  return status;
}

struct Planted {
  Plan plan;
  Value id;
  Transaction txn;  // as parsed: its steps
};

Status Apply(Store* store, const ParticipantStep& step, const Update& u) {
  WriteResult r;
  return store->UpdateOne(step.ns, step.target, u, &r);
}

using Participants = std::map<std::string, std::map<std::string, Document>>;

// The number of participant steps of one transaction of the watch's shape.
Status StepCount(const WatchSpec& w, DateTime now, std::mt19937_64* rng, std::size_t* n) {
  Participants scratch;
  Document probe = Shape(w.profile, w.ns.database, 0, &scratch, rng, now.millis);
  probe.Set("_id", NewId(rng, now.millis));
  probe.SetPath(w.profile.state_field, w.profile.states.Written(TxnState::kPending));
  probe.SetPath(w.profile.time_field, now);
  Transaction t;
  Status s = w.profile.Parse(probe, w.ns, w.lease_field, &t);
  *n = t.steps.size();
  return s;
}

// One scenario's participants and transaction, then what its application had done when it
// crashed, each step with the very update the daemon would send.
Status PlantSteps(Store* store, const WatchSpec& w, const Plan& plan, int s, DateTime now,
                  std::mt19937_64* rng, Participants* before, Planted* p) {
  Participants mine;
  Document doc = Shape(w.profile, w.ns.database, s, &mine, rng, now.millis);
  *p = Planted{plan, Value(NewId(rng, now.millis - plan.age.count())), {}};
  doc.Set("_id", p->id);
  doc.SetPath(w.profile.state_field, w.profile.states.Written(plan.state));
  doc.SetPath(w.profile.time_field, DateTime{now.millis - plan.age.count()});
  Status status = Status::Ok();
  for (auto& [coll, docs] : mine) {
    std::vector<Document> list;
    for (auto& [key, d] : docs) {
      list.push_back(d);
      (*before)[coll][key] = d;
    }
    if (status.ok()) status = store->InsertMany({w.ns.database, coll}, list);
  }
  if (status.ok()) status = w.profile.Parse(doc, w.ns, w.lease_field, &p->txn);
  if (status.ok()) status = store->InsertMany(w.ns, {doc});
  const auto& steps = p->txn.steps;
  for (std::size_t i = 0; status.ok() && i < plan.applied; ++i)
    status = Apply(store, steps[i], steps[i].apply);
  for (std::size_t i = 0; status.ok() && i < plan.finished; ++i)
    status = Apply(store, steps[i], steps[i].finish);
  for (std::size_t i = 0; status.ok() && i < plan.undone; ++i)
    status = Apply(store, steps[i], steps[i].undo);
  if (status.ok() && plan.late && !steps.empty()) status = Apply(store, steps[0], steps[0].apply);
  return status;
}

// Each participant as if the transaction had applied exactly once (done) or never
// (cancelled), and without its marker.
Status CheckParticipants(Store* store, const Planted& p, Participants& before, DateTime now,
                         RehearsalScenario* sc) {
  std::map<std::string, Document> expected;  // by collection and target
  for (const ParticipantStep& step : p.txn.steps) {
    const std::string where = step.ns.collection + " " + step.target.ToString();
    if (!expected.count(where))
      for (const auto& [key, d] : before[step.ns.collection])
        if (step.target.Matches(d)) expected[where] = d;
    if (p.plan.expect == TxnState::kDone) {
      (void)step.apply.ApplyTo(&expected[where], now);
      (void)step.finish.ApplyTo(&expected[where], now);
    }
  }
  for (const ParticipantStep& step : p.txn.steps) {
    const std::string where = step.ns.collection + " " + step.target.ToString();
    std::optional<Document> actual;
    if (Status s = store->FindOne(step.ns, step.target, &actual); !s.ok()) return s;
    if (!actual) {
      sc->violations.push_back(where + ": the participant is gone");
      continue;
    }
    if (const Value* m = actual->GetPath(step.marker_field);
        m && m->as_array() &&
        std::find(m->as_array()->begin(), m->as_array()->end(), p.id) != m->as_array()->end())
      sc->violations.push_back(where + ": the transaction's marker is still there");
    for (const UpdateOp& op : step.apply.ops()) {
      if (op.path == step.marker_field) continue;
      const Value* want = expected[where].GetPath(op.path);
      const Value* got = actual->GetPath(op.path);
      if ((want == nullptr) != (got == nullptr) || (want && !(*want == *got)))
        sc->violations.push_back(
            where + ": " + op.path + " is " + (got ? got->ToString() : "absent") + ", not " +
            (want ? want->ToString() : "absent") +
            (p.plan.expect == TxnState::kDone ? " (applied once)" : " (never applied)"));
    }
  }
  return Status::Ok();
}

Status RehearseSteps(Store* store, Clock* clock, const WatchSpec& w, const RehearseOptions& options,
                     DateTime now, std::mt19937_64* rng, RehearsalReport* report) {
  auto stopped = [&] { return options.stop != nullptr && options.stop->load(); };
  std::size_t n = 0;
  Status status = StepCount(w, now, rng, &n);
  const std::vector<Plan> plans = Plans(w.profile, w.thresholds, n);
  std::vector<Planted> planted;
  Participants before;
  for (std::size_t s = 0; status.ok() && s < plans.size() && !stopped(); ++s) {
    planted.emplace_back();
    status =
        PlantSteps(store, w, plans[s], static_cast<int>(s), now, rng, &before, &planted.back());
  }
  if (status.ok()) status = SweepTwice(store, clock, w, options);
  for (std::size_t s = 0; status.ok() && s < planted.size() && !stopped(); ++s) {
    RehearsalScenario sc;
    sc.name = planted[s].plan.name;
    status = CheckEnd(store, w, planted[s].id, planted[s].plan.expect, &sc);
    if (status.ok()) status = CheckParticipants(store, planted[s], before, now, &sc);
    sc.passed = sc.violations.empty();
    report->scenarios.push_back(std::move(sc));
  }
  return status;
}

}  // namespace

Status Rehearse(Store* store, Clock* clock, const WatchSpec& watch, const RehearseOptions& options,
                RehearsalReport* report) {
  const auto started = std::chrono::steady_clock::now();
  *report = RehearsalReport{};
  report->watch = watch.name;
  report->prefix =
      std::string(kRehearsalPrefix) + (options.token.empty() ? RandomToken() : options.token) + "_";
  std::set<std::string> collections;
  const WatchSpec w = ScratchWatch(watch, report->prefix, &report->unsupported, &collections);
  if (!report->unsupported.empty()) return Status::Ok();
  report->created.assign(collections.begin(), collections.end());
  DateTime now;
  std::mt19937_64 rng(std::random_device{}());
  Status status = store->ServerTime(&now);
  if (status.ok())
    status = w.profile.tagged_insert() ? RehearseTagged(store, clock, w, options, now, &rng, report)
                                       : RehearseSteps(store, clock, w, options, now, &rng, report);
  // Whatever happened: the scratch collections go.
  for (const std::string& c : collections)
    if (!store->DropCollection({w.ns.database, c}).ok()) report->left_behind.push_back(c);
  // And the quarantine records its sweeps wrote of them, in the daemon's own collection.
  if (!ForgetQuarantineRecords(store, w.ns).ok())
    report->left_behind.push_back(std::string(kQuarantineCollection));
  report->millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  if (status.ok() && options.stop != nullptr && options.stop->load())
    return Status::Aborted("the rehearsal was stopped");
  return status;
}

}  // namespace txn_recovery
