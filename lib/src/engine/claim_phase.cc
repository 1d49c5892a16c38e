// The claim: one bulk write taking every transaction's lease with its action's first state
// move, after the reads that decide what a finish or roll back will write.
#include <algorithm>
#include <random>

#include "engine/finish_reads.h"
#include "engine/phases.h"

namespace txn_recovery {

std::string ClaimPhase::NewNonce() {
  std::random_device rd;
  std::uniform_int_distribution<std::uint64_t> dist;
  return std::to_string(dist(rd));
}

bool ClaimPhase::Claim(std::vector<Item>& items) {
  std::vector<Write> writes;
  const DateTime now = server_now_();
  // A rehearsal's claim is never read back: its nonce says what it stands for.
  const std::string nonce = kit_.send.rehearsing() ? "<claim nonce>" : NewNonce();
  std::vector<std::optional<requests::ClaimMove>> moves;
  for (Item& it : items) {
    if (it.late || it.ended) continue;
    it.offered = keeper_.Offer(nonce, now);
    UpdateRequest claim = requests::Claim(*it.txn, it.result->action, it.nothing_to_write,
                                          kit_.profile, kit_.paths, it.offered);
    std::optional<requests::ClaimMove> move =
        requests::ClaimMoveOf(*it.txn, it.result->action, it.nothing_to_write, kit_.profile);
    std::string what = "claim the lease";
    if (move && IsTerminal(move->state))
      what = "mark " + *move->spelling.as_string() + " in the claim (no lease)";
    else if (move)
      what += " and mark " + *move->spelling.as_string();
    writes.push_back({&it, nullptr, kit_.txn_ns, std::move(claim), Under::TheClaim(it.offered),
                      false, std::move(what)});
    moves.push_back(std::move(move));
  }
  if (writes.empty()) return false;
  const auto start = keeper_.Now();
  const Sent sent = kit_.send.Send(writes);
  std::map<std::string, Document> docs;
  const bool read = sent.all_matched() || kit_.reads.Transactions(writes, sent, &docs);
  if (BatchTrace::on()) TraceClaims(writes, moves, sent, docs, read);
  bool any = false;
  for (std::size_t i : sent.accepted) {
    Item* it = writes[i].item;
    if (!read) {
      // Some leases may be ours without our knowing which: held, for the caller to release
      // them all by nonce (the item was failed by the read back).
      if (!(moves[i] && IsTerminal(moves[i]->state))) it->lease = keeper_.Take(it->offered, start);
      continue;
    }
    any = Took(it, moves[i], sent, docs, start) || any;
  }
  return any;
}

bool ClaimPhase::Took(Item* it, const std::optional<requests::ClaimMove>& move, const Sent& sent,
                      const std::map<std::string, Document>& docs,
                      std::chrono::steady_clock::time_point start) {
  const bool terminal = move && IsTerminal(move->state);
  const Value& spelling = move ? move->spelling : it->state_spelling;
  const bool moved = sent.all_matched() || kit_.reads.Moved(docs, *it, spelling, terminal);
  if (!moved && kit_.reads.EndedBySelf(docs, *it)) {
    // A repeat of the candidate scan (DocumentDB returns a document updated during a scan
    // again): this process ended the transaction meanwhile. Not busy: nothing is left to do.
    it->ended = true;
    it->result->outcome = Outcome::kUntouched;
    it->result->detail = "already ended by this daemon (the candidate read returned it twice)";
    return false;
  }
  if (!moved) {
    Fail(it,
         Status::Conflict("transaction " + it->txn->id.ToString() +
                          " changed since it was read or is leased by another daemon"),
         Outcome::kBusy);
    return false;
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
    return Running(*it);
  }
  if (move && move->state == TxnState::kPending) it->taken_over = true;
  it->lease = keeper_.Take(it->offered, start);
  return true;
}

void ClaimPhase::TraceClaims(const std::vector<Write>& writes,
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
        (sent.all_matched() || kit_.reads.Moved(docs, it, move ? move->spelling : it.state_spelling,
                                                move && IsTerminal(move->state))))
      ok = "1";
    kit_.trace.Line(it, "claim",
                    "sent=1 ok=" + ok + " live=1 to=" +
                        std::string(move ? TxnStateName(move->state) : std::string_view("none")));
  }
}

void ClaimPhase::ReadBefore(std::vector<Item>& items) {
  std::vector<Item*> finishes, rollbacks;
  for (Item& it : items) {
    if (it.late || it.ended || it.txn->steps.empty()) continue;
    if (it.result->action == Action::kFinish) finishes.push_back(&it);
    if (it.result->action == Action::kRollback) rollbacks.push_back(&it);
  }
  ReadForFinish(kit_.reads, kit_.trace, kit_.paths, finishes, "preread");
  for (Item* it : finishes)
    it->nothing_to_write = Running(*it) && it->txn->tagged_sets.empty() &&
                           std::all_of(it->finish_as.begin(), it->finish_as.end(),
                                       [](FinishAs f) { return f == FinishAs::kNothing; });
  if (rollbacks.empty()) return;
  const std::vector<StepRef> steps = StepsOf(rollbacks);
  const std::vector<Found> found = kit_.reads.Participants(steps);
  if (BatchTrace::on()) kit_.trace.Read("preread", steps, found);
  ParticipantReads::CheckAll(steps, found);
  for (Item* it : rollbacks) {
    it->nothing_to_write = it->txn->tagged_sets.empty();
    it->read_before_claim.assign(it->txn->steps.size(), Found{});
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto [it, step] = steps[i];
    it->read_before_claim[StepIndex(*it, step)] = found[i];
    if (found[i].size() > 1) Fail(it, TwoDocuments(*step, found[i].size()));
    if (AnyHasMarker(found[i], *step, it->txn->id)) it->nothing_to_write = false;
  }
}

}  // namespace txn_recovery
