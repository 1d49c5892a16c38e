// The apply phase of a resume: each step applied unless already applied.
#include "engine/finish_reads.h"
#include "engine/phases.h"

namespace txn_recovery {

void ApplyPhase::Run(const std::vector<Item*>& list) {
  const std::vector<StepRef> steps = StepsOf(list);
  const std::vector<Found> before = kit_.reads.Participants(steps);
  const bool tracing = BatchTrace::on();
  if (tracing) kit_.trace.Read("readp", steps, before);
  ParticipantReads::CheckAll(steps, before);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto [it, step] = steps[i];
    if (before[i].size() > 1) {
      Fail(it, TwoDocuments(*step, before[i].size()));
    } else if (before[i].empty() && it->cannot_apply.empty()) {
      it->cannot_apply = step->describe + ": participant not found in " + step->ns.ToString();
      kit_.send.Note(
          step->ns,
          "(cannot apply: participant not found; the resume becomes a rollback) " + step->describe);
    }
  }
  // Checked for every step before any is written: one that cannot be written exactly ends
  // the transaction with nothing written to any of its participants.
  std::vector<Write> writes;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto [it, step] = steps[i];
    if (!Running(*it) || !it->cannot_apply.empty()) continue;
    const Document& doc = before[i].front();
    // Once applied, every marker is there; no trace can appear meanwhile but this daemon's
    // own (model/recovery.pml, resume): the finish goes by this read.
    DecideFinish(kit_.paths, it, step, doc, /*applying=*/true);
    if (HasMarker(doc, *step, it->txn->id)) {  // applied before a crash
      kit_.send.Note(step->ns, "(nothing: already applied) " + step->describe);
      if (tracing) kit_.trace.ApplyRead(*it, step, /*marker=*/true, /*sent=*/false);
      continue;
    }
    AddWrite(&writes, it, step, doc, step->apply, Under::TheLease(*it->lease),
             "apply: " + step->describe, "apply",
             [&, step = step, it = it] { return requests::Apply(*step, it->txn->id, doc); });
  }
  std::erase_if(writes, [&](const Write& w) { return !Running(*w.item); });
  const Sent sent = kit_.send.Send(writes);
  if (sent.all_matched()) {
    for (std::size_t i : sent.accepted) ++writes[i].item->result->operations_applied;
  } else {
    ReadBackRefused(writes, sent);
  }
  for (Item* it : list) {
    if (!Running(*it)) continue;
    if (it->cannot_apply.empty()) {
      ++it->pc;
      continue;
    }
    it->result->action = Action::kRollback;
    it->result->detail = "rolled back instead of resumed: " + it->cannot_apply;
    it->program = RollbackInsteadOfResume();
    it->pc = 0;
  }
}

void ApplyPhase::ReadBackRefused(const std::vector<Write>& writes, const Sent& sent) {
  // Some guard refused: read the participants again to tell which.
  std::vector<StepRef> refs;
  const std::vector<Found> after = kit_.reads.Back(writes, sent, &refs);
  for (std::size_t k = 0; k < refs.size(); ++k) {
    auto [it, step] = refs[k];
    if (!Running(*it)) continue;
    const bool marker = AnyHasMarker(after[k], *step, it->txn->id);
    if (BatchTrace::on()) kit_.trace.ApplyRead(*it, step, marker, true);
    if (marker) {
      ++it->result->operations_applied;
    } else if (!kit_.send.Live(*it)) {
      Fail(it, LeaseExpired(*it));  // the fence, not the guard, may have refused it
    } else if (it->cannot_apply.empty()) {
      it->cannot_apply =
          after[k].empty()
              ? step->describe + ": participant not found in " + step->ns.ToString()
              : step->describe + ": guard failed (" + step->apply_guard.ToString() + ")";
    }
  }
}

}  // namespace txn_recovery
