#include "daemon/serving/web_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <set>
#include <string_view>

#include "daemon/base/suggest.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;

namespace {

// exporter-toolkit's names, each with what it means to the daemon.
const std::vector<std::string> kTopKeys = {"tls_server_config", "http_server_config",
                                           "basic_auth_users"};
const std::vector<std::string> kTlsKeys = {
    "cert_file",        "key_file",    "client_auth_type", "client_ca_file",
    "min_version",      "max_version", "cipher_suites",    "prefer_server_cipher_suites",
    "curve_preferences"};
const std::vector<std::string> kHttpKeys = {"http2", "headers"};
// Keys exporter-toolkit reads that this daemon does not, with what to do instead.
const std::vector<std::pair<std::string, std::string>> kUnsupported = {
    {"rate_limit", "the endpoint bounds its clients itself (connections, deadlines)"},
    {"tls_server_config.cert", "name the certificate's file in cert_file"},
    {"tls_server_config.key", "name the key's file in key_file"},
    {"tls_server_config.client_ca", "name the CA's file in client_ca_file"},
    {"tls_server_config.client_allowed_sans",
     "issue client certificates from a CA of their own (client_ca_file)"},
};
const std::vector<std::string> kClientAuthTypes = {
    "NoClientCert",      "RequestClientCert",       "RequireAnyClientCert",
    "RequireClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"};
const std::vector<std::string> kVersions = {"TLS10", "TLS11", "TLS12", "TLS13"};
const std::vector<std::string> kCurves = {"CurveP256", "CurveP384", "CurveP521", "X25519"};
// Go's tls.CipherSuites(), the names exporter-toolkit accepts (the TLS 1.3 ones are
// accepted and, as in Go, not configurable).
const std::vector<std::string> kCipherSuites = {
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
};
// The response headers exporter-toolkit lets a file set.
const std::vector<std::string> kHeaders = {"Content-Security-Policy", "X-Frame-Options",
                                           "X-Content-Type-Options", "X-XSS-Protection",
                                           "Strict-Transport-Security"};

std::string OneOf(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

bool Among(const std::string& name, const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Reads one file's nodes, every error with the file, the line and the column.
class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  Status Error(const YAML::Node& at, const std::string& key, const std::string& problem) const {
    const YAML::Mark m = at.Mark();
    if (m.is_null()) return Status::InvalidArgument(path_ + ": " + key + ": " + problem);
    return Status::InvalidArgument(path_ + ":" + std::to_string(m.line + 1) + ":" +
                                   std::to_string(m.column + 1) + ": " + key + ": " + problem);
  }

  // Calls `on_key` for each key of the map `node`, after refusing the keys not in `known`.
  // A null node (a section written without content) is an empty map.
  Status EachKey(
      const YAML::Node& node, const std::string& prefix, const std::vector<std::string>& known,
      const std::function<Status(const std::string&, const YAML::Node&, const YAML::Node&)>& on_key)
      const {
    if (node.IsNull()) return Status::Ok();
    if (!node.IsMap()) return Error(node, prefix.empty() ? "(file)" : prefix, "must be a map");
    std::set<std::string> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) return Error(kv.first, prefix, "keys must be strings");
      const std::string key = kv.first.Scalar();
      const std::string full = prefix.empty() ? key : prefix + "." + key;
      if (!seen.insert(key).second) return Error(kv.first, full, "is given twice");
      if (!known.empty() && !Among(key, known)) return Unknown(kv.first, full, key, known);
      if (Status s = on_key(key, kv.first, kv.second); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status Unknown(const YAML::Node& at, const std::string& full, const std::string& key,
                 const std::vector<std::string>& known) const {
    for (const auto& [name, instead] : kUnsupported)
      if (name == full)
        return Error(at, full, "is not supported by txn-recoveryd (" + instead + ")");
    std::string hint = Closest(key, known);
    return Error(at, full,
                 "unknown key" + (hint.empty() ? std::string() : " (did you mean " + hint + "?)") +
                     "; the keys here: " + OneOf(known));
  }

  Status String(const YAML::Node& n, const std::string& key, std::string* out) const {
    if (n.IsNull()) return Status::Ok();  // `key:` alone: unset, as in Go
    if (!n.IsScalar()) return Error(n, key, "must be a string");
    *out = n.Scalar();
    return Status::Ok();
  }

  Status Choice(const YAML::Node& n, const std::string& key, const std::vector<std::string>& names,
                std::string* out) const {
    std::string v;
    if (Status s = String(n, key, &v); !s.ok()) return s;
    if (v.empty()) return Status::Ok();
    if (!Among(v, names)) return Error(n, key, "must be " + OneOf(names) + ", not \"" + v + "\"");
    *out = v;
    return Status::Ok();
  }

  Status Bool(const YAML::Node& n, const std::string& key, bool* out) const {
    if (n.IsNull()) return Status::Ok();
    if (!n.IsScalar() || (n.Scalar() != "true" && n.Scalar() != "false"))
      return Error(n, key, "must be true or false");
    *out = n.Scalar() == "true";
    return Status::Ok();
  }

  // A list of strings, each among `names`.
  Status List(const YAML::Node& n, const std::string& key, const std::vector<std::string>& names,
              std::vector<std::string>* out) const {
    if (n.IsNull()) return Status::Ok();
    if (!n.IsSequence()) return Error(n, key, "must be a list");
    for (const auto& item : n) {
      std::string v;
      if (Status s = Choice(item, key, names, &v); !s.ok()) return s;
      if (!v.empty()) out->push_back(v);
    }
    return Status::Ok();
  }

  // A file name, made absolute against the web configuration's directory.
  Status File(const YAML::Node& n, const std::string& key, std::string* out) const {
    std::string v;
    if (Status s = String(n, key, &v); !s.ok()) return s;
    if (v.empty()) return Status::Ok();
    std::filesystem::path p(v);
    if (p.is_relative()) p = std::filesystem::path(path_).parent_path() / p;
    *out = p.lexically_normal().string();
    return Status::Ok();
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Status ParseTls(const Parser& p, const YAML::Node& node, WebTlsConfig* tls) {
  const std::string prefix = "tls_server_config";
  Status s = p.EachKey(node, prefix, kTlsKeys,
                       [&](const std::string& key, const YAML::Node&, const YAML::Node& v) {
                         const std::string full = prefix + "." + key;
                         if (key == "cert_file") return p.File(v, full, &tls->cert_file);
                         if (key == "key_file") return p.File(v, full, &tls->key_file);
                         if (key == "client_ca_file") return p.File(v, full, &tls->client_ca_file);
                         if (key == "client_auth_type")
                           return p.Choice(v, full, kClientAuthTypes, &tls->client_auth_type);
                         if (key == "min_version")
                           return p.Choice(v, full, kVersions, &tls->min_version);
                         if (key == "max_version")
                           return p.Choice(v, full, kVersions, &tls->max_version);
                         if (key == "cipher_suites")
                           return p.List(v, full, kCipherSuites, &tls->cipher_suites);
                         if (key == "curve_preferences")
                           return p.List(v, full, kCurves, &tls->curve_preferences);
                         return p.Bool(v, full, &tls->prefer_server_cipher_suites);
                       });
  if (!s.ok()) return s;
  if (!tls->enabled()) {
    if (!tls->client_ca_file.empty() || tls->client_auth_type != "NoClientCert")
      return p.Error(node, prefix, "client certificates need TLS: set cert_file and key_file");
    return Status::Ok();
  }
  if (tls->cert_file.empty()) return p.Error(node, prefix + ".cert_file", "is required");
  if (tls->key_file.empty()) return p.Error(node, prefix + ".key_file", "is required");
  if (!tls->client_ca_file.empty() && tls->client_auth_type == "NoClientCert")
    return p.Error(node, prefix + ".client_ca_file",
                   "a client CA without client_auth_type verifies nothing: set client_auth_type "
                   "(RequireAndVerifyClientCert)");
  auto rank = [](const std::string& v) { return std::find(kVersions.begin(), kVersions.end(), v); };
  if (rank(tls->min_version) > rank(tls->max_version))
    return p.Error(node, prefix + ".min_version",
                   tls->min_version + " is above max_version " + tls->max_version);
  return Status::Ok();
}

Status ParseHttp(const Parser& p, const YAML::Node& node, WebConfig* out) {
  const std::string prefix = "http_server_config";
  return p.EachKey(
      node, prefix, kHttpKeys, [&](const std::string& key, const YAML::Node&, const YAML::Node& v) {
        if (key == "http2") return p.Bool(v, prefix + ".http2", &out->http2);
        return p.EachKey(
            v, prefix + ".headers", kHeaders,
            [&](const std::string& name, const YAML::Node&, const YAML::Node& value) {
              const std::string full = prefix + ".headers." + name;
              std::string text;
              if (Status s = p.String(value, full, &text); !s.ok()) return s;
              if (text.find_first_of("\r\n") != std::string::npos)
                return p.Error(value, full, "must be one line");
              std::string lower = text;
              for (char& c : lower) c = static_cast<char>(std::tolower(c));
              if (name == "X-Frame-Options" && !text.empty() && lower != "deny" &&
                  lower != "sameorigin")
                return p.Error(value, full, "must be deny or sameorigin");
              if (name == "X-Content-Type-Options" && !text.empty() && lower != "nosniff")
                return p.Error(value, full, "must be nosniff");
              if (!text.empty()) out->headers.emplace_back(name, text);
              return Status::Ok();
            });
      });
}

Status ParseUsers(const Parser& p, const YAML::Node& node, WebConfig* out) {
  return p.EachKey(node, "basic_auth_users", {},
                   [&](const std::string& user, const YAML::Node& key, const YAML::Node& v) {
                     const std::string full = "basic_auth_users." + user;
                     if (user.empty() || user.find(':') != std::string::npos)
                       return p.Error(key, full, "a user name must be non-empty and without ':'");
                     // The hash is a secret: the message says what is wrong, never what is there.
                     std::string hash;
                     if (!v.IsScalar() || !(hash = v.Scalar(), IsBcryptHash(hash)))
                       return p.Error(
                           v, full,
                           "must be a bcrypt hash ($2y$, $2b$ or $2a$, as htpasswd -nBC 10 \"\" "
                           "makes it)");
                     out->users.emplace_back(user, hash);
                     return Status::Ok();
                   });
}

Status ParseAll(const std::string& path, WebConfig* out) {
  Parser p(path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return Status::InvalidArgument(path +
                                   ": cannot read the web configuration: " + std::strerror(errno));
  } catch (const YAML::ParserException& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) + ": not YAML: " + e.msg);
  }
  WebConfig c;
  c.path = path;
  Status s = p.EachKey(root, "", kTopKeys,
                       [&](const std::string& key, const YAML::Node&, const YAML::Node& v) {
                         if (key == "tls_server_config") return ParseTls(p, v, &c.tls);
                         if (key == "http_server_config") return ParseHttp(p, v, &c);
                         return ParseUsers(p, v, &c);
                       });
  if (!s.ok()) return s;
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace

bool IsBcryptHash(const std::string& hash) {
  // "$2y$10$" + 22 characters of salt + 31 of hash.
  static constexpr std::string_view kAlphabet =
      "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  if (hash.size() != 60 || hash.compare(0, 2, "$2") != 0 || hash[3] != '$' || hash[6] != '$')
    return false;
  if (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') return false;
  if (!std::isdigit(static_cast<unsigned char>(hash[4])) ||
      !std::isdigit(static_cast<unsigned char>(hash[5])))
    return false;
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return false;
  return hash.find_first_not_of(kAlphabet, 7) == std::string::npos;
}

Status ParseWebConfig(const std::string& path, WebConfig* out) {
  try {
    return ParseAll(path, out);
  } catch (const std::exception& e) {
    // yaml-cpp throws for what the checks above did not foresee; a reload must not crash.
    return Status::InvalidArgument(path + ": the web configuration could not be read: " + e.what());
  }
}

}  // namespace txn_recovery::daemon
