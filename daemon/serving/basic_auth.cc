#include "daemon/serving/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cctype>
#include <memory>
#include <stdexcept>

namespace txn_recovery::daemon {

namespace {

// exporter-toolkit's stand-in for an unknown user (bcrypt of "fakepassword", cost 10): the
// answer for an unknown user takes as long as for a wrong password.
constexpr const char* kUnknownUserHash =
    "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

bool SameBytes(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool Bcrypt(const std::string& password, const std::string& hash) {
  // crypt_data is large (tens of kilobytes): on the heap, not a worker's stack.
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  // A failure is NULL or a string starting with '*', never equal to a hash.
  const bool ok = out != nullptr && out[0] != '*' && SameBytes(out, hash);
  OPENSSL_cleanse(data.get(), sizeof(crypt_data));
  return ok;
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with padding, as RFC 7617 writes credentials; false if malformed.
bool DecodeBase64(std::string_view in, std::string* out) {
  if (in.size() % 4 != 0) return false;
  out->clear();
  for (std::size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0 || (v[k] = Base64Value(c)) < 0) return false;
    }
    const unsigned n =
        (unsigned(v[0]) << 18) | (unsigned(v[1]) << 12) | (unsigned(v[2]) << 6) | unsigned(v[3]);
    out->push_back(static_cast<char>((n >> 16) & 0xff));
    if (pad < 2) out->push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out->push_back(static_cast<char>(n & 0xff));
  }
  return true;
}

}  // namespace

BasicAuth::BasicAuth(std::vector<std::pair<std::string, std::string>> users)
    : users_(std::move(users)) {
  if (RAND_bytes(key_.data(), static_cast<int>(key_.size())) != 1)
    throw std::runtime_error("basic auth: OpenSSL has no random bytes for the cache's key");
}

bool BasicAuth::ParseHeader(std::string_view value, std::string* user, std::string* password) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (value.size() < 6) return false;
  for (std::size_t i = 0; i < 5; ++i)
    if (std::tolower(static_cast<unsigned char>(value[i])) != "basic"[i]) return false;
  if (value[5] != ' ') return false;
  value.remove_prefix(6);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  std::string decoded;
  if (!DecodeBase64(value, &decoded)) return false;
  const std::size_t colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  *user = decoded.substr(0, colon);
  *password = decoded.substr(colon + 1);
  OPENSSL_cleanse(decoded.data(), decoded.size());
  return true;
}

void BasicAuth::Erase(std::string* secret) noexcept {
  OPENSSL_cleanse(secret->data(), secret->size());
  secret->clear();
}

BasicAuth::Digest BasicAuth::Key(const std::string& user, const std::string& password) const {
  // The user's name, a separator no name contains, the password.
  std::string input = user + ":" + password;
  Digest d{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), d.data(), &len);
  OPENSSL_cleanse(input.data(), input.size());
  return d;
}

bool BasicAuth::Cached(const std::string& user, const std::string& password) const {
  const Digest d = Key(user, password);
  std::lock_guard lock(mu_);
  bool found = false;
  // Every entry compared in full: the time does not say which one matched.
  for (const Digest& e : cache_) found |= CRYPTO_memcmp(e.data(), d.data(), d.size()) == 0;
  return found;
}

bool BasicAuth::Verify(const std::string& user, const std::string& password) {
  const std::string* hash = nullptr;
  for (const auto& [name, h] : users_)
    if (SameBytes(name, user)) hash = &h;
  const bool ok = Bcrypt(password, hash != nullptr ? *hash : kUnknownUserHash) && hash != nullptr;
  if (!ok) return false;
  const Digest d = Key(user, password);
  std::lock_guard lock(mu_);
  if (cache_.size() < kCacheSize) {
    cache_.push_back(d);
  } else {
    cache_[next_] = d;
    next_ = (next_ + 1) % kCacheSize;
  }
  return true;
}

}  // namespace txn_recovery::daemon
