#include "operations_app.h"

#include <set>
#include <stdexcept>

namespace txn_recovery::testing {

Operation Operation::Inc(std::string collection, Value id, const std::string& field, Value amount) {
  Operation op;
  op.collection = std::move(collection);
  op.id = std::move(id);
  op.inc.Set(field, std::move(amount));
  return op;
}

Operation Operation::Set(std::string collection, Value id, const std::string& field, Value value,
                         Value previous) {
  Operation op;
  op.collection = std::move(collection);
  op.id = std::move(id);
  op.set.Set(field, std::move(value));
  op.previous.Set(field, std::move(previous));
  return op;
}

OperationsApp::OperationsApp(Store* store, const std::string& database, Profile profile,
                             const std::string& transactions)
    : store_(store),
      profile_(std::move(profile)),
      op_(profile_.operations() ? *profile_.operations() : OperationsProfile{}),
      txns_{database, transactions} {
  if (!profile_.operations())
    throw std::invalid_argument("OperationsApp needs an operations profile");
}

WatchSpec OperationsApp::Watch() const {
  WatchSpec w;
  w.name = "operations";
  w.ns = txns_;
  w.profile = profile_;
  return w;
}

Value OperationsApp::InsertNew(const std::vector<Operation>& ops, std::optional<Value> id) {
  Value tx = id ? *id : Value(NewObjectId(ServerNow(store_).millis));
  Array list;
  for (const auto& op : ops) {
    Document d;
    d.Set(op_.collection_key, op.collection);
    d.Set(op_.id_key, op.id);
    if (!op.inc.empty()) d.Set(op_.inc_key, op.inc);
    if (!op.set.empty()) {
      d.Set(op_.set_key, op.set);
      d.Set(op_.previous_key, op.previous);
    }
    list.emplace_back(std::move(d));
  }
  Document doc{{"_id", tx}};
  doc.SetPath(profile_.state_field, profile_.states.Written(TxnState::kInitial));
  doc.SetPath(profile_.time_field, ServerNow(store_));
  doc.SetPath(op_.operations_field, std::move(list));
  Must(store_->InsertMany(txns_, {doc}));
  return tx;
}

Status OperationsApp::Transition(const Value& tx, TxnState from, TxnState to) {
  const auto& st = profile_.states;
  WriteResult r;
  if (Status s = store_->UpdateOne(
          txns_, Filter().Eq("_id", tx).Eq(profile_.state_field, st.Written(from)),
          Update().Set(profile_.state_field, st.Written(to)).CurrentDate(profile_.time_field), &r);
      !s.ok())
    return s;
  // Someone else (the daemon) moved the transaction on: carrying on would pull the
  // markers of changes applied late, hiding them from the daemon's late-write check.
  if (r.matched == 0)
    return Status::Conflict("transaction " + tx.ToString() + " is no longer " + st.Written(from) +
                            ": the application stops");
  return Status::Ok();
}

Status OperationsApp::MarkPending(const Value& tx) {
  return Transition(tx, TxnState::kInitial, TxnState::kPending);
}
Status OperationsApp::MarkApplied(const Value& tx) {
  return Transition(tx, TxnState::kPending, TxnState::kApplied);
}
Status OperationsApp::MarkDone(const Value& tx) {
  return Transition(tx, TxnState::kApplied, TxnState::kDone);
}

Status OperationsApp::ReadOperation(const Value& tx, std::size_t i, Document* op) {
  std::optional<Document> t;
  if (Status s = store_->FindOne(txns_, Filter().Eq("_id", tx), &t); !s.ok()) return s;
  if (!t) return Status::NotFound("no transaction " + tx.ToString());
  const Value* ops = t->GetPath(op_.operations_field);
  if (!ops || !ops->is_array() || i >= ops->as_array()->size() ||
      !(*ops->as_array())[i].is_document())
    return Status::NotFound("transaction " + tx.ToString() + " has no operation " +
                            std::to_string(i));
  *op = *(*ops->as_array())[i].as_document();
  return Status::Ok();
}

// The application's findAndUpdate: the change and the marker in one update, only where the
// marker is absent. The application does not check `previous` (the application has none).
Status OperationsApp::ApplyOperation(const Value& tx, std::size_t i) {
  Document op;
  if (Status s = ReadOperation(tx, i, &op); !s.ok()) return s;
  Update u;
  if (const Value* inc = op.Get(op_.inc_key); inc && inc->is_document())
    for (const auto& [field, amount] : *inc->as_document()) u.Inc(field, amount);
  if (const Value* set = op.Get(op_.set_key); set && set->is_document())
    for (const auto& [field, value] : *set->as_document()) u.Set(field, value);
  u.Push(op_.marker_field, tx);
  WriteResult r;
  return store_->UpdateOne(Collection(*op.Get(op_.collection_key)->as_string()),
                           Filter().Eq("_id", *op.Get(op_.id_key)).Ne(op_.marker_field, tx), u, &r);
}

Status OperationsApp::PullMarker(const Value& tx, std::size_t i) {
  Document op;
  if (Status s = ReadOperation(tx, i, &op); !s.ok()) return s;
  WriteResult r;
  return store_->UpdateOne(Collection(*op.Get(op_.collection_key)->as_string()),
                           Filter().Eq("_id", *op.Get(op_.id_key)).Eq(op_.marker_field, tx),
                           Update().Pull(op_.marker_field, tx), &r);
}

std::string OperationsApp::StepName(int steps_done, std::size_t operations) {
  const int n = static_cast<int>(operations);
  if (steps_done <= 0) return "nothing";
  if (steps_done == 1) return "inserted the transaction (new)";
  if (steps_done == 2) return "marked it pending";
  if (steps_done <= 2 + n) return "applied operation " + std::to_string(steps_done - 3);
  if (steps_done == 3 + n) return "marked it applied";
  if (steps_done <= 3 + 2 * n)
    return "pulled the marker of operation " + std::to_string(steps_done - 4 - n);
  return "marked it done";
}

Status OperationsApp::RunStep(const Value& tx, int step, std::size_t operations) {
  const int n = static_cast<int>(operations);
  if (step == 2) return MarkPending(tx);
  if (step >= 3 && step <= 2 + n) return ApplyOperation(tx, static_cast<std::size_t>(step - 3));
  if (step == 3 + n) return MarkApplied(tx);
  if (step >= 4 + n && step <= 3 + 2 * n)
    return PullMarker(tx, static_cast<std::size_t>(step - 4 - n));
  if (step == 4 + 2 * n) return MarkDone(tx);
  return Status::InvalidArgument("no step " + std::to_string(step));
}

Value OperationsApp::Run(const std::vector<Operation>& ops, int steps) {
  Value tx = InsertNew(ops);
  for (int s = 2; s <= steps; ++s) Must(RunStep(tx, s, ops.size()));
  return tx;
}

void OperationsApp::Age(const Value& tx, std::chrono::milliseconds age) {
  AgeDocument(store_, txns_, tx, profile_.time_field, age);
}

std::optional<Document> OperationsApp::Txn(const Value& tx) {
  return FindById(store_, txns_, tx);
}

std::string OperationsApp::State(const Value& tx) {
  return StateOf(Txn(tx), profile_.state_field);
}

std::optional<Document> OperationsApp::Doc(const std::string& collection, const Value& id) {
  return FindById(store_, Collection(collection), id);
}

double OperationsApp::Sum(const std::string& collection, const std::string& field) {
  double total = 0;
  for (const auto& d : AllDocs(store_, Collection(collection)))
    if (const Value* v = d.Get(field)) total += v->as_double().value_or(0);
  return total;
}

Array OperationsApp::Markers(const std::string& collection, const Value& id) {
  auto d = Doc(collection, id);
  if (!d) return {};
  const Value* m = d->Get(op_.marker_field);
  return m && m->is_array() ? *m->as_array() : Array{};
}

OperationsSnapshot OperationsApp::Take(const std::vector<std::string>& collections) {
  OperationsSnapshot s;
  for (const auto& c : collections) {
    auto& docs = s.docs[c];
    for (const auto& d : AllDocs(store_, Collection(c))) docs[d.Get("_id")->ToString()] = d;
  }
  return s;
}

namespace {

// Top-level fields by name, without the marker array (its contents are checked apart).
std::map<std::string, Value> Fields(const Document& d, const std::string& marker) {
  std::map<std::string, Value> out;
  for (const auto& [k, v] : d)
    if (k != marker) out.emplace(k, v);
  return out;
}

}  // namespace

std::vector<std::string> OperationsApp::Violations(const OperationsSnapshot& before,
                                                   bool all_terminal) {
  std::vector<std::string> v;
  // What every document should be: its snapshot plus the done transactions' changes.
  std::map<std::string, std::map<std::string, Document>> expected = before.docs;
  std::set<std::string> terminal, any, unsettled;  // transaction ids; documents not compared
  for (const auto& t : AllDocs(store_, txns_)) {
    const std::string id = t.Get("_id")->ToString();
    const bool quarantined = t.GetPath("recovery.quarantine") != nullptr;
    Transaction txn;
    Status s = profile_.Parse(t, txns_, "recovery", &txn);
    if (!s.ok()) {
      if (!quarantined)
        v.push_back("transaction " + id + " is malformed but not quarantined: " + s.message());
      continue;
    }
    any.insert(id);
    if (IsTerminal(txn.state)) terminal.insert(id);
    if (!IsTerminal(txn.state)) {
      if (all_terminal && !quarantined)
        v.push_back("no leftovers: transaction " + id + " is still " +
                    std::string(TxnStateName(txn.state)));
      for (const auto& step : txn.steps)
        unsettled.insert(step.ns.collection + " " + step.target.all().front().value.ToString());
      continue;
    }
    if (txn.state != TxnState::kDone) continue;
    const Array& ops = *t.GetPath(op_.operations_field)->as_array();
    for (const auto& opv : ops) {
      const Document& op = *opv.as_document();
      const std::string coll = *op.Get(op_.collection_key)->as_string();
      const std::string key = op.Get(op_.id_key)->ToString();
      auto c = expected.find(coll);
      if (c == expected.end() || !c->second.count(key)) {
        v.push_back("atomicity: done transaction " + id + " names " + coll + " " + key +
                    ", which did not exist before");
        continue;
      }
      Document& d = c->second[key];
      if (const Value* inc = op.Get(op_.inc_key))
        for (const auto& [field, amount] : *inc->as_document()) {
          const Value* cur = d.Get(field);
          d.Set(field, cur ? AddNumbers(*cur, amount).value_or(Value()) : amount);
        }
      if (const Value* set = op.Get(op_.set_key))
        for (const auto& [field, value] : *set->as_document()) d.Set(field, value);
    }
  }

  for (const auto& [coll, docs] : expected) {
    std::map<std::string, Document> now;
    for (const auto& d : AllDocs(store_, Collection(coll))) now[d.Get("_id")->ToString()] = d;
    if (now.size() != docs.size())
      v.push_back("nothing else touched: " + coll + " had " + std::to_string(docs.size()) +
                  " documents, has " + std::to_string(now.size()));
    for (const auto& [key, want] : docs) {
      auto it = now.find(key);
      if (it == now.end()) {
        v.push_back("nothing else touched: " + coll + " " + key + " vanished");
        continue;
      }
      const Document& got = it->second;
      if (const Value* m = got.Get(op_.marker_field); m && m->is_array())
        for (const Value& marker : *m->as_array())
          if (terminal.count(marker.ToString()) || (all_terminal && any.count(marker.ToString())))
            v.push_back("no leftovers: " + coll + " " + key + " still carries the marker of " +
                        marker.ToString());
      if (unsettled.count(coll + " " + key)) continue;
      if (Fields(got, op_.marker_field) != Fields(want, op_.marker_field))
        v.push_back("atomicity: " + coll + " " + key + " is " + Value(got).ToString() +
                    ", the done transactions say " + Value(want).ToString());
    }
  }
  return v;
}

}  // namespace txn_recovery::testing
