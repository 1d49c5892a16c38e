#include "daemon/serving/http_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string_view>

namespace txn_recovery::daemon {

using txn_recovery::Status;

namespace {

// OpenSSL's queued errors for this thread, oldest first, and the queue emptied.
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// A file OpenSSL is about to read: an unreadable one is said with errno's words, which
// OpenSSL's "system library" errors do not make plain.
Status Readable(const std::string& key, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr)
    return Status::InvalidArgument("tls_server_config." + key + " " + path + ": " +
                                   std::strerror(errno));
  std::fclose(f);
  return Status::Ok();
}

Status Failed(const std::string& key, const std::string& path, const std::string& what) {
  return Status::InvalidArgument("tls_server_config." + key + " " + path + ": " + what + " (" +
                                 OpenSslErrors() + ")");
}

Status LoadKeyPair(SSL_CTX* ctx, const WebTlsConfig& c) {
  if (Status s = Readable("cert_file", c.cert_file); !s.ok()) return s;
  if (Status s = Readable("key_file", c.key_file); !s.ok()) return s;
  if (SSL_CTX_use_certificate_chain_file(ctx, c.cert_file.c_str()) != 1)
    return Failed("cert_file", c.cert_file, "not a PEM certificate chain");
  if (SSL_CTX_use_PrivateKey_file(ctx, c.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL compares the key with the certificate as it loads it.
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
      return Failed("key_file", c.key_file, "is not the key of cert_file " + c.cert_file);
    return Failed("key_file", c.key_file,
                  "not an unencrypted PEM private key (a daemon cannot type a passphrase)");
  }
  if (SSL_CTX_check_private_key(ctx) != 1)
    return Failed("key_file", c.key_file, "is not the key of cert_file " + c.cert_file);
  return Status::Ok();
}

// client_auth_type, as Go's tls.ClientAuthType means each (crypto/tls): the "Any" kinds
// ask for a certificate and accept whatever is sent.
Status SetClientAuth(SSL_CTX* ctx, const WebTlsConfig& c) {
  const std::string& t = c.client_auth_type;
  const bool verify = t == "VerifyClientCertIfGiven" || t == "RequireAndVerifyClientCert";
  const bool require =
      t == "RequireAnyClientCert" || t == "RequireClientCert" || t == "RequireAndVerifyClientCert";
  if (t == "NoClientCert") {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return Status::Ok();
  }
  if (verify) {
    if (!c.client_ca_file.empty()) {
      if (Status s = Readable("client_ca_file", c.client_ca_file); !s.ok()) return s;
      if (SSL_CTX_load_verify_locations(ctx, c.client_ca_file.c_str(), nullptr) != 1)
        return Failed("client_ca_file", c.client_ca_file, "not a PEM certificate bundle");
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.client_ca_file.c_str());
      if (names == nullptr)
        return Failed("client_ca_file", c.client_ca_file, "holds no CA certificate");
      SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      // Go verifies against the system's roots when no CA is named; so does this.
      return Status::InvalidArgument(
          "tls_server_config.client_ca_file: unset, and the system's "
          "CA certificates cannot be read (" +
          OpenSslErrors() + ")");
    }
  }
  auto accept_any = [](int, X509_STORE_CTX*) { return 1; };
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (require ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                     verify ? nullptr : +accept_any);
  // Sessions resumed with a client certificate need an id context, or OpenSSL refuses them.
  static constexpr std::string_view kSessionContext = "txn-recoveryd";
  SSL_CTX_set_session_id_context(
      ctx, reinterpret_cast<const unsigned char*>(kSessionContext.data()), kSessionContext.size());
  return Status::Ok();
}

// Versions, cipher suites (Go's names are the IANA ones; OpenSSL maps them) and curves.
Status SetProtocol(SSL_CTX* ctx, const WebTlsConfig& c) {
  static const std::map<std::string, int> kVersions = {{"TLS10", TLS1_VERSION},
                                                       {"TLS11", TLS1_1_VERSION},
                                                       {"TLS12", TLS1_2_VERSION},
                                                       {"TLS13", TLS1_3_VERSION}};
  if (SSL_CTX_set_min_proto_version(ctx, kVersions.at(c.min_version)) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, kVersions.at(c.max_version)) != 1)
    return Status::InvalidArgument("tls_server_config.min_version, max_version: " +
                                   OpenSslErrors());
  std::string ciphers;
  for (const std::string& name : c.cipher_suites) {
    // TLS 1.3's suites are not configurable, in Go as here: they are always offered.
    if (name.rfind("TLS_AES_", 0) == 0 || name.rfind("TLS_CHACHA20_", 0) == 0) continue;
    const char* openssl = OPENSSL_cipher_name(name.c_str());
    if (openssl == nullptr || std::string_view(openssl) == "(NONE)")
      return Status::InvalidArgument("tls_server_config.cipher_suites: " + name +
                                     " is not available in this OpenSSL");
    // Appended piecewise: GCC 12 at -O3 warns (-Wrestrict, falsely) on ":" + std::string.
    if (!ciphers.empty()) ciphers.push_back(':');
    ciphers.append(openssl);
  }
  if (!ciphers.empty() && SSL_CTX_set_cipher_list(ctx, ciphers.c_str()) != 1)
    return Status::InvalidArgument("tls_server_config.cipher_suites: " + OpenSslErrors());
  static const std::map<std::string, std::string> kCurves = {
      {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};
  std::string groups;
  for (const std::string& name : c.curve_preferences) {
    if (!groups.empty()) groups.push_back(':');
    groups.append(kCurves.at(name));
  }
  if (!groups.empty() && SSL_CTX_set1_groups_list(ctx, groups.c_str()) != 1)
    return Status::InvalidArgument("tls_server_config.curve_preferences: " + OpenSslErrors());
  if (c.prefer_server_cipher_suites) SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  return Status::Ok();
}

TlsSession::Io Outcome(SSL* ssl, int rc, std::string* error) {
  const int e = SSL_get_error(ssl, rc);
  switch (e) {
    case SSL_ERROR_WANT_READ:
      return TlsSession::Io::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return TlsSession::Io::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      return TlsSession::Io::kClosed;
    case SSL_ERROR_SYSCALL:
      // An end of file in the middle of the protocol, or a socket error.
      if (ERR_peek_error() == 0 && (errno == 0 || errno == ECONNRESET || errno == EPIPE)) {
        if (error != nullptr) *error = "the client closed the connection";
        return TlsSession::Io::kClosed;
      }
      [[fallthrough]];
    default:
      if (error != nullptr) {
        *error = OpenSslErrors();
        if (long v = SSL_get_verify_result(ssl); v != X509_V_OK)
          *error += std::string(" (client certificate: ") + X509_verify_cert_error_string(v) + ")";
      }
      ERR_clear_error();
      return TlsSession::Io::kFailed;
  }
}

}  // namespace

void TlsContext::Free::operator()(ssl_ctx_st* ctx) const noexcept {
  SSL_CTX_free(ctx);
}

TlsContext::~TlsContext() = default;

Status TlsContext::Load(const WebTlsConfig& config, std::shared_ptr<const TlsContext>* out) {
  ERR_clear_error();
  std::shared_ptr<TlsContext> context(new TlsContext());
  context->ctx_.reset(SSL_CTX_new(TLS_server_method()));
  SSL_CTX* ctx = context->ctx_.get();
  if (ctx == nullptr)
    return Status::InvalidArgument("tls_server_config: OpenSSL cannot make a context (" +
                                   OpenSslErrors() + ")");
  // An encrypted key must fail, not wait for a passphrase on a terminal.
  SSL_CTX_set_default_passwd_cb(ctx, [](char*, int, int, void*) { return 0; });
  Status s = LoadKeyPair(ctx, config);
  if (s.ok()) s = SetClientAuth(ctx, config);
  if (s.ok()) s = SetProtocol(ctx, config);
  if (!s.ok()) return s;
  // Renegotiation only lets a client make the server work; partial writes and a moving
  // buffer let the poll thread write what the socket takes and retry from a std::string.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  *out = std::move(context);
  return Status::Ok();
}

void TlsSession::Free::operator()(ssl_st* ssl) const noexcept {
  SSL_free(ssl);
}

TlsSession::TlsSession(const TlsContext& context, int fd) {
  ERR_clear_error();
  ssl_.reset(SSL_new(context.get()));
  if (ssl_ && SSL_set_fd(ssl_.get(), fd) != 1) ssl_.reset();
  ERR_clear_error();
}

TlsSession::Io TlsSession::Handshake(std::string* error) {
  ERR_clear_error();
  errno = 0;
  const int rc = SSL_accept(ssl_.get());
  if (rc == 1) return Io::kDone;
  return Outcome(ssl_.get(), rc, error);
}

TlsSession::Io TlsSession::Read(char* buf, std::size_t size, std::size_t* got) {
  ERR_clear_error();
  errno = 0;
  const int rc = SSL_read_ex(ssl_.get(), buf, size, got);
  if (rc == 1) return Io::kDone;
  return Outcome(ssl_.get(), rc, nullptr);
}

TlsSession::Io TlsSession::Write(const char* data, std::size_t size, std::size_t* put) {
  ERR_clear_error();
  errno = 0;
  const int rc = SSL_write_ex(ssl_.get(), data, size, put);
  if (rc == 1) return Io::kDone;
  return Outcome(ssl_.get(), rc, nullptr);
}

void TlsSession::Shutdown() noexcept {
  if (!ssl_) return;
  ERR_clear_error();
  (void)SSL_shutdown(ssl_.get());
  ERR_clear_error();
}

}  // namespace txn_recovery::daemon
