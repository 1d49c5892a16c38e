// Durations as the configuration, the logs and the messages write them: the one parser and
// the one formatter, so that what a message says can be pasted back into the file.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "txn_recovery/base/status.h"

namespace txn_recovery {

// A duration as Go and Prometheus write them: one or more number-unit pairs, largest unit
// first, each unit once: "250ms", "30s", "1h30m", "1d12h", "1m30s500ms". Units: d, h, m,
// s, ms. InvalidArgument otherwise (fractions, signs, spaces, no unit).
Status ParseDuration(std::string_view text, std::chrono::milliseconds* out);
// The shortest text ParseDuration reads back as `d`: "1h30m", "45s", "0ms" (negative: "-"
// first).
std::string FormatDuration(std::chrono::milliseconds d);

}  // namespace txn_recovery
