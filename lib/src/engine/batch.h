// StateMachine::ExecuteBatch: the one execution path of the recovery engine.
//
// Each transaction follows a program, a list of phases (after the claim: e.g. apply, mark
// applied, finish, mark done). In each round every transaction still running performs its
// next phase, and the writes of one phase are sent per collection as one unordered bulk of
// single-document guarded updates. A bulk reports how many of its updates matched, not
// which: where a transaction's fate depends on whether its own update matched, the
// documents are read back (one query per collection). Participants are read before they are
// written (apply, undo, late writes), which spares the writes of steps already done and
// makes the accounting exact.
//
// The parts, each in its own file:
// - engine/batch_item.h: an Item (one transaction), a Write and what it goes Under, Sent.
// - engine/lease.h: the Lease, made only by the LeaseKeeper, and the LeaseFree writes.
// - engine/leased_sender.h: every write is sent there, with the lease-deadline rule
//   (LeaseOptions in state_machine.h) and the fence of the lease it names.
// - engine/participant_reads.h, engine/finish_reads.h: the reads, and what they decide.
// - engine/phases.h: one class per phase (claim, apply, undo, finish, untrace, transition,
//   late writes), none holding a Writer or a Store.
// - engine/batch_trace.h: the conformance trace.
// This file's Batch runs the rounds and releases, on every way out, the leases the batch
// still holds (LeaseGuard). A rehearsal (RehearseBatch: the dry run, `explain`) is this same
// execution with a recording Writer, which sends nothing and takes every write as matched.
// Private to the engine.
#pragma once

#include <vector>

#include "engine/batch_item.h"
#include "engine/batch_trace.h"
#include "engine/leased_sender.h"
#include "engine/participant_reads.h"
#include "engine/phases.h"
#include "txn_recovery/engine/state_machine.h"

namespace txn_recovery {

class StateMachine::Batch {
 public:
  // `record` null: the batch writes. Otherwise it rehearses: every write goes to `*record`
  // instead of the server and is taken as matched (engine/writer.h).
  Batch(StateMachine* m, std::vector<PlannedWrite>* record)
      : m_(m),
        keeper_(m->clock_, m->lease_),
        trace_(m->lease_.owner, m->paths_),
        reads_(m->store_, *m->profile_, m->paths_, m->txn_ns_),
        send_(record ? Writer(m->store_, record) : Writer(m->store_), keeper_, trace_),
        kit_{*m->profile_, m->paths_, m->txn_ns_, reads_, send_, trace_} {}

  // Performs each transaction's action; one result per transaction, in order.
  std::vector<ExecuteResult> Run(const std::vector<const Transaction*>& txns,
                                 const std::vector<Action>& actions);

 private:
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

  // The phases after the claim, which has made the action's first state move
  // (requests::ClaimMoveOf): a cancel ends there, a roll back starts from canceling, a
  // resume from its take-over.
  static std::vector<Phase> ProgramOf(Action a);
  // The items of `txns` to act on, into items_; a transaction given twice is busy.
  void Admit(const std::vector<const Transaction*>& txns, const std::vector<Action>& actions,
             std::vector<ExecuteResult>* results);
  // The conformance trace's line of what each decision rested on.
  void TraceDecisions() const;
  // The rounds: every running item's next phase, phase by phase.
  void Rounds();
  // Releases every lease still held, as one bulk (best effort: a lease that cannot be
  // released expires on its own). The sender leaves a lease past its local deadline to
  // expire: after the deadline, even releasing it is no longer this daemon's to do.
  void ReleaseHeld();
  // A transaction with a participant that does not fit is set aside for an operator, after
  // its lease was released: nothing was written for the participant concerned.
  void QuarantineMalformed();

  StateMachine* m_;
  LeaseKeeper keeper_;
  BatchTrace trace_;
  ParticipantReads reads_;
  LeasedSender send_;
  PhaseKit kit_;
  std::vector<Item> items_;
};

}  // namespace txn_recovery
