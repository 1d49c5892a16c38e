// Durations as the configuration, the logs and the messages write them: the one parser and
// the one formatter, so that what a message says can be pasted back into the file (and an
// age, which is read rather than pasted, is written in the same units, to the second).
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
// How much of a duration FormatDuration writes.
enum class DurationPrecision {
  // Every millisecond: the text reads back as the same duration (a configured value, a
  // message an operator may paste into the file).
  kExact,
  // An age as an operator reads it: a second or more is truncated toward zero to whole
  // seconds ("12m31s", not "12m31s482ms"), less than a second is written in milliseconds
  // ("250ms", "0ms"). Truncated, never rounded up, so that an age shown beside a threshold
  // has reached it only if the age itself has: 59.9s is "59s", under a threshold of "1m".
  kSeconds,
};

// The shortest text ParseDuration reads back as `d` (with kSeconds: as `d` truncated as
// said there), largest unit first: "1h30m", "45s", "1s500ms", "0ms"; negative: "-" first,
// the magnitude written as a positive one.
std::string FormatDuration(std::chrono::milliseconds d,
                           DurationPrecision precision = DurationPrecision::kExact);

}  // namespace txn_recovery
