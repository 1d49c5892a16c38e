// Exact increments: whether a $inc of a participant's field changes it by exactly the
// amount, so that the inverse $inc restores it exactly. Money must not appear or vanish to
// rounding (a double amount of 1e20 added to a balance of 1000 loses the 1000) or to
// overflow (an int64 balance wrapping around). The rule is on the $inc itself, whatever the
// profile that wrote it, and is applied to the participant as read and again, as a guard in
// the write's filter, to the participant as it is when the server applies the write.
#pragma once

#include <string>

#include "txn_recovery/base/document.h"
#include "txn_recovery/base/filter.h"
#include "txn_recovery/base/status.h"

namespace txn_recovery {

// OK when `current + amount` (MongoDB's $inc; `current` null for an absent field) is
// exact; Malformed naming `path` and the values otherwise:
//   - a field that is present and not a number ($inc would be refused);
//   - two integers whose sum overflows int64;
//   - where a double is involved (MongoDB then stores a double): an integer beyond 2^53 on
//     either side, an amount with a fraction on an integer field, or a sum beyond 2^53 —
//     past which a double cannot hold every integer.
Status CheckExactIncrement(const std::string& path, const Value* current, const Value& amount);

// The condition under which that increment stays exact when applied to whatever `path`
// holds at write time, given what was read: still absent when it was absent; otherwise
// within the range of values for which CheckExactIncrement holds.
Filter ExactIncrementGuard(const std::string& path, const Value* current, const Value& amount);

}  // namespace txn_recovery
