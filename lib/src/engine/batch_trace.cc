// The conformance trace of a batch (txn_recovery/engine/conformance_trace.h): each line
// names the daemon, the transaction and the step of model/recovery.pml it takes.
// Part of StateMachine::Batch (engine/batch.h).
#include <cstdlib>

#include "engine/batch.h"
#include "txn_recovery/engine/conformance_trace.h"

namespace txn_recovery {

void StateMachine::Batch::Trace(const Item& it, std::string_view event,
                                const std::string& rest) const {
  std::string line = "d=" + m_->lease_.owner + " t=" + it.txn->id.ToString() + " e=";
  line += event;
  if (!rest.empty()) line += ' ' + rest;
  conformance::Write(line);
}

void StateMachine::Batch::TraceUnsent(const Item& it, std::string_view event, std::size_t step,
                                      const std::string& rest) const {
  Trace(it, event, "s=" + std::to_string(step) + " sent=0 ok=0" + (rest.empty() ? "" : " ") + rest);
}

void StateMachine::Batch::TraceApplyRead(const Item& it, const ParticipantStep* step, bool marker,
                                         bool sent) const {
  const std::size_t k = StepIndex(it, step);
  if (!sent) TraceUnsent(it, "apply", k);
  Trace(it, "cannot",
        "s=" + std::to_string(k) + " v=" + (marker ? "0" : "1") + (sent ? "" : " sent=0"));
}

void StateMachine::Batch::TraceRead(std::string_view event, const std::vector<StepRef>& steps,
                                    const std::vector<Found>& found) const {
  // Steps of one item are consecutive (StepsOf); the model's bits: marker of step k at
  // 4k, the finish's trace at 4k + 1 (two steps: a transfer's debit and credit).
  const Item* cur = nullptr;
  int bits = 0;
  const auto flush = [&] {
    if (cur != nullptr) Trace(*cur, event, "rd=" + std::to_string(bits));
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
      if (HasTrace(d, id)) bits |= 2 << (2 * k);
  }
  flush();
}

#ifdef TXN_RECOVERY_SEEDED_BUGS
bool StateMachine::Batch::Seeded(char bug) {
  static const char chosen = [] {
    const char* b = std::getenv("TXN_RECOVERY_SEEDED_BUG");
    return b != nullptr ? *b : '\0';
  }();
  return chosen == bug;
}
#endif

}  // namespace txn_recovery
