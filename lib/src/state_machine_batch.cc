// StateMachine::ExecuteBatch: Execute for many transactions in lockstep.
//
// Every transaction follows the same program as in Execute (a list of phases: claim,
// apply, mark applied, finish, mark done, ...). In each round every transaction still
// running performs its next phase, and the writes of a round are sent per collection as
// one unordered bulk of single-document guarded updates. A bulk write reports only how
// many of its updates matched, so wherever a transaction's outcome depends on whether its
// own update matched, the documents are read back by _id (one query per collection).
// Reads come before writes where that spares writes and makes the accounting exact
// (apply and undo), after them only when the counts disagree (claims and transitions).
#include <map>
#include <random>
#include <set>

#include "txn_recovery/state_machine.h"

namespace txn_recovery {
namespace {

enum class Phase { kApply, kToApplied, kFinish, kToDone, kToCanceling, kUndo, kToCancelled };

std::vector<Phase> ProgramOf(Action a) {
  switch (a) {
    case Action::kCancel:
      return {Phase::kToCancelled};
    case Action::kResume:
      return {Phase::kApply, Phase::kToApplied, Phase::kFinish, Phase::kToDone};
    case Action::kRollback:
      return {Phase::kToCanceling, Phase::kUndo, Phase::kToCancelled};
    case Action::kFinish:
      return {Phase::kFinish, Phase::kToDone};
    case Action::kFinishRollback:
      return {Phase::kUndo, Phase::kToCancelled};
    default:
      return {};
  }
}

TxnState TargetOf(Phase p) {
  switch (p) {
    case Phase::kToApplied:
      return TxnState::kApplied;
    case Phase::kToDone:
      return TxnState::kDone;
    case Phase::kToCanceling:
      return TxnState::kCanceling;
    default:
      return TxnState::kCancelled;
  }
}

bool IsTransition(Phase p) {
  return p == Phase::kToApplied || p == Phase::kToDone || p == Phase::kToCanceling ||
         p == Phase::kToCancelled;
}

// The participant's _id when the step names it by _id alone (the only kind batched: the
// read-back is then one `_id: {$in: [...]}` query, which the server answers by index).
const Value* TargetId(const ParticipantStep& step) {
  const Filter& t = step.target;
  if (step.target_may_be_ambiguous || !t.any_of().empty() || t.all().size() != 1) return nullptr;
  const Predicate& p = t.all().front();
  return p.op == Predicate::Op::kEq && p.path == "_id" ? &p.value : nullptr;
}

bool PullsOnlyMarker(const ParticipantStep& step, const Value& id) {
  const auto& ops = step.finish.ops();
  return ops.size() == 1 && ops[0].kind == UpdateOp::Kind::kPull &&
         ops[0].path == step.marker_field && ops[0].value == id;
}

std::string NewNonce() {
  std::random_device rd;
  std::uniform_int_distribution<std::uint64_t> dist;
  return std::to_string(dist(rd));
}

}  // namespace

class StateMachine::Batch {
 public:
  explicit Batch(StateMachine* m) : m_(m) {}

  std::vector<ExecuteResult> Go(const std::vector<const Transaction*>& txns,
                                const std::vector<Action>& actions) {
    std::vector<ExecuteResult> results(txns.size());
    std::set<std::string> seen;
    for (std::size_t i = 0; i < txns.size(); ++i) {
      results[i].action = actions[i];
      results[i].final_state = txns[i]->state;
      bool batchable = actions[i] != Action::kNone && actions[i] != Action::kQuarantine;
      for (const auto& step : txns[i]->steps)
        if (TargetId(step) == nullptr) batchable = false;
      // Tagged sets (tagged-insert) are many documents per step, updated or deleted by their
      // tag, and a done transaction of unknown outcome may have to be quarantined: the
      // one-at-a-time path does both.
      if (!txns[i]->tagged_sets.empty() || txns[i]->outcome_unknown) batchable = false;
      if (!batchable) {
        results[i] = m_->Execute(*txns[i], actions[i]);
        continue;
      }
      if (!seen.insert(txns[i]->id.ToString()).second) {
        // The cursor may return a document twice; the first copy is the one acted on.
        results[i].outcome = Outcome::kBusy;
        results[i].status = Status::Conflict("transaction " + txns[i]->id.ToString() +
                                             " is already being recovered in this batch");
        results[i].detail = results[i].status.message();
        continue;
      }
      if (actions[i] == Action::kCheckLateWrites) {
        late_.push_back(Item{txns[i], &results[i], {}, 0, txns[i]->state_as_read, {}});
      } else {
        items_.push_back(
            Item{txns[i], &results[i], ProgramOf(actions[i]), 0, txns[i]->state_as_read, {}});
      }
    }
    CheckLateWrites();
    if (!items_.empty() && Claim()) Run();
    return results;
  }

 private:
  struct Item {
    const Transaction* txn;
    ExecuteResult* result;
    std::vector<Phase> program;
    std::size_t pc;  // the next phase; program.size() once finished or failed
    Value state_spelling;
    std::string cannot_apply;
  };

  std::string LeasePath() const { return m_->lease_field_ + ".lease"; }
  const Profile& profile() const { return *m_->profile_; }
  bool Running(const Item& it) const { return it.pc < it.program.size(); }

  // Ends `it` with `s`: Busy for a lease it never got, Failed otherwise (its lease, if it
  // was claimed, is released at the end, as Execute does).
  void Fail(Item* it, Status s, Outcome outcome = Outcome::kFailed) {
    it->result->outcome = outcome;
    if (outcome == Outcome::kBusy || it->result->detail.empty()) {
      it->result->detail = outcome == Outcome::kBusy ? s.message() : s.ToString();
    }
    it->result->status = std::move(s);
    it->pc = it->program.size();
    if (outcome == Outcome::kFailed && claimed_) to_release_.push_back(it);
  }

  // The participant documents of `steps`, by collection, keyed by their _id's text.
  Status ReadParticipants(const std::vector<std::pair<Item*, const ParticipantStep*>>& steps,
                          std::map<std::string, std::map<std::string, Document>>* out) {
    std::map<std::string, std::pair<Namespace, std::vector<Value>>> ids;
    for (const auto& [it, step] : steps) {
      auto& entry = ids[step->ns.ToString()];
      entry.first = step->ns;
      entry.second.push_back(*TargetId(*step));
    }
    for (auto& [key, entry] : ids) {
      std::unique_ptr<Cursor> c;
      if (Status s = m_->store_->Find(entry.first, Filter().In("_id", std::move(entry.second)),
                                      FindOptions{}, &c);
          !s.ok())
        return s;
      Document d;
      for (bool has = true;;) {
        if (Status s = c->Next(&d, &has); !s.ok()) return s;
        if (!has) break;
        if (const Value* id = d.Get("_id")) (*out)[key][id->ToString()] = std::move(d);
      }
    }
    return Status::Ok();
  }

  static const Document* Find(const std::map<std::string, std::map<std::string, Document>>& docs,
                              const ParticipantStep& step) {
    auto ns = docs.find(step.ns.ToString());
    if (ns == docs.end()) return nullptr;
    auto d = ns->second.find(TargetId(step)->ToString());
    return d == ns->second.end() ? nullptr : &d->second;
  }

  static bool HasMarker(const Document& doc, const ParticipantStep& step, const Value& id) {
    return Filter().Eq(step.marker_field, id).Matches(doc);
  }

  // Sends `requests` per collection; on error fails every item in `owners`.
  Status Send(const std::map<std::string, std::pair<Namespace, std::vector<UpdateRequest>>>& by_ns,
              std::int64_t* matched) {
    *matched = 0;
    for (const auto& [key, entry] : by_ns) {
      WriteResult r;
      if (Status s = m_->store_->UpdateEach(entry.first, entry.second, &r); !s.ok()) return s;
      *matched += r.matched;
    }
    return Status::Ok();
  }

  bool LeaseExpired() const { return m_->clock_->MonotonicNow() >= deadline_; }

  // Takes every lease in one bulk write. Each claim carries this batch's nonce, so that
  // when some did not match the ones that did are found by reading the nonce back.
  bool Claim() {
    const DateTime now = m_->server_now_();
    const std::string nonce = NewNonce();
    std::vector<UpdateRequest> requests;
    for (const Item& it : items_) {
      Document lease{{"owner", m_->lease_.owner},
                     {"expires", DateTime{now.millis + m_->lease_.duration.count()}},
                     {"claim", nonce}};
      requests.push_back({m_->ClaimFilter(*it.txn, now), Update().Set(LeasePath(), lease)});
    }
    const auto start = m_->clock_->MonotonicNow();
    WriteResult r;
    Status s = m_->store_->UpdateEach(m_->txn_ns_, requests, &r);
    std::vector<Value> ids;
    for (const Item& it : items_) ids.push_back(it.txn->id);
    std::map<std::string, bool> claimed;
    if (s.ok() && r.matched < static_cast<std::int64_t>(items_.size())) {
      std::unique_ptr<Cursor> c;
      s = m_->store_->Find(m_->txn_ns_,
                           Filter().In("_id", std::move(ids)).Eq(LeasePath() + ".claim", nonce),
                           FindOptions{}, &c);
      Document d;
      for (bool has = true; s.ok();) {
        s = c->Next(&d, &has);
        if (!s.ok() || !has) break;
        claimed[d.Get("_id")->ToString()] = true;
      }
    }
    if (!s.ok()) {
      // Some leases may be ours without our knowing which: release by owner and nonce.
      for (Item& it : items_) Fail(&it, s);
      Release(nonce);
      return false;
    }
    const bool all = r.matched >= static_cast<std::int64_t>(items_.size());
    for (Item& it : items_) {
      if (all || claimed.count(it.txn->id.ToString())) continue;
      Fail(&it,
           Status::Conflict("transaction " + it.txn->id.ToString() +
                            " changed since it was read or is leased by another daemon"),
           Outcome::kBusy);
    }
    deadline_ = start + m_->lease_.duration - m_->lease_.margin;
    claimed_ = true;
    return true;
  }

  void Release(const std::string& nonce) {
    std::vector<UpdateRequest> requests;
    for (const Item& it : items_)
      requests.push_back({Filter()
                              .Eq("_id", it.txn->id)
                              .Eq(LeasePath() + ".owner", m_->lease_.owner)
                              .Eq(LeasePath() + ".claim", nonce),
                          Update().Unset(LeasePath())});
    WriteResult r;
    (void)m_->store_->UpdateEach(m_->txn_ns_, requests, &r);
  }

  void Run() {
    while (true) {
      std::map<Phase, std::vector<Item*>> round;
      for (Item& it : items_)
        if (Running(it)) round[it.program[it.pc]].push_back(&it);
      if (round.empty()) break;
      if (LeaseExpired()) {
        for (auto& [phase, list] : round)
          for (Item* it : list)
            Fail(it, Status::Aborted("lease on transaction " + it->txn->id.ToString() +
                                     " expired before the work was done"));
        break;
      }
      // Apply first: a transaction whose apply fails is rolled back, and its rollback
      // starts in this same round's transitions.
      if (auto a = round.find(Phase::kApply); a != round.end()) {
        Isolated(a->second, &Batch::Apply);
        round.erase(a);
        for (Item& it : items_)
          if (Running(it) && it.program[it.pc] == Phase::kToCanceling && !it.cannot_apply.empty())
            round[Phase::kToCanceling].push_back(&it);
      }
      std::vector<Item*> transitions;
      for (auto& [phase, list] : round) {
        if (IsTransition(phase)) {
          transitions.insert(transitions.end(), list.begin(), list.end());
        } else if (phase == Phase::kUndo) {
          Isolated(list, &Batch::Undo);
        } else if (phase == Phase::kFinish) {
          Isolated(list, &Batch::Finish);
        }
      }
      Isolated(transitions, &Batch::Transition);
    }
    std::vector<UpdateRequest> requests;
    for (Item* it : to_release_)
      requests.push_back(
          {Filter().Eq("_id", it->txn->id).Eq(LeasePath() + ".owner", m_->lease_.owner),
           Update().Unset(LeasePath())});
    WriteResult r;
    if (!requests.empty()) (void)m_->store_->UpdateEach(m_->txn_ns_, requests, &r);
  }

  // Runs one phase for `list`. An error other than the database being unreachable may
  // concern a single transaction (a participant an old bug broke, refusing its update),
  // and one broken transaction must not fail the others: the phase is then run again for
  // each transaction on its own (every write is guarded, so what the first attempt did is
  // not done twice), and only those that fail alone fail.
  void Isolated(const std::vector<Item*>& list, Status (Batch::*phase)(const std::vector<Item*>&)) {
    if (list.empty()) return;
    Status s = (this->*phase)(list);
    if (s.ok()) return;
    if (s.IsUnavailable() || list.size() == 1) {
      for (Item* it : list) Fail(it, s);
      return;
    }
    for (Item* it : list)
      if (Status one = (this->*phase)({it}); !one.ok()) Fail(it, one);
  }

  // Applies each step unless already applied. A step that can never apply (participant
  // missing, guard failing) turns the resume into a rollback, as in Execute.
  Status Apply(const std::vector<Item*>& list) {
    std::vector<std::pair<Item*, const ParticipantStep*>> steps;
    for (Item* it : list)
      for (const auto& step : it->txn->steps) steps.emplace_back(it, &step);
    std::map<std::string, std::map<std::string, Document>> before;
    if (Status s = ReadParticipants(steps, &before); !s.ok()) return s;
    std::map<std::string, std::pair<Namespace, std::vector<UpdateRequest>>> by_ns;
    std::vector<std::pair<Item*, const ParticipantStep*>> sent;
    for (const auto& [it, step] : steps) {
      const Document* doc = Find(before, *step);
      if (doc == nullptr) {
        if (it->cannot_apply.empty())
          it->cannot_apply = step->describe + ": participant not found in " + step->ns.ToString();
        continue;
      }
      if (HasMarker(*doc, *step, it->txn->id)) continue;  // applied before the crash
      Filter f = step->target;
      f.Ne(step->marker_field, it->txn->id).And(step->apply_guard);
      auto& entry = by_ns[step->ns.ToString()];
      entry.first = step->ns;
      entry.second.push_back({std::move(f), step->apply});
      sent.emplace_back(it, step);
    }
    std::int64_t matched = 0;
    if (Status s = Send(by_ns, &matched); !s.ok()) return s;
    if (matched == static_cast<std::int64_t>(sent.size())) {
      for (const auto& [it, step] : sent) ++it->result->operations_applied;
    } else {
      // Some guard refused: read the participants again to tell which.
      std::map<std::string, std::map<std::string, Document>> after;
      if (Status s = ReadParticipants(sent, &after); !s.ok()) return s;
      for (const auto& [it, step] : sent) {
        const Document* doc = Find(after, *step);
        if (doc != nullptr && HasMarker(*doc, *step, it->txn->id)) {
          ++it->result->operations_applied;
        } else if (it->cannot_apply.empty()) {
          it->cannot_apply =
              doc == nullptr
                  ? step->describe + ": participant not found in " + step->ns.ToString()
                  : step->describe + ": guard failed (" + step->apply_guard.ToString() + ")";
        }
      }
    }
    for (Item* it : list) {
      if (!Running(*it)) continue;
      if (it->cannot_apply.empty()) {
        ++it->pc;
        continue;
      }
      it->result->action = Action::kRollback;
      it->result->detail = "rolled back instead of resumed: " + it->cannot_apply;
      it->program = ProgramOf(Action::kRollback);
      it->pc = 0;
    }
    return Status::Ok();
  }

  // Undoes each applied step (marker present), as UndoAll does.
  Status Undo(const std::vector<Item*>& list) {
    std::vector<std::pair<Item*, const ParticipantStep*>> steps;
    for (Item* it : list)
      for (const auto& step : it->txn->steps) steps.emplace_back(it, &step);
    std::map<std::string, std::map<std::string, Document>> before;
    if (Status s = ReadParticipants(steps, &before); !s.ok()) return s;
    std::map<std::string, std::pair<Namespace, std::vector<UpdateRequest>>> by_ns;
    std::vector<std::pair<Item*, const ParticipantStep*>> sent;
    for (const auto& [it, step] : steps) {
      const Document* doc = Find(before, *step);
      if (doc == nullptr || !HasMarker(*doc, *step, it->txn->id)) continue;
      Filter f = step->target;
      f.Eq(step->marker_field, it->txn->id);
      auto& entry = by_ns[step->ns.ToString()];
      entry.first = step->ns;
      entry.second.push_back({std::move(f), step->undo});
      sent.emplace_back(it, step);
    }
    std::int64_t matched = 0;
    if (Status s = Send(by_ns, &matched); !s.ok()) return s;
    if (matched == static_cast<std::int64_t>(sent.size())) {
      for (const auto& [it, step] : sent) ++it->result->operations_undone;
    } else {
      std::map<std::string, std::map<std::string, Document>> after;
      if (Status s = ReadParticipants(sent, &after); !s.ok()) return s;
      for (const auto& [it, step] : sent) {
        const Document* doc = Find(after, *step);
        if (doc != nullptr && !HasMarker(*doc, *step, it->txn->id)) ++it->result->operations_undone;
      }
    }
    for (Item* it : list)
      if (Running(*it)) ++it->pc;
    return Status::Ok();
  }

  // Pulls every marker, as FinishAll does.
  Status Finish(const std::vector<Item*>& list) {
    std::map<std::string, std::pair<Namespace, std::vector<UpdateRequest>>> by_ns;
    for (Item* it : list) {
      for (const auto& step : it->txn->steps) {
        Filter f = step.target;
        // A finish that only pulls this transaction's marker is a no-op where the marker
        // is absent, so its guard changes nothing but the cost: servers that find a
        // document by index only for a bare _id (mongo-java-server) scan for a guarded one.
        if (!PullsOnlyMarker(step, it->txn->id)) f.Eq(step.marker_field, it->txn->id);
        auto& entry = by_ns[step.ns.ToString()];
        entry.first = step.ns;
        entry.second.push_back({std::move(f), step.finish});
      }
    }
    std::int64_t matched = 0;
    if (Status s = Send(by_ns, &matched); !s.ok()) return s;
    for (Item* it : list) ++it->pc;
    return Status::Ok();
  }

  // Compare-and-set of each state, conditional on holding the lease, as Transition does.
  Status Transition(const std::vector<Item*>& list) {
    if (list.empty()) return Status::Ok();
    const Profile& p = profile();
    std::vector<UpdateRequest> requests;
    const DateTime expiry{m_->server_now_().millis + m_->lease_.duration.count()};
    for (Item* it : list) {
      const TxnState to = TargetOf(it->program[it->pc]);
      Filter f;
      f.Eq("_id", it->txn->id)
          .Eq(p.state_field, it->state_spelling)
          .Eq(LeasePath() + ".owner", m_->lease_.owner);
      Update u;
      u.Set(p.state_field, p.states.Written(to)).CurrentDate(p.time_field);
      if (IsTerminal(to)) {
        u.Unset(LeasePath())
            .Set(m_->lease_field_ + ".resolvedBy", m_->lease_.owner)
            .Set(m_->lease_field_ + ".resolvedAction", std::string(ActionName(it->result->action)))
            .Set(m_->lease_field_ + ".outcome", to == TxnState::kDone ? "committed" : "rolled back")
            .CurrentDate(m_->lease_field_ + ".resolvedAt");
      } else {
        u.Set(LeasePath() + ".expires", expiry);
      }
      requests.push_back({std::move(f), std::move(u)});
    }
    const auto start = m_->clock_->MonotonicNow();
    WriteResult r;
    if (Status s = m_->store_->UpdateEach(m_->txn_ns_, requests, &r); !s.ok()) return s;
    std::map<std::string, Document> now;
    if (r.matched < static_cast<std::int64_t>(list.size())) {
      // Some lost their lease: read back which moved (state written and, for a terminal
      // move, resolved by us; otherwise our lease still on it).
      std::vector<Value> ids;
      for (Item* it : list) ids.push_back(it->txn->id);
      std::unique_ptr<Cursor> c;
      Status s =
          m_->store_->Find(m_->txn_ns_, Filter().In("_id", std::move(ids)), FindOptions{}, &c);
      Document d;
      for (bool has = true; s.ok();) {
        s = c->Next(&d, &has);
        if (!s.ok() || !has) break;
        now[d.Get("_id")->ToString()] = std::move(d);
      }
      if (!s.ok()) return s;
    }
    bool renewed = false;
    for (Item* it : list) {
      const TxnState to = TargetOf(it->program[it->pc]);
      if (r.matched < static_cast<std::int64_t>(list.size())) {
        auto d = now.find(it->txn->id.ToString());
        bool moved = false;
        if (d != now.end()) {
          const Value* st = d->second.GetPath(p.state_field);
          const Value* by = d->second.GetPath(IsTerminal(to) ? m_->lease_field_ + ".resolvedBy"
                                                             : LeasePath() + ".owner");
          moved = st && *st == Value(p.states.Written(to)) && by && *by == Value(m_->lease_.owner);
        }
        if (!moved) {
          Fail(it, Status::Conflict("lost the lease on transaction " + it->txn->id.ToString() +
                                    " before moving it to " + std::string(TxnStateName(to))));
          continue;
        }
      }
      it->state_spelling = Value(p.states.Written(to));
      it->result->final_state = to;
      ++it->pc;
      if (IsTerminal(to)) {
        it->result->outcome = Outcome::kResolved;
      } else {
        renewed = true;
      }
    }
    if (renewed) deadline_ = start + m_->lease_.duration - m_->lease_.margin;
    return Status::Ok();
  }

  // A marker of a terminal transaction is a late write: undo it, guarded by the marker.
  // The participants are read first, so that the usual case (no late write) is one query.
  void CheckLateWrites() {
    if (late_.empty()) return;
    std::vector<std::pair<Item*, const ParticipantStep*>> steps;
    for (Item& it : late_)
      for (const auto& step : it.txn->steps) steps.emplace_back(&it, &step);
    std::map<std::string, std::map<std::string, Document>> docs;
    if (Status s = ReadParticipants(steps, &docs); !s.ok()) {
      for (Item& it : late_) {
        it.result->outcome = Outcome::kFailed;
        it.result->status = s;
        it.result->detail = s.ToString();
      }
      return;
    }
    for (const auto& [it, step] : steps) {
      ExecuteResult& res = *it->result;
      if (res.outcome == Outcome::kFailed) continue;
      const Document* doc = Find(docs, *step);
      if (doc == nullptr || !HasMarker(*doc, *step, it->txn->id)) continue;
      Filter f = step->target;
      f.Eq(step->marker_field, it->txn->id);
      const Update& undo = it->txn->state == TxnState::kDone ? step->undo_duplicate : step->undo;
      WriteResult r;
      if (Status s = m_->store_->UpdateOne(step->ns, f, undo, &r); !s.ok()) {
        res.outcome = Outcome::kFailed;
        res.status = s;
        res.detail = s.ToString();
        continue;
      }
      if (r.matched) {
        ++res.late_writes_undone;
        res.detail += (res.detail.empty() ? "undid late write: " : "; ") + step->describe;
      }
    }
    for (Item& it : late_)
      if (it.result->outcome != Outcome::kFailed)
        it.result->outcome =
            it.result->late_writes_undone ? Outcome::kResolved : Outcome::kUntouched;
  }

  StateMachine* m_;
  std::vector<Item> items_, late_;
  std::vector<Item*> to_release_;
  bool claimed_ = false;  // the claim went through: failures from now on release leases
  std::chrono::steady_clock::time_point deadline_{};
};

std::vector<ExecuteResult> StateMachine::ExecuteBatch(const std::vector<const Transaction*>& txns,
                                                      const std::vector<Action>& actions) {
  return Batch(this).Go(txns, actions);
}

}  // namespace txn_recovery
