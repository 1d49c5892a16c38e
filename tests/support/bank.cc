#include "bank.h"

#include "txn_recovery/base/recovery_record.h"

#include <climits>
#include <set>
#include <stdexcept>

namespace txn_recovery::testing {

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

std::vector<KilledCase> KilledTransferCases(const char* cancelled) {
  std::vector<KilledCase> cases;
  for (int steps = 1; steps <= kAppStepCount; ++steps)
    cases.push_back({steps, kStuck, steps == 1 ? "initial" : "done"});
  const int applied = static_cast<int>(AppStep::kMarkApplied) + 1;
  for (int steps = 1; steps <= kAppStepCount; ++steps)
    cases.push_back({steps, kExpired, steps < applied ? cancelled : "done"});
  return cases;
}

Bank::Bank(Store* store, const std::string& database, Profile profile, Dialect dialect)
    : store_(store),
      profile_(std::move(profile)),
      tp_(profile_.transfer() ? *profile_.transfer() : TransferProfile{}),
      dialect_(dialect),
      txns_{database, "transactions"},
      accounts_{database, tp_.participants_collection},
      other_{database, "audit"} {
  if (!profile_.transfer()) throw std::invalid_argument("Bank needs a transfer profile");
}

WatchSpec Bank::Watch() const {
  WatchSpec w;
  w.name = "bank";
  w.ns = txns_;
  w.profile = profile_;
  return w;
}

// An account as Open and OpenAccount write it; `id` is its _id where the accounts are keyed
// by another field.
static Document AccountDocument(const TransferProfile& tp, const std::string& name,
                                std::int32_t balance, const Value& id) {
  Document d;
  if (tp.participant_key == "_id") {
    d.Set("_id", name);
  } else {
    d.Set("_id", id);
    d.SetPath(tp.participant_key, name);
  }
  d.SetPath(tp.balance_field, balance);
  d.SetPath(tp.marker_field, Array{});
  return d;
}

// The document in the unrelated collection that no transaction may touch.
static Document OtherBystander() {
  return Document{{"_id", 1}, {"note", "untouched"}};
}
static constexpr const char* kBystander = "bystander";
static constexpr std::int32_t kBystanderBalance = 777;

void Bank::OpenAccount(const std::string& name, std::int32_t balance) {
  const Value id =
      tp_.participant_key == "_id" ? Value(name) : Value(NewObjectId(ServerNow(store_).millis));
  Must(store_->InsertMany(accounts_, {AccountDocument(tp_, name, balance, id)}));
}

// Appended, not "A" + std::to_string(i): GCC 12 at -O3 warns (-Wrestrict, falsely) on the
// latter wherever it is inlined.
std::string Bank::Account(int i) {
  return std::string("A").append(std::to_string(i));
}

void Bank::Open(int n, std::int32_t balance) {
  for (int i = 0; i < n; ++i) OpenAccount(Account(i), balance);
  OpenAccount(kBystander, kBystanderBalance);
  Must(store_->InsertMany(other_, {OtherBystander()}));
}

Snapshot Bank::Opened(int n, std::int32_t balance) const {
  if (tp_.participant_key != "_id")
    throw std::logic_error("Bank::Opened: accounts keyed by " + tp_.participant_key +
                           " have _ids Open draws at random");
  Snapshot s;
  for (int i = 0; i < n; ++i) {
    const std::string name = Account(i);
    s.accounts[Value(name).ToString()] = AccountDocument(tp_, name, balance, Value(name));
    s.total += balance;
  }
  s.bystanders.push_back(
      AccountDocument(tp_, kBystander, kBystanderBalance, Value(std::string(kBystander))));
  s.total += kBystanderBalance;
  s.bystanders.push_back(OtherBystander());
  return s;
}

Value Bank::Begin(const std::string& from, const std::string& to, std::int32_t amount,
                  std::chrono::milliseconds created_ago) {
  // The applications' integer ids are int32 until a base beyond its range is asked for.
  const std::int64_t n = next_id_++;
  Value id = dialect_ == Dialect::kSchemaBook ? Value(ObjectIdAged(store_, created_ago))
             : n <= INT32_MAX                 ? Value(static_cast<std::int32_t>(n))
                                              : Value(n);
  Document doc{{"_id", id}};
  doc.SetPath(tp_.source_field, from);
  doc.SetPath(tp_.destination_field, to);
  doc.SetPath(tp_.amount_field, amount);
  doc.SetPath(profile_.state_field, profile_.states.Written(TxnState::kInitial));
  // The MongoDB manual transfer inserts the time with the document ({..., lastModified:
  // new Date()}): one write, so that no crash can leave a transaction without one.
  if (dialect_ == Dialect::kManual) doc.SetPath(profile_.time_field, ServerNow(store_));
  Must(store_->InsertMany(txns_, {doc}));
  return id;
}

Value Bank::Transfer(const std::string& from, const std::string& to, std::int32_t amount, int steps,
                     std::chrono::milliseconds created_ago) {
  Value id = Begin(from, to, amount, created_ago);
  for (int s = 1; s < steps; ++s) Must(RunStep(id, static_cast<AppStep>(s)));
  return id;
}

Status Bank::RunStep(const Value& id, AppStep step) {
  std::optional<Document> t;
  if (Status s = store_->FindOne(txns_, Filter().Eq("_id", id), &t); !s.ok()) return s;
  if (!t) return Status::NotFound("no transaction " + id.ToString());
  const Value& source = *t->GetPath(tp_.source_field);
  const Value& dest = *t->GetPath(tp_.destination_field);
  const Value& amount = *t->GetPath(tp_.amount_field);
  const auto& st = profile_.states;
  const bool schema_book = dialect_ == Dialect::kSchemaBook;
  WriteResult r;
  // The MongoDB manual transfer moves states with compare-and-set and stamps the time; the
  // schema-book transfer just sets.
  auto transition = [&](TxnState from, TxnState to) {
    Filter f = Filter().Eq("_id", id);
    Update u = Update().Set(profile_.state_field, st.Written(to));
    if (!schema_book) f.Eq(profile_.state_field, st.Written(from));
    if (dialect_ == Dialect::kManual) u.CurrentDate(profile_.time_field);
    if (Status s = store_->UpdateOne(txns_, f, u, &r); !s.ok()) return s;
    if (!schema_book && r.matched == 0)
      return Status::Conflict("transaction " + id.ToString() + " is no longer " + st.Written(from) +
                              ": the application stops");
    return Status::Ok();
  };
  auto apply = [&](const Value& who, const Value& delta, bool debit) {
    Filter f;
    f.Eq(tp_.participant_key, who).Ne(tp_.marker_field, id);
    if (schema_book && debit) f.Gte(tp_.balance_field, amount);
    return store_->UpdateOne(accounts_, f,
                             Update().Inc(tp_.balance_field, delta).Push(tp_.marker_field, id), &r);
  };
  auto pull = [&](const Value& who) {
    return store_->UpdateOne(accounts_,
                             Filter().Eq(tp_.participant_key, who).Eq(tp_.marker_field, id),
                             Update().Pull(tp_.marker_field, id), &r);
  };
  switch (step) {
    case AppStep::kInsertInitial:
      return Status::Ok();
    case AppStep::kMarkPending:
      if (schema_book && application_) {
        // findAndModify({state: initial, application: {$exists: 0}}, {$set: {state:
        // pending, application: A1}}): only one application can claim it.
        std::optional<Document> after;
        return store_->FindOneAndUpdate(
            txns_,
            Filter()
                .Eq("_id", id)
                .Eq(profile_.state_field, st.Written(TxnState::kInitial))
                .NotExists(profile_.owner.field),
            Update()
                .Set(profile_.state_field, st.Written(TxnState::kPending))
                .Set(profile_.owner.field, *application_),
            &after);
      }
      return transition(TxnState::kInitial, TxnState::kPending);
    case AppStep::kDebitSource:
      return apply(source, *NegateNumber(amount), /*debit=*/true);
    case AppStep::kCreditDestination:
      return apply(dest, amount, /*debit=*/false);
    case AppStep::kMarkApplied:
      return transition(TxnState::kPending, TxnState::kApplied);
    case AppStep::kPullSource:
      return pull(source);
    case AppStep::kPullDestination:
      return pull(dest);
    case AppStep::kMarkDone:
      return transition(TxnState::kApplied, TxnState::kDone);
  }
  return Status::Ok();
}

void Bank::Age(const Value& id, std::chrono::milliseconds age) {
  std::optional<Document> t = Txn(id);
  if (dialect_ == Dialect::kNoTime && t && t->GetPath(profile_.time_field) == nullptr) {
    const std::string stamp = RecoveryPaths("recovery").FirstSeen();
    if (t->GetPath(stamp) == nullptr)
      throw std::runtime_error("transaction " + id.ToString() +
                               " has no first-sighting stamp to age");
    AgeDocument(store_, txns_, id, stamp, age);
    return;
  }
  AgeDocument(store_, txns_, id, profile_.time_field, age);
}

void Bank::AgeAll(std::chrono::milliseconds age) {
  WriteResult r;
  Must(store_->UpdateMany(
      txns_, Filter(),
      Update().Set(profile_.time_field, DateTime{ServerNow(store_).millis - age.count()}), &r));
}

void Bank::ExpireLeases() {
  testing::ExpireLeases(store_, txns_);
}

std::optional<Document> Bank::Txn(const Value& id) {
  return FindById(store_, txns_, id);
}

std::string Bank::State(const Value& id) {
  return StateOf(Txn(id), profile_.state_field);
}

bool Bank::AllIn(const std::vector<Value>& ids, const std::string& state) {
  for (const Value& id : ids)
    if (State(id) != state) return false;
  return true;
}

std::optional<Document> Bank::Account(const std::string& name) {
  std::optional<Document> a;
  Must(store_->FindOne(accounts_, Filter().Eq(tp_.participant_key, name), &a));
  return a;
}

std::int64_t Bank::Balance(const std::string& account) {
  auto a = Account(account);
  if (!a) return -1;
  return static_cast<std::int64_t>(*a->GetPath(tp_.balance_field)->as_double());
}

Array Bank::Markers(const std::string& account) {
  auto a = Account(account);
  if (!a || !a->GetPath(tp_.marker_field) || !a->GetPath(tp_.marker_field)->is_array()) return {};
  return *a->GetPath(tp_.marker_field)->as_array();
}

Snapshot Bank::Take() {
  Snapshot s;
  for (const auto& d : AllDocs(store_, accounts_)) {
    const Value* key = d.GetPath(tp_.participant_key);
    std::string id = key ? key->ToString() : d.Get("_id")->ToString();
    if (id == Value(std::string(kBystander)).ToString()) {
      s.bystanders.push_back(d);
    } else {
      s.accounts[id] = d;
    }
    if (const Value* b = d.GetPath(tp_.balance_field)) s.total += b->as_double().value_or(0);
  }
  for (const auto& d : AllDocs(store_, other_)) s.bystanders.push_back(d);
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
  auto balance_of = [&](const Document& d) {
    const Value* b = d.GetPath(tp_.balance_field);
    return b ? b->as_double().value_or(0) : 0;
  };
  std::map<std::string, double> expected;
  for (const auto& [id, d] : before.accounts) expected[id] = balance_of(d);
  std::set<std::string> terminal_ids, all_ids;
  for (const auto& t : AllDocs(store_, txns_)) {
    Transaction txn;
    std::string id = t.Get("_id")->ToString();
    all_ids.insert(id);
    Status s = profile_.Parse(t, txns_, "recovery", &txn);
    if (!s.ok()) {
      if (!t.GetPath("recovery.quarantine"))
        v.push_back("transaction " + id + " is malformed but not quarantined: " + s.message());
      continue;
    }
    if (IsTerminal(txn.state)) terminal_ids.insert(id);
    if (all_terminal && !IsTerminal(txn.state) && !t.GetPath("recovery.quarantine"))
      v.push_back("no leftovers: transaction " + id + " is still " +
                  std::string(TxnStateName(txn.state)));
    if (txn.state == TxnState::kDone) {
      double amount = t.GetPath(tp_.amount_field)->as_double().value_or(0);
      expected[t.GetPath(tp_.source_field)->ToString()] -= amount;
      expected[t.GetPath(tp_.destination_field)->ToString()] += amount;
    }
  }
  for (const auto& [id, d] : after.accounts) {
    if (!before.accounts.count(id)) continue;
    double balance = balance_of(d);
    if (all_terminal && balance != expected[id])
      v.push_back("atomicity: account " + id + " has " + std::to_string(balance) +
                  ", the done transfers say " + std::to_string(expected[id]));
    if (const Value* m = d.GetPath(tp_.marker_field); m && m->is_array()) {
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

}  // namespace txn_recovery::testing
