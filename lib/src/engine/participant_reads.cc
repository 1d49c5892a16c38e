#include "engine/participant_reads.h"

#include <unordered_map>
#include <unordered_set>

namespace txn_recovery {

std::vector<Found> ParticipantReads::Participants(const std::vector<StepRef>& steps,
                                                  bool best_effort) {
  std::vector<Found> found(steps.size());
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Predicate* key = TargetKey(*steps[i].second);
    groups[{steps[i].second->ns.ToString(), key ? key->path : std::string()}].push_back(i);
  }
  for (const auto& [group, indices] : groups) {
    std::vector<Filter> queries;
    if (!group.second.empty()) {
      // Each key once: the participants of a batch repeat (a busy account).
      std::vector<Value> values;
      std::unordered_set<std::string> listed;
      for (std::size_t i : indices)
        if (const Value& v = TargetKey(*steps[i].second)->value; listed.insert(v.ToString()).second)
          values.push_back(v);
      queries.push_back(Filter().In(group.second, std::move(values)));
    } else {
      for (std::size_t i : indices) queries.push_back(steps[i].second->target);
    }
    std::vector<Document> docs;
    Status s = Status::Ok();
    for (const Filter& q : queries) {
      s = ReadAll(steps[indices.front()].second->ns, q, &docs);
      if (!s.ok()) break;
    }
    if (!s.ok()) {
      if (!best_effort)
        for (std::size_t i : indices) Fail(steps[i].first, s);
      continue;
    }
    if (group.second.empty()) {
      for (std::size_t i : indices)
        for (const Document& d : docs)
          if (steps[i].second->target.Matches(d)) found[i].push_back(d);
      continue;
    }
    // By key, through an index of what was read: matching every step against every
    // document cost a batch of hundreds of participants a quadratic share of its CPU.
    std::unordered_multimap<std::string, std::size_t> by_key;
    for (std::size_t k = 0; k < docs.size(); ++k)
      if (const Value* v = docs[k].GetPath(group.second)) by_key.emplace(LookupKey(*v), k);
    for (std::size_t i : indices) {
      auto [b, e] = by_key.equal_range(LookupKey(TargetKey(*steps[i].second)->value));
      for (; b != e; ++b)
        if (steps[i].second->target.Matches(docs[b->second])) found[i].push_back(docs[b->second]);
    }
  }
  return found;
}

Status ParticipantReads::ReadAll(const Namespace& ns, const Filter& f, std::vector<Document>* out) {
  std::unique_ptr<Cursor> c;
  if (Status s = store_->Find(ns, f, FindOptions{}, &c); !s.ok()) return s;
  std::unordered_multimap<std::string, std::size_t> by_id;  // of what *out holds
  for (std::size_t k = 0; k < out->size(); ++k)
    if (const Value* id = (*out)[k].Get("_id")) by_id.emplace(LookupKey(*id), k);
  Document d;
  for (bool has = true;;) {
    if (Status s = c->Next(&d, &has); !s.ok()) return s;
    if (!has) return Status::Ok();
    const Value* id = d.Get("_id");
    std::optional<std::size_t> same;
    if (id != nullptr) {
      auto [b, e] = by_id.equal_range(LookupKey(*id));
      for (; b != e && !same; ++b)
        if (const Value* oid = (*out)[b->second].Get("_id"); oid && *id == *oid) same = b->second;
    }
    if (same) {
      (*out)[*same] = std::move(d);
      continue;
    }
    if (id != nullptr) by_id.emplace(LookupKey(*id), out->size());
    out->push_back(std::move(d));
  }
}

void ParticipantReads::CheckAll(const std::vector<StepRef>& steps,
                                const std::vector<Found>& found) {
  for (std::size_t i = 0; i < steps.size(); ++i)
    for (const Document& d : found[i])
      if (Status s = CheckMarkerField(*steps[i].second, d); !s.ok()) Fail(steps[i].first, s);
}

std::vector<Found> ParticipantReads::Back(const std::vector<Write>& writes, const Sent& sent,
                                          std::vector<StepRef>* refs) {
  for (std::size_t i : sent.accepted) refs->emplace_back(writes[i].item, writes[i].step);
  return Participants(*refs);
}

bool ParticipantReads::EndedBySelf(const std::map<std::string, Document>& docs,
                                   const Item& it) const {
  auto d = docs.find(it.txn->id.ToString());
  if (d == docs.end()) return false;
  const Value* by = d->second.GetPath(paths_.ResolvedBy());
  const Value* st = d->second.GetPath(profile_.state_field);
  if (by == nullptr || !(*by == Value(it.offered.owner)) || st == nullptr || !st->is_string())
    return false;
  const std::optional<TxnState> state = profile_.states.Parse(*st->as_string());
  return state && IsTerminal(*state);
}

bool ParticipantReads::Transactions(const std::vector<Write>& writes, const Sent& sent,
                                    std::map<std::string, Document>* docs) {
  std::vector<Value> ids;
  for (std::size_t i : sent.accepted) ids.push_back(writes[i].item->txn->id);
  std::vector<Document> read;
  if (Status s = ReadAll(txn_ns_, Filter().In("_id", std::move(ids)), &read); !s.ok()) {
    for (std::size_t i : sent.accepted) Fail(writes[i].item, s);
    return false;
  }
  for (Document& d : read)
    if (const Value* id = d.Get("_id")) (*docs)[id->ToString()] = std::move(d);
  return true;
}

bool ParticipantReads::Moved(const std::map<std::string, Document>& docs, const Item& it,
                             const Value& state, bool terminal) const {
  auto d = docs.find(it.txn->id.ToString());
  if (d == docs.end()) return false;
  const Value* st = d->second.GetPath(profile_.state_field);
  if (st == nullptr || !(*st == state)) return false;
  if (terminal) {
    const Value* by = d->second.GetPath(paths_.ResolvedBy());
    const Value* claim = d->second.GetPath(paths_.ResolvedClaim());
    return by && *by == Value(it.offered.owner) && claim && *claim == Value(it.offered.claim);
  }
  const Value* owner = d->second.GetPath(paths_.LeaseOwner());
  const Value* claim = d->second.GetPath(paths_.LeaseClaim());
  return owner && *owner == Value(it.offered.owner) && claim && *claim == Value(it.offered.claim);
}

}  // namespace txn_recovery
