// Profiles: how the documents of one family of two-phase-commit applications look, and how
// one transaction document turns into the guarded writes that apply, undo and finish it. A
// profile never guesses: a document that does not fit is reported as Malformed with the
// reason, and the caller quarantines it.
//
// A Profile is a value: the fields every transaction document has (state, time, owner),
// shared by every protocol, plus one protocol-specific part:
//   steps          any application: its participant steps described by paths into the
//                  transaction document (mongoose operations, a transfer without a time field, ...)
//   transfer       the MongoDB manual transfer, the schema-book transfer, the transfer
//                  without a time field: move an amount between two participants; a fixed
//                  description of two steps (TransferProfile::AsSteps)
//   operations     mongoose operations: a list of invertible changes to any documents, one
//                  step per entry of the list the document carries
//   tagged-insert  tagged inserts: documents inserted with a `tx` tag, untagged or deleted at
//                  the end
// Every participant step, whichever protocol names it, is built by one builder (steps.h),
// so the guards are the same for all. The state machine and the sweeper only see what Parse
// produces (a Transaction with its participant steps and tagged sets), so they stay the same
// for every protocol.
#pragma once

#include <array>
#include <span>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "txn_recovery/base/document.h"
#include "txn_recovery/base/filter.h"
#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/shapes/config_problem.h"

namespace txn_recovery {

// The canonical life cycle shared by every profile (docs/state-machine.md's decision table). Each
// profile names these states its own way (tagged-insert: started = pending, finishing =
// applied, rollback = canceling).
enum class TxnState { kInitial, kPending, kApplied, kDone, kCanceling, kCancelled };
std::string_view TxnStateName(TxnState s) noexcept;
// Every state, in the life cycle's order (the order the documentation and check-config list
// them), and the states a transaction may still leave: the one spelling of each list.
inline constexpr std::array<TxnState, 6> kAllTxnStates = {
    TxnState::kInitial, TxnState::kPending,   TxnState::kApplied,
    TxnState::kDone,    TxnState::kCanceling, TxnState::kCancelled};
inline constexpr std::array<TxnState, 4> kInFlightTxnStates = {
    TxnState::kInitial, TxnState::kPending, TxnState::kApplied, TxnState::kCanceling};
inline bool IsTerminal(TxnState s) noexcept {
  return s == TxnState::kDone || s == TxnState::kCancelled;
}

// Every spelling each state accepts when read. The first spelling of each list is the one
// written. Data written by old code with another spelling is recovered all the same; a
// spelling in no list is never guessed at (the document is quarantined).
//
// A list may be empty where the profile allows it: tagged-insert has no initial state, and
// by default (tagged inserts) ends a rollback in the `done` spelling, so its cancelled list is
// empty and Written(kCancelled) is the first spelling of `done`.
//
// These spellings (and each profile's, Profile::Operations() ...) are the defaults of a
// watch's [watch.states] in the daemon's configuration, whose documentation is rendered
// from them.
struct StateAliases {
  std::vector<std::string> initial{"initial"};
  std::vector<std::string> pending{"pending"};
  std::vector<std::string> applied{"applied"};
  std::vector<std::string> done{"done"};
  std::vector<std::string> canceling{"canceling"};
  std::vector<std::string> cancelled{"cancelled", "canceled"};
  // Pending, taken over by the daemon: the claim of a resume writes the first spelling, so
  // that the application's own compare-and-set from pending fails from then on and it stops
  // before it could pull a marker the daemon is about to rely on. Read as kPending (with
  // Transaction::taken_over). Empty only for a profile the daemon never resumes.
  std::vector<std::string> resuming{"resuming"};

  const std::vector<std::string>& For(TxnState s) const noexcept;
  std::vector<std::string>& For(TxnState s) noexcept;
  std::optional<TxnState> Parse(std::string_view spelling) const noexcept;
  bool IsResuming(std::string_view spelling) const noexcept;
  const std::string& Written(TxnState s) const noexcept;
  // Every spelling of every non-terminal / terminal / any state (pending's include the
  // resuming ones).
  std::vector<Value> NonTerminalSpellings() const;
  std::vector<Value> TerminalSpellings() const;
  std::vector<Value> AllSpellings() const;
  std::vector<Value> SpellingsOf(std::span<const TxnState> states) const;
  std::vector<Value> SpellingsOf(std::initializer_list<TxnState> states) const {
    return SpellingsOf(std::span<const TxnState>(states.begin(), states.size()));
  }
  // A problem (key "states.<state>") for each list other than `may_be_empty` that is
  // empty, each empty spelling and each spelling that belongs to two states.
  ConfigProblems Validate(std::initializer_list<TxnState> may_be_empty = {}) const;
};

// What to do with a transaction document that has no time field.
enum class MissingTime {
  kQuarantine,  // the document does not fit: set it aside
  // Age it from its ObjectId `_id`'s creation time (the schema-book transfer writes none).
  kObjectIdTime,
  // Age it from the first time a sweep saw it: the sweep stamps `<lease_field>.firstSeen`
  // with the server's time once, by a write that matches only while no stamp is there, so
  // that of several daemons the first stamp stays. A transaction is then never older than
  // the daemon's first look at it (the transfer without a time field writes none and numbers its
  // _ids). The default of a watch whose configuration names no time field.
  kFirstSeen,
};
std::string_view MissingTimeName(MissingTime m) noexcept;  // "quarantine", "object_id", ...
std::optional<MissingTime> ParseMissingTime(std::string_view name) noexcept;

// Where a transaction's age is measured from.
// Where a transaction's age is measured from: the one enum for it (the candidate query,
// inspect, explain and retention use it). MissingTime above is the watch's policy for a
// transaction without a time, which may also be to quarantine it.
enum class AgeSource {
  kTimeField,   // the profile's time field
  kObjectId,    // its ObjectId _id's creation time (MissingTime::kObjectIdTime)
  kFirstSeen,   // the daemon's first-sighting stamp (MissingTime::kFirstSeen)
  kNotYetSeen,  // no time and no stamp yet: the next sweep stamps it and does nothing else
};

// The schema-book transfer's `application` field: which application drives a transaction. When
// `applications` is non-empty or `include_unowned` is set, the daemon recovers only the
// transactions owned by one of `applications`, plus (with include_unowned) those with no owner
// (field absent or null). Otherwise it recovers every transaction, owned or not.
struct OwnerFilter {
  std::string field = "application";
  std::vector<std::string> applications;
  bool include_unowned = false;

  bool active() const noexcept { return !applications.empty() || include_unowned; }
  // Keys "owner_field", "applications".
  ConfigProblems Validate() const;
  // The condition a transaction must meet (an empty filter when inactive).
  Filter Condition() const;
};

// One participant step described by paths into the transaction document: the document of
// `collection` whose `key` equals the value at `key_path` is changed by `$inc` of fields by
// the numbers at paths (optionally negated) and `$set` of fields to the values at paths,
// each with the path of the value it replaces, so that every change has an exact inverse.
// The mongoose operations example: {collection = "users", key = "_id", key_path =
// "data.targetUser", inc = {money = "data.amount"}}.
struct StepSpec {
  struct Inc {
    std::string field;  // in the participant
    std::string path;   // in the transaction document: a number
    bool negate = false;
  };
  struct Set {
    std::string field;          // in the participant
    std::string path;           // the value written
    std::string previous_path;  // the value it replaces (null: the field was absent)
  };
  enum class GuardOp { kGte, kLte, kLt, kEq, kNe };
  // Applying the step also requires `field op <value at path>` on the participant
  // (e.g. balance >= amount): a step that cannot apply makes a resume roll back.
  struct Guard {
    std::string field;
    GuardOp op = GuardOp::kGte;
    std::string path;
  };
  std::string collection;  // of the watch's database
  std::string key = "_id";
  std::string key_path;
  std::vector<Inc> inc;
  std::vector<Set> set;
  std::vector<Guard> guards;
  std::string marker_field;  // empty: the profile's
  std::string label;         // a verb for reports ("debit"); empty: the changes themselves
  // Every amount must be a positive number (a transfer's: a negative one would turn the
  // funds guard around).
  bool positive_amounts = false;

  // "accounts where _id = <source>: $inc balance by -<value> if balance >= <value>"
  std::string ToString(std::string_view default_marker) const;
};
std::string_view GuardOpName(StepSpec::GuardOp op) noexcept;  // ">=", ...
// "balance >= value" -> Guard; nullopt when it does not read "FIELD OP PATH".
std::optional<StepSpec::Guard> ParseGuard(std::string_view text);

// The `steps` protocol: a fixed list of participant steps described in the configuration.
// A document whose paths are missing or of the wrong type is Malformed, naming the path.
struct StepsProfile {
  std::vector<StepSpec> steps;
  std::string marker_field = "pendingTransactions";

  // Keys as in the configuration: "steps[N].collection", ..., "marker_field".
  ConfigProblems Validate() const;
};

// The `transfer` protocol: MongoDB manual's bank transfer (with or without a time field) and
// the schema book's, every name configurable. One transaction moves `amount_field` from the
// participant named by `source_field` to the one named by `destination_field`.
struct TransferProfile {
  std::string source_field = "source";
  std::string destination_field = "destination";
  std::string amount_field = "value";
  std::string participants_collection = "accounts";
  std::string participant_key = "_id";  // the participant field that source/destination name
  std::string balance_field = "balance";
  std::string marker_field = "pendingTransactions";
  // Debit only while `balance >= amount` (the schema-book transfer); a debit that cannot apply
  // makes the transaction roll back.
  bool require_funds = false;

  // Keys as in the configuration: "source_field", ..., "participants", "marker_field".
  ConfigProblems Validate() const;
  // The two steps, debit and credit, as a description: what the daemon parses a transfer
  // with (one mechanism for every shape).
  StepsProfile AsSteps() const;
};

// The `operations` protocol (mongoose operations): a transaction lists the changes it makes,
// each to one document of any collection of the transactions' database, in plain field
// names so that the daemon knows each change's exact inverse:
//   {collection: "users", _id: <id>, inc: {money: 100}}
//   {collection: "users", _id: <id>, set: {tier: "gold"}, previous: {tier: "silver"}}
// (both kinds may be combined in one operation). Participants carry the marker array.
// Anything without an exact inverse is Malformed: an unknown key, `set` without
// `previous` for one of its fields, a non-numeric `inc`, a dotted or `$` field name, two
// operations on one document (the marker could not tell them apart), an operation on the
// transactions collection itself.
struct OperationsProfile {
  std::string operations_field = "data.operations";  // a path in the transaction document
  // The keys of one operation.
  std::string collection_key = "collection";
  std::string id_key = "_id";
  std::string inc_key = "inc";
  std::string set_key = "set";
  std::string previous_key = "previous";
  std::string marker_field = "pendingTransaction";
  // The collections operations may name; empty: any but the transactions collection and
  // `system.*` ones.
  std::vector<std::string> collections;
  // A transaction listing more operations than this is Malformed (an absurd size).
  std::int64_t max_operations = 1000;

  // Keys as in the configuration ("allowed_collections" for `collections`).
  ConfigProblems Validate() const;
};

// The `tagged-insert` protocol (tagged inserts): the application inserts its new documents with
// `tag_field: <txId>` into the tagged collections. Finishing removes the tag and sets
// `valid_field: true` on every document carrying it; rolling back deletes them. The
// daemon cannot resume a started transaction: only the application knows which documents
// it still meant to insert.
struct TaggedInsertProfile {
  std::vector<std::string> tagged_collections;  // required: where the documents go
  std::string tag_field = "tx";
  std::string valid_field = "valid";

  ConfigProblems Validate() const;
};

// One guarded change to one participant document. Applying it is guarded by "marker
// absent" and pushes the marker in the same atomic update; undoing it is guarded by
// "marker present" and pulls the marker; finishing it pulls the marker only. Each is
// therefore harmless to repeat.
struct ParticipantStep {
  Namespace ns;
  Filter target;         // identifies the participant document
  std::string describe;  // "debit 100 from \"A\"" (for reports)
  Filter apply_guard;    // extra conditions for applying (e.g. sufficient funds)
  Update apply;          // the change plus pushing the marker
  Update undo;           // the exact inverse plus pulling the marker
  // A second application found on a *done* transaction (a late write): what removes the
  // duplicate. For a change that is not idempotent ($inc) it is `undo`; for one that is
  // ($set) only the marker is pulled, since the value is the committed one.
  Update undo_duplicate;
  Update finish;  // pulling the marker
  std::string marker_field;
  // `target` is not the _id: check it matches exactly one document before applying.
  bool target_may_be_ambiguous = false;
};

// The documents of one collection that belong to a transaction by a tag rather than by a
// marker (tagged-insert). Each write on them is a multi-document update or delete whose
// per-document effect is idempotent, so repeating it after a crash is harmless:
// finishing untags (and validates) whatever still carries the tag, undoing deletes it.
struct TaggedSet {
  Namespace ns;
  Filter members;  // the documents carrying the transaction's tag
  Update finish;   // removes the tag, marks the document valid
  std::string describe;
};

// A transaction document as the state machine needs it.
struct Transaction {
  Value id;
  TxnState state = TxnState::kInitial;
  Value state_as_read;      // compare-and-set uses the exact spelling read
  bool taken_over = false;  // pending, in a resuming spelling (StateAliases)
  DateTime last_modified;   // the age reference (unset when kNotYetSeen)
  AgeSource age_source = AgeSource::kTimeField;
  std::optional<Value> time_as_read;  // exact stored time value (nullopt: field absent)
  std::vector<ParticipantStep> steps;
  std::vector<TaggedSet> tagged_sets;
  // Whether the daemon can resume it while pending. False when only the application knows
  // what is left to apply (tagged-insert: which documents it still meant to insert): the
  // transaction is then left alone until rollback_after, and rolled back.
  bool resumable = true;
  // The profile spells cancelled as done (tagged-insert) and the lease sub-document does
  // not say which way this done transaction ended (the application ended it itself).
  // A done transaction whose record says "rolled back" is parsed as kCancelled instead.
  bool outcome_unknown = false;
  // The daemon's own sub-document as read (lease, quarantine, outcome, failures).
  RecoveryRecord record;
};

// Where a protocol leaves markers (arrays of transaction ids) on the documents it changes.
// The orphan scan looks there for markers of transactions that are finished or gone.
struct MarkerLocation {
  Namespace ns;
  std::string field;
  bool scalar = false;  // one transaction id (tagged-insert's tag), not an array of them
};

struct Profile {
  std::string state_field = "state";
  std::string time_field = "lastModified";
  StateAliases states;
  MissingTime missing_time = MissingTime::kQuarantine;
  OwnerFilter owner;
  std::variant<TransferProfile, OperationsProfile, TaggedInsertProfile, StepsProfile> protocol;

  // The defaults of each protocol, as its applications write them.
  static Profile Transfer();  // MongoDB manual transfer: state, lastModified, initial..cancelled
  // mongoose operations: status, lastModified, new/pending/applied/done/canceling/canceled
  static Profile Operations();
  // tagged inserts: status, lastUpdate, started/finishing/rollback/done, no initial state, and
  // rollbacks end in `done` (tagged_collections must still be set)
  static Profile TaggedInsert();
  // state, lastModified, initial..cancelled, no steps yet (the configuration lists them)
  static Profile Steps();
  // "transfer", "operations", "tagged-insert" or "steps"; nullopt for anything else.
  static std::optional<Profile> Named(std::string_view kind);

  std::string_view kind() const;
  const TransferProfile* transfer() const noexcept {
    return std::get_if<TransferProfile>(&protocol);
  }
  TransferProfile* transfer() noexcept { return std::get_if<TransferProfile>(&protocol); }
  const OperationsProfile* operations() const noexcept {
    return std::get_if<OperationsProfile>(&protocol);
  }
  OperationsProfile* operations() noexcept { return std::get_if<OperationsProfile>(&protocol); }
  const TaggedInsertProfile* tagged_insert() const noexcept {
    return std::get_if<TaggedInsertProfile>(&protocol);
  }
  TaggedInsertProfile* tagged_insert() noexcept {
    return std::get_if<TaggedInsertProfile>(&protocol);
  }
  const StepsProfile* steps() const noexcept { return std::get_if<StepsProfile>(&protocol); }
  StepsProfile* steps() noexcept { return std::get_if<StepsProfile>(&protocol); }
  // Whether the daemon resumes stale pending transactions of this profile (see
  // Transaction::resumable). When not, a pending transaction is only acted on once it is
  // older than rollback_after.
  bool ResumesPending() const;

  // The missing_time of a configuration that does not choose one: kQuarantine when it names
  // its time field (the application is trusted to write it) or the protocol's application
  // always writes one (tagged inserts stamp every step); kFirstSeen otherwise
  // (the transfer without a time field writes none, and says nothing of one).
  MissingTime DefaultMissingTime(bool time_field_named) const;

  // Every collection and marker field the profile's transactions mark, for the transactions
  // collection `txn_ns` (participants live in its database).
  std::vector<MarkerLocation> MarkerLocations(const Namespace& txn_ns) const;

  // The states this profile may leave without spellings.
  std::vector<TxnState> OptionalStates() const;
  // Every problem of the common fields, the state spellings, the owner filter and the
  // protocol part; empty when the profile is usable.
  ConfigProblems Validate() const;

  // Parses a transaction document. Malformed (with a reason naming the field) when it does
  // not fit; never throws. `txn_ns` is the transactions collection (participants live in
  // its database); `lease_field` is the sub-document the daemon keeps its bookkeeping in.
  Status Parse(const Document& doc, const Namespace& txn_ns, std::string_view lease_field,
               Transaction* txn) const;
};

// Where `txn`'s age comes from, for an operator: "lastModified", "_id (ObjectId creation
// time; 'lastModified' is absent)", "first seen by the daemon at 2026-...
// (recovery.firstSeen; 'lastModified' is absent)", ...
std::string DescribeAgeSource(const Transaction& txn, const Profile& profile,
                              std::string_view lease_field);

}  // namespace txn_recovery
