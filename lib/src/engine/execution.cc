// StateMachine::ExecuteBatch: the one execution path of the recovery engine (engine/batch.h
// says how it runs and where each part lives): the batch, its rounds, and the rules its
// phases share.
#include "engine/batch.h"

#include <cstdio>
#include <random>

#include "base/amounts.h"
#include "engine/seen_ids.h"
#include "txn_recovery/engine/conformance_trace.h"

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

auto StateMachine::Batch::RollbackInsteadOfResume() -> std::vector<Phase> {
  return {Phase::kToCanceling, Phase::kUndo, Phase::kToCancelled};
}

std::optional<TxnState> StateMachine::Batch::TargetOf(Phase p) {
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

std::string StateMachine::Batch::NewNonce() {
  std::random_device rd;
  std::uniform_int_distribution<std::uint64_t> dist;
  return std::to_string(dist(rd));
}

const Predicate* StateMachine::Batch::TargetKey(const ParticipantStep& step) {
  const Filter& t = step.target;
  if (!t.any_of().empty() || t.all().size() != 1) return nullptr;
  const Predicate& p = t.all().front();
  return p.op == Predicate::Op::kEq ? &p : nullptr;
}

bool StateMachine::Batch::HasMarker(const Document& doc, const ParticipantStep& step,
                                    const Value& txn_id) {
  return Filter().Eq(step.marker_field, txn_id).Matches(doc);
}

Status StateMachine::Batch::TwoDocuments(const ParticipantStep& step, std::size_t n) {
  return Status::Malformed(step.describe + ": " + std::to_string(n) + " documents in " +
                           step.ns.ToString() + " match " + step.target.ToString());
}

Status StateMachine::Batch::CheckMarkerField(const ParticipantStep& step, const Document& doc) {
  // A marker field that is not an array reads as "marker present" when it equals the
  // transaction id and as "marker absent" otherwise, both wrong: the participant does not
  // fit the protocol, and nothing is written to it.
  if (const Value* m = doc.GetPath(step.marker_field); m != nullptr && !m->is_array()) {
    const Value* id = doc.Get("_id");
    return Status::Malformed("participant " + (id ? id->ToString() : std::string("?")) + " in " +
                             step.ns.ToString() + ": its marker field '" + step.marker_field +
                             "' is " + std::string(m->type_name()) + ", not an array");
  }
  return Status::Ok();
}

Status StateMachine::Batch::CheckIncrements(const ParticipantStep& step, const Document& doc,
                                            const Update& update) {
  for (const UpdateOp& op : update.ops()) {
    if (op.kind != UpdateOp::Kind::kInc) continue;
    if (Status s = CheckExactIncrement(op.path, doc.GetPath(op.path), op.value); !s.ok()) {
      const Value* id = doc.Get("_id");
      return s.WithContext("participant " + (id ? id->ToString() : std::string("?")) + " in " +
                           step.ns.ToString());
    }
  }
  return Status::Ok();
}

std::string StateMachine::Batch::LookupKey(const Value& v) {
  if (!v.is_number()) return v.ToString();
  char buf[40];
  std::snprintf(buf, sizeof buf, "#%.17g", v.as_double().value_or(0));
  return buf;
}

const Document* StateMachine::Batch::WithMarker(const std::vector<Document>& docs,
                                                const ParticipantStep& step, const Value& txn_id) {
  for (const Document& d : docs)
    if (HasMarker(d, step, txn_id)) return &d;
  return nullptr;
}

std::vector<ExecuteResult> StateMachine::Batch::Go(const std::vector<const Transaction*>& txns,
                                                   const std::vector<Action>& actions) {
  std::vector<ExecuteResult> results(txns.size());
  SeenIds seen;  // engine/seen_ids.h
  items_.reserve(txns.size());
  for (std::size_t i = 0; i < txns.size(); ++i) {
    results[i].action = actions[i];
    results[i].final_state = txns[i]->state;
    if (actions[i] == Action::kNone || actions[i] == Action::kQuarantine) continue;
    if (!seen.First(txns[i]->id)) {
      // A caller may hand the same transaction twice; the first copy is the one acted on.
      results[i].outcome = Outcome::kBusy;
      results[i].status = Status::Conflict("transaction " + txns[i]->id.ToString() +
                                           " is already being recovered in this batch");
      results[i].detail = results[i].status.message();
      continue;
    }
    Item it;
    it.txn = txns[i];
    it.result = &results[i];
    it.state_spelling = txns[i]->state_as_read;
    it.taken_over = txns[i]->taken_over;
    it.late = actions[i] == Action::kCheckLateWrites;
    it.program = ProgramOf(actions[i]);
    items_.push_back(std::move(it));
  }
  if (conformance::On()) {
    // What the decision rested on: the state, the age and the lease as read.
    const DateTime now = m_->server_now_();
    for (const Item& it : items_) {
      // A pending transaction in a resuming spelling has been taken over (the model's
      // resuming state); p and n say which shape of transaction the model can stand for.
      std::string rest = "p=" + std::string(profile().kind()) +
                         " n=" + std::to_string(it.txn->steps.size()) +
                         " over=" + (it.taken_over ? "1" : "0") +
                         " st=" + std::string(TxnStateName(it.txn->state)) +
                         " act=" + std::string(ActionName(it.result->action)) +
                         " age_ms=" + std::to_string(now.millis - it.txn->last_modified.millis);
      if (const auto& l = it.txn->record.lease)
        rest += " lease=" + std::string(l->owner == m_->lease_.owner ? "self" : "other") +
                " lease_left_ms=" + std::to_string(l->expires.millis - now.millis);
      else
        rest += " lease=none";
      Trace(it, "read", rest);
    }
  }
  CheckLateWrites();
  ReadBeforeClaim();
  if (Claim()) {
    LeaseGuard guard(this);
    Run();
  }
  QuarantineMalformed();
  return results;
}

void StateMachine::Batch::Fail(Item* it, Status s, Outcome outcome) {
  if (it->ended) return;
  it->ended = true;
  it->result->outcome = outcome;
  if (outcome == Outcome::kBusy || it->result->detail.empty())
    it->result->detail = outcome == Outcome::kBusy ? s.message() : s.ToString();
  if (s.IsMalformed()) it->malformed = s;
  it->result->status = std::move(s);
}

void StateMachine::Batch::Run() {
  while (true) {
    std::map<Phase, std::vector<Item*>> round;
    for (Item& it : items_)
      if (Running(it)) round[it.program[it.pc]].push_back(&it);
    if (round.empty()) break;
    // Apply first: a transaction whose apply cannot be done is rolled back, and its
    // rollback starts in this same round's transitions.
    if (auto a = round.find(Phase::kApply); a != round.end()) {
      Apply(a->second);
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
        Undo(list);
      } else if (phase == Phase::kFinish) {
        Finish(list);
      } else if (phase == Phase::kUntrace) {
        Untrace(list);
      }
    }
    Transition(transitions);
  }
}

auto StateMachine::Batch::StepsOf(const std::vector<Item*>& list) -> std::vector<StepRef> {
  std::vector<StepRef> steps;
  for (Item* it : list)
    for (const auto& step : it->txn->steps) steps.emplace_back(it, &step);
  return steps;
}

void StateMachine::Batch::QuarantineMalformed() {
  for (Item& it : items_) {
    if (it.malformed.ok()) continue;
    if (Status q = m_->QuarantineThrough(&writer_, it.txn->id, it.malformed.message()); q.ok()) {
      it.result->outcome = Outcome::kQuarantined;
      it.result->detail = it.malformed.message();
      if (it.late) it.result->action = Action::kQuarantine;
    }
  }
}

std::vector<ExecuteResult> StateMachine::ExecuteBatch(const std::vector<const Transaction*>& txns,
                                                      const std::vector<Action>& actions) {
  return Batch(this, nullptr).Go(txns, actions);
}

std::vector<ExecuteResult> StateMachine::RehearseBatch(const std::vector<const Transaction*>& txns,
                                                       const std::vector<Action>& actions,
                                                       std::vector<PlannedWrite>* record) {
  std::vector<PlannedWrite> ignored;
  std::vector<ExecuteResult> results = Batch(this, record ? record : &ignored).Go(txns, actions);
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
