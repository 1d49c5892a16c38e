// The claim: one bulk write taking every transaction's lease with its action's first state
// move, after the reads that decide what a finish or roll back will write.
// Part of StateMachine::Batch (engine/batch.h).
#include "engine/batch.h"

#include <algorithm>

#include "txn_recovery/engine/conformance_trace.h"

namespace txn_recovery {

bool StateMachine::Batch::Claim() {
  std::vector<Write> writes;
  const DateTime now = m_->server_now_();
  // A rehearsal's claim is never read back: its nonce says what it stands for.
  const std::string nonce = writer_.recording() ? "<claim nonce>" : NewNonce();
  std::vector<std::optional<requests::ClaimMove>> moves;
  for (Item& it : items_) {
    if (it.late || it.ended) continue;
    it.lease.owner = m_->lease_.owner;
    it.lease.claim = nonce;
    SetExpiry(&it, now);
    UpdateRequest claim = requests::Claim(*it.txn, it.result->action, it.nothing_to_write,
                                          profile(), paths_, it.lease);
    std::optional<requests::ClaimMove> move =
        requests::ClaimMoveOf(*it.txn, it.result->action, it.nothing_to_write, profile());
    std::string what = "claim the lease";
    if (move && IsTerminal(move->state))
      what = "mark " + *move->spelling.as_string() + " in the claim (no lease)";
    else if (move)
      what += " and mark " + *move->spelling.as_string();
    writes.push_back({&it, nullptr, m_->txn_ns_, std::move(claim), false, std::move(what),
                      /*claims_lease=*/true});

    moves.push_back(std::move(move));
  }
  if (writes.empty()) return false;
  const auto start = m_->clock_->MonotonicNow();
  const Sent sent = Send(writes);
  std::map<std::string, Document> docs;
  const bool read = sent.all_matched() || ReadBackTransactions(writes, sent, &docs);
  if (conformance::On()) TraceClaims(writes, moves, sent, docs, read);
  bool any = false;
  for (std::size_t i : sent.accepted) {
    Item* it = writes[i].item;
    const std::optional<requests::ClaimMove>& move = moves[i];
    const bool terminal = move && IsTerminal(move->state);
    if (!read) {
      // Some leases may be ours without our knowing which: release them all by nonce.
      it->leased = !terminal;
      it->deadline = Deadline(start);
      continue;  // failed by ReadBackTransactions
    }
    const Value& spelling = move ? move->spelling : it->state_spelling;
    if (!sent.all_matched() && !Moved(docs, *it, spelling, terminal) && EndedBySelf(docs, *it)) {
      // A repeat of the candidate scan (DocumentDB returns a document updated during a
      // scan again): this process ended the transaction meanwhile. Not busy: nothing is
      // left to do for it.
      it->ended = true;
      it->result->outcome = Outcome::kUntouched;
      it->result->detail = "already ended by this daemon (the candidate read returned it twice)";
      continue;
    }
    if (!sent.all_matched() && !Moved(docs, *it, spelling, terminal)) {
      Fail(it,
           Status::Conflict("transaction " + it->txn->id.ToString() +
                            " changed since it was read or is leased by another daemon"),
           Outcome::kBusy);
      continue;
    }
    it->state_spelling = spelling;
    if (move) it->result->final_state = move->state;
    if (terminal) {
      it->resolved = true;
      it->result->outcome = Outcome::kResolved;
      // Traces of an earlier finish that the read found are still removed.
      it->program.clear();
      if (!it->traced_at.empty()) it->program.push_back(Phase::kUntrace);
      it->pc = 0;
      any = any || Running(*it);
      continue;
    }
    if (move && move->state == TxnState::kPending) it->taken_over = true;
    it->leased = true;
    it->deadline = Deadline(start);
    any = true;
  }
  if (!read) ReleaseHeld();
  return any;
}

void StateMachine::Batch::TraceClaims(const std::vector<Write>& writes,
                                      const std::vector<std::optional<requests::ClaimMove>>& moves,
                                      const Sent& sent, const std::map<std::string, Document>& docs,
                                      bool read) const {
  std::vector<bool> accepted(writes.size(), false);
  for (std::size_t i : sent.accepted) accepted[i] = true;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const Item& it = *writes[i].item;
    const std::optional<requests::ClaimMove>& move = moves[i];
    // Unknown ("err") where the read back failed, or the bulk failed as a whole.
    const bool unknown =
        accepted[i] ? !read
                    : it.ended && !it.result->status.ok() && it.result->outcome != Outcome::kBusy;
    std::string ok = unknown ? "err" : "0";
    if (accepted[i] && read &&
        (sent.all_matched() || Moved(docs, it, move ? move->spelling : it.state_spelling,
                                     move && IsTerminal(move->state))))
      ok = "1";
    Trace(it, "claim",
          "sent=1 ok=" + ok + " live=1 to=" +
              std::string(move ? TxnStateName(move->state) : std::string_view("none")));
  }
}

void StateMachine::Batch::ReadBeforeClaim() {
  std::vector<Item*> finishes, rollbacks;
  for (Item& it : items_) {
    if (it.late || it.ended || it.txn->steps.empty()) continue;
    if (it.result->action == Action::kFinish) finishes.push_back(&it);
    if (it.result->action == Action::kRollback) rollbacks.push_back(&it);
  }
  ReadForFinish(finishes, "preread");
  for (Item* it : finishes)
    it->nothing_to_write = Running(*it) && it->txn->tagged_sets.empty() &&
                           std::all_of(it->finish_as.begin(), it->finish_as.end(),
                                       [](FinishAs f) { return f == FinishAs::kNothing; });
  if (rollbacks.empty()) return;
  const std::vector<StepRef> steps = StepsOf(rollbacks);
  const std::vector<Found> found = ReadParticipants(steps);
  if (conformance::On()) TraceRead("preread", steps, found);
  CheckAll(steps, found);
  for (Item* it : rollbacks) {
    it->nothing_to_write = it->txn->tagged_sets.empty();
    it->read_before_claim.assign(it->txn->steps.size(), Found{});
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto [it, step] = steps[i];
    it->read_before_claim[static_cast<std::size_t>(step - it->txn->steps.data())] = found[i];
    if (found[i].size() > 1) Fail(it, TwoDocuments(*step, found[i].size()));
    if (AnyHasMarker(found[i], *step, it->txn->id)) it->nothing_to_write = false;
  }
}

}  // namespace txn_recovery
