// The Filter/Update algebra and its reference semantics. The in-memory store evaluates
// these directly; the MongoDB store translates them to query/update documents. The
// semantics here follow MongoDB's for the types the engine uses, including its rule that
// an equality predicate on an array field matches when any element is equal.
#include "txn_recovery/base/filter.h"

#include <algorithm>
#include <cassert>

namespace txn_recovery {
namespace {

Predicate Make(Predicate::Op op, std::string path, Value v = {}, std::vector<Value> vs = {}) {
  return Predicate{op, std::move(path), std::move(v), std::move(vs)};
}

bool EqualsOrContains(const Value* field, const Value& v) {
  if (field == nullptr) return v.is_null();  // MongoDB: {f: null} matches a missing f
  if (*field == v) return true;
  if (const Array* arr = field->as_array()) {
    return std::any_of(arr->begin(), arr->end(), [&](const Value& e) { return e == v; });
  }
  return false;
}

// <0, 0, >0 when both values are in the same comparable family; nullopt otherwise
// (MongoDB's type bracketing: $lt on a date never matches a string).
std::optional<int> CompareSameFamily(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return CompareNumbers(a, b);
  if (a.is_datetime() && b.is_datetime()) {
    auto x = a.as_datetime()->millis, y = b.as_datetime()->millis;
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string()->compare(*b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_object_id() && b.is_object_id()) {
    auto c = *a.as_object_id() <=> *b.as_object_id();
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  return std::nullopt;
}

template <typename Pred>
bool AnyScalar(const Value* field, Pred pred) {
  if (field == nullptr) return false;
  if (pred(*field)) return true;
  if (const Array* arr = field->as_array()) return std::any_of(arr->begin(), arr->end(), pred);
  return false;
}

// MongoDB's aggregation order ($expr) of a value against a date: every type MongoDB sorts
// before dates (null, numbers, strings, documents, arrays, binary, ObjectId, booleans) is
// less; a type this model does not interpret is not known to be.
std::optional<bool> LessThanDate(const Value* v, DateTime date) {
  if (v == nullptr || v->is_null()) return true;
  if (const DateTime* d = v->as_datetime()) return d->millis < date.millis;
  if (std::holds_alternative<OtherValue>(v->storage())) return std::nullopt;
  return true;
}

// MongoDB's $type alias of a value's BSON type.
std::string_view TypeAlias(const Value& v) {
  if (v.is_null()) return "null";
  if (v.is_document()) return "object";
  const std::string_view name = v.type_name();
  if (name == "int32") return "int";
  if (name == "int64") return "long";
  if (name == "decimal128") return "decimal";
  return name;
}

bool PredicateMatches(const Predicate& p, const Document& doc, std::optional<DateTime> now) {
  const Value* field = p.op == Predicate::Op::kServerNowBefore ? nullptr : doc.GetPath(p.path);
  switch (p.op) {
    case Predicate::Op::kEq:
      return EqualsOrContains(field, p.value);
    case Predicate::Op::kNe:
      return !EqualsOrContains(field, p.value);
    case Predicate::Op::kIn:
      return std::any_of(p.values.begin(), p.values.end(),
                         [&](const Value& v) { return EqualsOrContains(field, v); });
    case Predicate::Op::kNin:
      return std::none_of(p.values.begin(), p.values.end(),
                          [&](const Value& v) { return EqualsOrContains(field, v); });
    case Predicate::Op::kLt:
      return AnyScalar(field, [&](const Value& v) {
        auto c = CompareSameFamily(v, p.value);  // nullopt (other type family) never matches
        return c.has_value() && *c < 0;
      });
    case Predicate::Op::kGt:
      return AnyScalar(field, [&](const Value& v) {
        auto c = CompareSameFamily(v, p.value);
        return c.has_value() && *c > 0;
      });
    case Predicate::Op::kGte:
      return AnyScalar(field, [&](const Value& v) {
        auto c = CompareSameFamily(v, p.value);
        return c.has_value() && *c >= 0;
      });
    case Predicate::Op::kLte:
      return AnyScalar(field, [&](const Value& v) {
        auto c = CompareSameFamily(v, p.value);
        return c.has_value() && *c <= 0;
      });
    case Predicate::Op::kExists:
      return field != nullptr;
    case Predicate::Op::kNotExists:
      return field == nullptr;
    case Predicate::Op::kNotDateTime:
      return field != nullptr && !field->is_datetime();
    case Predicate::Op::kNotObjectId:
      return field != nullptr && !field->is_object_id();
    case Predicate::Op::kNonEmptyArray:
      return field != nullptr && field->as_array() != nullptr && !field->as_array()->empty();
    case Predicate::Op::kPresentNotArray:
      return field != nullptr && !field->is_array();
    case Predicate::Op::kOfType: {
      const std::string wanted = p.value.is_string() ? *p.value.as_string() : std::string();
      if (field != nullptr && wanted == "array") return field->is_array();
      return AnyScalar(field, [&](const Value& v) {
        return wanted == "number" ? v.is_number() || TypeAlias(v) == "decimal"
                                  : TypeAlias(v) == wanted;
      });
    }
    case Predicate::Op::kServerNowBefore:
      return now && p.value.as_datetime() && now->millis < p.value.as_datetime()->millis;
    case Predicate::Op::kBeforeServerNow:
      return now && LessThanDate(field, *now).value_or(false);
  }
  return false;
}

std::string_view OpName(Predicate::Op op) {
  switch (op) {
    case Predicate::Op::kEq:
      return "$eq";
    case Predicate::Op::kNe:
      return "$ne";
    case Predicate::Op::kIn:
      return "$in";
    case Predicate::Op::kNin:
      return "$nin";
    case Predicate::Op::kLt:
      return "$lt";
    case Predicate::Op::kGt:
      return "$gt";
    case Predicate::Op::kGte:
      return "$gte";
    case Predicate::Op::kLte:
      return "$lte";
    case Predicate::Op::kExists:
      return "$exists";
    case Predicate::Op::kNotExists:
      return "$notExists";
    case Predicate::Op::kNotDateTime:
      return "$notDate";
    case Predicate::Op::kNotObjectId:
      return "$notObjectId";
    case Predicate::Op::kNonEmptyArray:
      return "$nonEmptyArray";
    case Predicate::Op::kPresentNotArray:
      return "$presentNotArray";
    case Predicate::Op::kOfType:
      return "$type";
    case Predicate::Op::kServerNowBefore:
      return "$serverNowBefore";
    case Predicate::Op::kBeforeServerNow:
      return "$beforeServerNow";
  }
  return "?";
}

std::string_view KindName(UpdateOp::Kind k) {
  switch (k) {
    case UpdateOp::Kind::kSet:
      return "$set";
    case UpdateOp::Kind::kUnset:
      return "$unset";
    case UpdateOp::Kind::kInc:
      return "$inc";
    case UpdateOp::Kind::kPush:
      return "$push";
    case UpdateOp::Kind::kPull:
      return "$pull";
    case UpdateOp::Kind::kCurrentDate:
      return "$currentDate";
  }
  return "?";
}

}  // namespace

Filter& Filter::Eq(std::string path, Value v) {
  all_.push_back(Make(Predicate::Op::kEq, std::move(path), std::move(v)));
  return *this;
}
Filter& Filter::Ne(std::string path, Value v) {
  all_.push_back(Make(Predicate::Op::kNe, std::move(path), std::move(v)));
  return *this;
}
Filter& Filter::In(std::string path, std::vector<Value> vs) {
  all_.push_back(Make(Predicate::Op::kIn, std::move(path), {}, std::move(vs)));
  return *this;
}
Filter& Filter::Nin(std::string path, std::vector<Value> vs) {
  all_.push_back(Make(Predicate::Op::kNin, std::move(path), {}, std::move(vs)));
  return *this;
}
Filter& Filter::Lt(std::string path, Value v) {
  all_.push_back(Make(Predicate::Op::kLt, std::move(path), std::move(v)));
  return *this;
}
Filter& Filter::Gt(std::string path, Value v) {
  all_.push_back(Make(Predicate::Op::kGt, std::move(path), std::move(v)));
  return *this;
}
Filter& Filter::OfType(std::string path, std::string type_alias) {
  all_.push_back(Make(Predicate::Op::kOfType, std::move(path), Value(std::move(type_alias))));
  return *this;
}
Filter& Filter::Gte(std::string path, Value v) {
  all_.push_back(Make(Predicate::Op::kGte, std::move(path), std::move(v)));
  return *this;
}
Filter& Filter::Lte(std::string path, Value v) {
  all_.push_back(Make(Predicate::Op::kLte, std::move(path), std::move(v)));
  return *this;
}
Filter& Filter::Exists(std::string path) {
  all_.push_back(Make(Predicate::Op::kExists, std::move(path)));
  return *this;
}
Filter& Filter::NotExists(std::string path) {
  all_.push_back(Make(Predicate::Op::kNotExists, std::move(path)));
  return *this;
}
Filter& Filter::NotDateTime(std::string path) {
  all_.push_back(Make(Predicate::Op::kNotDateTime, std::move(path)));
  return *this;
}
Filter& Filter::NotObjectId(std::string path) {
  all_.push_back(Make(Predicate::Op::kNotObjectId, std::move(path)));
  return *this;
}
Filter& Filter::NonEmptyArray(std::string path) {
  all_.push_back(Make(Predicate::Op::kNonEmptyArray, std::move(path)));
  return *this;
}
Filter& Filter::PresentNotArray(std::string path) {
  all_.push_back(Make(Predicate::Op::kPresentNotArray, std::move(path)));
  return *this;
}
Filter& Filter::ServerNowBefore(DateTime deadline) {
  all_.push_back(Make(Predicate::Op::kServerNowBefore, "$$NOW", Value(deadline)));
  return *this;
}
Filter& Filter::BeforeServerNow(std::string path) {
  all_.push_back(Make(Predicate::Op::kBeforeServerNow, std::move(path)));
  return *this;
}
Filter& Filter::AnyOf(std::vector<Filter> alternatives) {
  assert(any_of_.empty() && "one disjunction per filter level");
  any_of_ = std::move(alternatives);
  return *this;
}

Filter& Filter::And(const Filter& other) {
  all_.insert(all_.end(), other.all_.begin(), other.all_.end());
  if (!other.any_of_.empty()) AnyOf(other.any_of_);
  return *this;
}

bool Filter::Matches(const Document& doc, std::optional<DateTime> server_now) const {
  for (const auto& p : all_)
    if (!PredicateMatches(p, doc, server_now)) return false;
  if (any_of_.empty()) return true;
  return std::any_of(any_of_.begin(), any_of_.end(),
                     [&](const Filter& f) { return f.Matches(doc, server_now); });
}

bool Filter::UsesServerClock() const {
  for (const auto& p : all_)
    if (p.op == Predicate::Op::kServerNowBefore || p.op == Predicate::Op::kBeforeServerNow)
      return true;
  return std::any_of(any_of_.begin(), any_of_.end(),
                     [](const Filter& f) { return f.UsesServerClock(); });
}

std::string Filter::ToString() const {
  std::string out = "{";
  bool first = true;
  for (const auto& p : all_) {
    if (!first) out += ", ";
    first = false;
    if (p.op == Predicate::Op::kServerNowBefore) {
      out += "$$NOW: {$lt: " + p.value.ToString() + "}";
      continue;
    }
    if (p.op == Predicate::Op::kBeforeServerNow) {
      out += p.path + ": {$lt: $$NOW}";
      continue;
    }
    out += p.path + ": {" + std::string(OpName(p.op));
    if (p.op == Predicate::Op::kIn || p.op == Predicate::Op::kNin) {
      out += ": " + Value(Array(p.values)).ToString();
    } else if (p.op != Predicate::Op::kExists && p.op != Predicate::Op::kNotExists &&
               p.op != Predicate::Op::kNotDateTime && p.op != Predicate::Op::kNotObjectId &&
               p.op != Predicate::Op::kNonEmptyArray && p.op != Predicate::Op::kPresentNotArray) {
      out += ": " + p.value.ToString();
    }
    out += "}";
  }
  if (!any_of_.empty()) {
    if (!first) out += ", ";
    out += "$or: [";
    for (std::size_t i = 0; i < any_of_.size(); ++i) {
      if (i) out += ", ";
      out += any_of_[i].ToString();
    }
    out += "]";
  }
  return out + "}";
}

Update& Update::Set(std::string path, Value v) {
  ops_.push_back({UpdateOp::Kind::kSet, std::move(path), std::move(v)});
  return *this;
}
Update& Update::Unset(std::string path) {
  ops_.push_back({UpdateOp::Kind::kUnset, std::move(path), {}});
  return *this;
}
Update& Update::Inc(std::string path, Value amount) {
  ops_.push_back({UpdateOp::Kind::kInc, std::move(path), std::move(amount)});
  return *this;
}
Update& Update::Push(std::string path, Value v) {
  ops_.push_back({UpdateOp::Kind::kPush, std::move(path), std::move(v)});
  return *this;
}
Update& Update::Pull(std::string path, Value v) {
  ops_.push_back({UpdateOp::Kind::kPull, std::move(path), std::move(v)});
  return *this;
}
Update& Update::CurrentDate(std::string path) {
  ops_.push_back({UpdateOp::Kind::kCurrentDate, std::move(path), {}});
  return *this;
}

namespace {

// Worded so that no run of eight bytes of it reads as a misspelling: the compiler stores a
// literal this size as eight-byte immediates, and lintian read "ment at " from the earlier
// wording's "...non-docu|ment at " (spelling-error-in-binary, a failure of the package).
Status CannotCreate(const std::string& path) {
  return Status::ServerError("cannot create field " + path +
                             ": a value on its path is not a document");
}

Status ApplyInc(const UpdateOp& op, Document* doc) {
  if (!op.value.is_number())
    return Status::InvalidArgument("$inc amount is not a number at " + op.path);
  const Value* current = doc->GetPath(op.path);
  if (current == nullptr)
    return doc->SetPath(op.path, op.value) ? Status::Ok() : CannotCreate(op.path);
  auto sum = AddNumbers(*current, op.value);
  if (!sum)
    return Status::ServerError("cannot apply $inc to a value of non-numeric type " +
                               std::string(current->type_name()) + " at " + op.path);
  doc->SetPath(op.path, *sum);
  return Status::Ok();
}

Status ApplyPush(const UpdateOp& op, Document* doc) {
  const Value* current = doc->GetPath(op.path);
  if (current == nullptr)
    return doc->SetPath(op.path, Array{op.value}) ? Status::Ok() : CannotCreate(op.path);
  if (!current->is_array())
    return Status::ServerError("the field " + op.path + " must be an array but is of type " +
                               std::string(current->type_name()));
  Array arr = *current->as_array();
  arr.push_back(op.value);
  doc->SetPath(op.path, std::move(arr));
  return Status::Ok();
}

Status ApplyPull(const UpdateOp& op, Document* doc) {
  const Value* current = doc->GetPath(op.path);
  if (current == nullptr) return Status::Ok();
  if (!current->is_array())
    return Status::ServerError("cannot apply $pull to a non-array value at " + op.path);
  Array arr = *current->as_array();
  std::erase_if(arr, [&](const Value& e) { return e == op.value; });
  doc->SetPath(op.path, std::move(arr));
  return Status::Ok();
}

Status ApplyOne(const UpdateOp& op, Document* doc, DateTime now) {
  switch (op.kind) {
    case UpdateOp::Kind::kSet:
      return doc->SetPath(op.path, op.value) ? Status::Ok() : CannotCreate(op.path);
    case UpdateOp::Kind::kUnset:
      doc->UnsetPath(op.path);
      return Status::Ok();
    case UpdateOp::Kind::kCurrentDate:
      return doc->SetPath(op.path, now) ? Status::Ok() : CannotCreate(op.path);
    case UpdateOp::Kind::kInc:
      return ApplyInc(op, doc);
    case UpdateOp::Kind::kPush:
      return ApplyPush(op, doc);
    case UpdateOp::Kind::kPull:
      return ApplyPull(op, doc);
  }
  return Status::Ok();
}

}  // namespace

Status Update::ApplyTo(Document* doc, DateTime now) const {
  for (const auto& op : ops_) {
    if (op.path == "_id" && op.kind != UpdateOp::Kind::kSet)
      return Status::InvalidArgument("cannot modify _id");
    if (Status s = ApplyOne(op, doc, now); !s.ok()) return s;
  }
  return Status::Ok();
}

std::string Update::ToString() const {
  std::string out = "{";
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    if (i) out += ", ";
    out += std::string(KindName(ops_[i].kind)) + ": {" + ops_[i].path;
    if (ops_[i].kind != UpdateOp::Kind::kUnset && ops_[i].kind != UpdateOp::Kind::kCurrentDate)
      out += ": " + ops_[i].value.ToString();
    out += "}";
  }
  return out + "}";
}

}  // namespace txn_recovery
