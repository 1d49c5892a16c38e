// The transition phases: the transaction document moved to its next state under the lease.
//
// Part of StateMachine::Batch (engine/batch.h).
#include "engine/batch.h"

namespace txn_recovery {

void StateMachine::Batch::Transition(const std::vector<Item*>& list) {
  if (list.empty()) return;
  const Profile& p = profile();
  const DateTime now = m_->server_now_();
  std::vector<Write> writes;
  for (Item* it : list) {
    if (!Running(*it)) continue;
    const TxnState to = *TargetOf(it->program[it->pc]);
    writes.push_back({it, nullptr, m_->txn_ns_,
                      requests::Transition(it->txn->id, it->state_spelling, to, it->result->action,
                                           p, paths_, it->lease, Expiry(now)),
                      false, "mark " + p.states.Written(to)});
    writes.back().trace_event = "to";
    writes.back().trace_detail = "to=" + std::string(TxnStateName(to));
  }
  const auto start = m_->clock_->MonotonicNow();
  const Sent sent = Send(writes);
  std::map<std::string, Document> docs;
  // Some lost their lease: read back which moved.
  if (!sent.all_matched() && !ReadBackTransactions(writes, sent, &docs)) return;
  for (std::size_t i : sent.accepted) {
    Item* it = writes[i].item;
    const TxnState to = *TargetOf(it->program[it->pc]);
    if (!sent.all_matched() && !Moved(docs, *it, Value(p.states.Written(to)), IsTerminal(to))) {
      Fail(it, LeaseLive(*it)
                   ? Status::Conflict("lost the lease on transaction " + it->txn->id.ToString() +
                                      " before moving it to " + std::string(TxnStateName(to)))
                   : LeaseExpired(*it));
      continue;
    }
    it->state_spelling = Value(p.states.Written(to));
    it->result->final_state = to;
    ++it->pc;
    if (IsTerminal(to)) {
      it->result->outcome = Outcome::kResolved;
      it->resolved = true;  // the clean-up that may follow stays within the same deadline
    } else {
      SetExpiry(it, now);
      it->deadline = Deadline(start);
    }
  }
}

}  // namespace txn_recovery
