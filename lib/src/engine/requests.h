// The recovery engine's writes, each built here and nowhere else: pure functions from a
// transaction (and the lease held on it) to the filter and update sent to the server. The
// engine (engine/batch.h) decides when to send them, and its sender (leased_sender.h) adds the
// lease's fence (Fenced) to every write made under a lease, and to a claim; these decide what they
// say. The guards in each filter are what makes a write safe to repeat after a crash;
// docs/state-machine.md explains each one.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/engine/decision.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::requests {

// A lease the engine holds (or is about to take) on one transaction.
struct LeaseTerms {
  std::string owner;  // this daemon instance
  std::string claim;  // the nonce of the claim that took it
  DateTime expires;   // on the server's clock, as written into the lease
  // Writes under the lease carry "server now < fence" in their filter, so that one reaching
  // the server after it (a daemon stalled between its deadline check and the send) changes
  // nothing. Earlier than `expires`, so that it has passed before anyone may take the lease.
  DateTime fence;
};

// The first state move of `action` that its claim makes (model/recovery.pml, the claim's
// fold): a roll back writes canceling, a resume takes the transaction over (the resuming
// spelling; none when it was read so already), a cancel is terminal at once. A finish and
// the finish of a rollback only take the lease. With `nothing_to_write` (the participants,
// read before the claim, carry no marker of the transaction: nothing to pull, nothing to
// undo), a finish is done and a roll back cancelled in the claim itself.
struct ClaimMove {
  Value spelling;  // as written
  TxnState state;
};
std::optional<ClaimMove> ClaimMoveOf(const Transaction& txn, Action action, bool nothing_to_write,
                                     const Profile& profile);

// Claims `txn` for `action`, read as it is: same state, same time, not quarantined, owned
// as the watch requires, and nobody's lease live on the server's clock; in the same
// compare-and-set, the action's first state move (ClaimMoveOf) with the time. A claim that
// moves the transaction takes the lease with it, except a terminal one (a cancel, or an
// action with nothing to write): it records how the transaction ended and leaves no lease
// (nothing of it is written under one). Taking a resume over in its claim stops the application's
// own compare-and-set from pending before the daemon's first participant write, so that it cannot
// pull the marker of a step the daemon applies (which would let the daemon's apply land a second
// time, unguarded); it is made whether or not a step is left to apply.
UpdateRequest Claim(const Transaction& txn, Action action, bool nothing_to_write,
                    const Profile& profile, const RecoveryPaths& paths, const LeaseTerms& lease);

// Stamps the first sighting of a transaction that carries no time (MissingTime::kFirstSeen)
// with the server's time. Matches only while there is still neither a time nor a stamp, so
// that of several daemons stamping at once the first stamp stays and none moves it later.
// Made without a lease: it changes nothing the application or a recovery reads but the age.
UpdateRequest StampFirstSeen(const Value& txn_id, const Profile& profile,
                             const RecoveryPaths& paths);

// Gives the lease back; matches only the lease this claim took.
UpdateRequest Release(const Value& txn_id, const RecoveryPaths& paths, const LeaseTerms& lease);

// Compare-and-set of the state from `from` (the exact spelling read or last written) to
// `to`, under the lease. A move to a terminal state removes the lease and records how the
// transaction ended; any other renews the lease until `renewed_expires`.
UpdateRequest Transition(const Value& txn_id, const Value& from, TxnState to, Action action,
                         const Profile& profile, const RecoveryPaths& paths,
                         const LeaseTerms& lease, DateTime renewed_expires);

// A participant step: apply where the marker is absent (and the step's own guard holds),
// undo or finish where it is present. `participant` is the document as read before the
// write: each $inc is guarded to stay exact on what the field then holds (amounts.h).
UpdateRequest Apply(const ParticipantStep& step, const Value& txn_id, const Document& participant);
UpdateRequest Undo(const ParticipantStep& step, const Value& txn_id, const Document& participant);
// Finishing a step is one of two requests whose filters exclude each other: the marker
// with no trace of a finish is pulled, and the trace recorded in the same update (first);
// a marker next to such a trace was pushed after the pull (a stalled application's late
// apply) and is undone as a duplicate (second). The execution reads the participant under
// its lease and sends the one the read calls for (docs/state-machine.md, "Finishing leaves
// a trace"); each keeps its conditions, which the server checks as it writes.
std::pair<UpdateRequest, UpdateRequest> Finish(const ParticipantStep& step, const Value& txn_id,
                                               const RecoveryPaths& paths);
// A marker of a terminal transaction: a change applied after it ended. On a done
// transaction it is a second application (its duplicate is undone), on a cancelled one the
// only one (undone). Made without a lease: terminal states never change, and the marker
// guard undoes each late write at most once.
UpdateRequest LateUndo(const ParticipantStep& step, const Value& txn_id, TxnState terminal,
                       const Document& participant);
// Removes the trace of the finish of `txn_id`, terminal (no finish can follow), from the
// one participant `participant` names. Two single-document requests whose filters exclude
// each other: the daemon's sub-document removed whole where the trace is all it holds (so
// that the participant is left exactly as the application would have left it), the trace
// pulled from it otherwise. Single-document, so that the bulk keeps the order of its
// documents like every other (MongoStore::UpdateEach): an update of many documents locked
// them in the server's order, and two daemons' writes then deadlocked on DocumentDB.
// Without a lease of its own: a transaction's clean-up keeps to its lease-deadline rule,
// the late-write check's and the orphan scan's need none (model/recovery.pml, untrace).
std::pair<UpdateRequest, UpdateRequest> Untrace(const Filter& participant, const Value& txn_id,
                                                const RecoveryPaths& paths);
// Whether the trace of `txn_id` is, or will be, all the daemon's sub-document of
// `participant` (as read) holds: with `adding`, once a finish has pushed that trace on a
// participant read without it; otherwise as read.
bool TraceIsAll(const Document& participant, const Value& txn_id, const RecoveryPaths& paths,
                bool adding);

// The update a late write on a `terminal` transaction is undone with.
const Update& LateUndoUpdate(const ParticipantStep& step, TxnState terminal);

// The members of a tagged set, and what finishing them does.
UpdateRequest FinishTagged(const TaggedSet& set);

// ---- The daemon's own record, outside any lease ------------------------------------------

// Counts one more failed attempt on a transaction and records the error.
UpdateRequest RecordFailure(const Value& txn_id, std::string_view error,
                            const RecoveryPaths& paths);
// Sets a transaction aside for an operator: the reason, who set it aside, and when.
UpdateRequest Quarantine(const Value& txn_id, const Document& record, const RecoveryPaths& paths);
// The same, when the daemon's sub-document holds something that is not a document
// (written by someone else): the sub-document is replaced, keeping `held` for the operator.
// Matches only while `held` is still there. The time follows in QuarantinedNow: MongoDB
// refuses setting a field and a path below it in one update.
UpdateRequest QuarantineReplacing(const Value& txn_id, const Value& held, const Document& record,
                                  const RecoveryPaths& paths);
UpdateRequest QuarantinedNow(const Value& txn_id, const RecoveryPaths& paths);
// Hands a quarantined transaction back to the sweeps, its failure count reset.
UpdateRequest ReleaseQuarantine(const Value& txn_id, const RecoveryPaths& paths);

// The `pause` switch of a watch's control collection (watch.h): the document created once,
// then switched.
Document PauseSwitch();
UpdateRequest SetPause(bool paused, const std::string& by);

// ---- Fleet membership (membership.h) ---------------------------------------------------

// The fields of a member record: written by the heartbeat here, read back by membership.cc.
namespace member_record {
inline constexpr const char* kId = "_id";
inline constexpr const char* kHeartbeat = "heartbeat";  // the server's time of the last one
inline constexpr const char* kHost = "host";
inline constexpr const char* kVersion = "version";
inline constexpr const char* kWatches = "watches";
inline constexpr const char* kFormat = "format";
}  // namespace member_record

// A member's record as first created: its heartbeat the epoch, so that it counts as
// expired (and is removable) until the heartbeat that follows stamps the server's time.
Document NewMember(const std::string& id);
// The heartbeat: the record's fields rewritten, its time the server's.
UpdateRequest MemberHeartbeat(const MemberRecord& self);
// The records whose last heartbeat is before `cutoff` (the server's clock), compared by
// the delete itself so that a record heartbeated since it was listed is not matched.
Filter ExpiredMembers(DateTime cutoff);
// The records heartbeated at `cutoff` or since: the live members.
Filter LiveMembers(DateTime cutoff);
// One member's record.
Filter Member(const std::string& id);
// The record of the orphan scans of `collection`, kept in the members collection beside the
// member records: _id {orphanScan: collection}, so that no member id (a string) can be it,
// and without a heartbeat, so that it is never listed nor removed as a member. As first
// created its last claim is the epoch: the first to claim it runs the first scan.
Document NewOrphanScan(const std::string& collection);
// The claim of the next scan by `member`: it matches while the last claim is before `cutoff`
// (compared by the update itself, so that of two members claiming at once one matches),
// and stamps the server's time.
UpdateRequest OrphanScanClaim(const std::string& collection, const std::string& member,
                              DateTime cutoff);

// `filter` restricted to the life of `lease` on the server's clock: the engine's writer
// applies it to every write under a lease.
Filter Fenced(Filter filter, const LeaseTerms& lease);

}  // namespace txn_recovery::requests
