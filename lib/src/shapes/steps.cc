// The step builder every protocol goes through, and the `steps` protocol: participant steps
// described in the configuration by paths into the transaction document.
#include "shapes/steps.h"

#include <cmath>
#include <set>
#include <sstream>

#include "shapes/profile_parsing.h"

namespace txn_recovery {
namespace steps {
namespace {

// Values the daemon can write back exactly: it keeps no bytes of types it does not model.
bool IsWritable(const Value& v) {
  if (std::holds_alternative<OtherValue>(v.storage())) return false;
  if (const Array* a = v.as_array()) {
    for (const auto& e : *a)
      if (!IsWritable(e)) return false;
  }
  if (const Document* d = v.as_document()) {
    for (const auto& [k, e] : *d)
      if (!IsWritable(e)) return false;
  }
  return true;
}

// A `$` key inside a value would be read as an operator once the value is used in a filter.
bool HasOperatorKey(const Value& v) {
  if (const Array* a = v.as_array()) {
    for (const auto& e : *a)
      if (HasOperatorKey(e)) return true;
  }
  if (const Document* d = v.as_document()) {
    for (const auto& [k, e] : *d)
      if ((!k.empty() && k[0] == '$') || HasOperatorKey(e)) return true;
  }
  return false;
}

}  // namespace

// A value written into a participant, or compared with in a filter, as read.
Status CheckWritable(const std::string& where, const Value& v) {
  if (!IsWritable(v))
    return Status::Malformed(where +
                             " holds a value of a type the daemon cannot write back exactly (" +
                             v.ToString() + ")");
  if (HasOperatorKey(v)) return Status::Malformed(where + " holds a '$' key");
  return Status::Ok();
}

Status BuildStep(const Change& c, const Value& txn_id, ParticipantStep* out) {
  ParticipantStep step;
  step.ns = c.ns;
  step.target.Eq(c.key, c.key_value);
  step.target_may_be_ambiguous = c.key != "_id";
  step.marker_field = c.marker_field;
  step.apply_guard = c.guard;
  std::string changes;
  for (const Change::Inc& inc : c.incs) {
    if (!inc.amount.is_number())
      return Status::Malformed(inc.where + " is not a number (" +
                               std::string(inc.amount.type_name()) + "): its inverse is unknown");
    if (!std::isfinite(*inc.amount.as_double()))
      return Status::Malformed(inc.where + " is not finite: " + inc.amount.ToString());
    auto negated = NegateNumber(inc.amount);
    if (!negated)
      return Status::Malformed(inc.where + " cannot be negated: " + inc.amount.ToString());
    step.apply.Inc(inc.field, inc.amount);
    step.undo.Inc(inc.field, *negated);
    // A second $inc applied late is undone like the first.
    step.undo_duplicate.Inc(inc.field, *negated);
    changes += (changes.empty() ? "" : ", ");
    changes.append("inc ").append(inc.field).append(" ").append(inc.amount.ToString());
  }
  for (const Change::Set& set : c.sets) {
    if (Status s = CheckWritable(set.where, set.value); !s.ok()) return s;
    if (Status s = CheckWritable(set.where + " (its previous value)", set.previous); !s.ok())
      return s;
    // Applied only while the field still holds the previous value, so that undoing restores
    // exactly what was there. A $set repeated late leaves the committed value: only its
    // marker goes.
    step.apply.Set(set.field, set.value);
    if (set.previous.is_null()) {
      step.apply_guard.NotExists(set.field);
      step.undo.Unset(set.field);
    } else {
      step.apply_guard.Eq(set.field, set.previous);
      step.undo.Set(set.field, set.previous);
    }
    changes += (changes.empty() ? "" : ", ");
    changes.append("set ").append(set.field).append(" ").append(set.value.ToString());
  }
  if (changes.empty()) return Status::Malformed("a step that changes nothing");
  step.apply.Push(c.marker_field, txn_id);
  step.undo.Pull(c.marker_field, txn_id);
  step.undo_duplicate.Pull(c.marker_field, txn_id);
  step.finish.Pull(c.marker_field, txn_id);
  step.describe = !c.label.empty()
                      ? c.label
                      : changes + " on " + c.ns.collection + " " + c.key_value.ToString();
  *out = std::move(step);
  return Status::Ok();
}

Status CheckDistinctTargets(const std::vector<ParticipantStep>& steps, std::string_view what) {
  for (std::size_t i = 0; i < steps.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const Predicate& a = steps[j].target.all().front();
      const Predicate& b = steps[i].target.all().front();
      if (steps[j].ns == steps[i].ns && a.path == b.path && a.value == b.value)
        return Status::Malformed(std::string(what) + "[" + std::to_string(j) + "] and [" +
                                 std::to_string(i) + "] both change the same participant " +
                                 steps[i].ns.collection + " " + b.value.ToString() +
                                 ": one marker cannot tell them apart");
    }
  return Status::Ok();
}

}  // namespace steps

std::string_view GuardOpName(StepSpec::GuardOp op) noexcept {
  switch (op) {
    case StepSpec::GuardOp::kGte:
      return ">=";
    case StepSpec::GuardOp::kLte:
      return "<=";
    case StepSpec::GuardOp::kLt:
      return "<";
    case StepSpec::GuardOp::kEq:
      return "==";
    case StepSpec::GuardOp::kNe:
      return "!=";
  }
  return "?";
}

std::optional<StepSpec::Guard> ParseGuard(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string field, op, path, extra;
  if (!(in >> field >> op >> path) || (in >> extra)) return std::nullopt;
  for (auto o : {StepSpec::GuardOp::kGte, StepSpec::GuardOp::kLte, StepSpec::GuardOp::kLt,
                 StepSpec::GuardOp::kEq, StepSpec::GuardOp::kNe})
    if (op == GuardOpName(o)) return StepSpec::Guard{field, o, path};
  return std::nullopt;
}

std::string StepSpec::ToString(std::string_view default_marker) const {
  std::string out = collection + " where " + key + " = <" + key_path + ">:";
  const char* sep = " ";
  for (const Inc& i : inc) {
    out.append(sep).append("$inc ").append(i.field).append(" by ");
    out.append(i.negate ? "-<" : "<").append(i.path).append(">");
    sep = ", ";
  }
  for (const Set& s : set) {
    out.append(sep).append("$set ").append(s.field).append(" to <").append(s.path);
    out.append("> (was <").append(s.previous_path).append(">)");
    sep = ", ";
  }
  sep = " if ";
  for (const Guard& g : guards) {
    out.append(sep).append(g.field).append(" ").append(GuardOpName(g.op));
    out.append(" <").append(g.path).append(">");
    sep = " and ";
  }
  out.append("; marker ").append(marker_field.empty() ? default_marker : marker_field);
  if (positive_amounts) out.append("; amounts must be positive");
  return out;
}

namespace {

// The value at `path` of the transaction document.
Status At(const Document& doc, const std::string& path, const Value** out) {
  *out = doc.GetPath(path);
  return *out == nullptr ? Missing(path) : Status::Ok();
}

// "debit {amount} from {key}": the template of a step's label filled from the document.
std::string Label(const StepSpec& spec, const Value& key, const Value* first_amount) {
  std::string out;
  for (std::size_t i = 0; i < spec.label.size();) {
    if (spec.label.compare(i, 8, "{amount}") == 0 && first_amount != nullptr) {
      out += first_amount->ToString();
      i += 8;
    } else if (spec.label.compare(i, 5, "{key}") == 0) {
      out += key.ToString();
      i += 5;
    } else {
      out += spec.label[i++];
    }
  }
  return out;
}

Filter GuardFilter(StepSpec::GuardOp op, const std::string& field, const Value& v) {
  Filter f;
  switch (op) {
    case StepSpec::GuardOp::kGte:
      return std::move(f.Gte(field, v));
    case StepSpec::GuardOp::kLte:
      return std::move(f.Lte(field, v));
    case StepSpec::GuardOp::kLt:
      return std::move(f.Lt(field, v));
    case StepSpec::GuardOp::kEq:
      return std::move(f.Eq(field, v));
    case StepSpec::GuardOp::kNe:
      return std::move(f.Ne(field, v));
  }
  return f;
}

// One described step, resolved from `doc`.
Status Resolve(const StepSpec& spec, const std::string& marker, const Document& doc,
               const Namespace& txn_ns, steps::Change* c) {
  c->ns = Namespace{txn_ns.database, spec.collection};
  // The loader refuses it too; a profile built in code (or a renamed collection) must not
  // turn transaction documents into participants.
  if (spec.collection == txn_ns.collection)
    return Status::Malformed("a step changes the transactions collection " + txn_ns.ToString() +
                             " itself");
  c->key = spec.key;
  c->marker_field = spec.marker_field.empty() ? marker : spec.marker_field;
  const Value* key = nullptr;
  if (Status s = At(doc, spec.key_path, &key); !s.ok()) return s;
  if (!IsUsableId(*key)) return WrongType(spec.key_path, *key, "string, number or objectId");
  c->key_value = *key;
  const Value* first_amount = nullptr;
  for (const StepSpec::Inc& inc : spec.inc) {
    const Value* amount = nullptr;
    if (Status s = At(doc, inc.path, &amount); !s.ok()) return s;
    if (!amount->is_number()) return WrongType(inc.path, *amount, "number");
    const double a = *amount->as_double();
    if (spec.positive_amounts && !(std::isfinite(a) && a > 0))
      return Status::Malformed("field '" + inc.path + "' must be a positive finite number, is " +
                               amount->ToString());
    if (first_amount == nullptr) first_amount = amount;
    std::optional<Value> applied = *amount;
    if (inc.negate && std::isfinite(a) && !(applied = NegateNumber(*amount)))
      return Status::Malformed("field '" + inc.path + "' cannot be negated: " + amount->ToString());
    c->incs.push_back({inc.field, std::move(*applied), "field '" + inc.path + "'"});
  }
  for (const StepSpec::Set& set : spec.set) {
    const Value* value = nullptr;
    const Value* previous = nullptr;
    if (Status s = At(doc, set.path, &value); !s.ok()) return s;
    if (Status s = At(doc, set.previous_path, &previous); !s.ok()) return s;
    c->sets.push_back({set.field, *value, *previous, "field '" + set.path + "'"});
  }
  for (const StepSpec::Guard& g : spec.guards) {
    const Value* v = nullptr;
    if (Status s = At(doc, g.path, &v); !s.ok()) return s;
    if (!steps::IsWritable(*v) || steps::HasOperatorKey(*v))
      return Status::Malformed("field '" + g.path +
                               "' holds a value a guard cannot compare with (" + v->ToString() +
                               ")");
    c->guard.And(GuardFilter(g.op, g.field, *v));
  }
  c->label = Label(spec, *key, first_amount);
  return Status::Ok();
}

}  // namespace

Status ParseBody(const StepsProfile& p, const Document& doc, const Namespace& txn_ns,
                 Transaction* txn) {
  for (const StepSpec& spec : p.steps) {
    steps::Change change;
    if (Status s = Resolve(spec, p.marker_field, doc, txn_ns, &change); !s.ok()) return s;
    ParticipantStep step;
    if (Status s = steps::BuildStep(change, txn->id, &step); !s.ok()) return s;
    txn->steps.push_back(std::move(step));
  }
  return steps::CheckDistinctTargets(txn->steps, "steps");
}

std::vector<MarkerLocation> MarkerLocationsOf(const StepsProfile& p, const Namespace& txn_ns) {
  std::vector<MarkerLocation> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const StepSpec& spec : p.steps) {
    const std::string& marker = spec.marker_field.empty() ? p.marker_field : spec.marker_field;
    if (seen.emplace(spec.collection, marker).second)
      out.push_back({{txn_ns.database, spec.collection}, marker});
  }
  return out;
}

namespace {

bool Overlaps(const std::string& a, const std::string& b) {
  return a == b || a.rfind(b + ".", 0) == 0 || b.rfind(a + ".", 0) == 0;
}

// The fields step `s` changes (its inc and set, at `at`) and their paths. A changed field
// that is (or contains, or lies within) the key, _id, the marker or another changed field
// would move the participant out of its own target or guard, or make one change undo
// another: no exact inverse.
void CheckChangedFields(const StepSpec& s, const std::string& at, const std::string& marker,
                        ConfigProblems* mine) {
  std::vector<std::string> changed;
  auto field = [&](const std::string& key, const std::string& f) {
    if (!FieldPathOk(key, f, mine)) return;
    if (Overlaps(f, marker) || Overlaps(f, s.key) || Overlaps(f, "_id")) {
      mine->push_back({key, "must not change the step's key, _id or its marker '" + marker +
                                "' (nor a field within or around them)"});
      return;
    }
    for (const auto& other : changed)
      if (Overlaps(f, other))
        mine->push_back({key, "'" + f + "' and '" + other + "' are changed by one step"});
    changed.push_back(f);
  };
  for (const auto& inc : s.inc) {
    field(at + "inc." + inc.field, inc.field);
    (void)FieldPathOk(at + "inc." + inc.field, inc.path, mine);
  }
  for (const auto& set : s.set) {
    field(at + "set." + set.field, set.field);
    (void)FieldPathOk(at + "set." + set.field, set.path, mine);
    if (set.previous_path.empty())
      mine->push_back({at + "previous." + set.field,
                       "is required: the path of the value '" + set.field + "' had (its inverse)"});
    else
      (void)FieldPathOk(at + "previous." + set.field, set.previous_path, mine);
  }
}

// One document per key value: steps on one collection and marker must find their
// participants by the same key, or two of them could name one document (and the second
// would look applied once the first had pushed the marker).
void CheckKeysAgree(const StepsProfile& p, std::size_t i, const std::string& at,
                    const std::string& marker, ConfigProblems* mine) {
  const StepSpec& s = p.steps[i];
  for (std::size_t j = 0; j < i; ++j) {
    const StepSpec& o = p.steps[j];
    const std::string& other_marker = o.marker_field.empty() ? p.marker_field : o.marker_field;
    if (o.collection == s.collection && other_marker == marker && o.key != s.key)
      mine->push_back({at + "key", "'" + s.key + "' differs from steps[" + std::to_string(j) +
                                       "].key '" + o.key + "' on the same collection and marker"});
  }
}

}  // namespace

ConfigProblems StepsProfile::Validate() const {
  ConfigProblems out;
  (void)FieldPathOk("marker_field", marker_field, &out);  // appends
  if (steps.empty()) out.push_back({"steps", "must describe at least one step"});
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepSpec& s = steps[i];
    const std::string at = "steps[" + std::to_string(i) + "].";
    ConfigProblems mine;
    (void)CollectionNameOk(at + "collection", s.collection, &mine);
    (void)FieldPathOk(at + "key", s.key, &mine);
    (void)FieldPathOk(at + "key_path", s.key_path, &mine);
    if (!s.marker_field.empty()) (void)FieldPathOk(at + "marker", s.marker_field, &mine);
    const std::string& marker = s.marker_field.empty() ? marker_field : s.marker_field;
    if (s.inc.empty() && s.set.empty()) mine.push_back({at + "inc", "the step changes nothing"});
    CheckChangedFields(s, at, marker, &mine);
    for (const auto& g : s.guards) {
      (void)FieldPathOk(at + "guard", g.field, &mine);
      (void)FieldPathOk(at + "guard", g.path, &mine);
    }
    CheckKeysAgree(*this, i, at, marker, &mine);
    // Every problem of a step is reported on the `steps` key, whose position the loader
    // knows; the message names the step.
    for (auto& p : mine) out.push_back({"steps", p.key + ": " + p.problem});
  }
  return out;
}

}  // namespace txn_recovery
