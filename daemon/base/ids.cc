#include "daemon/base/ids.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace txn_recovery::daemon {

nlohmann::json IdJson(const txn_recovery::Value& id) {
  using namespace txn_recovery;
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Null>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::int32_t> ||
                             std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          if (std::isfinite(v)) return v;
          return {{"$numberDouble", std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity")}};
        } else if constexpr (std::is_same_v<T, ObjectId>) {
          return {{"$oid", v.Hex()}};
        } else if constexpr (std::is_same_v<T, DateTime>) {
          return {{"$date", {{"$numberLong", std::to_string(v.millis)}}}};
        } else if constexpr (std::is_same_v<T, Array>) {
          nlohmann::json a = nlohmann::json::array();
          for (const auto& e : v) a.push_back(IdJson(e));
          return a;
        } else if constexpr (std::is_same_v<T, Document>) {
          nlohmann::json d = nlohmann::json::object();
          for (const auto& [k, e] : v) d[k] = IdJson(e);
          return d;
        } else {
          // A BSON type the library does not model (binary, regex, ...): its type name.
          return {{"$unsupported", v.type_name}};
        }
      },
      id.storage());
}

std::string IdText(const txn_recovery::Value& id) {
  if (const std::string* s = id.as_string()) return *s;
  if (const txn_recovery::ObjectId* oid = id.as_object_id()) return oid->Hex();
  nlohmann::json j = IdJson(id);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<txn_recovery::Value> IdCandidates(std::string_view text, std::string* problem) {
  using txn_recovery::Value;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    if (j.is_string()) return {Value(j.get<std::string>())};
    if (j.is_number_integer() || j.is_number_unsigned()) {
      if (j.is_number_unsigned() &&
          j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
        *problem = std::string("the number ").append(text).append(" is out of range");
        return {};
      }
      const std::int64_t n = j.get<std::int64_t>();
      if (n >= INT32_MIN && n <= INT32_MAX) return {Value(static_cast<std::int32_t>(n))};
      return {Value(n)};
    }
    if (j.is_number_float()) return {Value(j.get<double>())};
    if (j.is_object() && j.size() == 1 && j.contains("$oid") && j["$oid"].is_string())
      if (auto oid = txn_recovery::ObjectId::FromHex(j["$oid"].get<std::string>()))
        return {Value(*oid)};
    // Appended, not "'" + std::string(text): GCC 12 at -O3 warns (-Wrestrict, falsely).
    *problem = std::string("'").append(text).append(
        "' is JSON but not an _id (a string, a number or {\"$oid\": \"<24 hex digits>\"})");
    return {};
  }
  std::vector<Value> out{Value(std::string(text))};
  if (auto oid = txn_recovery::ObjectId::FromHex(text)) out.emplace_back(*oid);
  return out;
}

}  // namespace txn_recovery::daemon
