#include "txn_recovery/state_machine.h"

namespace txn_recovery {

std::string_view ActionName(Action a) noexcept {
  switch (a) {
    case Action::kNone:
      return "none";
    case Action::kCancel:
      return "cancel";
    case Action::kResume:
      return "resume";
    case Action::kRollback:
      return "rollback";
    case Action::kFinish:
      return "finish";
    case Action::kFinishRollback:
      return "finish-rollback";
    case Action::kCheckLateWrites:
      return "check-late-writes";
    case Action::kQuarantine:
      return "quarantine";
  }
  return "?";
}

std::string_view OutcomeName(Outcome o) noexcept {
  switch (o) {
    case Outcome::kUntouched:
      return "untouched";
    case Outcome::kResolved:
      return "resolved";
    case Outcome::kBusy:
      return "busy";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kQuarantined:
      return "quarantined";
    case Outcome::kPlanned:
      return "planned";
  }
  return "?";
}

std::function<DateTime()> ServerNowFrom(Clock* clock, DateTime server_reading) {
  const auto mono_start = clock->MonotonicNow();
  return [clock, server_reading, mono_start] {
    auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock->MonotonicNow() - mono_start);
    return DateTime{server_reading.millis + elapsed.count()};
  };
}

Action Decide(const Transaction& txn, DateTime now, const Thresholds& t) {
  const std::chrono::milliseconds age(now.millis - txn.last_modified.millis);
  switch (txn.state) {
    case TxnState::kInitial:
      return age >= t.initial_timeout ? Action::kCancel : Action::kNone;
    case TxnState::kPending:
      if (age >= t.rollback_after) return Action::kRollback;
      // What is left to apply only the application knows: leave it the whole of
      // rollback_after to finish (seed 003).
      if (!txn.resumable) return Action::kNone;
      return age >= t.resume_after ? Action::kResume : Action::kNone;
    case TxnState::kApplied:
      return age >= t.resume_after ? Action::kFinish : Action::kNone;
    case TxnState::kCanceling:
      return age >= t.resume_after ? Action::kFinishRollback : Action::kNone;
    case TxnState::kDone:
    case TxnState::kCancelled:
      // The grace of resume_after leaves an application that finishes its own transaction
      // the time to do so before its participants are judged.
      return (age >= t.resume_after && age < t.late_write_window) ? Action::kCheckLateWrites
                                                                  : Action::kNone;
  }
  return Action::kNone;
}

StateMachine::StateMachine(Store* store, Clock* clock, Namespace txn_ns, const Profile* profile,
                           std::string lease_field, LeaseOptions lease,
                           std::function<DateTime()> server_now)
    : store_(store),
      clock_(clock),
      txn_ns_(std::move(txn_ns)),
      profile_(profile),
      lease_field_(std::move(lease_field)),
      lease_(std::move(lease)),
      server_now_(std::move(server_now)) {}

// One execution of one action on one transaction, holding its lease.
class StateMachine::Run {
 public:
  Run(StateMachine* m, const Transaction& txn) : m_(m), txn_(txn) {
    state_spelling_ = txn.state_as_read;
  }

  ExecuteResult Go(Action action) {
    result_.action = action;
    result_.final_state = txn_.state;
    if (action == Action::kNone || action == Action::kQuarantine) return result_;
    if (action == Action::kCheckLateWrites) return CheckLateWrites();

    if (Status s = Claim(); !s.ok()) {
      result_.outcome = s.IsConflict() ? Outcome::kBusy : Outcome::kFailed;
      result_.status = s;
      result_.detail = s.message();
      return result_;
    }
    Status s = Perform(action);
    if (s.IsMalformed()) {
      // A participant the profile cannot act on safely (e.g. a key naming two documents):
      // nothing was written for it; set the transaction aside for an operator.
      ReleaseLease();
      result_.detail = s.message();
      if (Status q = m_->Quarantine(txn_.id, s.message()); q.ok()) {
        result_.outcome = Outcome::kQuarantined;
        return result_;
      }
    }
    if (!s.ok()) {
      result_.outcome = Outcome::kFailed;
      result_.status = s;
      if (result_.detail.empty()) result_.detail = s.ToString();
      ReleaseLease();
      return result_;
    }
    result_.outcome = Outcome::kResolved;
    return result_;
  }

 private:
  std::string LeasePath() const { return m_->lease_field_ + ".lease"; }

  Filter IdFilter() const { return Filter().Eq("_id", txn_.id); }

  // Refuses to write once our lease may have expired: another daemon may then own the
  // transaction, and two daemons must never drive it in opposite directions.
  Status CheckLease() const {
    if (m_->clock_->MonotonicNow() >= deadline_)
      return Status::Aborted("lease on transaction " + txn_.id.ToString() +
                             " expired before the work was done");
    return Status::Ok();
  }

  DateTime LeaseExpiry() const {
    return DateTime{m_->server_now_().millis + m_->lease_.duration.count()};
  }
  Document LeaseDoc() const {
    return Document{{"owner", m_->lease_.owner}, {"expires", LeaseExpiry()}};
  }

  void ResetDeadline(std::chrono::steady_clock::time_point start) {
    deadline_ = start + m_->lease_.duration - m_->lease_.margin;
  }

  // Takes the lease only if the document is exactly as we read it (same state, same time)
  // and nobody else holds a live lease: a live application that touched the transaction
  // since, or another daemon, wins.
  Status Claim() {
    Filter f = m_->ClaimFilter(txn_, m_->server_now_());
    auto start = m_->clock_->MonotonicNow();
    std::optional<Document> after;
    Status s =
        m_->store_->FindOneAndUpdate(m_->txn_ns_, f, Update().Set(LeasePath(), LeaseDoc()), &after);
    if (!s.ok()) return s;
    if (!after)
      return Status::Conflict("transaction " + txn_.id.ToString() +
                              " changed since it was read or is leased by another daemon");
    ResetDeadline(start);
    return Status::Ok();
  }

  void ReleaseLease() {
    Filter f = IdFilter();
    f.Eq(LeasePath() + ".owner", m_->lease_.owner);
    WriteResult r;
    (void)m_->store_->UpdateOne(m_->txn_ns_, f, Update().Unset(LeasePath()), &r);
  }

  // Compare-and-set of the transaction's state, conditional on still holding the lease.
  // Renews the lease; a terminal transition releases it and records how it ended.
  Status Transition(TxnState to) {
    if (Status s = CheckLease(); !s.ok()) return s;
    const Profile& p = *m_->profile_;
    Filter f = IdFilter();
    f.Eq(p.state_field, state_spelling_).Eq(LeasePath() + ".owner", m_->lease_.owner);
    Update u;
    u.Set(p.state_field, p.states.Written(to)).CurrentDate(p.time_field);
    if (IsTerminal(to)) {
      u.Unset(LeasePath())
          .Set(m_->lease_field_ + ".resolvedBy", m_->lease_.owner)
          .Set(m_->lease_field_ + ".resolvedAction", std::string(ActionName(result_.action)))
          .Set(m_->lease_field_ + ".outcome", to == TxnState::kDone ? "committed" : "rolled back")
          .CurrentDate(m_->lease_field_ + ".resolvedAt");
    } else {
      u.Set(LeasePath() + ".expires", LeaseExpiry());
    }
    auto start = m_->clock_->MonotonicNow();
    WriteResult r;
    if (Status s = m_->store_->UpdateOne(m_->txn_ns_, f, u, &r); !s.ok()) return s;
    if (r.matched == 0)
      return Status::Conflict("lost the lease on transaction " + txn_.id.ToString() +
                              " before moving it to " + std::string(TxnStateName(to)));
    if (!IsTerminal(to)) ResetDeadline(start);
    state_spelling_ = Value(p.states.Written(to));
    result_.final_state = to;
    return Status::Ok();
  }

  // Applies one step unless already applied. Sets *cannot_apply with the reason when the
  // step can never apply (participant missing, guard such as sufficient funds failing).
  Status ApplyStep(const ParticipantStep& step, std::string* cannot_apply) {
    if (Status s = CheckLease(); !s.ok()) return s;
    if (step.target_may_be_ambiguous) {
      // A key other than _id may name two documents: the guard would then let the change
      // be applied once to each. Refuse to guess which one is meant.
      std::int64_t n = 0;
      if (Status s = m_->store_->Count(step.ns, step.target, &n); !s.ok()) return s;
      if (n > 1)
        return Status::Malformed(step.describe + ": " + std::to_string(n) + " documents in " +
                                 step.ns.ToString() + " match " + step.target.ToString());
    }
    Filter f = step.target;
    f.Ne(step.marker_field, txn_.id);
    f.And(step.apply_guard);
    WriteResult r;
    if (Status s = m_->store_->UpdateOne(step.ns, f, step.apply, &r); !s.ok()) return s;
    if (r.matched == 1) {
      ++result_.operations_applied;
      return Status::Ok();
    }
    // Nothing matched: already applied, missing, or the guard failed. Read to tell which.
    std::optional<Document> doc;
    if (Status s = m_->store_->FindOne(step.ns, step.target, &doc); !s.ok()) return s;
    if (!doc) {
      *cannot_apply = step.describe + ": participant not found in " + step.ns.ToString();
    } else if (!Filter().Eq(step.marker_field, txn_.id).Matches(*doc)) {
      *cannot_apply = step.describe + ": guard failed (" + step.apply_guard.ToString() + ")";
    }
    return Status::Ok();
  }

  Status UndoStep(const ParticipantStep& step, int* undone) {
    if (Status s = CheckLease(); !s.ok()) return s;
    Filter f = step.target;
    f.Eq(step.marker_field, txn_.id);
    WriteResult r;
    if (Status s = m_->store_->UpdateOne(step.ns, f, step.undo, &r); !s.ok()) return s;
    *undone += static_cast<int>(r.matched);
    return Status::Ok();
  }

  Status FinishStep(const ParticipantStep& step) {
    if (Status s = CheckLease(); !s.ok()) return s;
    Filter f = step.target;
    f.Eq(step.marker_field, txn_.id);
    WriteResult r;
    return m_->store_->UpdateOne(step.ns, f, step.finish, &r);
  }

  // Deletes whatever still carries the transaction's tag: a repeat finds less or nothing.
  Status UndoTagged(const TaggedSet& set) {
    if (Status s = CheckLease(); !s.ok()) return s;
    WriteResult r;
    if (Status s = m_->store_->DeleteMany(set.ns, set.members, &r); !s.ok()) return s;
    result_.operations_undone += static_cast<int>(r.modified);
    return Status::Ok();
  }

  // Untags (and validates) whatever still carries the tag; a repeat finds less or nothing.
  Status FinishTagged(const TaggedSet& set) {
    if (Status s = CheckLease(); !s.ok()) return s;
    WriteResult r;
    if (Status s = m_->store_->UpdateMany(set.ns, set.members, set.finish, &r); !s.ok()) return s;
    result_.operations_applied += static_cast<int>(r.modified);
    return Status::Ok();
  }

  Status UndoAll() {
    for (const auto& step : txn_.steps)
      if (Status s = UndoStep(step, &result_.operations_undone); !s.ok()) return s;
    for (const auto& set : txn_.tagged_sets)
      if (Status s = UndoTagged(set); !s.ok()) return s;
    return Status::Ok();
  }

  Status FinishAll() {
    for (const auto& step : txn_.steps)
      if (Status s = FinishStep(step); !s.ok()) return s;
    for (const auto& set : txn_.tagged_sets)
      if (Status s = FinishTagged(set); !s.ok()) return s;
    return Status::Ok();
  }

  Status Perform(Action action) {
    switch (action) {
      case Action::kCancel:
        return Transition(TxnState::kCancelled);
      case Action::kResume: {
        if (!txn_.resumable)
          return Status::InvalidArgument("transaction " + txn_.id.ToString() +
                                         " cannot be resumed by the daemon, only rolled back");
        for (const auto& step : txn_.steps) {
          std::string cannot_apply;
          if (Status s = ApplyStep(step, &cannot_apply); !s.ok()) return s;
          if (!cannot_apply.empty()) {
            result_.action = Action::kRollback;
            result_.detail = "rolled back instead of resumed: " + cannot_apply;
            return Perform(Action::kRollback);
          }
        }
        if (Status s = Transition(TxnState::kApplied); !s.ok()) return s;
        if (Status s = FinishAll(); !s.ok()) return s;
        return Transition(TxnState::kDone);
      }
      case Action::kRollback:
        if (Status s = Transition(TxnState::kCanceling); !s.ok()) return s;
        [[fallthrough]];
      case Action::kFinishRollback:
        if (Status s = UndoAll(); !s.ok()) return s;
        return Transition(TxnState::kCancelled);
      case Action::kFinish:
        if (Status s = FinishAll(); !s.ok()) return s;
        return Transition(TxnState::kDone);
      case Action::kNone:
      case Action::kCheckLateWrites:
      case Action::kQuarantine:
        break;
    }
    return Status::Ok();
  }

  // A marker of a terminal transaction on a participant can only be a change applied
  // after the transaction was resolved (markers are removed before the terminal state is
  // written). Undo it, guarded by the marker so that it is undone at most once.
  ExecuteResult CheckLateWrites() {
    for (const auto& step : txn_.steps) {
      Filter f = step.target;
      f.Eq(step.marker_field, txn_.id);
      WriteResult r;
      // On a done transaction the late write is a second application; on a cancelled one
      // it is the only one.
      const Update& undo = txn_.state == TxnState::kDone ? step.undo_duplicate : step.undo;
      if (Status s = m_->store_->UpdateOne(step.ns, f, undo, &r); !s.ok()) {
        result_.outcome = Outcome::kFailed;
        result_.status = s;
        result_.detail = s.ToString();
        return result_;
      }
      if (r.matched) {
        ++result_.late_writes_undone;
        result_.detail += (result_.detail.empty() ? "undid late write: " : "; ") + step.describe;
      }
    }
    for (const auto& set : txn_.tagged_sets)
      if (!CheckLateTagged(set)) return result_;
    if (result_.outcome == Outcome::kQuarantined) return result_;
    result_.outcome = result_.late_writes_undone ? Outcome::kResolved : Outcome::kUntouched;
    return result_;
  }

  // A document tagged with a terminal transaction was inserted (or left) after it ended:
  // a rolled-back transaction's is deleted, a committed one's is finished like the rest.
  // When the record does not say which way the transaction went, nothing is guessed: the
  // transaction is set aside for an operator. False when a write failed.
  bool CheckLateTagged(const TaggedSet& set) {
    WriteResult r;
    Status s;
    const char* what = "";
    if (txn_.state == TxnState::kCancelled) {
      s = m_->store_->DeleteMany(set.ns, set.members, &r);
      r.matched = r.modified;
      what = "deleted ";
    } else if (!txn_.outcome_unknown) {
      s = m_->store_->UpdateMany(set.ns, set.members, set.finish, &r);
      what = "finished ";
    } else {
      std::int64_t n = 0;
      s = m_->store_->Count(set.ns, set.members, &n);
      if (s.ok() && n > 0) {
        std::string reason = std::to_string(n) + " " + set.describe +
                             " remain after it was done, and nothing records whether it "
                             "committed or rolled back";
        s = m_->Quarantine(txn_.id, reason);
        if (s.ok()) {
          result_.outcome = Outcome::kQuarantined;
          result_.action = Action::kQuarantine;
          result_.detail = reason;
          return true;
        }
      }
    }
    if (!s.ok()) {
      result_.outcome = Outcome::kFailed;
      result_.status = s;
      result_.detail = s.ToString();
      return false;
    }
    if (r.matched > 0) {
      result_.late_writes_undone += static_cast<int>(r.matched);
      result_.detail += (result_.detail.empty() ? "late write: " : "; ") + std::string(what) +
                        std::to_string(r.matched) + " " + set.describe;
    }
    return true;
  }

  StateMachine* m_;
  const Transaction& txn_;
  Value state_spelling_;
  std::chrono::steady_clock::time_point deadline_{};
  ExecuteResult result_;
};

Filter StateMachine::ClaimFilter(const Transaction& txn, DateTime now) const {
  const std::string lease_path = lease_field_ + ".lease";
  Filter f;
  f.Eq("_id", txn.id).Eq(profile_->state_field, txn.state_as_read);
  if (txn.time_as_read && txn.time_as_read->as_datetime() != nullptr) {
    // Within the millisecond read, not equal to it: a server may keep $currentDate finer
    // than the milliseconds a BSON date carries (the embedded test server does), and the
    // value read back then never equals the stored one.
    const DateTime read = *txn.time_as_read->as_datetime();
    f.Gte(profile_->time_field, read).Lt(profile_->time_field, DateTime{read.millis + 1});
  } else if (txn.time_as_read) {
    f.Eq(profile_->time_field, *txn.time_as_read);
  } else {
    f.NotExists(profile_->time_field);
  }
  f.NotExists(lease_field_ + ".quarantine");
  f.And(profile_->owner.Condition());
  f.AnyOf({Filter().NotExists(lease_path), Filter().Lt(lease_path + ".expires", now),
           Filter().Eq(lease_path + ".owner", lease_.owner)});
  return f;
}

ExecuteResult StateMachine::Execute(const Transaction& txn, Action action) {
  return Run(this, txn).Go(action);
}

Status StateMachine::RecordFailure(const Value& id, std::string_view error,
                                   std::int64_t* failures) {
  std::optional<Document> after;
  Update u;
  u.Inc(lease_field_ + ".failures", std::int32_t{1})
      .Set(lease_field_ + ".lastError", std::string(error));
  if (Status s = store_->FindOneAndUpdate(txn_ns_, Filter().Eq("_id", id), u, &after); !s.ok())
    return s;
  *failures = 0;
  if (after)
    if (const Value* n = after->GetPath(lease_field_ + ".failures"); n && n->is_number())
      *failures = static_cast<std::int64_t>(*n->as_double());
  return Status::Ok();
}

Status StateMachine::Quarantine(const Value& id, std::string_view reason) {
  const Document record{{"reason", std::string(reason)}, {"by", lease_.owner}};
  Update u;
  u.Set(lease_field_ + ".quarantine", record).CurrentDate(lease_field_ + ".quarantinedAt");
  WriteResult r;
  Status s = store_->UpdateOne(txn_ns_, Filter().Eq("_id", id), u, &r);
  if (s.ok() || s.IsUnavailable()) return s;
  // The server refuses a path below a field that is not a document: our sub-document holds
  // something else (written by someone else). Replace it, keeping what it held for the
  // operator, or the document would fail every sweep without ever being set aside.
  std::optional<Document> doc;
  if (Status f = store_->FindOne(txn_ns_, Filter().Eq("_id", id), &doc); !f.ok()) return f;
  const Value* held = doc ? doc->GetPath(lease_field_) : nullptr;
  if (held == nullptr || held->as_document() != nullptr) return s;
  Update replace;
  replace.Set(lease_field_, Document{{"quarantine", record}, {"replacedValue", *held}});
  if (Status w =
          store_->UpdateOne(txn_ns_, Filter().Eq("_id", id).Eq(lease_field_, *held), replace, &r);
      !w.ok())
    return w;
  // A second write: MongoDB refuses setting a field and a path below it at once.
  return store_->UpdateOne(txn_ns_, Filter().Eq("_id", id),
                           Update().CurrentDate(lease_field_ + ".quarantinedAt"), &r);
}

}  // namespace txn_recovery
