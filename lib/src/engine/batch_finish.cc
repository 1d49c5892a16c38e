// The finish phase: markers pulled, a late duplicate undone, and the finish's traces removed.
//
// Part of StateMachine::Batch (engine/batch.h).
#include "engine/batch.h"

#include <algorithm>
#include <unordered_map>

#include "txn_recovery/engine/conformance_trace.h"

namespace txn_recovery {
namespace {

std::string UntraceLabel(const ParticipantStep& step, bool all) {
  return (all ? "remove the daemon's sub-document (the finish's trace) from "
              : "pull the finish's trace from ") +
         step.describe;
}

}  // namespace

void StateMachine::Batch::Untrace(const std::vector<Item*>& list) {
  RemoveTraces(list);
  for (Item* it : list) ++it->pc;
}

void StateMachine::Batch::RemoveTraces(const std::vector<Item*>& items) {
  std::vector<LeftTrace> traces;
  std::unordered_map<std::string, std::vector<std::size_t>> by_participant;
  for (Item* it : items)
    for (std::size_t k = 0; k < it->traced_at.size(); ++k) {
      if (!it->traced_at[k]) continue;
      const ParticipantStep& step = it->txn->steps[k];
      by_participant[step.ns.ToString() + " " + step.target.ToString()].push_back(traces.size());
      traces.push_back({it, &step, static_cast<bool>(it->trace_all_at[k])});
    }
  for (auto& [participant, indices] : by_participant) {
    if (indices.size() < 2) continue;
    const bool all =
        std::all_of(indices.begin(), indices.end(), [&](std::size_t i) { return traces[i].all; });
    for (std::size_t i : indices) traces[i].all = false;
    traces[indices.back()].all = all;
  }
  const bool tracing = conformance::On();
  if (tracing)
    for (Item* it : items)
      for (std::size_t k = 0; k < it->txn->steps.size(); ++k)
        if (it->traced_at.empty() || !it->traced_at[k]) TraceUnsent(*it, "untrace", k);
  std::vector<Write> writes;
  for (const LeftTrace& t : traces) {
    auto [whole, part] = requests::Untrace(t.step->target, t.it->txn->id, paths_);
    writes.push_back({t.it, t.step, t.step->ns, t.all ? std::move(whole) : std::move(part),
                      /*best_effort=*/true, UntraceLabel(*t.step, t.all)});
  }
  // The trace's line is the whole clean-up's, written below: one step of the model,
  // matched if any of its writes matched.
  const Sent sent = Send(writes);
  std::vector<bool> removed(traces.size(), false);
  std::vector<std::size_t> again;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    removed[i] = sent.fate[i] == Sent::Fate::kMatched;
    if (sent.fate[i] == Sent::Fate::kMissed || sent.fate[i] == Sent::Fate::kUnknown)
      again.push_back(i);
  }
  RemoveAgain(traces, std::move(again), &removed);
  if (tracing)
    for (std::size_t i = 0; i < traces.size(); ++i) {
      const std::size_t k = StepIndex(*traces[i].it, traces[i].step);
      if (sent.fate[i] == Sent::Fate::kNotSent) {
        TraceUnsent(*traces[i].it, "untrace", k);
        continue;
      }
      // Each write is a bulk of its own while tracing: its count says whether it matched.
      // A bulk failed as a whole may or may not have reached the server.
      const std::string ok = sent.fate[i] == Sent::Fate::kFailed && !removed[i] ? "err"
                             : removed[i]                                       ? "1"
                                                                                : "0";
      Trace(*traces[i].it, "untrace", "s=" + std::to_string(k) + " sent=1 ok=" + ok + " live=1");
    }
}

void StateMachine::Batch::RemoveAgain(const std::vector<LeftTrace>& traces,
                                      std::vector<std::size_t> again, std::vector<bool>* removed) {
  for (int round = 0; round < 2 && !again.empty() && !writer_.recording(); ++round) {
    std::vector<StepRef> refs;
    for (std::size_t i : again) refs.emplace_back(traces[i].it, traces[i].step);
    const std::vector<Found> found = ReadParticipants(refs, /*best_effort=*/true);
    std::vector<Write> retry;
    std::vector<std::size_t> which;
    for (std::size_t k = 0; k < again.size(); ++k) {
      const LeftTrace& t = traces[again[k]];
      if (found[k].size() != 1) continue;
      const Value* finished = found[k].front().GetPath(paths_.Finished());
      const Array* ids = finished != nullptr ? finished->as_array() : nullptr;
      if (ids == nullptr || std::find(ids->begin(), ids->end(), t.it->txn->id) == ids->end())
        continue;  // gone: the first write took it (the count did not say), or another did
      const bool all =
          requests::TraceIsAll(found[k].front(), t.it->txn->id, paths_, /*adding=*/false);
      auto [whole, part] = requests::Untrace(t.step->target, t.it->txn->id, paths_);
      retry.push_back({t.it, t.step, t.step->ns, all ? std::move(whole) : std::move(part),
                       /*best_effort=*/true, UntraceLabel(*t.step, all) + " (read again)"});
      which.push_back(again[k]);
    }
    again.clear();
    if (retry.empty()) break;
    const Sent more = Send(retry);
    for (std::size_t j = 0; j < which.size(); ++j) {
      if (more.fate[j] == Sent::Fate::kMatched) (*removed)[which[j]] = true;
      if (more.fate[j] == Sent::Fate::kMissed || more.fate[j] == Sent::Fate::kUnknown)
        again.push_back(which[j]);
    }
  }
}

void StateMachine::Batch::Finish(const std::vector<Item*>& list) {
  ReadForFinish(list, "finishread");
  std::vector<Write> writes;
  for (Item* it : list) {
    if (!Running(*it)) continue;
    for (std::size_t k = 0; k < it->finish_as.size(); ++k) {
      const ParticipantStep& step = it->txn->steps[k];
      auto [pull, duplicate] = requests::Finish(step, it->txn->id, paths_);
      switch (it->finish_as[k]) {
        case FinishAs::kNothing:
          writer_.Note(step.ns, "(nothing: no marker to pull) " + step.describe);
          if (conformance::On()) TraceUnsent(*it, "finish", k, "as=none");
          break;
        case FinishAs::kPull:
          // Seeded bug a (docs/proof.md, "Conformance"): the pull trusts the read made before
          // the claim, without "trace absent" in its filter (the model's seeded bug e).
          if (Seeded('a')) pull.filter = Filter(step.target).Eq(step.marker_field, it->txn->id);
          MarkTraced(it, &step, it->pull_leaves_all[k]);
          writes.push_back({it, &step, step.ns, std::move(pull), false,
                            "finish: pull the marker of " + step.describe});
          writes.back().trace_event = "finish";
          writes.back().trace_detail = "as=pull";
          break;
        case FinishAs::kUndoDuplicate:
          writes.push_back({it, &step, step.ns, std::move(duplicate), false,
                            "finish: undo a late duplicate of " + step.describe});
          writes.back().trace_event = "finish";
          writes.back().trace_detail = "as=dup";
          break;
      }
    }
  }
  // A finish that matches nothing had nothing left to do: the application pulled the
  // marker itself meanwhile.
  (void)Send(writes);
  for (Item* it : list) {
    for (const TaggedSet& set : it->txn->tagged_sets) {
      if (!Running(*it)) break;
      const UpdateRequest finish = requests::FinishTagged(set);
      if (auto n = SendMany(it, "finish: " + set.describe, set.ns, finish.filter, &finish.update))
        it->result->operations_applied += static_cast<int>(*n);
    }
    if (Running(*it)) ++it->pc;
  }
}

void StateMachine::Batch::ReadForFinish(const std::vector<Item*>& list, std::string_view trace_as) {
  std::vector<Item*> unread;
  for (Item* it : list)
    if (Running(*it) && it->finish_as.empty() && !it->txn->steps.empty()) unread.push_back(it);
  if (unread.empty()) return;
  const std::vector<StepRef> steps = StepsOf(unread);
  const std::vector<Found> found = ReadParticipants(steps);
  if (conformance::On()) TraceRead(trace_as, steps, found);
  CheckAll(steps, found);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto [it, step] = steps[i];
    if (it->finish_as.empty()) it->finish_as.assign(it->txn->steps.size(), FinishAs::kNothing);
    if (found[i].size() > 1) {
      Fail(it, TwoDocuments(*step, found[i].size()));
    } else if (!found[i].empty()) {
      DecideFinish(it, step, found[i].front(), /*applying=*/false);
    }
  }
}

}  // namespace txn_recovery
