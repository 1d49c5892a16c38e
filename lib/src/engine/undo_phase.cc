// The undo phase of a roll back.
#include "engine/phases.h"

namespace txn_recovery {

std::vector<Found> UndoPhase::Before(const std::vector<StepRef>& steps) {
  // A roll back undoes by the read before its claim (the model's E1: an apply that lands
  // after that read is a late write of the cancelled transaction, for the late-write check,
  // like one that lands after the undos); a resume turned roll back reads now.
  std::vector<StepRef> unread;
  for (const StepRef& s : steps)
    if (s.first->read_before_claim.empty()) unread.push_back(s);
  std::vector<Found> fresh = kit_.reads.Participants(unread);
  ParticipantReads::CheckAll(unread, fresh);
  std::vector<Found> before(steps.size());
  for (std::size_t i = 0, u = 0; i < steps.size(); ++i) {
    auto [it, step] = steps[i];
    before[i] = it->read_before_claim.empty() ? std::move(fresh[u++])
                                              : it->read_before_claim[StepIndex(*it, step)];
  }
  return before;
}

void UndoPhase::Run(const std::vector<Item*>& list) {
  const std::vector<StepRef> steps = StepsOf(list);
  const std::vector<Found> before = Before(steps);
  std::vector<Write> writes;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto [it, step] = steps[i];
    if (!Running(*it)) continue;
#ifdef TXN_RECOVERY_TEST_BREAK_UNDO
    // A deliberately broken engine, for the test that `rehearse` catches one (never built by
    // default: the CMake option TXN_RECOVERY_TEST_BREAK_UNDO): the undo of a transaction's
    // last step, when it has several, is skipped as if it had been sent.
    if (it->txn->steps.size() > 1 && step == &it->txn->steps.back()) continue;
#endif
    if (const Document* d = WithMarker(before[i], *step, it->txn->id)) {
      AddWrite(&writes, it, step, *d, step->undo, Under::TheLease(*it->lease),
               "undo: " + step->describe, "undo",
               [&, step = step, it = it] { return requests::Undo(*step, it->txn->id, *d); });
    } else {
      kit_.send.Note(step->ns, "(nothing: not applied) " + step->describe);
      if (BatchTrace::on()) kit_.trace.Unsent(*it, "undo", StepIndex(*it, step));
    }
  }
  std::erase_if(writes, [&](const Write& w) { return !Running(*w.item); });
  const Sent sent = kit_.send.Send(writes);
  if (sent.all_matched()) {
    for (std::size_t i : sent.accepted) ++writes[i].item->result->operations_undone;
  } else {
    std::vector<StepRef> refs;
    const std::vector<Found> after = kit_.reads.Back(writes, sent, &refs);
    for (std::size_t k = 0; k < refs.size(); ++k) {
      auto [it, step] = refs[k];
      if (!AnyHasMarker(after[k], *step, it->txn->id)) {
        ++it->result->operations_undone;
      } else {
        Fail(it, kit_.send.Live(*it)
                     ? Status::Conflict(step->describe + ": the undo did not take effect")
                     : LeaseExpired(*it));
      }
    }
  }
  for (Item* it : list) {
    for (const TaggedSet& set : it->txn->tagged_sets) {
      if (!Running(*it)) break;
      if (auto n = kit_.send.SendMany(it, Under::TheLease(*it->lease), "delete: " + set.describe,
                                      set.ns, set.members, nullptr))
        it->result->operations_undone += static_cast<int>(*n);
    }
    if (Running(*it)) ++it->pc;
  }
}

}  // namespace txn_recovery
