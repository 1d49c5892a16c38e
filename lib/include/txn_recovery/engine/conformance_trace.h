// The conformance trace (docs/proof.md, "Conformance"): one line per abstract step the
// engine takes on a transaction, in the vocabulary of model/recovery.pml, for
// scripts/conformance.sh to check against the model with SPIN.
//
// Off unless the environment variable TXN_RECOVERY_TRACE_FILE names a file when the
// process first asks; then every line is appended to that file whole (O_APPEND, one write
// per line), so that several processes may share one file. Off, On() is a load and a
// branch and nothing is formatted.
#pragma once

#include <string_view>

namespace txn_recovery::conformance {

// Whether the trace is on (decided once per process).
bool On();

// Appends `line` and a newline, in one write. Nothing when off.
void Write(std::string_view line);

}  // namespace txn_recovery::conformance
