// TLS for the HTTP endpoint (http_server.h), with OpenSSL, whose headers stay in
// http_tls.cc. A TlsContext is the server's certificate, key and policy, read from the
// files of a web configuration (web_config.h); a TlsSession is one connection's state,
// driven without blocking by the server's poll thread: each call does what the socket
// allows now and says which readiness it waits for.
//
// Ownership: every OpenSSL handle is held by a move-only unique_ptr with a noexcept deleter.
// A session keeps its context's SSL_CTX alive (OpenSSL counts the references), so a
// context may be replaced (a reload) while the connections it accepted finish.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "daemon/serving/web_config.h"
#include "txn_recovery/base/status.h"

// OpenSSL's own type names (SSL, SSL_CTX are typedefs of these).
struct ssl_st;
struct ssl_ctx_st;

namespace txn_recovery::daemon {

class TlsContext {
 public:
  // Reads cert_file (the certificate chain, PEM), key_file (PEM, unencrypted: a daemon
  // cannot type a passphrase) and client_ca_file, and checks that the key is the
  // certificate's. InvalidArgument naming the key (tls_server_config.cert_file, ...) and
  // the file, never the key's contents.
  static txn_recovery::Status Load(const WebTlsConfig& config,
                                   std::shared_ptr<const TlsContext>* out);

  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ~TlsContext();

  ssl_ctx_st* get() const { return ctx_.get(); }

 private:
  struct Free {
    void operator()(ssl_ctx_st* ctx) const noexcept;
  };
  TlsContext() = default;
  std::unique_ptr<ssl_ctx_st, Free> ctx_;
};

// One server-side TLS connection over a non-blocking socket it does not own (the caller
// closes the descriptor after the session is gone or shut down). Empty when
// default-constructed or moved from.
class TlsSession {
 public:
  enum class Io {
    kDone,       // the call did its work (some bytes, or the handshake is complete)
    kWantRead,   // call again when the socket is readable
    kWantWrite,  // call again when the socket is writable
    kClosed,     // the peer closed the connection
    kFailed,     // a TLS or socket error: close the connection
  };

  TlsSession() = default;
  TlsSession(const TlsContext& context, int fd);  // empty when OpenSSL cannot make one

  explicit operator bool() const { return ssl_ != nullptr; }

  // Accepts the handshake; on kFailed, *error says why (for a debug log).
  Io Handshake(std::string* error);
  // At most `size` bytes into `buf`; *got is what was read on kDone.
  Io Read(char* buf, std::size_t size, std::size_t* got);
  // Some of `data` (a partial write is kDone with *put < size); after kWantRead or
  // kWantWrite, call again with the same bytes.
  Io Write(const char* data, std::size_t size, std::size_t* put);
  // Sends close_notify if the socket takes it now; never waits.
  void Shutdown() noexcept;

 private:
  struct Free {
    void operator()(ssl_st* ssl) const noexcept;
  };
  std::unique_ptr<ssl_st, Free> ssl_;
};

}  // namespace txn_recovery::daemon
