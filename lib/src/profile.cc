#include "txn_recovery/profile.h"

#include <cmath>
#include <set>

namespace txn_recovery {

std::string_view TxnStateName(TxnState s) noexcept {
  switch (s) {
    case TxnState::kInitial:
      return "initial";
    case TxnState::kPending:
      return "pending";
    case TxnState::kApplied:
      return "applied";
    case TxnState::kDone:
      return "done";
    case TxnState::kCanceling:
      return "canceling";
    case TxnState::kCancelled:
      return "cancelled";
  }
  return "?";
}

const std::vector<std::string>& StateAliases::For(TxnState s) const noexcept {
  switch (s) {
    case TxnState::kInitial:
      return initial;
    case TxnState::kPending:
      return pending;
    case TxnState::kApplied:
      return applied;
    case TxnState::kDone:
      return done;
    case TxnState::kCanceling:
      return canceling;
    case TxnState::kCancelled:
      return cancelled;
  }
  return initial;
}

namespace {
constexpr TxnState kAllStates[] = {TxnState::kInitial, TxnState::kPending,   TxnState::kApplied,
                                   TxnState::kDone,    TxnState::kCanceling, TxnState::kCancelled};

std::vector<Value> Spellings(const StateAliases& a, bool terminal, bool non_terminal) {
  std::vector<Value> out;
  for (TxnState s : kAllStates) {
    if (IsTerminal(s) ? !terminal : !non_terminal) continue;
    for (const auto& name : a.For(s)) out.emplace_back(name);
  }
  return out;
}
}  // namespace

std::optional<TxnState> StateAliases::Parse(std::string_view spelling) const noexcept {
  for (TxnState s : kAllStates)
    for (const auto& name : For(s))
      if (name == spelling) return s;
  return std::nullopt;
}

std::vector<Value> StateAliases::NonTerminalSpellings() const {
  return Spellings(*this, false, true);
}
std::vector<Value> StateAliases::TerminalSpellings() const {
  return Spellings(*this, true, false);
}
std::vector<Value> StateAliases::AllSpellings() const {
  return Spellings(*this, true, true);
}

Status StateAliases::Validate() const {
  std::set<std::string> seen;
  for (TxnState s : kAllStates) {
    if (For(s).empty())
      return Status::InvalidArgument("state '" + std::string(TxnStateName(s)) +
                                     "' has no spelling");
    for (const auto& name : For(s)) {
      if (name.empty()) return Status::InvalidArgument("a state spelling is empty");
      if (!seen.insert(name).second)
        return Status::InvalidArgument("state spelling '" + name + "' is used by two states");
    }
  }
  return Status::Ok();
}

Status TransferProfile::Validate() const {
  const std::pair<const char*, const std::string*> names[] = {
      {"state_field", &state_field},         {"time_field", &time_field},
      {"source_field", &source_field},       {"destination_field", &destination_field},
      {"amount_field", &amount_field},       {"participants", &participants_collection},
      {"participant_key", &participant_key}, {"balance_field", &balance_field},
      {"marker_field", &marker_field},
  };
  for (const auto& [key, value] : names) {
    if (value->empty()) return Status::InvalidArgument(std::string(key) + " is empty");
    if ((*value)[0] == '$')
      return Status::InvalidArgument(std::string(key) + " must not start with '$'");
  }
  if (balance_field == marker_field)
    return Status::InvalidArgument("balance_field and marker_field must differ");
  return states.Validate();
}

namespace {

Status Missing(std::string_view field) {
  return Status::Malformed("field '" + std::string(field) + "' is missing");
}

Status WrongType(std::string_view field, const Value& v, std::string_view expected) {
  return Status::Malformed("field '" + std::string(field) + "' has type " +
                           std::string(v.type_name()) + ", expected " + std::string(expected));
}

bool IsUsableId(const Value& v) {
  return v.is_string() || v.is_object_id() || v.is_number();
}

}  // namespace

Status ParseTransfer(const Document& doc, const TransferProfile& p, const Namespace& txn_ns,
                     std::string_view lease_field, Transaction* txn) {
  const Value* id = doc.Get("_id");
  if (id == nullptr) return Missing("_id");
  if (!IsUsableId(*id)) return WrongType("_id", *id, "string, number or objectId");
  txn->id = *id;

  const Value* state = doc.GetPath(p.state_field);
  if (state == nullptr) return Missing(p.state_field);
  if (!state->is_string()) return WrongType(p.state_field, *state, "string");
  auto parsed = p.states.Parse(*state->as_string());
  if (!parsed) return Status::Malformed("unknown state '" + *state->as_string() + "'");
  txn->state = *parsed;
  txn->state_as_read = *state;

  const Value* time = doc.GetPath(p.time_field);
  if (time == nullptr) return Missing(p.time_field);
  if (!time->is_datetime()) return WrongType(p.time_field, *time, "date");
  txn->last_modified = *time->as_datetime();
  txn->time_as_read = *time;

  txn->lease_owner.reset();
  txn->lease_expires.reset();
  if (const Value* lease = doc.GetPath(std::string(lease_field) + ".lease")) {
    const Document* ld = lease->as_document();
    if (ld == nullptr) return WrongType(std::string(lease_field) + ".lease", *lease, "object");
    if (const Value* o = ld->Get("owner"); o && o->is_string()) txn->lease_owner = *o->as_string();
    if (const Value* e = ld->Get("expires"); e && e->is_datetime())
      txn->lease_expires = *e->as_datetime();
  }

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
    step.describe = std::move(describe);
    step.marker_field = p.marker_field;
    if (debit && p.require_funds) step.apply_guard.Gte(p.balance_field, *amount);
    step.apply.Inc(p.balance_field, delta).Push(p.marker_field, *id);
    step.undo.Inc(p.balance_field, inverse).Pull(p.marker_field, *id);
    step.finish.Pull(p.marker_field, *id);
    return step;
  };
  txn->steps.clear();
  txn->steps.push_back(make_step(*source, *negated, *amount,
                                 "debit " + amount->ToString() + " from " + source->ToString(),
                                 /*debit=*/true));
  txn->steps.push_back(make_step(*destination, *amount, *negated,
                                 "credit " + amount->ToString() + " to " + destination->ToString(),
                                 /*debit=*/false));
  return Status::Ok();
}

}  // namespace txn_recovery
