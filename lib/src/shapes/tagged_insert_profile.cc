// The `tagged-insert` protocol (tagged inserts): no participant steps, one tagged set per tagged
// collection. The transaction document itself carries nothing but its state and time.
#include <set>

#include "shapes/profile_parsing.h"

namespace txn_recovery {

ConfigProblems TaggedInsertProfile::Validate() const {
  ConfigProblems out;
  if (tagged_collections.empty())
    out.push_back({"tagged_collections", "must name the collections the application inserts into"});
  std::set<std::string> seen;
  for (const auto& c : tagged_collections)
    if (CollectionNameOk("tagged_collections", c, &out) && !seen.insert(c).second)
      out.push_back({"tagged_collections", "lists '" + c + "' twice"});
  (void)FieldPathOk("tag_field", tag_field, &out);  // each check appends its problem
  (void)FieldPathOk("valid_field", valid_field, &out);
  if (tag_field == "_id") out.push_back({"tag_field", "cannot be _id"});
  if (valid_field == "_id") out.push_back({"valid_field", "cannot be _id"});
  if (tag_field == valid_field)
    out.push_back(
        {"valid_field", "must differ from tag_field ('" + tag_field + "')", {"tag_field"}});
  return out;
}

Status ParseBody(const TaggedInsertProfile& p, const Document& /*doc*/, const Namespace& txn_ns,
                 Transaction* txn) {
  for (const auto& c : p.tagged_collections) {
    // Deleting "every document tagged with the transaction" there would delete the
    // transaction documents that carry such a field.
    if (c == txn_ns.collection)
      return Status::Malformed("tagged collection '" + c + "' is the transactions collection");
    TaggedSet set;
    set.ns = Namespace{txn_ns.database, c};
    set.members.Eq(p.tag_field, txn->id);
    set.finish.Unset(p.tag_field).Set(p.valid_field, true);
    set.describe = "documents of " + c + " tagged " + p.tag_field + ": " + txn->id.ToString();
    txn->tagged_sets.push_back(std::move(set));
  }
  return Status::Ok();
}

std::vector<MarkerLocation> MarkerLocationsOf(const TaggedInsertProfile& p,
                                              const Namespace& txn_ns) {
  std::vector<MarkerLocation> out;
  for (const auto& c : p.tagged_collections)
    out.push_back({{txn_ns.database, c}, p.tag_field, /*scalar=*/true});
  return out;
}

}  // namespace txn_recovery
