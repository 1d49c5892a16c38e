// The `operations` protocol (mongoose operations): one participant step per listed operation, each
// with the exact inverse the operation itself declares, built by the one step builder
// (steps.h) like every described step.
#include <map>
#include <utility>

#include "shapes/profile_parsing.h"
#include "shapes/steps.h"

namespace txn_recovery {
namespace {

class OperationParser {
 public:
  OperationParser(const OperationsProfile& p, const Namespace& txn_ns, const Value& txn_id)
      : p_(p), txn_ns_(txn_ns), txn_id_(txn_id) {}

  Status Parse(const Value& op, std::size_t index, ParticipantStep* step) {
    where_ = p_.operations_field + "[" + std::to_string(index) + "]";
    const Document* d = op.as_document();
    if (d == nullptr) return WrongType(where_, op, "object");
    for (const auto& [k, v] : *d) {
      if (k != p_.collection_key && k != p_.id_key && k != p_.inc_key && k != p_.set_key &&
          k != p_.previous_key)
        return Status::Malformed(where_ + " has the unknown key '" + k +
                                 "' (an operation without a known exact inverse)");
    }
    const Value* inc = d->Get(p_.inc_key);
    const Value* set = d->Get(p_.set_key);
    const Value* previous = d->Get(p_.previous_key);
    if (inc == nullptr && set == nullptr)
      return Status::Malformed(where_ + " has neither '" + p_.inc_key + "' nor '" + p_.set_key +
                               "'");
    if (previous != nullptr && set == nullptr)
      return Status::Malformed(where_ + " has '" + p_.previous_key + "' without '" + p_.set_key +
                               "'");
    steps::Change change;
    std::string name;
    const Value* id = nullptr;
    if (Status s = ParseTarget(*d, &name, &id); !s.ok()) return s;
    change.ns = Namespace{txn_ns_.database, name};
    change.key_value = *id;
    change.marker_field = p_.marker_field;
    if (inc != nullptr)
      if (Status s = ParseIncs(*inc, &change); !s.ok()) return s;
    if (set != nullptr)
      if (Status s = ParseSets(*set, previous, inc, &change); !s.ok()) return s;
    return steps::BuildStep(change, txn_id_, step);
  }

 private:
  // The collection (one the watch allows) and the _id of the document the operation changes.
  Status ParseTarget(const Document& d, std::string* name, const Value** id) const {
    const Value* coll = d.Get(p_.collection_key);
    if (coll == nullptr) return Missing(where_ + "." + p_.collection_key);
    if (!coll->is_string()) return WrongType(where_ + "." + p_.collection_key, *coll, "string");
    *name = *coll->as_string();
    if (Status s = CheckCollectionName(where_ + "." + p_.collection_key, *name); !s.ok())
      return Status::Malformed(s.message());
    if (*name == txn_ns_.collection)
      return Status::Malformed(where_ + " changes the transactions collection itself");
    if (!p_.collections.empty()) {
      bool allowed = false;
      for (const auto& c : p_.collections) allowed = allowed || c == *name;
      if (!allowed)
        return Status::Malformed(where_ + " names the collection '" + *name +
                                 "', which is not one of the watch's collections");
    }
    *id = d.Get(p_.id_key);
    if (*id == nullptr) return Missing(where_ + "." + p_.id_key);
    if (!IsUsableId(**id))
      return WrongType(where_ + "." + p_.id_key, **id, "string, number or objectId");
    return Status::Ok();
  }

  // `inc: {field: amount, ...}`: $inc, undone by the negated $inc.
  Status ParseIncs(const Value& inc, steps::Change* change) const {
    const Document* incs = inc.as_document();
    if (incs == nullptr) return WrongType(where_ + "." + p_.inc_key, inc, "object");
    if (incs->empty()) return Status::Malformed(where_ + "." + p_.inc_key + " is empty");
    for (const auto& [field, amount] : *incs) {
      const std::string path = where_ + "." + p_.inc_key + "." + field;
      if (Status s = CheckField(path, field); !s.ok()) return s;
      change->incs.push_back({field, amount, path});
    }
    return Status::Ok();
  }

  // `set: {field: value}` with `previous: {field: old}`; a null previous means the field
  // was absent.
  Status ParseSets(const Value& set, const Value* previous, const Value* inc,
                   steps::Change* change) const {
    const Document* sets = set.as_document();
    if (sets == nullptr) return WrongType(where_ + "." + p_.set_key, set, "object");
    if (sets->empty()) return Status::Malformed(where_ + "." + p_.set_key + " is empty");
    if (previous == nullptr)
      return Status::Malformed(where_ + " has '" + p_.set_key + "' without '" + p_.previous_key +
                               "': its inverse is unknown");
    const Document* prev = previous->as_document();
    if (prev == nullptr) return WrongType(where_ + "." + p_.previous_key, *previous, "object");
    for (const auto& [field, unused] : *prev)
      if (sets->Get(field) == nullptr)
        return Status::Malformed(where_ + "." + p_.previous_key + "." + field +
                                 " has no counterpart in '" + p_.set_key + "'");
    for (const auto& [field, value] : *sets) {
      const std::string path = where_ + "." + p_.set_key + "." + field;
      if (Status s = CheckField(path, field); !s.ok()) return s;
      if (inc != nullptr && inc->as_document()->Get(field) != nullptr)
        return Status::Malformed(path + " is also incremented by the same operation");
      const Value* before = prev->Get(field);
      if (before == nullptr)
        return Status::Malformed(where_ + "." + p_.previous_key + "." + field +
                                 " is missing: the inverse of setting it is unknown");
      change->sets.push_back({field, value, *before, path});
    }
    return Status::Ok();
  }

  Status CheckField(const std::string& path, const std::string& field) const {
    if (field.empty()) return Status::Malformed(path + ": empty field name");
    if (field[0] == '$') return Status::Malformed(path + ": '$' field names are not plain");
    if (field.find('.') != std::string::npos)
      return Status::Malformed(path + ": dotted field names are not plain");
    if (field == "_id") return Status::Malformed(path + ": _id cannot be changed");
    if (field == p_.marker_field)
      return Status::Malformed(path + ": changes the marker field '" + p_.marker_field + "'");
    return Status::Ok();
  }

  const OperationsProfile& p_;
  const Namespace& txn_ns_;
  const Value& txn_id_;
  std::string where_;
};

}  // namespace

ConfigProblems OperationsProfile::Validate() const {
  ConfigProblems out;
  const std::pair<const char*, const std::string*> names[] = {
      {"collection_key", &collection_key},
      {"id_key", &id_key},
      {"inc_key", &inc_key},
      {"set_key", &set_key},
      {"previous_key", &previous_key},
      {"marker_field", &marker_field},
  };
  for (const auto& [key, value] : names) (void)PlainFieldOk(key, *value, &out);  // appends
  (void)FieldPathOk("operations_field", operations_field, &out);                 // appends
  std::map<std::string, std::string> keys;  // value -> the operation key that took it
  for (const auto& [key, value] : names) {
    if (std::string(key) == "marker_field") continue;
    auto [it, fresh] = keys.emplace(*value, key);
    if (!fresh)
      out.push_back({key, "'" + *value + "' names the same key as " + it->second, {it->second}});
  }
  if (marker_field == "_id") out.push_back({"marker_field", "cannot be _id"});
  for (const auto& c : collections) (void)CollectionNameOk("allowed_collections", c, &out);
  if (max_operations < 1) out.push_back({"max_operations", "must be at least 1"});
  return out;
}

Status ParseBody(const OperationsProfile& p, const Document& doc, const Namespace& txn_ns,
                 Transaction* txn) {
  const Value* ops = doc.GetPath(p.operations_field);
  if (ops == nullptr) return Missing(p.operations_field);
  const Array* list = ops->as_array();
  if (list == nullptr) return WrongType(p.operations_field, *ops, "array");
  if (static_cast<std::int64_t>(list->size()) > p.max_operations)
    return Status::Malformed("field '" + p.operations_field + "' lists " +
                             std::to_string(list->size()) + " operations, more than " +
                             std::to_string(p.max_operations));
  OperationParser parser(p, txn_ns, txn->id);
  for (std::size_t i = 0; i < list->size(); ++i) {
    ParticipantStep step;
    if (Status s = parser.Parse((*list)[i], i, &step); !s.ok()) return s;
    txn->steps.push_back(std::move(step));
  }
  return steps::CheckDistinctTargets(txn->steps, p.operations_field);
}

// Operations may name any collection; the scan can only look where the configuration says
// they go (allowed_collections). Without that list it has nowhere to look.
std::vector<MarkerLocation> MarkerLocationsOf(const OperationsProfile& p, const Namespace& txn_ns) {
  std::vector<MarkerLocation> out;
  for (const auto& c : p.collections) out.push_back({{txn_ns.database, c}, p.marker_field});
  return out;
}

}  // namespace txn_recovery
