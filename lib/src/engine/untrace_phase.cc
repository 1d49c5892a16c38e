// The clean-up of a finish's traces once its transaction is terminal (lease-free by design:
// LeaseFree::kUntrace).
#include <algorithm>
#include <unordered_map>

#include "engine/phases.h"

namespace txn_recovery {
namespace {

std::string UntraceLabel(const ParticipantStep& step, bool all) {
  return (all ? "remove the daemon's sub-document (the finish's trace) from "
              : "pull the finish's trace from ") +
         step.describe;
}

}  // namespace

void UntracePhase::Run(const std::vector<Item*>& list) {
  Remove(list);
  for (Item* it : list) ++it->pc;
}

auto UntracePhase::Left(const std::vector<Item*>& items) -> std::vector<LeftTrace> {
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
  return traces;
}

Write UntracePhase::RemoveWrite(const LeftTrace& t, bool all, std::string what) const {
  auto [whole, part] = requests::Untrace(t.step->target, t.it->txn->id, kit_.paths);
  return {t.it,
          t.step,
          t.step->ns,
          all ? std::move(whole) : std::move(part),
          Under::NoLease(LeaseFree::kUntrace, t.it->lease),
          /*best_effort=*/true,
          std::move(what)};
}

void UntracePhase::Remove(const std::vector<Item*>& items) {
  const std::vector<LeftTrace> traces = Left(items);
  if (BatchTrace::on())
    for (Item* it : items)
      for (std::size_t k = 0; k < it->txn->steps.size(); ++k)
        if (it->traced_at.empty() || !it->traced_at[k]) kit_.trace.Unsent(*it, "untrace", k);
  std::vector<Write> writes;
  for (const LeftTrace& t : traces)
    writes.push_back(RemoveWrite(t, t.all, UntraceLabel(*t.step, t.all)));
  // The trace's line is the whole clean-up's (TraceRemoved): one step of the model, matched
  // if any of its writes matched.
  const Sent sent = kit_.send.Send(writes);
  std::vector<bool> removed(traces.size(), false);
  std::vector<std::size_t> again;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    removed[i] = sent.fate[i] == Sent::Fate::kMatched;
    if (sent.fate[i] == Sent::Fate::kMissed || sent.fate[i] == Sent::Fate::kUnknown)
      again.push_back(i);
  }
  RemoveAgain(traces, std::move(again), &removed);
  if (BatchTrace::on()) TraceRemoved(traces, sent, removed);
}

void UntracePhase::TraceRemoved(const std::vector<LeftTrace>& traces, const Sent& sent,
                                const std::vector<bool>& removed) const {
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const std::size_t k = StepIndex(*traces[i].it, traces[i].step);
    if (sent.fate[i] == Sent::Fate::kNotSent) {
      kit_.trace.Unsent(*traces[i].it, "untrace", k);
      continue;
    }
    // Each write is a bulk of its own while tracing: its count says whether it matched. A
    // bulk failed as a whole may or may not have reached the server.
    const std::string ok = sent.fate[i] == Sent::Fate::kFailed && !removed[i] ? "err"
                           : removed[i]                                       ? "1"
                                                                              : "0";
    kit_.trace.Line(*traces[i].it, "untrace",
                    "s=" + std::to_string(k) + " sent=1 ok=" + ok + " live=1");
  }
}

void UntracePhase::RemoveAgain(const std::vector<LeftTrace>& traces, std::vector<std::size_t> again,
                               std::vector<bool>* removed) {
  for (int round = 0; round < 2 && !again.empty() && !kit_.send.rehearsing(); ++round) {
    std::vector<StepRef> refs;
    for (std::size_t i : again) refs.emplace_back(traces[i].it, traces[i].step);
    const std::vector<Found> found = kit_.reads.Participants(refs, /*best_effort=*/true);
    std::vector<Write> retry;
    std::vector<std::size_t> which;
    for (std::size_t k = 0; k < again.size(); ++k) {
      const LeftTrace& t = traces[again[k]];
      if (found[k].size() != 1) continue;
      const Value* finished = found[k].front().GetPath(kit_.paths.Finished());
      const Array* ids = finished != nullptr ? finished->as_array() : nullptr;
      if (ids == nullptr || std::find(ids->begin(), ids->end(), t.it->txn->id) == ids->end())
        continue;  // gone: the first write took it (the count did not say), or another did
      const bool all =
          requests::TraceIsAll(found[k].front(), t.it->txn->id, kit_.paths, /*adding=*/false);
      retry.push_back(RemoveWrite(t, all, UntraceLabel(*t.step, all) + " (read again)"));
      which.push_back(again[k]);
    }
    again.clear();
    if (retry.empty()) break;
    const Sent more = kit_.send.Send(retry);
    for (std::size_t j = 0; j < which.size(); ++j) {
      if (more.fate[j] == Sent::Fate::kMatched) (*removed)[which[j]] = true;
      if (more.fate[j] == Sent::Fate::kMissed || more.fate[j] == Sent::Fate::kUnknown)
        again.push_back(which[j]);
    }
  }
}

}  // namespace txn_recovery
