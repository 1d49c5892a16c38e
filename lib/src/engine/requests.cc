#include "engine/requests.h"

#include "base/amounts.h"
#include "txn_recovery/engine/candidates.h"

namespace txn_recovery::requests {
namespace {

// `filter` and, for each $inc of `update`, the condition that keeps it exact on the field
// as `participant` held it when read.
Filter GuardIncrements(Filter filter, const Update& update, const Document& participant) {
  for (const UpdateOp& op : update.ops())
    if (op.kind == UpdateOp::Kind::kInc)
      filter.And(ExactIncrementGuard(op.path, participant.GetPath(op.path), op.value));
  return filter;
}

// The transaction still in the spelling `from` and still under the lease this claim took:
// the compare-and-set of every state move the engine makes.
Filter FromUnderLease(const Value& txn_id, const Value& from, const Profile& profile,
                      const RecoveryPaths& paths, const LeaseTerms& lease) {
  Filter f;
  f.Eq("_id", txn_id)
      .Eq(profile.state_field, from)
      .Eq(paths.LeaseOwner(), lease.owner)
      .Eq(paths.LeaseClaim(), lease.claim);
  return f;
}

// How a transaction ended, recorded by the move that ends it (its lease, if any, removed).
void RecordEnd(Update* u, TxnState to, Action action, const RecoveryPaths& paths,
               const LeaseTerms& lease) {
  u->Unset(paths.Lease())
      .Set(paths.ResolvedBy(), lease.owner)
      .Set(paths.ResolvedClaim(), lease.claim)
      .Set(paths.ResolvedAction(), std::string(ActionName(action)))
      .Set(paths.Outcome(), std::string(to == TxnState::kDone ? RecoveryPaths::kCommitted
                                                              : RecoveryPaths::kRolledBack))
      .CurrentDate(paths.ResolvedAt());
}

}  // namespace

std::optional<ClaimMove> ClaimMoveOf(const Transaction& txn, Action action, bool nothing_to_write,
                                     const Profile& profile) {
  const auto to = [&](TxnState s) { return ClaimMove{Value(profile.states.Written(s)), s}; };
  switch (action) {
    case Action::kCancel:
      return to(TxnState::kCancelled);
    case Action::kRollback:
      return to(nothing_to_write ? TxnState::kCancelled : TxnState::kCanceling);
    case Action::kFinish:
      if (nothing_to_write) return to(TxnState::kDone);
      return std::nullopt;
    case Action::kResume:
      if (txn.taken_over || profile.states.resuming.empty()) return std::nullopt;
      return ClaimMove{Value(profile.states.resuming.front()), TxnState::kPending};
    default:
      return std::nullopt;
  }
}

Document NewMember(const std::string& id) {
  return Document{{member_record::kId, id}, {member_record::kHeartbeat, DateTime{0}}};
}

UpdateRequest MemberHeartbeat(const MemberRecord& self) {
  Array watches;
  for (const std::string& w : self.watches) watches.emplace_back(w);
  Update u;
  u.Set(member_record::kHost, self.host)
      .Set(member_record::kVersion, self.version)
      .Set(member_record::kWatches, std::move(watches))
      .Set(member_record::kFormat, RecoveryRecord::kFormat)
      .CurrentDate(member_record::kHeartbeat);
  return {Member(self.id), std::move(u)};
}

Filter ExpiredMembers(DateTime cutoff) {
  return Filter().Lt(member_record::kHeartbeat, cutoff);
}

Filter LiveMembers(DateTime cutoff) {
  return Filter().Gte(member_record::kHeartbeat, cutoff);
}

Filter Member(const std::string& id) {
  return Filter().Eq(member_record::kId, id);
}

namespace {
Value OrphanScanId(const std::string& collection) {
  return Value(Document{{"orphanScan", collection}});
}
}  // namespace

Document NewOrphanScan(const std::string& collection) {
  return Document{{"_id", OrphanScanId(collection)}, {"claimedAt", DateTime{0}}};
}

UpdateRequest OrphanScanClaim(const std::string& collection, const std::string& member,
                              DateTime cutoff) {
  return {Filter().Eq("_id", OrphanScanId(collection)).Lt("claimedAt", cutoff),
          Update().Set("claimedBy", member).CurrentDate("claimedAt")};
}

Filter Fenced(Filter filter, const LeaseTerms& lease) {
  filter.ServerNowBefore(lease.fence);
  return filter;
}

UpdateRequest Claim(const Transaction& txn, Action action, bool nothing_to_write,
                    const Profile& profile, const RecoveryPaths& paths, const LeaseTerms& lease) {
  Filter f;
  f.Eq("_id", txn.id).Eq(profile.state_field, txn.state_as_read);
  if (txn.time_as_read && txn.time_as_read->as_datetime() != nullptr) {
    // Within the millisecond read, not equal to it: a server may keep $currentDate finer
    // than the milliseconds a BSON date carries (the embedded test server does), and the
    // value read back then never equals the stored one.
    const DateTime read = *txn.time_as_read->as_datetime();
    f.Gte(profile.time_field, read).Lt(profile.time_field, DateTime{read.millis + 1});
  } else if (txn.time_as_read) {
    f.Eq(profile.time_field, *txn.time_as_read);
  } else {
    f.NotExists(profile.time_field);
  }
  f.NotExists(paths.Quarantine());
  f.And(profile.owner.Condition());
  // Another daemon's lease is taken over only once it has expired on the server's clock,
  // compared by the server itself. Our own live lease is not taken either: two workers of
  // one process must not drive one transaction at once any more than two hosts.
  f.AnyOf({Filter().NotExists(paths.Lease()), Filter().BeforeServerNow(paths.LeaseExpires())});
  Update u;
  const std::optional<ClaimMove> move = ClaimMoveOf(txn, action, nothing_to_write, profile);
  if (move) u.Set(profile.state_field, move->spelling).CurrentDate(profile.time_field);
  if (move && IsTerminal(move->state)) {
    RecordEnd(&u, move->state, action, paths, lease);
  } else {
    u.Set(paths.Lease(), Document{{RecoveryPaths::kLeaseOwner, lease.owner},
                                  {RecoveryPaths::kLeaseExpires, lease.expires},
                                  {RecoveryPaths::kLeaseClaim, lease.claim}});
  }
  u.Set(paths.Format(), RecoveryRecord::kFormat);
  return {std::move(f), std::move(u)};
}

UpdateRequest StampFirstSeen(const Value& txn_id, const Profile& profile,
                             const RecoveryPaths& paths) {
  Filter f;
  f.Eq("_id", txn_id).And(NotYetSeen(profile, paths));
  return {std::move(f),
          Update().CurrentDate(paths.FirstSeen()).Set(paths.Format(), RecoveryRecord::kFormat)};
}

UpdateRequest Release(const Value& txn_id, const RecoveryPaths& paths, const LeaseTerms& lease) {
  Filter f;
  f.Eq("_id", txn_id).Eq(paths.LeaseOwner(), lease.owner).Eq(paths.LeaseClaim(), lease.claim);
  return {std::move(f), Update().Unset(paths.Lease())};
}

UpdateRequest Transition(const Value& txn_id, const Value& from, TxnState to, Action action,
                         const Profile& profile, const RecoveryPaths& paths,
                         const LeaseTerms& lease, DateTime renewed_expires) {
  Filter f = FromUnderLease(txn_id, from, profile, paths, lease);
  Update u;
  u.Set(profile.state_field, profile.states.Written(to)).CurrentDate(profile.time_field);
  if (IsTerminal(to)) {
    RecordEnd(&u, to, action, paths, lease);
  } else {
    u.Set(paths.LeaseExpires(), renewed_expires);
  }
  return {std::move(f), std::move(u)};
}

UpdateRequest Apply(const ParticipantStep& step, const Value& txn_id, const Document& participant) {
  Filter f = step.target;
  f.Ne(step.marker_field, txn_id).And(step.apply_guard);
  return {GuardIncrements(std::move(f), step.apply, participant), step.apply};
}

UpdateRequest Undo(const ParticipantStep& step, const Value& txn_id, const Document& participant) {
  Filter f = step.target;
  f.Eq(step.marker_field, txn_id);
  return {GuardIncrements(std::move(f), step.undo, participant), step.undo};
}

std::pair<UpdateRequest, UpdateRequest> Finish(const ParticipantStep& step, const Value& txn_id,
                                               const RecoveryPaths& paths) {
  Filter pull = step.target;
  pull.Eq(step.marker_field, txn_id).Ne(paths.Finished(), txn_id);
  Update traced = step.finish;
  traced.Push(paths.Finished(), txn_id);
  Filter duplicate = step.target;
  duplicate.Eq(step.marker_field, txn_id).Eq(paths.Finished(), txn_id);
  return {{std::move(pull), std::move(traced)}, {std::move(duplicate), step.undo_duplicate}};
}

const Update& LateUndoUpdate(const ParticipantStep& step, TxnState terminal) {
  return terminal == TxnState::kDone ? step.undo_duplicate : step.undo;
}

UpdateRequest LateUndo(const ParticipantStep& step, const Value& txn_id, TxnState terminal,
                       const Document& participant) {
  Filter f = step.target;
  f.Eq(step.marker_field, txn_id);
  const Update& undo = LateUndoUpdate(step, terminal);
  return {GuardIncrements(std::move(f), undo, participant), undo};
}

std::pair<UpdateRequest, UpdateRequest> Untrace(const Filter& participant, const Value& txn_id,
                                                const RecoveryPaths& paths) {
  const Value only_this(Document{{RecoveryPaths::kFinished, Array{txn_id}}});
  Filter whole = participant;
  whole.Eq(paths.field(), only_this);
  Filter part = participant;
  part.Eq(paths.Finished(), txn_id).Ne(paths.field(), only_this);
  return {{std::move(whole), Update().Unset(paths.field())},
          {std::move(part), Update().Pull(paths.Finished(), txn_id)}};
}

bool TraceIsAll(const Document& participant, const Value& txn_id, const RecoveryPaths& paths,
                bool adding) {
  const Value* sub = participant.GetPath(paths.field());
  if (adding) {
    const Document* d = sub ? sub->as_document() : nullptr;
    return sub == nullptr || (d != nullptr && d->empty());
  }
  return Filter()
      .Eq(paths.field(), Value(Document{{RecoveryPaths::kFinished, Array{txn_id}}}))
      .Matches(participant);
}

UpdateRequest FinishTagged(const TaggedSet& set) {
  return {set.members, set.finish};
}

UpdateRequest RecordFailure(const Value& txn_id, std::string_view error,
                            const RecoveryPaths& paths) {
  Update u;
  u.Inc(paths.Failures(), std::int32_t{1})
      .Set(paths.LastError(), std::string(error))
      .Set(paths.Format(), RecoveryRecord::kFormat);
  return {Filter().Eq("_id", txn_id), std::move(u)};
}

UpdateRequest Quarantine(const Value& txn_id, const Document& record, const RecoveryPaths& paths) {
  Update u;
  u.Set(paths.Quarantine(), record)
      .CurrentDate(paths.QuarantinedAt())
      .Set(paths.Format(), RecoveryRecord::kFormat);
  return {Filter().Eq("_id", txn_id), std::move(u)};
}

UpdateRequest QuarantineReplacing(const Value& txn_id, const Value& held, const Document& record,
                                  const RecoveryPaths& paths) {
  Update u;
  u.Set(paths.field(), Document{{RecoveryPaths::kQuarantine, record},
                                {RecoveryPaths::kReplacedValue, held},
                                {RecoveryPaths::kFormat, RecoveryRecord::kFormat}});
  return {Filter().Eq("_id", txn_id).Eq(paths.field(), held), std::move(u)};
}

UpdateRequest QuarantinedNow(const Value& txn_id, const RecoveryPaths& paths) {
  return {Filter().Eq("_id", txn_id), Update().CurrentDate(paths.QuarantinedAt())};
}

UpdateRequest ReleaseQuarantine(const Value& txn_id, const RecoveryPaths& paths) {
  Update u;
  u.Unset(paths.Quarantine())
      .Unset(paths.QuarantinedAt())
      .Unset(paths.Failures())
      .Unset(paths.LastError());
  return {Filter().Eq("_id", txn_id).Exists(paths.Quarantine()), std::move(u)};
}

Document PauseSwitch() {
  return Document{{"_id", "pause"}};
}

UpdateRequest SetPause(bool paused, const std::string& by) {
  Update u;
  u.Set("paused", paused).Set("by", by).Set("format", RecoveryRecord::kFormat).CurrentDate("at");
  return {Filter().Eq("_id", "pause"), std::move(u)};
}

}  // namespace txn_recovery::requests
