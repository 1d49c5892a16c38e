// HTTP basic authentication against bcrypt hashes (a web configuration's
// basic_auth_users), as prometheus/exporter-toolkit does it, made safe for a server whose
// probes must keep answering:
//   - bcrypt is slow by design (cost 10: tens of milliseconds), so Verify runs on the HTTP
//     server's workers, never its poll thread, and one at a time (the server allows at
//     most one Verify at once and bounds how many wait);
//   - a success is remembered, so a scraper's every request after the first costs a keyed
//     hash (HMAC-SHA-256 under a key drawn at construction), not a bcrypt: Cached answers
//     that in microseconds and may run on the poll thread. Only successes are remembered,
//     at most kCacheSize of them: a flood of wrong passwords cannot fill the cache nor
//     evict the right one for long;
//   - comparisons take the same time whatever matches (CRYPTO_memcmp), and an unknown user
//     is checked against a fixed hash, so that timing tells neither a user nor a password.
// Thread-safe. Holds no password: the cache holds keyed digests, the users their hashes.
#pragma once

#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace txn_recovery::daemon {

class BasicAuth {
 public:
  static constexpr std::size_t kCacheSize = 64;
  // User name and bcrypt hash (web_config.h checked them).
  explicit BasicAuth(std::vector<std::pair<std::string, std::string>> users);

  // The user and password of an Authorization header's value ("Basic base64(user:pass)");
  // false when it is another scheme or not well-formed.
  static bool ParseHeader(std::string_view value, std::string* user, std::string* password);

  // Overwrites a secret's bytes (in a way the compiler keeps), then empties it.
  static void Erase(std::string* secret) noexcept;

  // Whether (user, password) was verified before. Cheap; never runs bcrypt.
  bool Cached(const std::string& user, const std::string& password) const;
  // Whether the password is the user's, by bcrypt (slow); remembers a success.
  bool Verify(const std::string& user, const std::string& password);

 private:
  using Digest = std::array<unsigned char, 32>;
  Digest Key(const std::string& user, const std::string& password) const;

  std::vector<std::pair<std::string, std::string>> users_;
  std::array<unsigned char, 32> key_{};  // the HMAC key of the cache's digests
  mutable std::mutex mu_;                // guards cache_, next_
  std::vector<Digest> cache_;
  std::size_t next_ = 0;  // the entry a full cache replaces next
};

}  // namespace txn_recovery::daemon
