// The transition phases: the transaction document moved to its next state under the lease.
#include "engine/phases.h"

namespace txn_recovery {

void TransitionPhase::Run(const std::vector<Item*>& list) {
  if (list.empty()) return;
  const Profile& p = kit_.profile;
  const DateTime now = server_now_();
  std::vector<Write> writes;
  for (Item* it : list) {
    if (!Running(*it)) continue;
    const TxnState to = *TargetOf(it->program[it->pc]);
    writes.push_back({it, nullptr, kit_.txn_ns,
                      requests::Transition(it->txn->id, it->state_spelling, to, it->result->action,
                                           p, kit_.paths, it->lease->terms(), keeper_.Expiry(now)),
                      Under::TheLease(*it->lease), false, "mark " + p.states.Written(to)});
    writes.back().trace_event = "to";
    writes.back().trace_detail = "to=" + std::string(TxnStateName(to));
  }
  const auto start = keeper_.Now();
  const Sent sent = kit_.send.Send(writes);
  std::map<std::string, Document> docs;
  // Some lost their lease: read back which moved.
  if (!sent.all_matched() && !kit_.reads.Transactions(writes, sent, &docs)) return;
  for (std::size_t i : sent.accepted) {
    Item* it = writes[i].item;
    const TxnState to = *TargetOf(it->program[it->pc]);
    if (!sent.all_matched() &&
        !kit_.reads.Moved(docs, *it, Value(p.states.Written(to)), IsTerminal(to))) {
      Fail(it, kit_.send.Live(*it)
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
      keeper_.Renew(&*it->lease, now, start);
    }
  }
}

}  // namespace txn_recovery
