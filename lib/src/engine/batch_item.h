// What the parts of an execution (engine/batch.h) hand each other: a transaction being
// recovered (`Item`), a write on its behalf (`Write`) and what became of a bulk of them
// (`Sent`), and the rules on participants every phase shares (engine/batch_rules.cc).
// Private to the engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/lease.h"
#include "engine/requests.h"
#include "txn_recovery/engine/state_machine.h"

namespace txn_recovery {

// The phases of a program after the claim, which has made the action's first state move
// (requests::ClaimMoveOf).
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
// (requests::Finish): no other daemon can leave a trace meanwhile, and the application never
// does, so the read says which of the two requests can match.
enum class FinishAs {
  kNothing,        // the marker is gone (or the participant is): nothing to pull
  kPull,           // the marker and no trace: pull it, leaving the trace
  kUndoDuplicate,  // the marker next to a trace: a late duplicate, undone
};

// One transaction of a batch, as the phases find and leave it.
struct Item {
  const Transaction* txn = nullptr;
  ExecuteResult* result = nullptr;
  bool late = false;   // a late-write check: no lease, no program
  bool ended = false;  // failed, busy or quarantined: nothing more is done for it
  std::vector<Phase> program;
  std::size_t pc = 0;  // the next phase
  Value state_spelling;
  bool taken_over = false;  // in a resuming spelling (read so, or written by the claim)
  // A finish or roll back whose participants, read before the claim, carry no marker of
  // it: its claim ends it (requests::ClaimMoveOf).
  bool nothing_to_write = false;
  // A roll back's participants as read before its claim, by step: what it undoes.
  std::vector<std::vector<Document>> read_before_claim;
  // The terms the claim offered (owner and nonce name this batch's moves when read back).
  requests::LeaseTerms offered;
  // The lease, once the claim took it (engine/lease.h); kept after a terminal move removed
  // it from the document, so that the clean-up still stops at its deadline.
  std::optional<Lease> lease;
  bool resolved = false;     // a terminal transition removed the lease
  bool released = false;     // the LeaseGuard gave it back (or left it to expire)
  std::string cannot_apply;  // why a resume turns into a rollback
  Status malformed;          // a participant that does not fit: quarantine the transaction
  // How each step (by its index in txn->steps) is finished: decided by the apply's read on a
  // resume, by the finish's own read otherwise; empty until read.
  std::vector<FinishAs> finish_as;
  // By step finished as kPull: whether the trace it leaves is all the sub-document will
  // hold, as its participant was read.
  std::vector<bool> pull_leaves_all;
  // By step: a finish of it left, or a read found, a trace on that participant; and whether,
  // as read, that trace is all the daemon's sub-document there holds (which of
  // requests::Untrace's two requests removes it).
  std::vector<bool> traced_at;
  std::vector<bool> trace_all_at;
};

bool Running(const Item& it);
// Ends `it` with `s` (the first reason wins): Busy for a lease it never got, Failed
// otherwise. A malformed participant is remembered, so that the transaction is quarantined
// once its lease is released.
void Fail(Item* it, Status s, Outcome outcome = Outcome::kFailed);
Status LeaseExpired(const Item& it);
std::size_t StepIndex(const Item& it, const ParticipantStep* step);

// What a write is sent under: the lease it names is the only way to a write of an action.
// A claim is sent under the terms it offers (fenced by them, so that a claim reaching the
// server too late for its lease to be used neither moves the transaction after its deadline,
// the model's seeded bug k, nor keeps others out until it expires).
class Under {
 public:
  // Under `lease`: sent only before its deadline, and fenced.
  static Under TheLease(const Lease& lease) { return Under(&lease, nullptr); }
  // The claim taking a lease on `offered` terms: fenced by them.
  static Under TheClaim(const requests::LeaseTerms& offered) { return Under(nullptr, &offered); }
  // No lease, by design: `why` says which of engine/lease.h's list the write is, at its call
  // site. `held`: the lease the item still holds, if any, whose deadline the write keeps
  // although its safety does not need it (a daemon stalled past its deadline writes nothing
  // more).
  static Under NoLease(LeaseFree /*why*/, const std::optional<Lease>& held) {
    return Under(held ? &*held : nullptr, nullptr);
  }

  const Lease* lease() const { return lease_; }
  const requests::LeaseTerms* claim() const { return claim_; }

 private:
  Under(const Lease* lease, const requests::LeaseTerms* claim) : lease_(lease), claim_(claim) {}
  const Lease* lease_;
  const requests::LeaseTerms* claim_;
};

// One write on behalf of `item`, for its participant `step` (null for the transaction
// document itself). A best-effort write (a release, a clean-up) never fails its item.
struct Write {
  Item* item;
  const ParticipantStep* step;
  Namespace ns;
  UpdateRequest request;
  Under under;
  bool best_effort = false;
  std::string what;  // for a rehearsal's record: what the write is for
  // The step of the model this write is, for the conformance trace: its event and what else
  // the line says ("to=applied"). Null: a write the model has not.
  const char* trace_event = nullptr;
  std::string trace_detail{};
};

// Which of the writes the server accepted (indices into the list given), and how many of
// those matched in all; and what became of each, as far as its bulk's count says.
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

// A participant step of an item, and every document its target names (normally one).
using StepRef = std::pair<Item*, const ParticipantStep*>;
using Found = std::vector<Document>;

// The participant steps of every item of `list`, an item's steps consecutive.
std::vector<StepRef> StepsOf(const std::vector<Item*>& list);

// ---- Rules on participants (engine/batch_rules.cc) -------------------------------------

// The equality a step's target names its participant by, when it is one (every profile's
// is): participants are then read many at once with {path: {$in: [...]}}.
const Predicate* TargetKey(const ParticipantStep& step);
bool HasMarker(const Document& doc, const ParticipantStep& step, const Value& txn_id);
// The document of `docs` that carries the step's marker, if any.
const Document* WithMarker(const std::vector<Document>& docs, const ParticipantStep& step,
                           const Value& txn_id);
inline bool AnyHasMarker(const Found& docs, const ParticipantStep& step, const Value& id) {
  return WithMarker(docs, step, id) != nullptr;
}
// A key other than _id may name two documents: a guard would then let a change be applied
// (or finished) once on each. Nothing is guessed: the transaction is set aside.
Status TwoDocuments(const ParticipantStep& step, std::size_t n);
// What a participant read may say besides "missing" and "marker present": that the step
// cannot be applied to it or undone from it safely, whatever the write.
Status CheckMarkerField(const ParticipantStep& step, const Document& doc);
// Whether `update` may be written to the participant `doc` as read: every increment must be
// exact on the field as it is, or its inverse would not restore it.
Status CheckIncrements(const ParticipantStep& step, const Document& doc, const Update& update);
// A string equal for values MongoDB holds equal (numbers compare by value across types), to
// find candidates by hashing: two values with the same string may still differ (an int64
// beyond 2^53 and its neighbour), so every look-up confirms with the value itself.
std::string LookupKey(const Value& v);

// The seeded bugs of the conformance check (docs/proof.md, "Conformance"), compiled in only
// with -DTXN_RECOVERY_SEEDED_BUGS=ON and chosen at run time by the environment variable
// TXN_RECOVERY_SEEDED_BUG (a, b or c); in any other build, never.
#ifdef TXN_RECOVERY_SEEDED_BUGS
bool Seeded(char bug);
#else
constexpr bool Seeded(char /*bug*/) {
  return false;
}
#endif

// A write of `update` to the participant `doc` as read, for `it`'s `step`, under `under`;
// it fails the item instead when an increment would not be exact. Built by `make` once
// checked.
template <typename Make>
void AddWrite(std::vector<Write>* writes, Item* it, const ParticipantStep* step,
              const Document& doc, const Update& update, Under under, std::string what,
              const char* trace_event, Make make) {
  if (Status s = CheckIncrements(*step, doc, update); !s.ok()) return Fail(it, s);
  writes->push_back({it, step, step->ns, make(), under, false, std::move(what)});
  writes->back().trace_event = trace_event;
}

}  // namespace txn_recovery
