#include "engine/batch_trace.h"

#include "engine/finish_reads.h"
#include "txn_recovery/engine/conformance_trace.h"

namespace txn_recovery {

bool BatchTrace::on() {
  return conformance::On();
}

void BatchTrace::Line(const Item& it, std::string_view event, const std::string& rest) const {
  std::string line = "d=" + owner_ + " t=" + it.txn->id.ToString() + " e=";
  line += event;
  if (!rest.empty()) line += ' ' + rest;
  conformance::Write(line);
}

void BatchTrace::Unsent(const Item& it, std::string_view event, std::size_t step,
                        const std::string& rest) const {
  Line(it, event, "s=" + std::to_string(step) + " sent=0 ok=0" + (rest.empty() ? "" : " ") + rest);
}

void BatchTrace::ApplyRead(const Item& it, const ParticipantStep* step, bool marker,
                           bool sent) const {
  const std::size_t k = StepIndex(it, step);
  if (!sent) Unsent(it, "apply", k);
  Line(it, "cannot",
       "s=" + std::to_string(k) + " v=" + (marker ? "0" : "1") + (sent ? "" : " sent=0"));
}

void BatchTrace::Read(std::string_view event, const std::vector<StepRef>& steps,
                      const std::vector<Found>& found) const {
  // Steps of one item are consecutive (StepsOf); the model's bits: marker of step k at
  // 4k, the finish's trace at 4k + 1 (two steps: a transfer's debit and credit).
  const Item* cur = nullptr;
  int bits = 0;
  const auto flush = [&] {
    if (cur != nullptr) Line(*cur, event, "rd=" + std::to_string(bits));
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Item* it = steps[i].first;
    if (it != cur) {
      flush();
      cur = it;
      bits = 0;
    }
    const std::size_t k = StepIndex(*it, steps[i].second);
    if (k > 1) continue;
    const Value& id = it->txn->id;
    if (AnyHasMarker(found[i], *steps[i].second, id)) bits |= 1 << (2 * k);
    for (const Document& d : found[i])
      if (HasTrace(paths_, d, id)) bits |= 2 << (2 * k);
  }
  flush();
}

void BatchTrace::Bulk(const std::vector<Write>& writes, const std::vector<std::size_t>& indices,
                      const std::vector<bool>& live, const std::set<std::size_t>& refused,
                      std::int64_t matched) const {
  // A bulk says how many of its writes matched, not which: exact when it holds one write
  // (the sender makes each write a bulk of its own while tracing), or when all or none
  // matched; otherwise "?", which the model may take either way. A bulk that failed as a
  // whole (matched -1) may or may not have reached the server.
  const auto accepted = static_cast<std::int64_t>(indices.size() - refused.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const Write& w = writes[indices[k]];
    if (w.trace_event == nullptr) continue;
    std::string ok = "?";
    if (matched < 0)
      ok = "err";
    else if (refused.count(k))
      ok = "0";
    else if (matched == 0 || accepted == 1)
      ok = std::to_string(matched);
    else if (matched == accepted)
      ok = "1";
    std::string rest;
    if (w.step != nullptr) rest = "s=" + std::to_string(StepIndex(*w.item, w.step)) + " ";
    rest += "sent=1 ok=" + ok + " live=" + (live[indices[k]] ? "1" : "0");
    if (!w.trace_detail.empty()) rest += " " + w.trace_detail;
    Line(*w.item, w.trace_event, rest);
  }
}

}  // namespace txn_recovery
