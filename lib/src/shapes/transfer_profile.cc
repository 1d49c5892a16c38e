// The `transfer` protocol: two participant steps, a debit and a credit of the same amount,
// described like any application's steps (StepsProfile).
#include "shapes/profile_parsing.h"

namespace txn_recovery {

ConfigProblems TransferProfile::Validate() const {
  ConfigProblems out;
  const std::pair<const char*, const std::string*> names[] = {
      {"source_field", &source_field},   {"destination_field", &destination_field},
      {"amount_field", &amount_field},   {"participant_key", &participant_key},
      {"balance_field", &balance_field}, {"marker_field", &marker_field},
  };
  for (const auto& [key, value] : names) (void)FieldPathOk(key, *value, &out);  // appends
  (void)CollectionNameOk("participants", participants_collection, &out);        // appends
  if (balance_field == marker_field)
    out.push_back({"marker_field",
                   "must differ from balance_field ('" + balance_field + "')",
                   {"balance_field"}});
  if (participant_key == marker_field || participant_key == balance_field)
    out.push_back({"participant_key",
                   "must differ from balance_field and marker_field",
                   {"balance_field", "marker_field"}});
  return out;
}

StepsProfile TransferProfile::AsSteps() const {
  auto step = [&](const std::string& key_path, bool debit) {
    StepSpec s;
    s.collection = participants_collection;
    s.key = participant_key;
    s.key_path = key_path;
    s.inc.push_back({balance_field, amount_field, /*negate=*/debit});
    if (debit && require_funds)
      s.guards.push_back({balance_field, StepSpec::GuardOp::kGte, amount_field});
    s.label = debit ? "debit {amount} from {key}" : "credit {amount} to {key}";
    s.positive_amounts = true;
    return s;
  };
  StepsProfile out;
  out.marker_field = marker_field;
  out.steps = {step(source_field, /*debit=*/true), step(destination_field, /*debit=*/false)};
  return out;
}

// A transfer is its description: the same parser, builder and guards as any described
// shape. A self-transfer names one participant twice, which the description refuses like
// any two steps on one document (the marker of the first would make the second look done).
Status ParseBody(const TransferProfile& p, const Document& doc, const Namespace& txn_ns,
                 Transaction* txn) {
  return ParseBody(p.AsSteps(), doc, txn_ns, txn);
}

std::vector<MarkerLocation> MarkerLocationsOf(const TransferProfile& p, const Namespace& txn_ns) {
  return {{Namespace{txn_ns.database, p.participants_collection}, p.marker_field}};
}

}  // namespace txn_recovery
