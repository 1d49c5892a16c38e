#include "base/amounts.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace txn_recovery {
namespace {

constexpr double kExact = 9007199254740992.0;  // 2^53: every integer up to it is a double

bool IsInteger(const Value& v) {
  return std::holds_alternative<std::int32_t>(v.storage()) ||
         std::holds_alternative<std::int64_t>(v.storage());
}

std::int64_t AsInt64(const Value& v) {
  if (const auto* i = std::get_if<std::int32_t>(&v.storage())) return *i;
  return std::get<std::int64_t>(v.storage());
}

Status Inexact(const std::string& path, const Value* current, const Value& amount,
               const std::string& why) {
  return Status::Malformed("adding " + amount.ToString() + " to '" + path + "' (" +
                           (current ? current->ToString() : std::string("absent")) +
                           ") is not exact: " + why);
}

}  // namespace

Status CheckExactIncrement(const std::string& path, const Value* current, const Value& amount) {
  if (!amount.is_number() || !std::isfinite(*amount.as_double()))
    return Inexact(path, current, amount, "the amount is not a finite number");
  if (current == nullptr) return Status::Ok();  // $inc sets it to the amount itself
  if (!current->is_number())
    return Status::Malformed("'" + path + "' holds " + std::string(current->type_name()) + " " +
                             current->ToString() + ", not a number it could be added to");
  if (IsInteger(*current) && IsInteger(amount)) {
    std::int64_t sum;
    if (__builtin_add_overflow(AsInt64(*current), AsInt64(amount), &sum))
      return Inexact(path, current, amount, "the sum overflows a 64-bit integer");
    return Status::Ok();
  }
  // A double is involved: the stored result is a double.
  const double b = *current->as_double(), a = *amount.as_double();
  if (!std::isfinite(b)) return Inexact(path, current, amount, "the field is not finite");
  if (std::fabs(b) > kExact || std::fabs(a) > kExact)
    return Inexact(path, current, amount, "beyond 2^53 a double does not hold every integer");
  if (IsInteger(*current) && a != std::trunc(a))
    return Inexact(path, current, amount, "a fraction added to an integer field");
  if (std::fabs(b + a) > kExact) return Inexact(path, current, amount, "the sum is beyond 2^53");
  return Status::Ok();
}

Filter ExactIncrementGuard(const std::string& path, const Value* current, const Value& amount) {
  Filter f;
  if (current == nullptr) return f.NotExists(path);
  if (!current->is_number() || !amount.is_number()) return f;
  if (IsInteger(*current) && IsInteger(amount)) {
    const std::int64_t a = AsInt64(amount);
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
    if (a > 0) f.Lte(path, Value(std::int64_t{kMax - a}));
    if (a < 0) f.Gte(path, Value(std::int64_t{kMin - a}));
    return f;
  }
  const double a = *amount.as_double();
  return f.Gte(path, Value(-kExact - a)).Lte(path, Value(kExact - a));
}

}  // namespace txn_recovery
