#include "txn_recovery/base/duration.h"

#include <string>

namespace txn_recovery {

namespace {

struct DurationUnit {
  std::string_view name;
  long long millis;
};
// Largest first: the order a compound duration must follow.
constexpr DurationUnit kDurationUnits[] = {
    {"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}};

}  // namespace

Status ParseDuration(std::string_view text, std::chrono::milliseconds* out) {
  // Appended piece by piece: on `"'" + std::string(text)` GCC 12 at -O2 warns
  // (-Wrestrict, a false positive), and a plain Release build must build without warnings.
  auto invalid = [&](const std::string& why) {
    std::string message = "'";
    message.append(text);
    message.append("' ");
    message.append(why);
    return Status::InvalidArgument(message);
  };
  if (text.empty()) return invalid("is not a duration (use e.g. \"30s\", \"5m\", \"1h30m\")");
  long long total = 0;
  std::size_t next_unit = 0;  // index into kDurationUnits: units must come largest first
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t digits = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == digits || i - digits > 12)
      return invalid("is not a duration (use e.g. \"30s\", \"5m\", \"1h30m\")");
    long long n = std::stoll(std::string(text.substr(digits, i - digits)));
    std::size_t unit_start = i;
    while (i < text.size() && (text[i] < '0' || text[i] > '9')) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    std::size_t u = next_unit;
    while (u < std::size(kDurationUnits) && kDurationUnits[u].name != unit) ++u;
    if (u == std::size(kDurationUnits)) {
      bool known = false;
      for (const auto& k : kDurationUnits) known = known || k.name == unit;
      if (known) return invalid("must give its units largest first, each once (write \"1h30m\")");
      return invalid("has no valid unit (ms, s, m, h or d)");
    }
    next_unit = u + 1;
    long long ms;
    if (__builtin_mul_overflow(n, kDurationUnits[u].millis, &ms) ||
        __builtin_add_overflow(total, ms, &total))
      return invalid("is too long a duration");
  }
  *out = std::chrono::milliseconds(total);
  return Status::Ok();
}

std::string FormatDuration(std::chrono::milliseconds d, DurationPrecision precision) {
  long long ms = d.count();
  if (ms == 0) return "0ms";
  std::string out;
  if (ms < 0) out.push_back('-');
  // The magnitude, unsigned: the most negative count has no positive counterpart.
  unsigned long long left =
      ms < 0 ? 0ULL - static_cast<unsigned long long>(ms) : static_cast<unsigned long long>(ms);
  if (precision == DurationPrecision::kSeconds && left >= 1000) left -= left % 1000;
  for (const auto& unit : kDurationUnits) {
    auto per = static_cast<unsigned long long>(unit.millis);
    if (left >= per) {
      out.append(std::to_string(left / per));
      out.append(unit.name);
      left %= per;
    }
  }
  return out;
}

}  // namespace txn_recovery
