// The `tagged-insert` protocol (seed 003): no participant steps, one tagged set per tagged
// collection. The transaction document itself carries nothing but its state and time.
#include <set>

#include "profile_parsing.h"

namespace txn_recovery {

Status TaggedInsertProfile::Validate() const {
  if (tagged_collections.empty())
    return Status::InvalidArgument(
        "tagged_collections must name the collections the application inserts into");
  std::set<std::string> seen;
  for (const auto& c : tagged_collections) {
    if (Status s = CheckCollectionName("tagged_collections", c); !s.ok()) return s;
    if (!seen.insert(c).second)
      return Status::InvalidArgument("tagged_collections lists '" + c + "' twice");
  }
  if (Status s = CheckFieldName("tag_field", tag_field); !s.ok()) return s;
  if (Status s = CheckFieldName("valid_field", valid_field); !s.ok()) return s;
  if (tag_field == "_id" || valid_field == "_id")
    return Status::InvalidArgument("tag_field and valid_field cannot be _id");
  if (tag_field == valid_field)
    return Status::InvalidArgument("tag_field and valid_field must differ");
  return Status::Ok();
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
