// A generator of transfer transaction documents that do not fit their profile (issue 5's
// bad input): missing and wrongly typed fields, unknown states, negative or non-numeric
// amounts, participants that do not exist, huge arrays, deep nesting, wrong time types, a
// daemon sub-document that is not one. gtest-free, so that the tests and the chaos driver
// share it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txn_recovery/base/document.h"
#include "txn_recovery/shapes/profile.h"

namespace txn_recovery::testing {

struct MalformedTxn {
  std::string name;  // what is wrong, for test output
  Document doc;
  // What a sweep must do with it: quarantine it with a reason containing `reason`, or (a
  // well-formed pending transfer naming a participant that does not exist) roll it back,
  // ending `cancelled`. Either way no participant document may change.
  enum class Expect { kQuarantine, kCancel } expect = Expect::kQuarantine;
  std::string reason;
};

// A value of a BSON type the document model does not interpret (minKey, decimal128,
// binData, regex...), as OtherValue keeps it: `type` and the value's `bytes`, wrapped in
// the one-element document {"": <value>}.
Value UninterpretedValue(const char* type_name, std::uint8_t type, const std::string& bytes);

// Documents for a transfer `profile` whose existing participants are `from` and `to`;
// _ids are first_id, first_id + 1, ... Every document that has a time has `time`, old
// enough for any threshold.
std::vector<MalformedTxn> MalformedTransfers(const Profile& profile, const Value& from,
                                             const Value& to, std::int64_t first_id, DateTime time);

}  // namespace txn_recovery::testing
