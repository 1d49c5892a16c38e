// The web configuration file: TLS and basic authentication for the HTTP endpoint
// (http_server.h), named by `http.web_config` or `run --web.config.file`. Its format is
// prometheus/exporter-toolkit's (docs/web-configuration.md), the one node_exporter and
// Prometheus read, so that an operator's file and habits carry over:
//
//   tls_server_config:
//     cert_file: server.crt          # relative paths: to the web configuration's directory
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert   # default NoClientCert
//     client_ca_file: clients-ca.crt
//     min_version: TLS12             # default TLS12; TLS10 to TLS13
//     max_version: TLS13             # default TLS13
//     cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]   # Go's names; TLS 1.2 and older
//     prefer_server_cipher_suites: true
//     curve_preferences: [X25519, CurveP256]
//   http_server_config:
//     http2: false                   # accepted; the endpoint speaks HTTP/1.1 only
//     headers: {X-Content-Type-Options: nosniff}
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt hashes ($2a$, $2b$, $2y$)
//
// What exporter-toolkit reads and this daemon does not (the inline `cert`, `key` and
// `client_ca`, `client_allowed_sans`, `rate_limit`, any other key) is refused by name, with
// the file, line and column: an operator must not believe a setting protects the endpoint
// when it is ignored. Secrets (the bcrypt hashes, the key's contents) never appear in an
// error message; file names do.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "txn_recovery/base/status.h"

namespace txn_recovery::daemon {

struct WebTlsConfig {
  // As the file gives them, made absolute against the web configuration's directory.
  std::string cert_file, key_file, client_ca_file;
  // NoClientCert, RequestClientCert, RequireAnyClientCert (RequireClientCert),
  // VerifyClientCertIfGiven or RequireAndVerifyClientCert, as Go's tls.ClientAuthType.
  std::string client_auth_type = "NoClientCert";
  std::string min_version = "TLS12", max_version = "TLS13";  // TLS10, TLS11, TLS12, TLS13
  std::vector<std::string> cipher_suites;                    // Go's (IANA) names
  bool prefer_server_cipher_suites = true;
  std::vector<std::string> curve_preferences;  // CurveP256, CurveP384, CurveP521, X25519

  // As exporter-toolkit decides: TLS is on when either file is named (then both must be).
  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

struct WebConfig {
  std::string path;  // the file it was read from
  WebTlsConfig tls;
  bool http2 = true;  // read for compatibility; the endpoint speaks HTTP/1.1 whatever it says
  // Response headers, in the file's order; only the five exporter-toolkit allows.
  std::vector<std::pair<std::string, std::string>> headers;
  // User name and bcrypt hash, in the file's order. Secrets: never log or print a hash.
  std::vector<std::pair<std::string, std::string>> users;
};

// Reads and checks the YAML file at `path`: known keys, types, values, that the TLS files
// are named in pairs, that every hash is a bcrypt hash. Does not read the certificate, key
// or CA files (TlsContext::Load, serving/http_tls.h, does). InvalidArgument "PATH:LINE:COL: KEY:
// problem" (or "PATH: problem" when there is no position: an unreadable file); never throws.
txn_recovery::Status ParseWebConfig(const std::string& path, WebConfig* out);

// Whether `hash` is a bcrypt hash crypt(3) verifies: $2a$, $2b$ or $2y$, a cost from 04
// to 31, 53 characters of bcrypt's base64.
bool IsBcryptHash(const std::string& hash);

}  // namespace txn_recovery::daemon
