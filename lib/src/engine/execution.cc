// StateMachine::ExecuteBatch: the one execution path of the recovery engine (engine/batch.h
// says how it runs and where each part lives): the batch and its rounds.
#include "engine/batch.h"

#include <map>

#include "engine/quarantine_write.h"
#include "engine/seen_ids.h"

namespace txn_recovery {

auto StateMachine::Batch::ProgramOf(Action a) -> std::vector<Phase> {
  switch (a) {
    case Action::kCancel:
      return {};
    case Action::kResume:
      // Seeded bug c (docs/proof.md, "Conformance"): the traces removed before done.
      if (Seeded('c'))
        return {Phase::kApply, Phase::kToApplied, Phase::kFinish, Phase::kUntrace, Phase::kToDone};
      return {Phase::kApply, Phase::kToApplied, Phase::kFinish, Phase::kToDone, Phase::kUntrace};
    case Action::kRollback:
      return {Phase::kUndo, Phase::kToCancelled};
    case Action::kFinish:
      if (Seeded('c')) return {Phase::kFinish, Phase::kUntrace, Phase::kToDone};
      return {Phase::kFinish, Phase::kToDone, Phase::kUntrace};
    case Action::kFinishRollback:
      return {Phase::kUndo, Phase::kToCancelled};
    default:
      return {};
  }
}

std::vector<Phase> RollbackInsteadOfResume() {
  return {Phase::kToCanceling, Phase::kUndo, Phase::kToCancelled};
}

std::optional<TxnState> TargetOf(Phase p) {
  switch (p) {
    case Phase::kToApplied:
      return TxnState::kApplied;
    case Phase::kToDone:
      return TxnState::kDone;
    case Phase::kToCanceling:
      return TxnState::kCanceling;
    case Phase::kToCancelled:
      return TxnState::kCancelled;
    default:
      return std::nullopt;
  }
}

void StateMachine::Batch::Admit(const std::vector<const Transaction*>& txns,
                                const std::vector<Action>& actions,
                                std::vector<ExecuteResult>* results) {
  SeenIds seen;                 // engine/seen_ids.h
  items_.reserve(txns.size());  // never grown after: writes point at their items' leases
  for (std::size_t i = 0; i < txns.size(); ++i) {
    ExecuteResult& r = (*results)[i];
    r.action = actions[i];
    r.final_state = txns[i]->state;
    if (actions[i] == Action::kNone || actions[i] == Action::kQuarantine) continue;
    if (!seen.First(txns[i]->id)) {
      // A caller may hand the same transaction twice; the first copy is the one acted on.
      r.outcome = Outcome::kBusy;
      r.status = Status::Conflict("transaction " + txns[i]->id.ToString() +
                                  " is already being recovered in this batch");
      r.detail = r.status.message();
      continue;
    }
    Item it;
    it.txn = txns[i];
    it.result = &r;
    it.state_spelling = txns[i]->state_as_read;
    it.taken_over = txns[i]->taken_over;
    it.late = actions[i] == Action::kCheckLateWrites;
    it.program = ProgramOf(actions[i]);
    items_.push_back(std::move(it));
  }
}

void StateMachine::Batch::TraceDecisions() const {
  // What the decision rested on: the state, the age and the lease as read.
  const DateTime now = m_->server_now_();
  for (const Item& it : items_) {
    // A pending transaction in a resuming spelling has been taken over (the model's
    // resuming state); p and n say which shape of transaction the model can stand for.
    std::string rest =
        "p=" + std::string(m_->profile_->kind()) + " n=" + std::to_string(it.txn->steps.size()) +
        " over=" + (it.taken_over ? "1" : "0") + " st=" + std::string(TxnStateName(it.txn->state)) +
        " act=" + std::string(ActionName(it.result->action)) +
        " age_ms=" + std::to_string(now.millis - it.txn->last_modified.millis);
    if (const auto& l = it.txn->record.lease)
      rest += " lease=" + std::string(l->owner == m_->lease_.owner ? "self" : "other") +
              " lease_left_ms=" + std::to_string(l->expires.millis - now.millis);
    else
      rest += " lease=none";
    trace_.Line(it, "read", rest);
  }
}

std::vector<ExecuteResult> StateMachine::Batch::Run(const std::vector<const Transaction*>& txns,
                                                    const std::vector<Action>& actions) {
  std::vector<ExecuteResult> results(txns.size());
  Admit(txns, actions, &results);
  if (BatchTrace::on()) TraceDecisions();
  LateWriteCheck(kit_).Run(items_);
  ClaimPhase claim(kit_, keeper_, m_->server_now_);
  claim.ReadBefore(items_);
  {
    // Also after a claim whose read back failed: the leases some claims may have taken.
    LeaseGuard guard(this);
    if (claim.Claim(items_)) Rounds();
  }
  QuarantineMalformed();
  return results;
}

void StateMachine::Batch::Rounds() {
  TransitionPhase transition(kit_, keeper_, m_->server_now_);
  while (true) {
    std::map<Phase, std::vector<Item*>> round;
    for (Item& it : items_)
      if (Running(it)) round[it.program[it.pc]].push_back(&it);
    if (round.empty()) break;
    // Apply first: a transaction whose apply cannot be done is rolled back, and its
    // rollback starts in this same round's transitions.
    if (auto a = round.find(Phase::kApply); a != round.end()) {
      ApplyPhase(kit_).Run(a->second);
      round.erase(a);
      for (Item& it : items_)
        if (Running(it) && it.program[it.pc] == Phase::kToCanceling && !it.cannot_apply.empty())
          round[Phase::kToCanceling].push_back(&it);
    }
    std::vector<Item*> transitions;
    for (auto& [phase, list] : round) {
      if (TargetOf(phase)) {
        transitions.insert(transitions.end(), list.begin(), list.end());
      } else if (phase == Phase::kUndo) {
        UndoPhase(kit_).Run(list);
      } else if (phase == Phase::kFinish) {
        FinishPhase(kit_).Run(list);
      } else if (phase == Phase::kUntrace) {
        UntracePhase(kit_).Run(list);
      }
    }
    transition.Run(transitions);
  }
}

void StateMachine::Batch::ReleaseHeld() {
  std::vector<Write> writes;
  for (Item& it : items_) {
    if (!it.lease || it.resolved || it.released) continue;
    it.released = true;
    it.pc = it.program.size();  // nothing more is written for it
    writes.push_back({&it, nullptr, m_->txn_ns_,
                      requests::Release(it.txn->id, m_->paths_, it.lease->terms()),
                      Under::TheLease(*it.lease), /*best_effort=*/true, "release the lease"});
    writes.back().trace_event = "release";
  }
  if (!writes.empty()) (void)send_.Send(writes);
}

void StateMachine::Batch::QuarantineMalformed() {
  for (Item& it : items_) {
    if (it.malformed.ok()) continue;
    LeaseFreeWriter writer = send_.Free(LeaseFree::kQuarantine);
    if (Status q = m_->QuarantineThrough(&writer, it.txn->id, it.malformed.message()); q.ok()) {
      it.result->outcome = Outcome::kQuarantined;
      it.result->detail = it.malformed.message();
      if (it.late) it.result->action = Action::kQuarantine;
    }
  }
}

std::vector<ExecuteResult> StateMachine::ExecuteBatch(const std::vector<const Transaction*>& txns,
                                                      const std::vector<Action>& actions) {
  return Batch(this, nullptr).Run(txns, actions);
}

std::vector<ExecuteResult> StateMachine::RehearseBatch(const std::vector<const Transaction*>& txns,
                                                       const std::vector<Action>& actions,
                                                       std::vector<PlannedWrite>* record) {
  std::vector<PlannedWrite> ignored;
  std::vector<ExecuteResult> results = Batch(this, record ? record : &ignored).Run(txns, actions);
  for (ExecuteResult& r : results) {
    if (r.action == Action::kNone || r.action == Action::kQuarantine) continue;
    if (r.outcome == Outcome::kQuarantined) {
      r.outcome = Outcome::kPlanned;
      r.detail = "would quarantine: " + r.detail;
    } else if (r.outcome == Outcome::kResolved || r.outcome == Outcome::kUntouched) {
      r.outcome = Outcome::kPlanned;
    }
  }
  return results;
}

std::vector<PlannedWrite> StateMachine::Rehearse(const Transaction& txn, Action action) {
  std::vector<PlannedWrite> record;
  (void)RehearseBatch({&txn}, {action}, &record);
  return record;
}

}  // namespace txn_recovery
