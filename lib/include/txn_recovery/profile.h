// Profiles: how the documents of one family of two-phase-commit applications look, and how
// one transaction document turns into the guarded single-document writes that apply, undo
// and finish it. A profile never guesses: a document that does not fit is reported as
// Malformed with the reason, and the caller quarantines it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "txn_recovery/document.h"
#include "txn_recovery/status.h"
#include "txn_recovery/store.h"

namespace txn_recovery {

// The canonical life cycle shared by every profile (DESIGN.md's decision table).
enum class TxnState { kInitial, kPending, kApplied, kDone, kCanceling, kCancelled };
std::string_view TxnStateName(TxnState s) noexcept;
inline bool IsTerminal(TxnState s) noexcept {
  return s == TxnState::kDone || s == TxnState::kCancelled;
}

// Every spelling each state accepts when read. The first spelling of each list is the one
// written. Data written by old code with another spelling is recovered all the same.
struct StateAliases {
  std::vector<std::string> initial{"initial"};
  std::vector<std::string> pending{"pending"};
  std::vector<std::string> applied{"applied"};
  std::vector<std::string> done{"done"};
  std::vector<std::string> canceling{"canceling"};
  std::vector<std::string> cancelled{"cancelled", "canceled"};

  const std::vector<std::string>& For(TxnState s) const noexcept;
  std::optional<TxnState> Parse(std::string_view spelling) const noexcept;
  const std::string& Written(TxnState s) const noexcept { return For(s).front(); }
  // Every spelling of every non-terminal / terminal / any state.
  std::vector<Value> NonTerminalSpellings() const;
  std::vector<Value> TerminalSpellings() const;
  std::vector<Value> AllSpellings() const;
  // InvalidArgument if a list is empty or a spelling belongs to two states.
  Status Validate() const;
};

// The `transfer` profile: MongoDB manual's bank transfer (seeds 002, 004), every name
// configurable. One transaction moves `amount_field` from the participant named by
// `source_field` to the one named by `destination_field`.
struct TransferProfile {
  std::string state_field = "state";
  std::string time_field = "lastModified";
  std::string source_field = "source";
  std::string destination_field = "destination";
  std::string amount_field = "value";
  std::string participants_collection = "accounts";
  std::string participant_key = "_id";  // the participant field that source/destination name
  std::string balance_field = "balance";
  std::string marker_field = "pendingTransactions";
  // Debit only while `balance >= amount` (seed 001); a debit that cannot apply makes
  // the transaction roll back.
  bool require_funds = false;
  StateAliases states;

  Status Validate() const;
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
  Update finish;         // pulling the marker
  std::string marker_field;
};

// A transaction document as the state machine needs it.
struct Transaction {
  Value id;
  TxnState state = TxnState::kInitial;
  Value state_as_read;                // compare-and-set uses the exact spelling read
  DateTime last_modified;             // the age reference
  std::optional<Value> time_as_read;  // exact stored time value (nullopt: field absent)
  std::vector<ParticipantStep> steps;
  // The lease sub-document's owner and expiry, if any.
  std::optional<std::string> lease_owner;
  std::optional<DateTime> lease_expires;
};

// Parses a transaction document of the transfer profile. Malformed (with a reason naming
// the field) when it does not fit; never throws. `lease_field` is the sub-document the
// recovery daemon keeps its bookkeeping in.
Status ParseTransfer(const Document& doc, const TransferProfile& profile, const Namespace& txn_ns,
                     std::string_view lease_field, Transaction* txn);

}  // namespace txn_recovery
