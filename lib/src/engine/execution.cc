// StateMachine::ExecuteBatch: the one execution path of the recovery engine.
//
// Each transaction follows a program, a list of phases (after the claim: e.g. apply, mark
// applied, finish, mark done). In each round every transaction still running performs its
// next phase, and the writes of one phase are sent per collection as one unordered bulk of
// single-document guarded updates. A bulk reports how many of its updates matched, not
// which: where a transaction's fate depends on whether its own update matched, the
// documents are read back (one query per collection). Participants are read before they
// are written (apply, undo, late writes), which spares the writes of steps already done
// and makes the accounting exact.
//
// Every write goes through Send (or SendMany), and with it the lease-deadline rule
// (LeaseOptions in state_machine.h): a write under a lease is sent only while that lease's
// local deadline has not passed, and carries the lease's fence, which the server checks
// as it applies the write. A LeaseGuard releases, on every way out of a batch, the leases
// the batch still holds. Send hands the writes to the one Writer (engine/writer.h); a
// rehearsal (RehearseBatch: the dry run, `explain`) is this same execution with a recording
// Writer, which sends nothing and takes every write as matched.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "base/amounts.h"
#include "engine/requests.h"
#include "engine/seen_ids.h"
#include "engine/writer.h"
#include "txn_recovery/state_machine.h"

namespace txn_recovery {
namespace {

enum class Phase {
  kApply,
  kToApplied,
  kFinish,
  kToDone,
  kUntrace,
  kToCanceling,
  kUndo,
  kToCancelled
};

// How a step is finished, decided from a read of its participant made under the lease
// (requests::Finish): no other daemon can leave a trace meanwhile, and the application
// never does, so the read says which of the two requests can match.
enum class FinishAs {
  kNothing,        // the marker is gone (or the participant is): nothing to pull
  kPull,           // the marker and no trace: pull it, leaving the trace
  kUndoDuplicate,  // the marker next to a trace: a late duplicate, undone
};

// The phases after the claim, which has made the action's first state move
// (requests::ClaimMoveOf): a cancel ends there, a roll back starts from canceling, a resume
// from its take-over.
std::vector<Phase> ProgramOf(Action a) {
  switch (a) {
    case Action::kCancel:
      return {};
    case Action::kResume:
      return {Phase::kApply, Phase::kToApplied, Phase::kFinish, Phase::kToDone, Phase::kUntrace};
    case Action::kRollback:
      return {Phase::kUndo, Phase::kToCancelled};
    case Action::kFinish:
      return {Phase::kFinish, Phase::kToDone, Phase::kUntrace};
    case Action::kFinishRollback:
      return {Phase::kUndo, Phase::kToCancelled};
    default:
      return {};
  }
}

// A resume whose step can never apply is rolled back instead: its claim took it over, so
// the move to canceling is a transition of its own.
std::vector<Phase> RollbackInsteadOfResume() {
  return {Phase::kToCanceling, Phase::kUndo, Phase::kToCancelled};
}

// The state a transition phase moves to; nullopt for the participant phases.
std::optional<TxnState> TargetOf(Phase p) {
  switch (p) {
    case Phase::kToApplied:
      return TxnState::kApplied;
    case Phase::kToDone:
      return TxnState::kDone;
    case Phase::kToCanceling:
      return TxnState::kCanceling;
    case Phase::kToCancelled:
      return TxnState::kCancelled;
    default:
      return std::nullopt;
  }
}

std::string NewNonce() {
  std::random_device rd;
  std::uniform_int_distribution<std::uint64_t> dist;
  return std::to_string(dist(rd));
}

// The equality a step's target names its participant by, when it is one (every profile's
// is): participants are then read many at once with {path: {$in: [...]}}.
const Predicate* TargetKey(const ParticipantStep& step) {
  const Filter& t = step.target;
  if (!t.any_of().empty() || t.all().size() != 1) return nullptr;
  const Predicate& p = t.all().front();
  return p.op == Predicate::Op::kEq ? &p : nullptr;
}

bool HasMarker(const Document& doc, const ParticipantStep& step, const Value& txn_id) {
  return Filter().Eq(step.marker_field, txn_id).Matches(doc);
}

// A key other than _id may name two documents: a guard would then let a change be applied
// (or finished) once on each. Nothing is guessed: the transaction is set aside.
Status TwoDocuments(const ParticipantStep& step, std::size_t n) {
  return Status::Malformed(step.describe + ": " + std::to_string(n) + " documents in " +
                           step.ns.ToString() + " match " + step.target.ToString());
}

// What a participant read may say besides "missing" and "marker present": that the step
// cannot be applied to it or undone from it safely, whatever the write.
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

// Whether `update` may be written to the participant `doc` as read: every increment must be
// exact on the field as it is, or its inverse would not restore it.
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

// A string equal for values MongoDB holds equal (numbers compare by value across types), to
// find candidates by hashing: two values with the same string may still differ (an int64
// beyond 2^53 and its neighbour), so every look-up confirms with the value itself.
std::string LookupKey(const Value& v) {
  if (!v.is_number()) return v.ToString();
  char buf[40];
  std::snprintf(buf, sizeof buf, "#%.17g", v.as_double().value_or(0));
  return buf;
}

// The document of `docs` that carries the step's marker, if any.
const Document* WithMarker(const std::vector<Document>& docs, const ParticipantStep& step,
                           const Value& txn_id) {
  for (const Document& d : docs)
    if (HasMarker(d, step, txn_id)) return &d;
  return nullptr;
}

}  // namespace

class StateMachine::Batch {
 public:
  // `record` null: the batch writes. Otherwise it rehearses: every write goes to `*record`
  // instead of the server and is taken as matched (engine/writer.h).
  Batch(StateMachine* m, std::vector<PlannedWrite>* record)
      : m_(m), paths_(m->paths_), writer_(record ? Writer(m->store_, record) : Writer(m->store_)) {}

  std::vector<ExecuteResult> Go(const std::vector<const Transaction*>& txns,
                                const std::vector<Action>& actions) {
    std::vector<ExecuteResult> results(txns.size());
    SeenIds seen;  // engine/seen_ids.h
    items_.reserve(txns.size());
    for (std::size_t i = 0; i < txns.size(); ++i) {
      results[i].action = actions[i];
      results[i].final_state = txns[i]->state;
      if (actions[i] == Action::kNone || actions[i] == Action::kQuarantine) continue;
      if (!seen.First(txns[i]->id)) {
        // A caller may hand the same transaction twice; the first copy is the one acted on.
        results[i].outcome = Outcome::kBusy;
        results[i].status = Status::Conflict("transaction " + txns[i]->id.ToString() +
                                             " is already being recovered in this batch");
        results[i].detail = results[i].status.message();
        continue;
      }
      Item it;
      it.txn = txns[i];
      it.result = &results[i];
      it.state_spelling = txns[i]->state_as_read;
      it.taken_over = txns[i]->taken_over;
      it.late = actions[i] == Action::kCheckLateWrites;
      it.program = ProgramOf(actions[i]);
      items_.push_back(std::move(it));
    }
    CheckLateWrites();
    ReadBeforeClaim();
    if (Claim()) {
      LeaseGuard guard(this);
      Run();
    }
    QuarantineMalformed();
    return results;
  }

 private:
  struct Item {
    const Transaction* txn = nullptr;
    ExecuteResult* result = nullptr;
    bool late = false;   // a late-write check: no lease, no program
    bool ended = false;  // failed, busy or quarantined: nothing more is done for it
    std::vector<Phase> program;
    std::size_t pc = 0;  // the next phase
    Value state_spelling;
    // Once claimed: the lease's terms and the local deadline for writing under it.
    bool leased = false;
    bool taken_over = false;  // in a resuming spelling (read so, or written by the claim)
    // A finish or roll back whose participants, read before the claim, carry no marker of
    // it: its claim ends it (requests::ClaimMoveOf).
    bool nothing_to_write = false;
    // A roll back's participants as read before its claim, by step: what it undoes.
    std::vector<std::vector<Document>> read_before_claim;
    bool resolved = false;  // a terminal transition removed the lease
    bool released = false;  // the LeaseGuard gave it back (or left it to expire)
    requests::LeaseTerms lease;
    std::chrono::steady_clock::time_point deadline{};
    std::string cannot_apply;  // why a resume turns into a rollback
    Status malformed;          // a participant that does not fit: quarantine the transaction
    // How each step (by its index in txn->steps) is finished: decided by the apply's read
    // on a resume, by the finish's own read otherwise; empty until read.
    std::vector<FinishAs> finish_as;
    // By step finished as kPull: whether the trace it leaves is all the sub-document will
    // hold, as its participant was read.
    std::vector<bool> pull_leaves_all;
    // By step: a finish of it left, or a read found, a trace on that participant; and
    // whether, as read, that trace is all the daemon's sub-document there holds (which
    // of requests::Untrace's two requests removes it).
    std::vector<bool> traced_at;
    std::vector<bool> trace_all_at;
  };

  // One write on behalf of `item`, for its participant `step` (null for the transaction
  // document itself). A best-effort write (a release, a clean-up) never fails its item.
  struct Write {
    Item* item;
    const ParticipantStep* step;
    Namespace ns;
    UpdateRequest request;
    bool best_effort = false;
    std::string what;  // for a rehearsal's record: what the write is for
  };

  // Releases, on every way out of the batch's run, the leases the batch still holds
  // (SQLiteCpp's Transaction rolls back unless committed; a lease is "committed" by the
  // terminal transition that removes it).
  class LeaseGuard {
   public:
    explicit LeaseGuard(Batch* b) : b_(b) {}
    ~LeaseGuard() { b_->ReleaseHeld(); }
    LeaseGuard(const LeaseGuard&) = delete;
    LeaseGuard& operator=(const LeaseGuard&) = delete;

   private:
    Batch* b_;
  };

  const Profile& profile() const { return *m_->profile_; }
  bool Running(const Item& it) const { return !it.ended && it.pc < it.program.size(); }
  bool LeaseLive(const Item& it) const { return m_->clock_->MonotonicNow() < it.deadline; }

  static Status LeaseExpired(const Item& it) {
    return Status::Aborted("lease on transaction " + it.txn->id.ToString() +
                           " expired before the work was done");
  }

  // Ends `it` with `s` (the first reason wins): Busy for a lease it never got, Failed
  // otherwise. A malformed participant is remembered, so that the transaction is
  // quarantined once its lease is released.
  void Fail(Item* it, Status s, Outcome outcome = Outcome::kFailed) {
    if (it->ended) return;
    it->ended = true;
    it->result->outcome = outcome;
    if (outcome == Outcome::kBusy || it->result->detail.empty())
      it->result->detail = outcome == Outcome::kBusy ? s.message() : s.ToString();
    if (s.IsMalformed()) it->malformed = s;
    it->result->status = std::move(s);
  }

  // ---- The writer: every write of the engine is sent here ---------------------------------

  // Which of the writes the server accepted (indices into the list given), and how many
  // of those matched in all.
  struct Sent {
    std::vector<std::size_t> accepted;
    std::int64_t matched = 0;
    bool all_matched() const { return matched == static_cast<std::int64_t>(accepted.size()); }
  };

  // Sends `writes`, one unordered bulk per collection. A write under a lease whose local
  // deadline has passed is not sent (its item fails); every other write under a lease
  // carries the lease's fence. A write the server refuses fails its item; a bulk that fails
  // as a whole fails every item with a write in it.
  Sent Send(std::vector<Write>& writes) {
    Sent sent;
    std::map<std::string, std::vector<std::size_t>> by_ns;
    for (std::size_t i = 0; i < writes.size(); ++i) {
      Item* it = writes[i].item;
      if (it->leased) {
        if (!LeaseLive(*it)) {
          if (!writes[i].best_effort) Fail(it, LeaseExpired(*it));
          continue;
        }
        writes[i].request.filter = requests::Fenced(std::move(writes[i].request.filter), it->lease);
      }
      by_ns[writes[i].ns.ToString()].push_back(i);
    }
    for (const auto& [key, indices] : by_ns) {
      std::vector<LabelledRequest> bulk;
      bulk.reserve(indices.size());
      for (std::size_t i : indices) bulk.push_back({writes[i].what, writes[i].request});
      BulkResult r;
      if (Status s = writer_.Each(writes[indices.front()].ns, bulk, &r); !s.ok()) {
        for (std::size_t i : indices)
          if (!writes[i].best_effort) Fail(writes[i].item, s);
        continue;
      }
      std::set<std::size_t> refused;
      for (auto& [index, why] : r.refused) {
        if (index >= indices.size()) continue;
        refused.insert(index);
        if (!writes[indices[index]].best_effort) Fail(writes[indices[index]].item, std::move(why));
      }
      for (std::size_t k = 0; k < indices.size(); ++k)
        if (!refused.count(k)) sent.accepted.push_back(indices[k]);
      sent.matched += r.matched;
    }
    return sent;
  }

  // A write to every document of a tagged set for `it`: UpdateMany with `update`, or
  // DeleteMany when it is null. The same rule as Send. Returns the documents changed (or
  // deleted); nullopt when nothing was written (the item failed).
  std::optional<std::int64_t> SendMany(Item* it, const std::string& what, const Namespace& ns,
                                       Filter filter, const Update* update) {
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

  // ---- Reading participants ---------------------------------------------------------------

  using StepRef = std::pair<Item*, const ParticipantStep*>;
  // Every document a step's target names (normally one).
  using Found = std::vector<Document>;

  // Reads the participants of `steps`, many at a time: one {key: {$in: [...]}} query per
  // collection and key. A read error fails the items concerned.
  std::vector<Found> ReadParticipants(const std::vector<StepRef>& steps) {
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
          if (const Value& v = TargetKey(*steps[i].second)->value;
              listed.insert(v.ToString()).second)
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

  // Each document once, as last read: a scan may return a document twice when it is
  // updated meanwhile (DocumentDB does so readily), and two readings of one participant must
  // not look like a key naming two documents.
  Status ReadAll(const Namespace& ns, const Filter& f, std::vector<Document>* out) {
    std::unique_ptr<Cursor> c;
    if (Status s = m_->store_->Find(ns, f, FindOptions{}, &c); !s.ok()) return s;
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

  // The participants of `steps` whose marker field does not fit fail their item.
  void CheckAll(const std::vector<StepRef>& steps, const std::vector<Found>& found) {
    for (std::size_t i = 0; i < steps.size(); ++i)
      for (const Document& d : found[i])
        if (Status s = CheckMarkerField(*steps[i].second, d); !s.ok()) Fail(steps[i].first, s);
  }

  // A write of `update` to the participant `doc` as read, for `it`'s `step`; it fails the
  // item instead when an increment would not be exact. Built by `make` once checked.
  template <typename Make>
  void AddWrite(std::vector<Write>* writes, Item* it, const ParticipantStep* step,
                const Document& doc, const Update& update, std::string what, Make make) {
    if (Status s = CheckIncrements(*step, doc, update); !s.ok()) return Fail(it, s);
    writes->push_back({it, step, step->ns, make(), false, std::move(what)});
  }

  static bool AnyHasMarker(const Found& docs, const ParticipantStep& step, const Value& id) {
    return WithMarker(docs, step, id) != nullptr;
  }

  // Whether a finish left its trace of transaction `id` on `doc`.
  bool HasTrace(const Document& doc, const Value& id) const {
    return Filter().Eq(paths_.Finished(), id).Matches(doc);
  }
  static void MarkTraced(Item* it, const ParticipantStep* step, bool all_it_holds) {
    const std::vector<ParticipantStep>& all = it->txn->steps;
    if (it->traced_at.empty()) {
      it->traced_at.assign(all.size(), false);
      it->trace_all_at.assign(all.size(), false);
    }
    const auto k = static_cast<std::size_t>(step - all.data());
    it->traced_at[k] = true;
    it->trace_all_at[k] = all_it_holds;
  }

  // Records how `it`'s `step` is to be finished, `doc` being its participant as read.
  void DecideFinish(Item* it, const ParticipantStep* step, const Document& doc, bool applying) {
    const std::vector<ParticipantStep>& all = it->txn->steps;
    if (it->finish_as.empty()) it->finish_as.assign(all.size(), FinishAs::kNothing);
    const bool trace = HasTrace(doc, it->txn->id);
    if (trace) MarkTraced(it, step, requests::TraceIsAll(doc, it->txn->id, paths_, false));
    const auto k = static_cast<std::size_t>(step - all.data());
    if (applying || HasMarker(doc, *step, it->txn->id)) {
      it->finish_as[k] = trace ? FinishAs::kUndoDuplicate : FinishAs::kPull;
      // A pull leaves the trace: whether it will then be all the sub-document holds.
      if (!trace) {
        if (it->pull_leaves_all.empty()) it->pull_leaves_all.assign(all.size(), false);
        it->pull_leaves_all[k] = requests::TraceIsAll(doc, it->txn->id, paths_, true);
      }
    }
  }

  // The participant steps of the writes the server accepted, read back.
  std::vector<Found> ReadBack(const std::vector<Write>& writes, const Sent& sent,
                              std::vector<StepRef>* refs) {
    for (std::size_t i : sent.accepted) refs->emplace_back(writes[i].item, writes[i].step);
    return ReadParticipants(*refs);
  }

  // ---- Claiming and releasing -------------------------------------------------------------

  // Claims every item in one bulk write (requests::Claim), each with its action's first
  // state move. Each claim carries this batch's nonce; when some did not match, the
  // transactions are read back to find the ones that moved as ours did. A cancel ends in
  // its claim. False when nothing is left to run under a lease.
  bool Claim() {
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
      // Fenced by the lease it takes: a claim that reaches the server too late for its
      // lease to be used must not move the transaction after its deadline (the model's
      // seeded bug k), nor keep others out until it expired.
      UpdateRequest claim = requests::Claim(*it.txn, it.result->action, it.nothing_to_write,
                                            profile(), paths_, it.lease);
      claim.filter = requests::Fenced(std::move(claim.filter), it.lease);
      std::optional<requests::ClaimMove> move =
          requests::ClaimMoveOf(*it.txn, it.result->action, it.nothing_to_write, profile());
      std::string what = "claim the lease";
      if (move && IsTerminal(move->state))
        what = "mark " + *move->spelling.as_string() + " in the claim (no lease)";
      else if (move)
        what += " and mark " + *move->spelling.as_string();
      writes.push_back({&it, nullptr, m_->txn_ns_, std::move(claim), false, std::move(what)});
      moves.push_back(std::move(move));
    }
    if (writes.empty()) return false;
    const auto start = m_->clock_->MonotonicNow();
    const Sent sent = Send(writes);
    std::map<std::string, Document> docs;
    const bool read = sent.all_matched() || ReadBackTransactions(writes, sent, &docs);
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

  // The lease arithmetic, in one place. A claim or renewal sent at server time `now` writes
  // the expiry `Expiry(now)`, with its fence; and the daemon stops writing under it at
  // `Deadline(start)` on its monotonic clock, `start` being when the write was sent.
  DateTime Expiry(DateTime now) const { return DateTime{now.millis + m_->lease_.duration.count()}; }
  void SetExpiry(Item* it, DateTime now) const {
    it->lease.expires = Expiry(now);
    it->lease.fence = DateTime{it->lease.expires.millis - m_->lease_.margin.count() / 2};
  }
  std::chrono::steady_clock::time_point Deadline(
      std::chrono::steady_clock::time_point start) const {
    return start + m_->lease_.duration - m_->lease_.margin;
  }

  // Releases every lease still held, as one bulk (best effort: a lease that cannot be
  // released expires on its own). Send leaves a lease past its local deadline to expire:
  // after the deadline, even releasing it is no longer this daemon's to do.
  void ReleaseHeld() {
    std::vector<Write> writes;
    for (Item& it : items_) {
      if (!it.leased || it.resolved || it.released) continue;
      it.released = true;
      it.pc = it.program.size();  // nothing more is written for it
      writes.push_back({&it, nullptr, m_->txn_ns_, requests::Release(it.txn->id, paths_, it.lease),
                        /*best_effort=*/true, "release the lease"});
    }
    if (!writes.empty()) (void)Send(writes);
  }

  // ---- The rounds ---------------------------------------------------------------------------

  void Run() {
    while (true) {
      std::map<Phase, std::vector<Item*>> round;
      for (Item& it : items_)
        if (Running(it)) round[it.program[it.pc]].push_back(&it);
      if (round.empty()) break;
      // Apply first: a transaction whose apply cannot be done is rolled back, and its
      // rollback starts in this same round's transitions.
      if (auto a = round.find(Phase::kApply); a != round.end()) {
        Apply(a->second);
        round.erase(a);
        for (Item& it : items_)
          if (Running(it) && it.program[it.pc] == Phase::kToCanceling && !it.cannot_apply.empty())
            round[Phase::kToCanceling].push_back(&it);
      }
      std::vector<Item*> transitions;
      for (auto& [phase, list] : round) {
        if (TargetOf(phase)) {
          transitions.insert(transitions.end(), list.begin(), list.end());
        } else if (phase == Phase::kUndo) {
          Undo(list);
        } else if (phase == Phase::kFinish) {
          Finish(list);
        } else if (phase == Phase::kUntrace) {
          Untrace(list);
        }
      }
      Transition(transitions);
    }
  }

  static std::vector<StepRef> StepsOf(const std::vector<Item*>& list) {
    std::vector<StepRef> steps;
    for (Item* it : list)
      for (const auto& step : it->txn->steps) steps.emplace_back(it, &step);
    return steps;
  }

  // Applies each step unless already applied. A step that can never apply (participant
  // missing, guard failing) turns the resume into a rollback; a participant that does not
  // fit ends the transaction before anything is written to any of its participants.
  void Apply(const std::vector<Item*>& list) {
    const std::vector<StepRef> steps = StepsOf(list);
    const std::vector<Found> before = ReadParticipants(steps);
    CheckAll(steps, before);
    // A rehearsal's lines for the steps left out, recorded where the writes are sent.
    std::vector<std::pair<Namespace, std::string>> notes;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      auto [it, step] = steps[i];
      if (before[i].size() > 1) {
        Fail(it, TwoDocuments(*step, before[i].size()));
      } else if (before[i].empty() && it->cannot_apply.empty()) {
        it->cannot_apply = step->describe + ": participant not found in " + step->ns.ToString();
        notes.emplace_back(step->ns,
                           "(cannot apply: participant not found; the resume becomes "
                           "a rollback) " +
                               step->describe);
      }
    }
    // Checked for every step before any is written: one that cannot be written exactly
    // ends the transaction with nothing written to any of its participants.
    std::vector<Write> writes;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      auto [it, step] = steps[i];
      if (!Running(*it) || !it->cannot_apply.empty()) continue;
      const Document& doc = before[i].front();
      // Once applied, every marker is there; no trace can appear meanwhile but this
      // daemon's own (model/recovery.pml, resume): the finish goes by this read.
      DecideFinish(it, step, doc, /*applying=*/true);
      if (HasMarker(doc, *step, it->txn->id)) {  // applied before a crash
        notes.emplace_back(step->ns, "(nothing: already applied) " + step->describe);
        continue;
      }
      AddWrite(&writes, it, step, doc, step->apply, "apply: " + step->describe,
               [&, step = step, it = it] { return requests::Apply(*step, it->txn->id, doc); });
    }
    for (auto& [ns, note] : notes) writer_.Note(ns, std::move(note));
    std::erase_if(writes, [&](const Write& w) { return !Running(*w.item); });
    const Sent sent = Send(writes);
    if (sent.all_matched()) {
      for (std::size_t i : sent.accepted) ++writes[i].item->result->operations_applied;
    } else {
      // Some guard refused: read the participants again to tell which.
      std::vector<StepRef> refs;
      const std::vector<Found> after = ReadBack(writes, sent, &refs);
      for (std::size_t k = 0; k < refs.size(); ++k) {
        auto [it, step] = refs[k];
        if (!Running(*it)) continue;
        if (AnyHasMarker(after[k], *step, it->txn->id)) {
          ++it->result->operations_applied;
        } else if (!LeaseLive(*it)) {
          Fail(it, LeaseExpired(*it));  // the fence, not the guard, may have refused it
        } else if (it->cannot_apply.empty()) {
          it->cannot_apply =
              after[k].empty()
                  ? step->describe + ": participant not found in " + step->ns.ToString()
                  : step->describe + ": guard failed (" + step->apply_guard.ToString() + ")";
        }
      }
    }
    for (Item* it : list) {
      if (!Running(*it)) continue;
      if (it->cannot_apply.empty()) {
        ++it->pc;
        continue;
      }
      it->result->action = Action::kRollback;
      it->result->detail = "rolled back instead of resumed: " + it->cannot_apply;
      it->program = RollbackInsteadOfResume();
      it->pc = 0;
    }
  }

  // Once the transaction is done, the traces its finish left on the participants serve no
  // more (no finish can follow): removed, best effort; the late-write check and the orphan
  // scan remove whatever is left. Sent like every write of the action, so that the clean-up
  // keeps to the lease-deadline rule although its safety does not need it
  // (model/recovery.pml): a daemon stalled past its deadline writes nothing more.
  void Untrace(const std::vector<Item*>& list) {
    RemoveTraces(list);
    for (Item* it : list) ++it->pc;
  }

  // Removes the traces of the finishes of `items` (each terminal) from the participants a
  // finish left one on or a read found one on (Item::traced_at): for each, the one request
  // of requests::Untrace that the read calls for (requests::UntraceAsRead), one bulk per
  // collection in the order of its documents. Several traces of this batch on one
  // participant (a busy account) were all read on the same document: each but the last is
  // pulled, and the last takes the sub-document with it where each read says the traces
  // are all it holds.
  void RemoveTraces(const std::vector<Item*>& items) {
    struct Trace {
      Item* it;
      const ParticipantStep* step;
      bool all;
    };
    std::vector<Trace> traces;
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
    std::vector<Write> writes;
    for (const Trace& t : traces)
      writes.push_back({t.it, t.step, t.step->ns,
                        requests::UntraceAsRead(t.step->target, t.it->txn->id, paths_, t.all),
                        /*best_effort=*/true,
                        (t.all ? "remove the daemon's sub-document (the finish's trace) from "
                               : "pull the finish's trace from ") +
                            t.step->describe});
    (void)Send(writes);
  }

  // Undoes each applied step (marker present), then deletes the tagged sets' documents.
  // An undo that does not take effect ends the transaction: marking it cancelled with a
  // change still applied would leave the change for the late-write check to find.
  void Undo(const std::vector<Item*>& list) {
    const std::vector<StepRef> steps = StepsOf(list);
    // A roll back undoes by the read before its claim (the model's E1: an apply that lands
    // after that read is a late write of the cancelled transaction, for the late-write
    // check, like one that lands after the undos); a resume turned roll back reads now.
    std::vector<StepRef> unread;
    for (const StepRef& s : steps)
      if (s.first->read_before_claim.empty()) unread.push_back(s);
    std::vector<Found> fresh = ReadParticipants(unread);
    CheckAll(unread, fresh);
    std::vector<Found> before(steps.size());
    for (std::size_t i = 0, u = 0; i < steps.size(); ++i) {
      auto [it, step] = steps[i];
      before[i] =
          it->read_before_claim.empty()
              ? std::move(fresh[u++])
              : it->read_before_claim[static_cast<std::size_t>(step - it->txn->steps.data())];
    }
    std::vector<Write> writes;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      auto [it, step] = steps[i];
      if (!Running(*it)) continue;
      if (const Document* d = WithMarker(before[i], *step, it->txn->id))
        AddWrite(&writes, it, step, *d, step->undo, "undo: " + step->describe,
                 [&, step = step, it = it] { return requests::Undo(*step, it->txn->id, *d); });
      else
        writer_.Note(step->ns, "(nothing: not applied) " + step->describe);
    }
    std::erase_if(writes, [&](const Write& w) { return !Running(*w.item); });
    const Sent sent = Send(writes);
    if (sent.all_matched()) {
      for (std::size_t i : sent.accepted) ++writes[i].item->result->operations_undone;
    } else {
      std::vector<StepRef> refs;
      const std::vector<Found> after = ReadBack(writes, sent, &refs);
      for (std::size_t k = 0; k < refs.size(); ++k) {
        auto [it, step] = refs[k];
        if (!AnyHasMarker(after[k], *step, it->txn->id)) {
          ++it->result->operations_undone;
        } else {
          Fail(it, LeaseLive(*it)
                       ? Status::Conflict(step->describe + ": the undo did not take effect")
                       : LeaseExpired(*it));
        }
      }
    }
    for (Item* it : list) {
      for (const TaggedSet& set : it->txn->tagged_sets) {
        if (!Running(*it)) break;
        if (auto n = SendMany(it, "delete: " + set.describe, set.ns, set.members, nullptr))
          it->result->operations_undone += static_cast<int>(*n);
      }
      if (Running(*it)) ++it->pc;
    }
  }

  // Pulls every marker (guarded by its presence, and leaving a trace) or undoes a late
  // duplicate of it, as the read of its participant says, and finishes every tagged set.
  void Finish(const std::vector<Item*>& list) {
    ReadForFinish(list);
    std::vector<Write> writes;
    for (Item* it : list) {
      if (!Running(*it)) continue;
      for (std::size_t k = 0; k < it->finish_as.size(); ++k) {
        const ParticipantStep& step = it->txn->steps[k];
        auto [pull, duplicate] = requests::Finish(step, it->txn->id, paths_);
        switch (it->finish_as[k]) {
          case FinishAs::kNothing:
            writer_.Note(step.ns, "(nothing: no marker to pull) " + step.describe);
            break;
          case FinishAs::kPull:
            MarkTraced(it, &step, it->pull_leaves_all[k]);
            writes.push_back({it, &step, step.ns, std::move(pull), false,
                              "finish: pull the marker of " + step.describe});
            break;
          case FinishAs::kUndoDuplicate:
            writes.push_back({it, &step, step.ns, std::move(duplicate), false,
                              "finish: undo a late duplicate of " + step.describe});
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

  // The participants of each finish and roll back, read before the claim (model/
  // recovery.pml, the read before the claim). A finish goes by this read: its requests keep
  // both their conditions, so a read overtaken meanwhile only makes one of them match
  // nothing, and what that leaves (a late duplicate's marker) is a late write of a terminal
  // transaction for the late-write check. Either action that finds no marker of its
  // transaction has nothing to write but its state, and its claim does that.
  void ReadBeforeClaim() {
    std::vector<Item*> finishes, rollbacks;
    for (Item& it : items_) {
      if (it.late || it.ended || it.txn->steps.empty()) continue;
      if (it.result->action == Action::kFinish) finishes.push_back(&it);
      if (it.result->action == Action::kRollback) rollbacks.push_back(&it);
    }
    ReadForFinish(finishes);
    for (Item* it : finishes)
      it->nothing_to_write = Running(*it) && it->txn->tagged_sets.empty() &&
                             std::all_of(it->finish_as.begin(), it->finish_as.end(),
                                         [](FinishAs f) { return f == FinishAs::kNothing; });
    if (rollbacks.empty()) return;
    const std::vector<StepRef> steps = StepsOf(rollbacks);
    const std::vector<Found> found = ReadParticipants(steps);
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

  // Reads the participants of the finishes of `list` that no read has decided yet (before
  // their claim: ReadBeforeClaim), one query per collection, and decides from each how its
  // step is finished. A participant that does not fit, or a key naming two documents,
  // ends the transaction before anything is written to any of its participants.
  void ReadForFinish(const std::vector<Item*>& list) {
    std::vector<Item*> unread;
    for (Item* it : list)
      if (Running(*it) && it->finish_as.empty() && !it->txn->steps.empty()) unread.push_back(it);
    if (unread.empty()) return;
    const std::vector<StepRef> steps = StepsOf(unread);
    const std::vector<Found> found = ReadParticipants(steps);
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

  // Compare-and-set of each state, under the lease. A terminal move releases the lease
  // (and commits the LeaseGuard for it); any other renews it.
  void Transition(const std::vector<Item*>& list) {
    if (list.empty()) return;
    const Profile& p = profile();
    const DateTime now = m_->server_now_();
    std::vector<Write> writes;
    for (Item* it : list) {
      if (!Running(*it)) continue;
      const TxnState to = *TargetOf(it->program[it->pc]);
      writes.push_back({it, nullptr, m_->txn_ns_,
                        requests::Transition(it->txn->id, it->state_spelling, to,
                                             it->result->action, p, paths_, it->lease, Expiry(now)),
                        false, "mark " + p.states.Written(to)});
    }
    const auto start = m_->clock_->MonotonicNow();
    const Sent sent = Send(writes);
    std::map<std::string, Document> docs;
    // Some lost their lease: read back which moved.
    if (!sent.all_matched() && !ReadBackTransactions(writes, sent, &docs)) return;
    for (std::size_t i : sent.accepted) {
      Item* it = writes[i].item;
      const TxnState to = *TargetOf(it->program[it->pc]);
      if (!sent.all_matched() && !Moved(docs, *it, Value(p.states.Written(to)), IsTerminal(to))) {
        Fail(it, LeaseLive(*it)
                     ? Status::Conflict("lost the lease on transaction " + it->txn->id.ToString() +
                                        " before moving it to " + std::string(TxnStateName(to)))
                     : LeaseExpired(*it));
        continue;
      }
      it->state_spelling = Value(p.states.Written(to));
      it->result->final_state = to;
      ++it->pc;
      if (IsTerminal(to)) {
        it->result->outcome = Outcome::kResolved;
        it->resolved = true;  // the clean-up that may follow stays within the same deadline
      } else {
        SetExpiry(it, now);
        it->deadline = Deadline(start);
      }
    }
  }

  // Whether the transaction read back was ended by this process (the owner id is one per
  // process): by this batch or, its candidate read having returned it twice, by another.
  bool EndedBySelf(const std::map<std::string, Document>& docs, const Item& it) const {
    auto d = docs.find(it.txn->id.ToString());
    if (d == docs.end()) return false;
    const Value* by = d->second.GetPath(paths_.ResolvedBy());
    const Value* st = d->second.GetPath(profile().state_field);
    if (by == nullptr || !(*by == Value(it.lease.owner)) || st == nullptr || !st->is_string())
      return false;
    const std::optional<TxnState> state = profile().states.Parse(*st->as_string());
    return state && IsTerminal(*state);
  }

  // The transactions of the accepted `writes`, read back by _id into `docs`. False (and the
  // items failed) when the read fails.
  bool ReadBackTransactions(const std::vector<Write>& writes, const Sent& sent,
                            std::map<std::string, Document>* docs) {
    std::vector<Value> ids;
    for (std::size_t i : sent.accepted) ids.push_back(writes[i].item->txn->id);
    std::vector<Document> read;
    if (Status s = ReadAll(m_->txn_ns_, Filter().In("_id", std::move(ids)), &read); !s.ok()) {
      for (std::size_t i : sent.accepted) Fail(writes[i].item, s);
      return false;
    }
    for (Document& d : read)
      if (const Value* id = d.Get("_id")) (*docs)[id->ToString()] = std::move(d);
    return true;
  }

  // Whether the transaction read back shows our move to the state spelled `state`: and, for
  // a terminal move, resolved by us under this batch's claim, otherwise our lease still on
  // it (another worker of this process, or an earlier sweep, has the same owner).
  bool Moved(const std::map<std::string, Document>& docs, const Item& it, const Value& state,
             bool terminal) const {
    auto d = docs.find(it.txn->id.ToString());
    if (d == docs.end()) return false;
    const Value* st = d->second.GetPath(profile().state_field);
    if (st == nullptr || !(*st == state)) return false;
    if (terminal) {
      const Value* by = d->second.GetPath(paths_.ResolvedBy());
      const Value* claim = d->second.GetPath(paths_.ResolvedClaim());
      return by && *by == Value(it.lease.owner) && claim && *claim == Value(it.lease.claim);
    }
    const Value* owner = d->second.GetPath(paths_.LeaseOwner());
    const Value* claim = d->second.GetPath(paths_.LeaseClaim());
    return owner && *owner == Value(it.lease.owner) && claim && *claim == Value(it.lease.claim);
  }

  // ---- Late writes --------------------------------------------------------------------------

  // A marker of a terminal transaction on a participant can only be a change applied after
  // the transaction was resolved (markers are removed before the terminal state is
  // written): undo it, guarded by the marker so that it is undone at most once. Without a
  // lease: terminal states never change. The participants are read first, so that the usual
  // case (no late write) is one query.
  void CheckLateWrites() {
    std::vector<Item*> late;
    for (Item& it : items_)
      if (it.late) late.push_back(&it);
    if (late.empty()) return;
    const std::vector<StepRef> steps = StepsOf(late);
    const std::vector<Found> found = ReadParticipants(steps);
    CheckAll(steps, found);
    std::vector<Write> writes;
    std::vector<Item*> traced;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      auto [it, step] = steps[i];
      if (it->ended) continue;
      const TxnState state = it->txn->state;
      if (const Document* d = WithMarker(found[i], *step, it->txn->id))
        AddWrite(&writes, it, step, *d, requests::LateUndoUpdate(*step, state),
                 "undo the late write: " + step->describe, [&, step = step, it = it] {
                   return requests::LateUndo(*step, it->txn->id, state, *d);
                 });
      else
        writer_.Note(step->ns, "(nothing: no late write of " + step->describe + ")");
      const Value& id = it->txn->id;
      if (const auto t = std::find_if(found[i].begin(), found[i].end(),
                                      [&](const Document& d) { return HasTrace(d, id); });
          t != found[i].end()) {
        MarkTraced(it, step, requests::TraceIsAll(*t, it->txn->id, paths_, false));
        if (traced.empty() || traced.back() != it) traced.push_back(it);
      }
    }
    std::erase_if(writes, [&](const Write& w) { return w.item->ended; });
    const Sent sent = Send(writes);
    std::vector<bool> undone(sent.accepted.size(), sent.all_matched());
    if (!sent.all_matched()) {
      // Another daemon may have undone some of them meanwhile; only what is gone counts.
      std::vector<StepRef> refs;
      const std::vector<Found> after = ReadBack(writes, sent, &refs);
      for (std::size_t k = 0; k < refs.size(); ++k)
        undone[k] = !AnyHasMarker(after[k], *refs[k].second, refs[k].first->txn->id);
    }
    // A finish's traces, left by a daemon stopped after done: removed once the late
    // writes are undone (best effort: the next check, or the orphan scan, retries).
    RemoveTraces(traced);
    for (std::size_t k = 0; k < sent.accepted.size(); ++k) {
      const Write& w = writes[sent.accepted[k]];
      if (!undone[k] || w.item->ended) continue;
      ++w.item->result->late_writes_undone;
      std::string& detail = w.item->result->detail;
      detail += (detail.empty() ? "undid late write: " : "; ") + w.step->describe;
    }
    for (Item* it : late) {
      for (const TaggedSet& set : it->txn->tagged_sets)
        if (!it->ended) CheckLateTagged(it, set);
      if (it->ended) continue;
      it->result->outcome =
          it->result->late_writes_undone ? Outcome::kResolved : Outcome::kUntouched;
    }
  }

  // A document tagged with a terminal transaction was inserted (or left) after it ended:
  // a rolled-back transaction's is deleted, a committed one's is finished like the rest.
  // When the record does not say which way the transaction went, nothing is guessed: the
  // transaction is set aside for an operator.
  void CheckLateTagged(Item* it, const TaggedSet& set) {
    std::optional<std::int64_t> n;
    std::string what;
    if (it->txn->state == TxnState::kCancelled) {
      n = SendMany(it, "late documents: " + set.describe, set.ns, set.members, nullptr);
      what = "deleted ";
    } else if (!it->txn->outcome_unknown) {
      const UpdateRequest finish = requests::FinishTagged(set);
      n = SendMany(it, "late documents: " + set.describe, set.ns, finish.filter, &finish.update);
      what = "finished ";
    } else {
      std::int64_t left = 0;
      if (Status s = m_->store_->Count(set.ns, set.members, &left); !s.ok()) return Fail(it, s);
      if (left > 0)
        Fail(it, Status::Malformed(std::to_string(left) + " " + set.describe +
                                   " remain after it was done, and nothing records whether it "
                                   "committed or rolled back"));
      return;
    }
    if (n && *n > 0) {
      it->result->late_writes_undone += static_cast<int>(*n);
      std::string& detail = it->result->detail;
      detail +=
          (detail.empty() ? "late write: " : "; ") + what + std::to_string(*n) + " " + set.describe;
    }
  }

  // ---- Quarantine ---------------------------------------------------------------------------

  // A transaction with a participant that does not fit is set aside for an operator, after
  // its lease was released: nothing was written for the participant concerned.
  void QuarantineMalformed() {
    for (Item& it : items_) {
      if (it.malformed.ok()) continue;
      if (Status q = m_->QuarantineThrough(&writer_, it.txn->id, it.malformed.message()); q.ok()) {
        it.result->outcome = Outcome::kQuarantined;
        it.result->detail = it.malformed.message();
        if (it.late) it.result->action = Action::kQuarantine;
      }
    }
  }

  StateMachine* m_;
  const RecoveryPaths& paths_;
  Writer writer_;
  std::vector<Item> items_;
};

std::vector<ExecuteResult> StateMachine::ExecuteBatch(const std::vector<const Transaction*>& txns,
                                                      const std::vector<Action>& actions) {
  return Batch(this, nullptr).Go(txns, actions);
}

std::vector<ExecuteResult> StateMachine::RehearseBatch(const std::vector<const Transaction*>& txns,
                                                       const std::vector<Action>& actions,
                                                       std::vector<PlannedWrite>* record) {
  std::vector<PlannedWrite> ignored;
  std::vector<ExecuteResult> results = Batch(this, record ? record : &ignored).Go(txns, actions);
  for (ExecuteResult& r : results) {
    if (r.action == Action::kNone || r.action == Action::kQuarantine) continue;
    if (r.outcome == Outcome::kQuarantined) {
      r.outcome = Outcome::kPlanned;
      r.detail = "would quarantine: " + r.detail;
    } else if (r.outcome == Outcome::kResolved || r.outcome == Outcome::kUntouched) {
      r.outcome = Outcome::kPlanned;
    }
  }
  return results;
}

std::vector<PlannedWrite> StateMachine::Rehearse(const Transaction& txn, Action action) {
  std::vector<PlannedWrite> record;
  (void)RehearseBatch({&txn}, {action}, &record);
  return record;
}

}  // namespace txn_recovery
