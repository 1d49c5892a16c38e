// The rules on participants and items that every part of an execution shares
// (engine/batch_item.h).
#include <cstdio>
#include <cstdlib>

#include "base/amounts.h"
#include "engine/batch_item.h"

namespace txn_recovery {

bool Running(const Item& it) {
  return !it.ended && it.pc < it.program.size();
}

void Fail(Item* it, Status s, Outcome outcome) {
  if (it->ended) return;
  it->ended = true;
  it->result->outcome = outcome;
  if (outcome == Outcome::kBusy || it->result->detail.empty())
    it->result->detail = outcome == Outcome::kBusy ? s.message() : s.ToString();
  if (s.IsMalformed()) it->malformed = s;
  it->result->status = std::move(s);
}

Status LeaseExpired(const Item& it) {
  return Status::Aborted("lease on transaction " + it.txn->id.ToString() +
                         " expired before the work was done");
}

std::size_t StepIndex(const Item& it, const ParticipantStep* step) {
  return static_cast<std::size_t>(step - it.txn->steps.data());
}

std::vector<StepRef> StepsOf(const std::vector<Item*>& list) {
  std::vector<StepRef> steps;
  for (Item* it : list)
    for (const auto& step : it->txn->steps) steps.emplace_back(it, &step);
  return steps;
}

const Predicate* TargetKey(const ParticipantStep& step) {
  const Filter& t = step.target;
  if (!t.any_of().empty() || t.all().size() != 1) return nullptr;
  const Predicate& p = t.all().front();
  return p.op == Predicate::Op::kEq ? &p : nullptr;
}

bool HasMarker(const Document& doc, const ParticipantStep& step, const Value& txn_id) {
  return Filter().Eq(step.marker_field, txn_id).Matches(doc);
}

const Document* WithMarker(const std::vector<Document>& docs, const ParticipantStep& step,
                           const Value& txn_id) {
  for (const Document& d : docs)
    if (HasMarker(d, step, txn_id)) return &d;
  return nullptr;
}

Status TwoDocuments(const ParticipantStep& step, std::size_t n) {
  return Status::Malformed(step.describe + ": " + std::to_string(n) + " documents in " +
                           step.ns.ToString() + " match " + step.target.ToString());
}

Status CheckMarkerField(const ParticipantStep& step, const Document& doc) {
  // A marker field that is not an array reads as "marker present" when it equals the
  // transaction id and as "marker absent" otherwise, both wrong: the participant does not
  // fit the protocol, and nothing is written to it.
  if (const Value* m = doc.GetPath(step.marker_field); m != nullptr && !m->is_array()) {
    const Value* id = doc.Get("_id");
    return Status::Malformed("participant " + (id ? id->ToString() : std::string("?")) + " in " +
                             step.ns.ToString() + ": its marker field '" + step.marker_field +
                             "' is " + std::string(m->type_name()) + ", not an array");
  }
  return Status::Ok();
}

Status CheckIncrements(const ParticipantStep& step, const Document& doc, const Update& update) {
  for (const UpdateOp& op : update.ops()) {
    if (op.kind != UpdateOp::Kind::kInc) continue;
    if (Status s = CheckExactIncrement(op.path, doc.GetPath(op.path), op.value); !s.ok()) {
      const Value* id = doc.Get("_id");
      return s.WithContext("participant " + (id ? id->ToString() : std::string("?")) + " in " +
                           step.ns.ToString());
    }
  }
  return Status::Ok();
}

std::string LookupKey(const Value& v) {
  if (!v.is_number()) return v.ToString();
  char buf[40];
  std::snprintf(buf, sizeof buf, "#%.17g", v.as_double().value_or(0));
  return buf;
}

#ifdef TXN_RECOVERY_SEEDED_BUGS
bool Seeded(char bug) {
  static const char chosen = [] {
    const char* b = std::getenv("TXN_RECOVERY_SEEDED_BUG");
    return b != nullptr ? *b : '\0';
  }();
  return chosen == bug;
}
#endif

}  // namespace txn_recovery
