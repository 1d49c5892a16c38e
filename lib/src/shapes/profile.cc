// What every profile shares: state spellings, the owner filter, the transaction document's
// own fields (id, state, time, lease), and the dispatch to the protocol-specific part.
#include "txn_recovery/shapes/profile.h"

#include <map>
#include <set>

#include "shapes/profile_parsing.h"

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
  return const_cast<StateAliases*>(this)->For(s);
}

std::vector<std::string>& StateAliases::For(TxnState s) noexcept {
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

const std::string& StateAliases::Written(TxnState s) const noexcept {
  static const std::string kNone;
  if (!For(s).empty()) return For(s).front();
  // A profile without a cancelled spelling (tagged-insert) ends its rollbacks in `done`.
  if (s == TxnState::kCancelled && !done.empty()) return done.front();
  return kNone;
}

std::optional<TxnState> StateAliases::Parse(std::string_view spelling) const noexcept {
  for (TxnState s : kAllTxnStates)
    for (const auto& name : For(s))
      if (name == spelling) return s;
  if (IsResuming(spelling)) return TxnState::kPending;
  return std::nullopt;
}

bool StateAliases::IsResuming(std::string_view spelling) const noexcept {
  for (const auto& name : resuming)
    if (name == spelling) return true;
  return false;
}

std::vector<Value> StateAliases::SpellingsOf(std::span<const TxnState> states) const {
  std::vector<Value> out;
  for (TxnState s : states) {
    for (const auto& name : For(s)) out.emplace_back(name);
    if (s == TxnState::kPending)
      for (const auto& name : resuming) out.emplace_back(name);
  }
  return out;
}

std::vector<Value> StateAliases::NonTerminalSpellings() const {
  return SpellingsOf(kInFlightTxnStates);
}
std::vector<Value> StateAliases::TerminalSpellings() const {
  return SpellingsOf({TxnState::kDone, TxnState::kCancelled});
}
std::vector<Value> StateAliases::AllSpellings() const {
  return SpellingsOf(kAllTxnStates);
}

ConfigProblems StateAliases::Validate(std::initializer_list<TxnState> may_be_empty) const {
  ConfigProblems out;
  std::map<std::string, TxnState> seen;  // spelling -> the first state that has it
  auto key = [](TxnState s) { return "states." + std::string(TxnStateName(s)); };
  for (TxnState s : kAllTxnStates) {
    bool optional = false;
    for (TxnState o : may_be_empty) optional = optional || o == s;
    if (For(s).empty() && !optional) out.push_back({key(s), "has no spelling"});
    for (const auto& name : For(s)) {
      if (name.empty()) {
        out.push_back({key(s), "holds an empty spelling"});
        continue;
      }
      auto [first, fresh] = seen.emplace(name, s);
      if (!fresh)
        out.push_back({key(s),
                       "spelling '" + name + "' is used by two states (also " +
                           std::string(TxnStateName(first->second)) + ")",
                       {key(first->second)}});
    }
  }
  for (const auto& name : resuming) {
    if (name.empty()) {
      out.push_back({"states.resuming", "holds an empty spelling"});
      continue;
    }
    auto [first, fresh] = seen.emplace(name, TxnState::kPending);
    if (!fresh)
      out.push_back({"states.resuming",
                     "spelling '" + name + "' is used by two states (also " +
                         std::string(TxnStateName(first->second)) + ")",
                     {key(first->second)}});
  }
  return out;
}

ConfigProblems OwnerFilter::Validate() const {
  ConfigProblems out;
  (void)FieldPathOk("owner_field", field, &out);  // the problem, if any, is in `out`
  for (const auto& app : applications)
    if (app.empty()) out.push_back({"applications", "holds an empty name"});
  return out;
}

Filter OwnerFilter::Condition() const {
  Filter f;
  if (!active()) return f;
  std::vector<Value> owners(applications.begin(), applications.end());
  // {field: {$in: [..., null]}} also matches documents without the field.
  if (include_unowned) owners.emplace_back(Null{});
  f.In(field, std::move(owners));
  return f;
}

Profile Profile::Transfer() {
  return Profile{};
}

Profile Profile::Operations() {
  Profile p;
  p.state_field = "status";
  p.time_field = "lastModified";
  p.states.initial = {"new"};
  p.states.cancelled = {"canceled", "cancelled"};
  p.protocol = OperationsProfile{};
  return p;
}

Profile Profile::TaggedInsert() {
  Profile p;
  p.state_field = "status";
  p.time_field = "lastUpdate";
  p.states.initial = {};
  p.states.pending = {"started"};
  p.states.applied = {"finishing"};
  p.states.done = {"done"};
  p.states.canceling = {"rollback"};
  p.states.cancelled = {};
  p.states.resuming = {};  // a started transaction is never resumed (tagged inserts)
  p.protocol = TaggedInsertProfile{};
  return p;
}

Profile Profile::Steps() {
  Profile p;
  p.protocol = StepsProfile{};
  return p;
}

std::optional<Profile> Profile::Named(std::string_view kind) {
  if (kind == "steps") return Steps();
  if (kind == "transfer") return Transfer();
  if (kind == "operations") return Operations();
  if (kind == "tagged-insert") return TaggedInsert();
  return std::nullopt;
}

std::string_view MissingTimeName(MissingTime m) noexcept {
  switch (m) {
    case MissingTime::kQuarantine:
      return "quarantine";
    case MissingTime::kObjectIdTime:
      return "object_id";
    case MissingTime::kFirstSeen:
      return "first_seen";
  }
  return "?";
}

std::optional<MissingTime> ParseMissingTime(std::string_view name) noexcept {
  for (auto m : {MissingTime::kQuarantine, MissingTime::kObjectIdTime, MissingTime::kFirstSeen})
    if (MissingTimeName(m) == name) return m;
  return std::nullopt;
}

bool Profile::ResumesPending() const {
  return std::visit(
      [](const auto& p) { return ProtocolTraits<std::decay_t<decltype(p)>>::kResumesPending; },
      protocol);
}

MissingTime Profile::DefaultMissingTime(bool time_field_named) const {
  const bool always = std::visit(
      [](const auto& p) { return ProtocolTraits<std::decay_t<decltype(p)>>::kAlwaysWritesTime; },
      protocol);
  return time_field_named || always ? MissingTime::kQuarantine : MissingTime::kFirstSeen;
}

std::string_view Profile::kind() const {
  return std::visit([](const auto& p) { return ProtocolTraits<std::decay_t<decltype(p)>>::kName; },
                    protocol);
}

std::vector<MarkerLocation> Profile::MarkerLocations(const Namespace& txn_ns) const {
  return std::visit([&](const auto& p) { return MarkerLocationsOf(p, txn_ns); }, protocol);
}

std::vector<TxnState> Profile::OptionalStates() const {
  return std::visit(
      [](const auto& p) { return ProtocolTraits<std::decay_t<decltype(p)>>::OptionalStates(); },
      protocol);
}

ConfigProblems Profile::Validate() const {
  ConfigProblems out;
  (void)FieldPathOk("state_field", state_field, &out);  // each check appends its problem
  (void)FieldPathOk("time_field", time_field, &out);
  if (state_field == time_field)
    out.push_back(
        {"time_field", "must differ from state_field ('" + state_field + "')", {"state_field"}});
  auto append = [&out](ConfigProblems more) {
    out.insert(out.end(), std::make_move_iterator(more.begin()),
               std::make_move_iterator(more.end()));
  };
  append(owner.Validate());
  std::vector<TxnState> optional = OptionalStates();
  switch (optional.size()) {  // Validate takes an initializer_list
    case 0:
      append(states.Validate());
      break;
    case 1:
      append(states.Validate({optional[0]}));
      break;
    default:
      append(states.Validate({optional[0], optional[1]}));
      break;
  }
  if (ResumesPending() && states.resuming.empty())
    out.push_back({"states.resuming",
                   "has no spelling: the daemon writes it when it takes a pending transaction "
                   "over to resume it"});
  append(std::visit([](const auto& p) { return p.Validate(); }, protocol));
  return out;
}

Status CheckFieldName(std::string_view key, const std::string& value) {
  if (value.empty()) return Status::InvalidArgument(std::string(key) + " is empty");
  if (value[0] == '$')
    return Status::InvalidArgument(std::string(key) + " must not start with '$'");
  if (value.front() == '.' || value.back() == '.' || value.find("..") != std::string::npos)
    return Status::InvalidArgument(std::string(key) + " '" + value + "' is not a field path");
  return Status::Ok();
}

Status CheckPlainFieldName(std::string_view key, const std::string& value) {
  if (Status s = CheckFieldName(key, value); !s.ok()) return s;
  if (value.find('.') != std::string::npos)
    return Status::InvalidArgument(std::string(key) + " '" + value +
                                   "' must be a plain field name (no dots)");
  return Status::Ok();
}

Status CheckCollectionName(std::string_view key, const std::string& value) {
  if (value.empty()) return Status::InvalidArgument(std::string(key) + " holds an empty name");
  if (value.find('$') != std::string::npos || value.find('\0') != std::string::npos)
    return Status::InvalidArgument(std::string(key) + " '" + value + "' is not a collection name");
  if (value.rfind("system.", 0) == 0)
    return Status::InvalidArgument(std::string(key) + " '" + value + "' is a system collection");
  return Status::Ok();
}

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

Status Profile::Parse(const Document& doc, const Namespace& txn_ns, std::string_view lease_field,
                      Transaction* txn) const {
  *txn = Transaction{};
  const Value* id = doc.Get("_id");
  if (id == nullptr) return Missing("_id");
  if (!IsUsableId(*id)) return WrongType("_id", *id, "string, number or objectId");
  txn->id = *id;

  const Value* state = doc.GetPath(state_field);
  if (state == nullptr) return Missing(state_field);
  if (!state->is_string()) return WrongType(state_field, *state, "string");
  auto parsed = states.Parse(*state->as_string());
  if (!parsed) return Status::Malformed("unknown state '" + *state->as_string() + "'");
  txn->state = *parsed;
  txn->state_as_read = *state;
  txn->taken_over = states.IsResuming(*state->as_string());

  // Only the daemon writes its sub-document; anything else there is not ours to guess at
  // (and no path below it could be written).
  const RecoveryPaths paths{std::string(lease_field)};
  if (Status s = RecoveryRecord::Read(doc, paths, &txn->record); !s.ok()) return s;

  if (const Value* time = doc.GetPath(time_field)) {
    if (!time->is_datetime()) return WrongType(time_field, *time, "date");
    txn->last_modified = *time->as_datetime();
    txn->time_as_read = *time;
  } else if (missing_time == MissingTime::kObjectIdTime) {
    if (!id->is_object_id())
      return Status::Malformed("field '" + time_field +
                               "' is missing and _id is not an ObjectId to take the time from");
    txn->last_modified = DateTime{id->as_object_id()->CreationMillis()};
    txn->age_source = AgeSource::kObjectId;
  } else if (missing_time == MissingTime::kFirstSeen) {
    txn->age_source = txn->record.first_seen ? AgeSource::kFirstSeen : AgeSource::kNotYetSeen;
    if (txn->record.first_seen) txn->last_modified = *txn->record.first_seen;
  } else {
    return Missing(time_field);
  }

  // A profile that ends rollbacks in `done` (tagged inserts) tells them apart only by the
  // daemon's record; late writes are undone in the direction the transaction went.
  if (txn->state == TxnState::kDone && states.cancelled.empty()) {
    if (txn->record.outcome == RecoveryPaths::kRolledBack) {
      txn->state = TxnState::kCancelled;
    } else if (txn->record.outcome != RecoveryPaths::kCommitted) {
      txn->outcome_unknown = true;
    }
  }
  txn->resumable = ResumesPending();

  return std::visit([&](const auto& p) { return ParseBody(p, doc, txn_ns, txn); }, protocol);
}

}  // namespace txn_recovery

namespace txn_recovery {

std::string DescribeAgeSource(const Transaction& txn, const Profile& p,
                              std::string_view lease_field) {
  const std::string absent = "; '" + p.time_field + "' is absent)";
  switch (txn.age_source) {
    case AgeSource::kTimeField:
      return p.time_field;
    case AgeSource::kObjectId:
      return "_id (ObjectId creation time" + absent;
    case AgeSource::kFirstSeen:
      return "first seen by the daemon (" + RecoveryPaths(std::string(lease_field)).FirstSeen() +
             absent;
    case AgeSource::kNotYetSeen:
      return "not seen by a sweep yet (the next sweep stamps " +
             RecoveryPaths(std::string(lease_field)).FirstSeen() + absent;
  }
  return "?";
}

}  // namespace txn_recovery
