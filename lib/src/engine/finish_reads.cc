#include "engine/finish_reads.h"

namespace txn_recovery {

bool HasTrace(const RecoveryPaths& paths, const Document& doc, const Value& id) {
  return Filter().Eq(paths.Finished(), id).Matches(doc);
}

void MarkTraced(Item* it, const ParticipantStep* step, bool all_it_holds) {
  const std::vector<ParticipantStep>& all = it->txn->steps;
  if (it->traced_at.empty()) {
    it->traced_at.assign(all.size(), false);
    it->trace_all_at.assign(all.size(), false);
  }
  const auto k = static_cast<std::size_t>(step - all.data());
  it->traced_at[k] = true;
  it->trace_all_at[k] = all_it_holds;
}

void DecideFinish(const RecoveryPaths& paths, Item* it, const ParticipantStep* step,
                  const Document& doc, bool applying) {
  const std::vector<ParticipantStep>& all = it->txn->steps;
  if (it->finish_as.empty()) it->finish_as.assign(all.size(), FinishAs::kNothing);
  const bool trace = HasTrace(paths, doc, it->txn->id);
  if (trace) MarkTraced(it, step, requests::TraceIsAll(doc, it->txn->id, paths, false));
  const auto k = static_cast<std::size_t>(step - all.data());
  if (applying || HasMarker(doc, *step, it->txn->id)) {
    it->finish_as[k] = trace ? FinishAs::kUndoDuplicate : FinishAs::kPull;
    // A pull leaves the trace: whether it will then be all the sub-document holds.
    if (!trace) {
      if (it->pull_leaves_all.empty()) it->pull_leaves_all.assign(all.size(), false);
      it->pull_leaves_all[k] = requests::TraceIsAll(doc, it->txn->id, paths, true);
    }
  }
}

void ReadForFinish(ParticipantReads& reads, const BatchTrace& trace, const RecoveryPaths& paths,
                   const std::vector<Item*>& list, std::string_view trace_as) {
  std::vector<Item*> unread;
  for (Item* it : list)
    if (Running(*it) && it->finish_as.empty() && !it->txn->steps.empty()) unread.push_back(it);
  if (unread.empty()) return;
  const std::vector<StepRef> steps = StepsOf(unread);
  const std::vector<Found> found = reads.Participants(steps);
  if (BatchTrace::on()) trace.Read(trace_as, steps, found);
  ParticipantReads::CheckAll(steps, found);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto [it, step] = steps[i];
    if (it->finish_as.empty()) it->finish_as.assign(it->txn->steps.size(), FinishAs::kNothing);
    if (found[i].size() > 1) {
      Fail(it, TwoDocuments(*step, found[i].size()));
    } else if (!found[i].empty()) {
      DecideFinish(paths, it, step, found[i].front(), /*applying=*/false);
    }
  }
}

}  // namespace txn_recovery
