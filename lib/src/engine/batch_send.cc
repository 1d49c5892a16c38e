// The lease-checked sender: every write of a batch goes through Send or SendMany, the only
// place the lease-deadline rule (LeaseOptions in state_machine.h) and the fence are applied.
//
// Part of StateMachine::Batch (engine/batch.h).
#include "engine/batch.h"

#include <set>

#include "txn_recovery/engine/conformance_trace.h"

namespace txn_recovery {

auto StateMachine::Batch::Send(std::vector<Write>& writes) -> Sent {
  Sent sent;
  sent.fate.assign(writes.size(), Sent::Fate::kNotSent);
  const bool tracing = conformance::On();
  std::vector<bool> live(tracing ? writes.size() : 0, true);
  // Whether write i is not sent: under a lease whose local deadline has passed (its item
  // fails, unless the write is best effort).
  const auto stopped = [&](std::size_t i) {
    Item* it = writes[i].item;
    if (!it->leased || LeaseLive(*it)) return false;
    if (tracing) live[i] = false;
    // Seeded bug b (docs/proof.md, "Conformance"): the write sent all the same.
    if (Seeded('b')) return false;
    if (tracing && writes[i].best_effort && writes[i].trace_event != nullptr)
      TraceUnsent(*it, writes[i].trace_event, writes[i].step ? StepIndex(*it, writes[i].step) : 0,
                  writes[i].trace_detail);
    else if (tracing && !writes[i].best_effort && !it->ended)
      Trace(*it, "deadline", "");
    if (!writes[i].best_effort) Fail(it, LeaseExpired(*it));
    return true;
  };
  std::map<std::string, std::vector<std::size_t>> by_ns;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    Item* it = writes[i].item;
    if (stopped(i)) continue;
    if (it->leased || writes[i].claims_lease)
      writes[i].request.filter = requests::Fenced(std::move(writes[i].request.filter), it->lease);
    by_ns[writes[i].ns.ToString()].push_back(i);
  }
  // With the conformance trace on, each write goes in a bulk of its own, so that its line
  // says whether it matched (a bulk's count does not say which): the writes of an unordered
  // bulk were never in any promised order, so this is one of the orders it may take. Each
  // is then checked against its lease's deadline as it goes, as the model's daemon checks
  // before each write: the traced engine is the model's, and what checking once per bulk
  // adds (a write sent after the deadline passed during its bulk, stopped by the fence)
  // is outside the conformance check (docs/proof.md, "Conformance").
  std::vector<std::vector<std::size_t>> bulks;
  for (auto& [key, indices] : by_ns) {
    if (!tracing) {
      bulks.push_back(std::move(indices));
      continue;
    }
    // Claims stay one bulk: they take no lease yet, and Claim traces each by its read back.
    std::vector<std::size_t> claims;
    for (std::size_t i : indices) {
      if (writes[i].claims_lease)
        claims.push_back(i);
      else
        bulks.push_back({i});
    }
    if (!claims.empty()) bulks.push_back(std::move(claims));
  }
  for (const std::vector<std::size_t>& indices : bulks) {
    if (tracing && stopped(indices.front())) continue;
    std::vector<LabelledRequest> bulk;
    bulk.reserve(indices.size());
    for (std::size_t i : indices)
      bulk.push_back({std::move(writes[i].what), std::move(writes[i].request)});
    BulkResult r;
    if (Status s = writer_.Each(writes[indices.front()].ns, std::move(bulk), &r); !s.ok()) {
      if (tracing) TraceSent(writes, indices, live, {}, -1);
      for (std::size_t i : indices) {
        sent.fate[i] = Sent::Fate::kFailed;
        if (!writes[i].best_effort) Fail(writes[i].item, s);
      }
      continue;
    }
    std::set<std::size_t> refused;
    for (auto& [index, why] : r.refused) {
      if (index >= indices.size()) continue;
      refused.insert(index);
    }
    if (tracing) TraceSent(writes, indices, live, refused, r.matched);
    for (auto& [index, why] : r.refused)
      if (index < indices.size() && !writes[indices[index]].best_effort)
        Fail(writes[indices[index]].item, std::move(why));
    Tally(indices, refused, r.matched, &sent);
  }
  return sent;
}

void StateMachine::Batch::Tally(const std::vector<std::size_t>& indices,
                                const std::set<std::size_t>& refused, std::int64_t matched,
                                Sent* sent) {
  const auto accepted = static_cast<std::int64_t>(indices.size() - refused.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (refused.count(k)) {
      sent->fate[indices[k]] = Sent::Fate::kRefused;
      continue;
    }
    sent->accepted.push_back(indices[k]);
    sent->fate[indices[k]] = matched == accepted ? Sent::Fate::kMatched
                             : matched == 0      ? Sent::Fate::kMissed
                                                 : Sent::Fate::kUnknown;
  }
  sent->matched += matched;
}

void StateMachine::Batch::TraceSent(const std::vector<Write>& writes,
                                    const std::vector<std::size_t>& indices,
                                    const std::vector<bool>& live,
                                    const std::set<std::size_t>& refused,
                                    std::int64_t matched) const {
  // A bulk says how many of its writes matched, not which: exact when it holds one write
  // (Send makes each write a bulk of its own while tracing), or when all or none matched;
  // otherwise "?", which the model may take either way. A bulk that failed as a whole
  // (matched -1) may or may not have reached the server.
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
    Trace(*w.item, w.trace_event, rest);
  }
}

std::optional<std::int64_t> StateMachine::Batch::SendMany(Item* it, const std::string& what,
                                                          const Namespace& ns, Filter filter,
                                                          const Update* update) {
  if (it->leased) {
    if (!LeaseLive(*it)) {
      Fail(it, LeaseExpired(*it));
      return std::nullopt;
    }
    filter = requests::Fenced(std::move(filter), it->lease);
  }
  WriteResult r;
  if (Status s = writer_.Many(ns, what, filter, update, &r); !s.ok()) {
    Fail(it, std::move(s));
    return std::nullopt;
  }
  return update ? r.matched : r.modified;
}

void StateMachine::Batch::ReleaseHeld() {
  std::vector<Write> writes;
  for (Item& it : items_) {
    if (!it.leased || it.resolved || it.released) continue;
    it.released = true;
    it.pc = it.program.size();  // nothing more is written for it
    writes.push_back({&it, nullptr, m_->txn_ns_, requests::Release(it.txn->id, paths_, it.lease),
                      /*best_effort=*/true, "release the lease"});
    writes.back().trace_event = "release";
  }
  if (!writes.empty()) (void)Send(writes);
}

}  // namespace txn_recovery
