// Internal to the profiles: what each protocol tells the common code about itself, and the
// helpers every protocol's parser uses to report a document that does not fit.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "txn_recovery/shapes/config_problem.h"
#include "txn_recovery/shapes/profile.h"

namespace txn_recovery {

template <typename Protocol>
struct ProtocolTraits;

template <>
struct ProtocolTraits<TransferProfile> {
  static constexpr std::string_view kName = "transfer";
  static constexpr bool kResumesPending = true;
  // The MongoDB manual transfer writes lastModified; a transfer without a time field none.
  static constexpr bool kAlwaysWritesTime = false;
  static std::vector<TxnState> OptionalStates() { return {}; }
};

template <>
struct ProtocolTraits<OperationsProfile> {
  static constexpr std::string_view kName = "operations";
  static constexpr bool kResumesPending = true;
  // The mongoose operations schema declares lastModified without a default.
  static constexpr bool kAlwaysWritesTime = false;
  static std::vector<TxnState> OptionalStates() { return {}; }
};

template <>
struct ProtocolTraits<TaggedInsertProfile> {
  static constexpr std::string_view kName = "tagged-insert";
  // The application inserts; the daemon cannot know whether it had finished (tagged inserts
  // crashed at their second or third point).
  static constexpr bool kResumesPending = false;
  // Tagged inserts set lastUpdate with every step, the insert included.
  static constexpr bool kAlwaysWritesTime = true;
  // Tagged inserts start in `started` and ends rollbacks in `done`.
  static std::vector<TxnState> OptionalStates() {
    return {TxnState::kInitial, TxnState::kCancelled};
  }
};

template <>
struct ProtocolTraits<StepsProfile> {
  static constexpr std::string_view kName = "steps";
  static constexpr bool kResumesPending = true;
  static constexpr bool kAlwaysWritesTime = false;  // any application
  static std::vector<TxnState> OptionalStates() { return {}; }
};

// The protocol-specific half of Profile::Parse: fills txn->steps (and the like) from `doc`.
Status ParseBody(const TransferProfile& p, const Document& doc, const Namespace& txn_ns,
                 Transaction* txn);
Status ParseBody(const OperationsProfile& p, const Document& doc, const Namespace& txn_ns,
                 Transaction* txn);
Status ParseBody(const TaggedInsertProfile& p, const Document& doc, const Namespace& txn_ns,
                 Transaction* txn);
Status ParseBody(const StepsProfile& p, const Document& doc, const Namespace& txn_ns,
                 Transaction* txn);
// The protocol-specific half of Profile::MarkerLocations.
std::vector<MarkerLocation> MarkerLocationsOf(const TransferProfile& p, const Namespace& txn_ns);
std::vector<MarkerLocation> MarkerLocationsOf(const OperationsProfile& p, const Namespace& txn_ns);
std::vector<MarkerLocation> MarkerLocationsOf(const TaggedInsertProfile& p,
                                              const Namespace& txn_ns);
std::vector<MarkerLocation> MarkerLocationsOf(const StepsProfile& p, const Namespace& txn_ns);

// InvalidArgument unless `value` is a plain field name (a field path without dots).
Status CheckPlainFieldName(std::string_view key, const std::string& value);
// InvalidArgument unless `value` can name a collection of the watch's database.
Status CheckCollectionName(std::string_view key, const std::string& value);

// InvalidArgument unless `value` is a usable field path (non-empty, no leading '$', no
// empty component).
Status CheckFieldName(std::string_view key, const std::string& value);
// The same checks for Validate(): false, with a problem appended under `key`, when `value`
// does not pass (config_problem.cc).
bool FieldPathOk(std::string_view key, const std::string& value, ConfigProblems* out);
bool PlainFieldOk(std::string_view key, const std::string& value, ConfigProblems* out);
bool CollectionNameOk(std::string_view key, const std::string& value, ConfigProblems* out);
Status Missing(std::string_view field);
Status WrongType(std::string_view field, const Value& v, std::string_view expected);
// Values that can name a document: string, number or ObjectId.
bool IsUsableId(const Value& v);

}  // namespace txn_recovery
