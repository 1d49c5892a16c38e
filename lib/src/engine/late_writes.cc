// The late-write check of a transaction ended within the window: an apply that reached a
// participant after the end is undone (lease-free by design: LeaseFree::kLateWrite).
#include <algorithm>

#include "engine/finish_reads.h"
#include "engine/phases.h"

namespace txn_recovery {

std::vector<Write> LateWriteCheck::Undos(const std::vector<StepRef>& steps,
                                         const std::vector<Found>& found,
                                         std::vector<Item*>* traced) {
  std::vector<Write> writes;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto [it, step] = steps[i];
    if (it->ended) continue;
    const TxnState state = it->txn->state;
    if (const Document* d = WithMarker(found[i], *step, it->txn->id)) {
      AddWrite(&writes, it, step, *d, requests::LateUndoUpdate(*step, state),
               Under::NoLease(LeaseFree::kLateWrite, it->lease),
               "undo the late write: " + step->describe, "late", [&, step = step, it = it] {
                 return requests::LateUndo(*step, it->txn->id, state, *d);
               });
    } else {
      kit_.send.Note(step->ns, "(nothing: no late write of " + step->describe + ")");
      if (BatchTrace::on()) kit_.trace.Unsent(*it, "late", StepIndex(*it, step));
    }
    const Value& id = it->txn->id;
    if (const auto t = std::find_if(found[i].begin(), found[i].end(),
                                    [&](const Document& d) { return HasTrace(kit_.paths, d, id); });
        t != found[i].end()) {
      MarkTraced(it, step, requests::TraceIsAll(*t, it->txn->id, kit_.paths, false));
      if (traced->empty() || traced->back() != it) traced->push_back(it);
    }
  }
  std::erase_if(writes, [&](const Write& w) { return w.item->ended; });
  return writes;
}

void LateWriteCheck::Run(std::vector<Item>& items) {
  std::vector<Item*> late;
  for (Item& it : items)
    if (it.late) late.push_back(&it);
  if (late.empty()) return;
  const std::vector<StepRef> steps = StepsOf(late);
  const std::vector<Found> found = kit_.reads.Participants(steps);
  ParticipantReads::CheckAll(steps, found);
  std::vector<Item*> traced;
  std::vector<Write> writes = Undos(steps, found, &traced);
  const Sent sent = kit_.send.Send(writes);
  std::vector<bool> undone(sent.accepted.size(), sent.all_matched());
  if (!sent.all_matched()) {
    // Another daemon may have undone some of them meanwhile; only what is gone counts.
    std::vector<StepRef> refs;
    const std::vector<Found> after = kit_.reads.Back(writes, sent, &refs);
    for (std::size_t k = 0; k < refs.size(); ++k)
      undone[k] = !AnyHasMarker(after[k], *refs[k].second, refs[k].first->txn->id);
  }
  // A finish's traces, left by a daemon stopped after done: removed once the late writes
  // are undone (best effort: the next check, or the orphan scan, retries).
  UntracePhase(kit_).Remove(traced);
  for (std::size_t k = 0; k < sent.accepted.size(); ++k) {
    const Write& w = writes[sent.accepted[k]];
    if (!undone[k] || w.item->ended) continue;
    ++w.item->result->late_writes_undone;
    std::string& detail = w.item->result->detail;
    detail += (detail.empty() ? "undid late write: " : "; ") + w.step->describe;
  }
  for (Item* it : late) {
    for (const TaggedSet& set : it->txn->tagged_sets)
      if (!it->ended) CheckTagged(it, set);
    if (it->ended) continue;
    it->result->outcome = it->result->late_writes_undone ? Outcome::kResolved : Outcome::kUntouched;
  }
}

void LateWriteCheck::CheckTagged(Item* it, const TaggedSet& set) {
  std::optional<std::int64_t> n;
  std::string what;
  const Under under = Under::NoLease(LeaseFree::kLateWrite, it->lease);
  if (it->txn->state == TxnState::kCancelled) {
    n = kit_.send.SendMany(it, under, "late documents: " + set.describe, set.ns, set.members,
                           nullptr);
    what = "deleted ";
  } else if (!it->txn->outcome_unknown) {
    const UpdateRequest finish = requests::FinishTagged(set);
    n = kit_.send.SendMany(it, under, "late documents: " + set.describe, set.ns, finish.filter,
                           &finish.update);
    what = "finished ";
  } else {
    std::int64_t left = 0;
    if (Status s = kit_.reads.Count(set.ns, set.members, &left); !s.ok()) return Fail(it, s);
    if (left > 0)
      Fail(it, Status::Malformed(std::to_string(left) + " " + set.describe +
                                 " remain after it was done, and nothing records whether it "
                                 "committed or rolled back"));
    return;
  }
  if (n && *n > 0) {
    it->result->late_writes_undone += static_cast<int>(*n);
    std::string& detail = it->result->detail;
    detail +=
        (detail.empty() ? "late write: " : "; ") + what + std::to_string(*n) + " " + set.describe;
  }
}

}  // namespace txn_recovery
