// The `transfer` protocol: two participant steps, a debit and a credit of the same amount.
#include <cmath>

#include "profile_parsing.h"

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

Status ParseBody(const TransferProfile& p, const Document& doc, const Namespace& txn_ns,
                 Transaction* txn) {
  const Value& id = txn->id;
  const Value* source = doc.GetPath(p.source_field);
  const Value* destination = doc.GetPath(p.destination_field);
  const Value* amount = doc.GetPath(p.amount_field);
  if (source == nullptr) return Missing(p.source_field);
  if (destination == nullptr) return Missing(p.destination_field);
  if (amount == nullptr) return Missing(p.amount_field);
  if (!IsUsableId(*source)) return WrongType(p.source_field, *source, "string, number or objectId");
  if (!IsUsableId(*destination))
    return WrongType(p.destination_field, *destination, "string, number or objectId");
  if (!amount->is_number()) return WrongType(p.amount_field, *amount, "number");
  double a = *amount->as_double();
  if (!std::isfinite(a) || a <= 0)
    return Status::Malformed("field '" + p.amount_field +
                             "' must be a positive finite number, is " + amount->ToString());
  // A self-transfer would push the marker on the first step and make the second look
  // already applied: money would vanish. Never act on it.
  if (*source == *destination)
    return Status::Malformed("source and destination are the same participant " +
                             source->ToString());
  auto negated = NegateNumber(*amount);
  if (!negated) return Status::Malformed("amount cannot be negated: " + amount->ToString());

  Namespace accounts{txn_ns.database, p.participants_collection};
  auto make_step = [&](const Value& who, const Value& delta, const Value& inverse,
                       std::string describe, bool debit) {
    ParticipantStep step;
    step.ns = accounts;
    step.target.Eq(p.participant_key, who);
    step.target_may_be_ambiguous = p.participant_key != "_id";
    step.describe = std::move(describe);
    step.marker_field = p.marker_field;
    if (debit && p.require_funds) step.apply_guard.Gte(p.balance_field, *amount);
    step.apply.Inc(p.balance_field, delta).Push(p.marker_field, id);
    step.undo.Inc(p.balance_field, inverse).Pull(p.marker_field, id);
    step.undo_duplicate = step.undo;  // a second $inc is undone like the first
    step.finish.Pull(p.marker_field, id);
    return step;
  };
  txn->steps.push_back(make_step(*source, *negated, *amount,
                                 "debit " + amount->ToString() + " from " + source->ToString(),
                                 /*debit=*/true));
  txn->steps.push_back(make_step(*destination, *amount, *negated,
                                 "credit " + amount->ToString() + " to " + destination->ToString(),
                                 /*debit=*/false));
  return Status::Ok();
}

std::vector<MarkerLocation> MarkerLocationsOf(const TransferProfile& p, const Namespace& txn_ns) {
  return {{Namespace{txn_ns.database, p.participants_collection}, p.marker_field}};
}

}  // namespace txn_recovery
