// The finish phase: markers pulled, a late duplicate undone, tagged sets finished.
#include "engine/finish_reads.h"
#include "engine/phases.h"

namespace txn_recovery {

void FinishPhase::Run(const std::vector<Item*>& list) {
  ReadForFinish(kit_.reads, kit_.trace, kit_.paths, list, "finishread");
  std::vector<Write> writes;
  for (Item* it : list) {
    if (!Running(*it)) continue;
    for (std::size_t k = 0; k < it->finish_as.size(); ++k) {
      const ParticipantStep& step = it->txn->steps[k];
      auto [pull, duplicate] = requests::Finish(step, it->txn->id, kit_.paths);
      switch (it->finish_as[k]) {
        case FinishAs::kNothing:
          kit_.send.Note(step.ns, "(nothing: no marker to pull) " + step.describe);
          if (BatchTrace::on()) kit_.trace.Unsent(*it, "finish", k, "as=none");
          break;
        case FinishAs::kPull:
          // Seeded bug a (docs/proof.md, "Conformance"): the pull trusts the read made before
          // the claim, without "trace absent" in its filter (the model's seeded bug e).
          if (Seeded('a')) pull.filter = Filter(step.target).Eq(step.marker_field, it->txn->id);
          MarkTraced(it, &step, it->pull_leaves_all[k]);
          writes.push_back({it, &step, step.ns, std::move(pull), Under::TheLease(*it->lease), false,
                            "finish: pull the marker of " + step.describe});
          writes.back().trace_event = "finish";
          writes.back().trace_detail = "as=pull";
          break;
        case FinishAs::kUndoDuplicate:
          writes.push_back({it, &step, step.ns, std::move(duplicate), Under::TheLease(*it->lease),
                            false, "finish: undo a late duplicate of " + step.describe});
          writes.back().trace_event = "finish";
          writes.back().trace_detail = "as=dup";
          break;
      }
    }
  }
  // A finish that matches nothing had nothing left to do: the application pulled the marker
  // itself meanwhile.
  (void)kit_.send.Send(writes);
  for (Item* it : list) {
    for (const TaggedSet& set : it->txn->tagged_sets) {
      if (!Running(*it)) break;
      const UpdateRequest finish = requests::FinishTagged(set);
      if (auto n = kit_.send.SendMany(it, Under::TheLease(*it->lease), "finish: " + set.describe,
                                      set.ns, finish.filter, &finish.update))
        it->result->operations_applied += static_cast<int>(*n);
    }
    if (Running(*it)) ++it->pc;
  }
}

}  // namespace txn_recovery
