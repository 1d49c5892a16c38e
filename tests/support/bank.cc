#include "bank.h"

#include <mutex>
#include <set>
#include <stdexcept>

namespace txn_recovery::testing {

void Must(const Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

const char* AppStepName(int steps_done) {
  static const char* kNames[] = {"nothing",
                                 "inserted (initial)",
                                 "marked pending",
                                 "debited the source",
                                 "credited the destination",
                                 "marked applied",
                                 "pulled the source marker",
                                 "pulled the destination marker",
                                 "marked done"};
  return steps_done >= 0 && steps_done <= kAppStepCount ? kNames[steps_done] : "?";
}

Bank::Bank(Store* store, const std::string& database, TransferProfile profile)
    : store_(store),
      profile_(std::move(profile)),
      txns_{database, "transactions"},
      accounts_{database, profile_.participants_collection},
      other_{database, "audit"} {}

WatchSpec Bank::Watch() const {
  WatchSpec w;
  w.name = "bank";
  w.ns = txns_;
  w.profile = profile_;
  return w;
}

void Bank::Open(int n, std::int32_t balance) {
  std::vector<Document> docs;
  for (int i = 0; i < n; ++i)
    docs.push_back(Document{{"_id", "A" + std::to_string(i)},
                            {profile_.balance_field, balance},
                            {profile_.marker_field, Array{}}});
  docs.push_back(Document{{"_id", "bystander"},
                          {profile_.balance_field, std::int32_t{777}},
                          {profile_.marker_field, Array{}}});
  Must(store_->InsertMany(accounts_, docs));
  Must(store_->InsertMany(other_, {Document{{"_id", 1}, {"note", "untouched"}}}));
}

Value Bank::Begin(const std::string& from, const std::string& to, std::int32_t amount) {
  Value id(std::int32_t{next_id_++});
  Document doc{{"_id", id},
               {profile_.source_field, from},
               {profile_.destination_field, to},
               {profile_.amount_field, amount},
               {profile_.state_field, profile_.states.Written(TxnState::kInitial)}};
  Must(store_->InsertMany(txns_, {doc}));
  WriteResult r;
  Must(store_->UpdateOne(txns_, Filter().Eq("_id", id), Update().CurrentDate(profile_.time_field),
                         &r));
  return id;
}

Value Bank::Transfer(const std::string& from, const std::string& to, std::int32_t amount,
                     int steps) {
  Value id = Begin(from, to, amount);
  for (int s = 1; s < steps; ++s) Must(RunStep(id, static_cast<AppStep>(s)));
  return id;
}

Status Bank::RunStep(const Value& id, AppStep step) {
  std::optional<Document> t;
  if (Status s = store_->FindOne(txns_, Filter().Eq("_id", id), &t); !s.ok()) return s;
  if (!t) return Status::NotFound("no transaction " + id.ToString());
  const Value& source = *t->GetPath(profile_.source_field);
  const Value& dest = *t->GetPath(profile_.destination_field);
  const Value& amount = *t->GetPath(profile_.amount_field);
  const auto& st = profile_.states;
  WriteResult r;
  auto cas = [&](TxnState from, TxnState to) {
    return store_->UpdateOne(
        txns_, Filter().Eq("_id", id).Eq(profile_.state_field, st.Written(from)),
        Update().Set(profile_.state_field, st.Written(to)).CurrentDate(profile_.time_field), &r);
  };
  auto apply = [&](const Value& who, const Value& delta) {
    Filter f;
    f.Eq(profile_.participant_key, who).Ne(profile_.marker_field, id);
    return store_->UpdateOne(
        accounts_, f, Update().Inc(profile_.balance_field, delta).Push(profile_.marker_field, id),
        &r);
  };
  auto pull = [&](const Value& who) {
    return store_->UpdateOne(
        accounts_, Filter().Eq(profile_.participant_key, who).Eq(profile_.marker_field, id),
        Update().Pull(profile_.marker_field, id), &r);
  };
  switch (step) {
    case AppStep::kInsertInitial:
      return Status::Ok();
    case AppStep::kMarkPending:
      return cas(TxnState::kInitial, TxnState::kPending);
    case AppStep::kDebitSource:
      return apply(source, *NegateNumber(amount));
    case AppStep::kCreditDestination:
      return apply(dest, amount);
    case AppStep::kMarkApplied:
      return cas(TxnState::kPending, TxnState::kApplied);
    case AppStep::kPullSource:
      return pull(source);
    case AppStep::kPullDestination:
      return pull(dest);
    case AppStep::kMarkDone:
      return cas(TxnState::kApplied, TxnState::kDone);
  }
  return Status::Ok();
}

void Bank::Age(const Value& id, std::chrono::milliseconds age) {
  DateTime now;
  Must(store_->ServerTime(&now));
  WriteResult r;
  Must(store_->UpdateOne(txns_, Filter().Eq("_id", id),
                         Update().Set(profile_.time_field, DateTime{now.millis - age.count()}),
                         &r));
}

void Bank::AgeAll(std::chrono::milliseconds age) {
  DateTime now;
  Must(store_->ServerTime(&now));
  WriteResult r;
  Must(store_->UpdateMany(
      txns_, Filter(), Update().Set(profile_.time_field, DateTime{now.millis - age.count()}), &r));
}

void Bank::ExpireLeases() {
  WriteResult r;
  Must(store_->UpdateMany(txns_, Filter().Exists("recovery.lease"),
                          Update().Set("recovery.lease.expires", DateTime{0}), &r));
}

std::optional<Document> Bank::Txn(const Value& id) {
  std::optional<Document> t;
  Must(store_->FindOne(txns_, Filter().Eq("_id", id), &t));
  return t;
}

std::string Bank::State(const Value& id) {
  auto t = Txn(id);
  if (!t) return "<missing>";
  const Value* s = t->GetPath(profile_.state_field);
  return s && s->is_string() ? *s->as_string() : "<unreadable>";
}

std::int64_t Bank::Balance(const std::string& account) {
  std::optional<Document> a;
  Must(store_->FindOne(accounts_, Filter().Eq("_id", account), &a));
  if (!a) return -1;
  return static_cast<std::int64_t>(*a->Get(profile_.balance_field)->as_double());
}

Array Bank::Markers(const std::string& account) {
  std::optional<Document> a;
  Must(store_->FindOne(accounts_, Filter().Eq("_id", account), &a));
  if (!a || !a->Get(profile_.marker_field) || !a->Get(profile_.marker_field)->is_array()) return {};
  return *a->Get(profile_.marker_field)->as_array();
}

namespace {
std::vector<Document> All(Store* store, const Namespace& ns) {
  std::vector<Document> out;
  std::unique_ptr<Cursor> c;
  Must(store->Find(ns, Filter(), FindOptions{}, &c));
  if (!c) return out;
  Document d;
  for (bool has = true;;) {
    Must(c->Next(&d, &has));
    if (!has) break;
    out.push_back(d);
  }
  return out;
}
}  // namespace

Snapshot Bank::Take() {
  Snapshot s;
  for (const auto& d : All(store_, accounts_)) {
    std::string id = d.Get("_id")->ToString();
    if (id == "\"bystander\"") {
      s.bystanders.push_back(d);
    } else {
      s.accounts[id] = d;
    }
    s.total += d.Get(profile_.balance_field)->as_double().value_or(0);
  }
  for (const auto& d : All(store_, other_)) s.bystanders.push_back(d);
  return s;
}

std::vector<std::string> Bank::Violations(const Snapshot& before, bool all_terminal) {
  std::vector<std::string> v;
  Snapshot after = Take();
  if (after.total != before.total)
    v.push_back("conservation: total balance " + std::to_string(before.total) + " became " +
                std::to_string(after.total));
  if (after.bystanders.size() != before.bystanders.size()) {
    v.push_back("nothing else touched: bystander documents appeared or vanished");
  } else {
    for (std::size_t i = 0; i < after.bystanders.size(); ++i)
      if (!(after.bystanders[i] == before.bystanders[i]))
        v.push_back("nothing else touched: " + Value(before.bystanders[i]).ToString() + " became " +
                    Value(after.bystanders[i]).ToString());
  }

  // All-or-nothing: each account must equal its starting balance plus exactly the
  // transfers that ended done, each counted once.
  std::map<std::string, double> expected;
  for (const auto& [id, d] : before.accounts)
    expected[id] = d.Get(profile_.balance_field)->as_double().value_or(0);
  std::set<std::string> terminal_ids, all_ids;
  for (const auto& t : All(store_, txns_)) {
    Transaction txn;
    std::string id = t.Get("_id")->ToString();
    all_ids.insert(id);
    Status s = ParseTransfer(t, profile_, txns_, "recovery", &txn);
    if (!s.ok()) {
      if (!t.GetPath("recovery.quarantine"))
        v.push_back("transaction " + id + " is malformed but not quarantined: " + s.message());
      continue;
    }
    if (IsTerminal(txn.state)) terminal_ids.insert(id);
    if (all_terminal && !IsTerminal(txn.state))
      v.push_back("no leftovers: transaction " + id + " is still " +
                  std::string(TxnStateName(txn.state)));
    if (txn.state == TxnState::kDone) {
      double amount = t.GetPath(profile_.amount_field)->as_double().value_or(0);
      expected[t.GetPath(profile_.source_field)->ToString()] -= amount;
      expected[t.GetPath(profile_.destination_field)->ToString()] += amount;
    }
  }
  for (const auto& [id, d] : after.accounts) {
    if (!before.accounts.count(id)) continue;
    double balance = d.Get(profile_.balance_field)->as_double().value_or(0);
    if (all_terminal && balance != expected[id])
      v.push_back("atomicity: account " + id + " has " + std::to_string(balance) +
                  ", the done transfers say " + std::to_string(expected[id]));
    if (const Value* m = d.Get(profile_.marker_field); m && m->is_array()) {
      for (const Value& marker : *m->as_array()) {
        if (terminal_ids.count(marker.ToString()) ||
            (all_terminal && all_ids.count(marker.ToString())))
          v.push_back("no leftovers: account " + id + " still carries the marker of " +
                      marker.ToString());
      }
    }
  }
  return v;
}

WatchSummary SweepOnce(Store* store, Clock* clock, const WatchSpec& watch, const std::string& owner,
                       std::vector<TxnReport>* reports, int workers, bool dry_run) {
  SweepOptions o;
  o.lease.owner = owner;
  o.workers = workers;
  o.dry_run = dry_run;
  o.batch_size = 64;
  Sweeper sweeper(store, clock, o);
  WatchSummary summary;
  std::mutex mu;
  sweeper.SweepWatch(
      watch,
      [&](const TxnReport& r) {
        std::lock_guard lock(mu);
        if (reports) reports->push_back(r);
      },
      &summary);
  return summary;
}

}  // namespace txn_recovery::testing
