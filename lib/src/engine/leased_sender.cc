#include "engine/leased_sender.h"

#include <map>

namespace txn_recovery {

bool LeasedSender::Stopped(std::vector<Write>& writes, std::size_t i, std::vector<bool>* live) {
  const Write& w = writes[i];
  Item* it = w.item;
  const Lease* lease = w.under.lease();
  if (lease == nullptr || keeper_.Live(*lease)) return false;
  const bool tracing = BatchTrace::on();
  if (tracing) (*live)[i] = false;
  // Seeded bug b (docs/proof.md, "Conformance"): the write sent all the same.
  if (Seeded('b')) return false;
  if (tracing && w.best_effort && w.trace_event != nullptr)
    trace_.Unsent(*it, w.trace_event, w.step ? StepIndex(*it, w.step) : 0, w.trace_detail);
  else if (tracing && !w.best_effort && !it->ended)
    trace_.Line(*it, "deadline", "");
  if (!w.best_effort) Fail(it, LeaseExpired(*it));
  return true;
}

std::vector<std::vector<std::size_t>> LeasedSender::Bulks(std::vector<Write>& writes,
                                                          std::vector<bool>* live) {
  std::map<std::string, std::vector<std::size_t>> by_ns;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    if (Stopped(writes, i, live)) continue;
    Write& w = writes[i];
    // The fence of the lease the write goes under, or of the one its claim takes; a
    // lease-free write of an item that holds a lease keeps to it too.
    if (const Lease* lease = w.under.lease())
      w.request.filter = requests::Fenced(std::move(w.request.filter), lease->terms());
    else if (const requests::LeaseTerms* claim = w.under.claim())
      w.request.filter = requests::Fenced(std::move(w.request.filter), *claim);
    by_ns[w.ns.ToString()].push_back(i);
  }
  // With the conformance trace on, each write goes in a bulk of its own, so that its line
  // says whether it matched (a bulk's count does not say which): the writes of an unordered
  // bulk were never in any promised order, so this is one of the orders it may take. Each
  // is then checked against its lease's deadline as it goes, as the model's daemon checks
  // before each write: the traced engine is the model's, and what checking once per bulk
  // adds (a write sent after the deadline passed during its bulk, stopped by the fence) is
  // outside the conformance check (docs/proof.md, "Conformance").
  std::vector<std::vector<std::size_t>> bulks;
  for (auto& [key, indices] : by_ns) {
    if (!BatchTrace::on()) {
      bulks.push_back(std::move(indices));
      continue;
    }
    // Claims stay one bulk: they take no lease yet, and the claim traces each by its read
    // back.
    std::vector<std::size_t> claims;
    for (std::size_t i : indices) {
      if (writes[i].under.claim() != nullptr)
        claims.push_back(i);
      else
        bulks.push_back({i});
    }
    if (!claims.empty()) bulks.push_back(std::move(claims));
  }
  return bulks;
}

Sent LeasedSender::Send(std::vector<Write>& writes) {
  Sent sent;
  sent.fate.assign(writes.size(), Sent::Fate::kNotSent);
  const bool tracing = BatchTrace::on();
  std::vector<bool> live(tracing ? writes.size() : 0, true);
  for (const std::vector<std::size_t>& indices : Bulks(writes, &live)) {
    if (tracing && Stopped(writes, indices.front(), &live)) continue;
    std::vector<LabelledRequest> bulk;
    bulk.reserve(indices.size());
    for (std::size_t i : indices)
      bulk.push_back({std::move(writes[i].what), std::move(writes[i].request)});
    BulkResult r;
    if (Status s = writer_.Each(writes[indices.front()].ns, std::move(bulk), &r); !s.ok()) {
      if (tracing) trace_.Bulk(writes, indices, live, {}, -1);
      for (std::size_t i : indices) {
        sent.fate[i] = Sent::Fate::kFailed;
        if (!writes[i].best_effort) Fail(writes[i].item, s);
      }
      continue;
    }
    std::set<std::size_t> refused;
    for (auto& [index, why] : r.refused)
      if (index < indices.size()) refused.insert(index);
    if (tracing) trace_.Bulk(writes, indices, live, refused, r.matched);
    for (auto& [index, why] : r.refused)
      if (index < indices.size() && !writes[indices[index]].best_effort)
        Fail(writes[indices[index]].item, std::move(why));
    Tally(indices, refused, r.matched, &sent);
  }
  return sent;
}

void LeasedSender::Tally(const std::vector<std::size_t>& indices,
                         const std::set<std::size_t>& refused, std::int64_t matched, Sent* sent) {
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

std::optional<std::int64_t> LeasedSender::SendMany(Item* it, const Under& under,
                                                   const std::string& what, const Namespace& ns,
                                                   Filter filter, const Update* update) {
  if (const Lease* lease = under.lease()) {
    if (!keeper_.Live(*lease)) {
      Fail(it, LeaseExpired(*it));
      return std::nullopt;
    }
    filter = requests::Fenced(std::move(filter), lease->terms());
  }
  WriteResult r;
  if (Status s = writer_.Many(ns, what, filter, update, &r); !s.ok()) {
    Fail(it, std::move(s));
    return std::nullopt;
  }
  return update ? r.matched : r.modified;
}

LeaseFreeWriter LeasedSender::Free(LeaseFree why) const {
  return writer_.record_ != nullptr ? LeaseFreeWriter(writer_.store_, writer_.record_, why)
                                    : LeaseFreeWriter(writer_.store_, why);
}

}  // namespace txn_recovery
