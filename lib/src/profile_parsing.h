// Internal to the profiles: what each protocol tells the common code about itself, and the
// helpers every protocol's parser uses to report a document that does not fit.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "txn_recovery/profile.h"

namespace txn_recovery {

template <typename Protocol>
struct ProtocolTraits;

template <>
struct ProtocolTraits<TransferProfile> {
  static constexpr std::string_view kName = "transfer";
  static std::vector<TxnState> OptionalStates() { return {}; }
};

// The protocol-specific half of Profile::Parse: fills txn->steps (and the like) from `doc`.
Status ParseBody(const TransferProfile& p, const Document& doc, const Namespace& txn_ns,
                 Transaction* txn);
// The protocol-specific half of Profile::MarkerLocations.
std::vector<MarkerLocation> MarkerLocationsOf(const TransferProfile& p, const Namespace& txn_ns);

// InvalidArgument unless `value` is a usable field path (non-empty, no leading '$', no
// empty component).
Status CheckFieldName(std::string_view key, const std::string& value);
Status Missing(std::string_view field);
Status WrongType(std::string_view field, const Value& v, std::string_view expected);
// Values that can name a document: string, number or ObjectId.
bool IsUsableId(const Value& v);

}  // namespace txn_recovery
