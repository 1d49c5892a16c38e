// The phases of an execution (engine/batch.h runs them in rounds), one class each, each built
// from only what it needs. None holds a Writer or a Store: a phase reads through
// ParticipantReads and writes through the LeasedSender, every write naming the lease it
// goes under (engine/lease.h). Only the claim and the transitions hold the LeaseKeeper,
// which alone makes and renews a Lease. Private to the engine.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/batch_item.h"
#include "engine/batch_trace.h"
#include "engine/leased_sender.h"
#include "engine/participant_reads.h"

namespace txn_recovery {

// What every phase works with.
struct PhaseKit {
  const Profile& profile;
  const RecoveryPaths& paths;
  const Namespace& txn_ns;
  ParticipantReads& reads;
  LeasedSender& send;
  const BatchTrace& trace;
};

// The state a transition phase moves to; nullopt for the participant phases.
std::optional<TxnState> TargetOf(Phase p);
// A resume whose step can never apply is rolled back instead: its claim took it over, so
// the move to canceling is a transition of its own.
std::vector<Phase> RollbackInsteadOfResume();

// The reads before the claim and the claim itself (engine/claim_phase.cc).
class ClaimPhase {
 public:
  ClaimPhase(const PhaseKit& kit, const LeaseKeeper& keeper,
             const std::function<DateTime()>& server_now)
      : kit_(kit), keeper_(keeper), server_now_(server_now) {}

  // The participants of each finish and roll back, read before the claim (model/
  // recovery.pml, the read before the claim). A finish goes by this read: its requests keep
  // both their conditions, so a read overtaken meanwhile only makes one of them match
  // nothing, and what that leaves (a late duplicate's marker) is a late write of a terminal
  // transaction for the late-write check. Either action that finds no marker of its
  // transaction has nothing to write but its state, and its claim does that.
  void ReadBefore(std::vector<Item>& items);

  // Claims every item in one bulk write (requests::Claim), each with its action's first
  // state move. Each claim carries this batch's nonce; when some did not match, the
  // transactions are read back to find the ones that moved as ours did. A cancel ends in
  // its claim. False when nothing is left to run under a lease. Where the read back fails,
  // the leases some claims may have taken are held (Item::lease) for the caller to release.
  bool Claim(std::vector<Item>& items);

 private:
  static std::string NewNonce();
  // Records the outcome of one accepted claim; whether the item goes on under its lease.
  bool Took(Item* it, const std::optional<requests::ClaimMove>& move, const Sent& sent,
            const std::map<std::string, Document>& docs,
            std::chrono::steady_clock::time_point start);
  // The conformance trace's line for each claim, matched as its read back says (a bulk's
  // count says how many, not which); "err" where the bulk failed or the read back did.
  void TraceClaims(const std::vector<Write>& writes,
                   const std::vector<std::optional<requests::ClaimMove>>& moves, const Sent& sent,
                   const std::map<std::string, Document>& docs, bool read) const;

  const PhaseKit& kit_;
  const LeaseKeeper& keeper_;
  const std::function<DateTime()>& server_now_;
};

// Applies each step unless already applied (engine/apply_phase.cc). A step that can never
// apply (participant missing, guard failing) turns the resume into a rollback; a participant
// that does not fit ends the transaction before anything is written to any of its
// participants.
class ApplyPhase {
 public:
  explicit ApplyPhase(const PhaseKit& kit) : kit_(kit) {}
  void Run(const std::vector<Item*>& list);

 private:
  // Which writes' guards refused, read back: counted as applied, or the resume turned.
  void ReadBackRefused(const std::vector<Write>& writes, const Sent& sent);
  const PhaseKit& kit_;
};

// Undoes each applied step (marker present), then deletes the tagged sets' documents
// (engine/undo_phase.cc). An undo that does not take effect ends the transaction: marking it
// cancelled with a change still applied would leave the change for the late-write check.
class UndoPhase {
 public:
  explicit UndoPhase(const PhaseKit& kit) : kit_(kit) {}
  void Run(const std::vector<Item*>& list);

 private:
  // The participants as the undo goes by: read before the claim, or now.
  std::vector<Found> Before(const std::vector<StepRef>& steps);
  const PhaseKit& kit_;
};

// Pulls every marker (guarded by its presence, and leaving a trace) or undoes a late
// duplicate of it, as the read of its participant says, and finishes every tagged set
// (engine/finish_phase.cc).
class FinishPhase {
 public:
  explicit FinishPhase(const PhaseKit& kit) : kit_(kit) {}
  void Run(const std::vector<Item*>& list);

 private:
  const PhaseKit& kit_;
};

// Removes the traces the finishes left (engine/untrace.cc). Lease-free by design
// (LeaseFree::kUntrace): once the transaction is done they serve no more, no finish can
// follow; an action's own clean-up still keeps to its lease's deadline.
class UntracePhase {
 public:
  explicit UntracePhase(const PhaseKit& kit) : kit_(kit) {}
  // The phase: the traces of `list`'s finishes removed, best effort; the late-write check
  // and the orphan scan remove whatever is left.
  void Run(const std::vector<Item*>& list);

  // Removes the traces of the finishes of `items` (each terminal) from the participants a
  // finish left one on or a read found one on (Item::traced_at): for each, the one of
  // requests::Untrace's two forms that the read calls for (sending both would cost every
  // traced participant a statement for nothing), one bulk per collection in the order of its
  // documents. Another transaction's trace added to or removed from the participant since
  // that read (another worker's or daemon's finish on a busy account) makes the form miss:
  // the participants of those that may have missed are read again and the form each now
  // calls for is sent, twice at most. Several traces of this batch on one participant (a
  // busy account) were all read on the same document: each but the last is pulled, and the
  // last takes the sub-document with it where each read says the traces are all it holds.
  void Remove(const std::vector<Item*>& items);

 private:
  // A trace of a finish on a participant, to remove: whether the read says it is all the
  // daemon's sub-document there holds.
  struct LeftTrace {
    Item* it;
    const ParticipantStep* step;
    bool all;
  };
  static std::vector<LeftTrace> Left(const std::vector<Item*>& items);
  Write RemoveWrite(const LeftTrace& t, bool all, std::string what) const;
  // Reads again the participants of `again` (indices into `traces` whose removal may have
  // missed) and sends each trace still there the form its read calls for, twice at most;
  // marks in `removed` those a write took.
  void RemoveAgain(const std::vector<LeftTrace>& traces, std::vector<std::size_t> again,
                   std::vector<bool>* removed);
  void TraceRemoved(const std::vector<LeftTrace>& traces, const Sent& sent,
                    const std::vector<bool>& removed) const;
  const PhaseKit& kit_;
};

// Compare-and-set of each state, under the lease (engine/transition_phase.cc). A terminal
// move releases the lease (and commits the LeaseGuard for it); any other renews it.
class TransitionPhase {
 public:
  TransitionPhase(const PhaseKit& kit, const LeaseKeeper& keeper,
                  const std::function<DateTime()>& server_now)
      : kit_(kit), keeper_(keeper), server_now_(server_now) {}
  void Run(const std::vector<Item*>& list);

 private:
  const PhaseKit& kit_;
  const LeaseKeeper& keeper_;
  const std::function<DateTime()>& server_now_;
};

// The late-write check (engine/late_writes.cc). A marker of a terminal transaction on a
// participant can only be a change applied after the transaction was resolved (markers are
// removed before the terminal state is written): undone, guarded by the marker so that it is
// undone at most once. Without a lease, by design (LeaseFree::kLateWrite): terminal states
// never change. The participants are read first, so that the usual case (no late write) is
// one query.
class LateWriteCheck {
 public:
  explicit LateWriteCheck(const PhaseKit& kit) : kit_(kit) {}
  void Run(std::vector<Item>& items);

 private:
  // The undo of each late write `found` shows, and the items whose finish left a trace.
  std::vector<Write> Undos(const std::vector<StepRef>& steps, const std::vector<Found>& found,
                           std::vector<Item*>* traced);
  // A document tagged with a terminal transaction was inserted (or left) after it ended: a
  // rolled-back transaction's is deleted, a committed one's is finished like the rest. When
  // the record does not say which way the transaction went, nothing is guessed: the
  // transaction is set aside for an operator.
  void CheckTagged(Item* it, const TaggedSet& set);
  const PhaseKit& kit_;
};

}  // namespace txn_recovery
