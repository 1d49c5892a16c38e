// Little-endian integers, the byte order of both BSON and the wire protocol's headers.
// The caller checks the bounds: these read and write exactly 4 or 8 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace txn_recovery::testing {

inline void PutInt32(std::string* out, std::int32_t v) {
  auto u = static_cast<std::uint32_t>(v);
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
}
inline void PutInt64(std::string* out, std::int64_t v) {
  auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
}
inline std::int32_t GetInt32(std::string_view s, std::size_t at) {
  std::uint32_t u = 0;
  for (std::size_t i = 0; i < 4; ++i)
    u |= static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return static_cast<std::int32_t>(u);
}
inline std::int64_t GetInt64(std::string_view s, std::size_t at) {
  std::uint64_t u = 0;
  for (std::size_t i = 0; i < 8; ++i)
    u |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return static_cast<std::int64_t>(u);
}

}  // namespace txn_recovery::testing
