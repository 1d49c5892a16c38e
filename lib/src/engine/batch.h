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
//
// The class is declared here and defined by part: execution.cc (the batch, its rounds and
// the rules they share), batch_send.cc (the lease-checked sender: the only place the
// deadline rule and the fence are applied), batch_reads.cc (reading participants and
// transactions back), and one file per phase: batch_claim.cc, batch_apply.cc,
// batch_undo.cc, batch_finish.cc, batch_transition.cc, batch_late_writes.cc. Private to
// the engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/requests.h"
#include "engine/writer.h"
#include "txn_recovery/engine/state_machine.h"

namespace txn_recovery {

class StateMachine::Batch {
 public:
  // `record` null: the batch writes. Otherwise it rehearses: every write goes to `*record`
  // instead of the server and is taken as matched (engine/writer.h).
  Batch(StateMachine* m, std::vector<PlannedWrite>* record)
      : m_(m), paths_(m->paths_), writer_(record ? Writer(m->store_, record) : Writer(m->store_)) {}

  std::vector<ExecuteResult> Go(const std::vector<const Transaction*>& txns,
                                const std::vector<Action>& actions);

 private:
  // ---- Rules of the execution (execution.cc) ----------------------------------------

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
  static std::vector<Phase> ProgramOf(Action a);

  // A resume whose step can never apply is rolled back instead: its claim took it over, so
  // the move to canceling is a transition of its own.
  static std::vector<Phase> RollbackInsteadOfResume();

  // The state a transition phase moves to; nullopt for the participant phases.
  static std::optional<TxnState> TargetOf(Phase p);

  static std::string NewNonce();

  // The equality a step's target names its participant by, when it is one (every profile's
  // is): participants are then read many at once with {path: {$in: [...]}}.
  static const Predicate* TargetKey(const ParticipantStep& step);

  static bool HasMarker(const Document& doc, const ParticipantStep& step, const Value& txn_id);

  // A key other than _id may name two documents: a guard would then let a change be applied
  // (or finished) once on each. Nothing is guessed: the transaction is set aside.
  static Status TwoDocuments(const ParticipantStep& step, std::size_t n);

  // What a participant read may say besides "missing" and "marker present": that the step
  // cannot be applied to it or undone from it safely, whatever the write.
  static Status CheckMarkerField(const ParticipantStep& step, const Document& doc);

  // Whether `update` may be written to the participant `doc` as read: every increment must be
  // exact on the field as it is, or its inverse would not restore it.
  static Status CheckIncrements(const ParticipantStep& step, const Document& doc,
                                const Update& update);

  // A string equal for values MongoDB holds equal (numbers compare by value across types), to
  // find candidates by hashing: two values with the same string may still differ (an int64
  // beyond 2^53 and its neighbour), so every look-up confirms with the value itself.
  static std::string LookupKey(const Value& v);

  // The document of `docs` that carries the step's marker, if any.
  static const Document* WithMarker(const std::vector<Document>& docs, const ParticipantStep& step,
                                    const Value& txn_id);

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
    // A claim: not under a lease yet, but fenced by the one it takes, so that a claim that
    // reaches the server too late for its lease to be used neither moves the transaction
    // after its deadline (the model's seeded bug k) nor keeps others out until it expires.
    bool claims_lease = false;
    // The step of the model this write is, for the conformance trace (Trace below): its
    // event and what else the line says ("to=applied"). Null: a write the model has not.
    const char* trace_event = nullptr;
    std::string trace_detail{};
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
  void Fail(Item* it, Status s, Outcome outcome = Outcome::kFailed);

  // ---- The writer: every write of the engine is sent here ---------------------------------

  // Which of the writes the server accepted (indices into the list given), and how many
  // of those matched in all; and what became of each, as far as its bulk's count says.
  struct Sent {
    enum class Fate : std::uint8_t {
      kNotSent,  // stopped by its lease's deadline
      kFailed,   // its bulk failed as a whole: it may or may not have reached the server
      kRefused,  // the server refused it
      kMatched,
      kMissed,
      kUnknown,  // in a bulk where some matched and some did not: which is not said
    };
    std::vector<std::size_t> accepted;
    std::int64_t matched = 0;
    std::vector<Fate> fate;  // by index into the list given
    bool all_matched() const { return matched == static_cast<std::int64_t>(accepted.size()); }
  };

  // Sends `writes`, one unordered bulk per collection. A write under a lease whose local
  // deadline has passed is not sent (its item fails); every other write under a lease
  // carries the lease's fence, and so does a claim (the lease it takes). A write the server
  // refuses fails its item; a bulk that fails as a whole fails every item with a write in it.
  // Each write's request and label are moved into the bulk (copying the filters and updates
  // was a large share of the daemon's allocations): afterwards read only its item, step,
  // namespace and best_effort.
  Sent Send(std::vector<Write>& writes);
  // Records in `sent` a bulk's outcome: each of `indices` accepted unless `refused` (by
  // index in `indices`), and its fate as the bulk's count `matched` says.
  static void Tally(const std::vector<std::size_t>& indices, const std::set<std::size_t>& refused,
                    std::int64_t matched, Sent* sent);
  // The conformance trace's line for each write of a bulk sent (Send): `refused` by index
  // in `indices`, `matched` the bulk's count (-1: the bulk failed as a whole).
  void TraceSent(const std::vector<Write>& writes, const std::vector<std::size_t>& indices,
                 const std::vector<bool>& live, const std::set<std::size_t>& refused,
                 std::int64_t matched) const;

  // The seeded bugs of the conformance check (docs/proof.md, "Conformance"), compiled in
  // only with -DTXN_RECOVERY_SEEDED_BUGS=ON and chosen at run time by the environment
  // variable TXN_RECOVERY_SEEDED_BUG (a, b or c); in any other build, never.
#ifdef TXN_RECOVERY_SEEDED_BUGS
  static bool Seeded(char bug);
#else
  static constexpr bool Seeded(char /*bug*/) {
    return false;
  }
#endif

  // A write to every document of a tagged set for `it`: UpdateMany with `update`, or
  // DeleteMany when it is null. The same rule as Send. Returns the documents changed (or
  // deleted); nullopt when nothing was written (the item failed).
  std::optional<std::int64_t> SendMany(Item* it, const std::string& what, const Namespace& ns,
                                       Filter filter, const Update* update);

  // ---- Reading participants ---------------------------------------------------------------

  using StepRef = std::pair<Item*, const ParticipantStep*>;
  // Every document a step's target names (normally one).
  using Found = std::vector<Document>;

  // ---- The conformance trace (txn_recovery/engine/conformance_trace.h) ---------------------

  // One line for `it`: the daemon, the transaction, `event` and `rest`. Callers check
  // conformance::On() first, so that nothing is formatted when the trace is off.
  void Trace(const Item& it, std::string_view event, const std::string& rest) const;
  // A write the read made unnecessary (the marker already there, or already gone): the
  // model's same write matching nothing, or no write at all (scripts/conformance.py).
  void TraceUnsent(const Item& it, std::string_view event, std::size_t step,
                   const std::string& rest = {}) const;
  // What a read of participants found, one line per item: per step, its marker and the
  // finish's trace, as the model's bits (RD_MK, RD_FIN).
  void TraceRead(std::string_view event, const std::vector<StepRef>& steps,
                 const std::vector<Found>& found) const;
  // The model's read after an apply that matched nothing (`cannot`: no marker, the step can
  // never apply); not `sent`, the apply the engine left out because its read found the
  // marker, which is the model's apply matching nothing and then that read.
  void TraceApplyRead(const Item& it, const ParticipantStep* step, bool marker, bool sent) const;
  static std::size_t StepIndex(const Item& it, const ParticipantStep* step) {
    return static_cast<std::size_t>(step - it.txn->steps.data());
  }

  // Reads the participants of `steps`, many at a time: one {key: {$in: [...]}} query per
  // collection and key. A read error fails the items concerned.
  // A read that fails fails the items it was for, unless `best_effort` (a clean-up's
  // read, of transactions already ended): then their documents are left unread (empty).
  std::vector<Found> ReadParticipants(const std::vector<StepRef>& steps, bool best_effort = false);

  // Each document once, as last read: a scan may return a document twice when it is
  // updated meanwhile (DocumentDB does so readily), and two readings of one participant must
  // not look like a key naming two documents.
  Status ReadAll(const Namespace& ns, const Filter& f, std::vector<Document>* out);

  // The participants of `steps` whose marker field does not fit fail their item.
  void CheckAll(const std::vector<StepRef>& steps, const std::vector<Found>& found);

  // A write of `update` to the participant `doc` as read, for `it`'s `step`; it fails the
  // item instead when an increment would not be exact. Built by `make` once checked.
  template <typename Make>
  void AddWrite(std::vector<Write>* writes, Item* it, const ParticipantStep* step,
                const Document& doc, const Update& update, std::string what,
                const char* trace_event, Make make) {
    if (Status s = CheckIncrements(*step, doc, update); !s.ok()) return Fail(it, s);
    writes->push_back({it, step, step->ns, make(), false, std::move(what)});
    writes->back().trace_event = trace_event;
  }

  static bool AnyHasMarker(const Found& docs, const ParticipantStep& step, const Value& id) {
    return WithMarker(docs, step, id) != nullptr;
  }

  // Whether a finish left its trace of transaction `id` on `doc`.
  bool HasTrace(const Document& doc, const Value& id) const {
    return Filter().Eq(paths_.Finished(), id).Matches(doc);
  }
  static void MarkTraced(Item* it, const ParticipantStep* step, bool all_it_holds);

  // Records how `it`'s `step` is to be finished, `doc` being its participant as read.
  void DecideFinish(Item* it, const ParticipantStep* step, const Document& doc, bool applying);

  // The participant steps of the writes the server accepted, read back.
  std::vector<Found> ReadBack(const std::vector<Write>& writes, const Sent& sent,
                              std::vector<StepRef>* refs);

  // ---- Claiming and releasing -------------------------------------------------------------

  // The conformance trace's line for each claim, matched as its read back says (a bulk's
  // count says how many, not which); "err" where the bulk failed or the read back did.
  void TraceClaims(const std::vector<Write>& writes,
                   const std::vector<std::optional<requests::ClaimMove>>& moves, const Sent& sent,
                   const std::map<std::string, Document>& docs, bool read) const;

  // Claims every item in one bulk write (requests::Claim), each with its action's first
  // state move. Each claim carries this batch's nonce; when some did not match, the
  // transactions are read back to find the ones that moved as ours did. A cancel ends in
  // its claim. False when nothing is left to run under a lease.
  bool Claim();

  // The lease arithmetic, in one place. A claim or renewal sent at server time `now` writes
  // the expiry `Expiry(now)`, with its fence; and the daemon stops writing under it at
  // `Deadline(start)` on its monotonic clock, `start` being when the write was sent.
  DateTime Expiry(DateTime now) const {
    return DateTime{now.millis + m_->lease_.duration.count()};
  }
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
  void ReleaseHeld();

  // ---- The rounds ---------------------------------------------------------------------------

  void Run();

  static std::vector<StepRef> StepsOf(const std::vector<Item*>& list);

  // Applies each step unless already applied. A step that can never apply (participant
  // missing, guard failing) turns the resume into a rollback; a participant that does not
  // fit ends the transaction before anything is written to any of its participants.
  void Apply(const std::vector<Item*>& list);

  // Once the transaction is done, the traces its finish left on the participants serve no
  // more (no finish can follow): removed, best effort; the late-write check and the orphan
  // scan remove whatever is left. Sent like every write of the action, so that the clean-up
  // keeps to the lease-deadline rule although its safety does not need it
  // (model/recovery.pml): a daemon stalled past its deadline writes nothing more.
  void Untrace(const std::vector<Item*>& list);

  // Removes the traces of the finishes of `items` (each terminal) from the participants a
  // finish left one on or a read found one on (Item::traced_at): for each, the one of
  // requests::Untrace's two forms that the read calls for (sending both would cost every
  // traced participant a statement for nothing), one bulk per collection in the order of
  // its documents. Another transaction's trace added to or removed from the participant
  // since that read (another worker's or daemon's finish on a busy account) makes the form
  // miss: the participants of those that may have missed are read again and the form
  // each now calls for is sent, twice at most; what is still left, the late-write check
  // and the orphan scan remove. Several traces of this batch on one
  // participant (a busy account) were all read on the same document: each but the last is
  // pulled, and the last takes the sub-document with it where each read says the traces
  // are all it holds.
  void RemoveTraces(const std::vector<Item*>& items);
  // A trace of a finish on a participant, to remove: whether the read says it is all the
  // daemon's sub-document there holds.
  struct LeftTrace {
    Item* it;
    const ParticipantStep* step;
    bool all;
  };
  // Reads again the participants of `again` (indices into `traces` whose removal may have
  // missed) and sends each trace still there the form its read calls for, twice at most;
  // marks in `removed` those a write took.
  void RemoveAgain(const std::vector<LeftTrace>& traces, std::vector<std::size_t> again,
                   std::vector<bool>* removed);

  // Undoes each applied step (marker present), then deletes the tagged sets' documents.
  // An undo that does not take effect ends the transaction: marking it cancelled with a
  // change still applied would leave the change for the late-write check to find.
  void Undo(const std::vector<Item*>& list);

  // Pulls every marker (guarded by its presence, and leaving a trace) or undoes a late
  // duplicate of it, as the read of its participant says, and finishes every tagged set.
  void Finish(const std::vector<Item*>& list);

  // The participants of each finish and roll back, read before the claim (model/
  // recovery.pml, the read before the claim). A finish goes by this read: its requests keep
  // both their conditions, so a read overtaken meanwhile only makes one of them match
  // nothing, and what that leaves (a late duplicate's marker) is a late write of a terminal
  // transaction for the late-write check. Either action that finds no marker of its
  // transaction has nothing to write but its state, and its claim does that.
  void ReadBeforeClaim();

  // Reads the participants of the finishes of `list` that no read has decided yet (before
  // their claim: ReadBeforeClaim), one query per collection, and decides from each how its
  // step is finished. A participant that does not fit, or a key naming two documents,
  // ends the transaction before anything is written to any of its participants.
  // `trace_as`: the event of the conformance trace that the read is.
  void ReadForFinish(const std::vector<Item*>& list, std::string_view trace_as);

  // Compare-and-set of each state, under the lease. A terminal move releases the lease
  // (and commits the LeaseGuard for it); any other renews it.
  void Transition(const std::vector<Item*>& list);

  // Whether the transaction read back was ended by this process (the owner id is one per
  // process): by this batch or, its candidate read having returned it twice, by another.
  bool EndedBySelf(const std::map<std::string, Document>& docs, const Item& it) const;

  // The transactions of the accepted `writes`, read back by _id into `docs`. False (and the
  // items failed) when the read fails.
  bool ReadBackTransactions(const std::vector<Write>& writes, const Sent& sent,
                            std::map<std::string, Document>* docs);

  // Whether the transaction read back shows our move to the state spelled `state`: and, for
  // a terminal move, resolved by us under this batch's claim, otherwise our lease still on
  // it (another worker of this process, or an earlier sweep, has the same owner).
  bool Moved(const std::map<std::string, Document>& docs, const Item& it, const Value& state,
             bool terminal) const;

  // ---- Late writes --------------------------------------------------------------------------

  // A marker of a terminal transaction on a participant can only be a change applied after
  // the transaction was resolved (markers are removed before the terminal state is
  // written): undo it, guarded by the marker so that it is undone at most once. Without a
  // lease: terminal states never change. The participants are read first, so that the usual
  // case (no late write) is one query.
  void CheckLateWrites();

  // A document tagged with a terminal transaction was inserted (or left) after it ended:
  // a rolled-back transaction's is deleted, a committed one's is finished like the rest.
  // When the record does not say which way the transaction went, nothing is guessed: the
  // transaction is set aside for an operator.
  void CheckLateTagged(Item* it, const TaggedSet& set);

  // ---- Quarantine ---------------------------------------------------------------------------

  // A transaction with a participant that does not fit is set aside for an operator, after
  // its lease was released: nothing was written for the participant concerned.
  void QuarantineMalformed();

  StateMachine* m_;
  const RecoveryPaths& paths_;
  Writer writer_;
  std::vector<Item> items_;
};

}  // namespace txn_recovery
