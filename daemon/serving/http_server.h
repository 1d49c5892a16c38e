// HealthAndMetricsServer: the optional HTTP listener ([http] listen) that serves the Prometheus
// metrics and the two probes a supervisor (Kubernetes, a load balancer, a script) asks:
//   GET /        — 200, a small HTML page naming the endpoints
//   GET /metrics — 200, text/plain; version=0.0.4; charset=utf-8 (a Range header is ignored)
//   GET /livez   — 200 "ok\n", or 503 with the reason: the sweep loop is stuck
//   GET /readyz  — 200 "ok\n", or 503 with the reason: the database is unreachable
// HEAD is answered like GET without a body, any other method with 405, any other path with
// 404, and a handler that throws with 500 (logged; the server keeps serving).
//
// The health endpoint of a database daemon must never be the reason it is restarted, and
// must never starve its database connections, whatever its clients do. So it is a small
// HTTP/1.1 server of its own (cpp-httplib 0.11 cannot bound its connections, gives a
// request no deadline, only a per-read timeout, and lets every connection hold one of its
// worker threads for as long as its client keeps sending a byte now and then):
//   - one thread reads and writes every connection (poll, non-blocking sockets); handlers
//     run on a small pool of workers, and only for a complete request: a slow client
//     holds a connection slot, never a worker;
//   - at most `max_connections` connections; one beyond that takes the place of the
//     connection that has waited longest without completing a request (a slow or idle
//     client), and is refused (closed) only when every connection is being answered;
//   - a request head must arrive whole within `request_deadline` of the connection (or of
//     the previous response), in at most `max_request_bytes`; a response must be taken
//     within `write_deadline`; a connection serves at most `max_requests_per_connection`;
//   - Stop closes every connection at once and waits only for handlers already running.
//
// TLS and basic authentication (HttpSecurity, from a web configuration: web_config.h) keep
// those guarantees, which is why they are added here rather than by serving through
// Debian's libmicrohttpd (with GnuTLS): its MHD_OPTION_CONNECTION_TIMEOUT is an
// inactivity timeout ("after how many seconds of inactivity should a connection
// automatically be timed out"), which a slow client resets with each byte, so it gives a
// request head no deadline, and MHD_OPTION_CONNECTION_LIMIT refuses new connections where
// this server evicts the slowest. So:
//   - the handshake is driven by the poll thread without blocking (OpenSSL's want-read and
//     want-write), and counts against `request_deadline` from the connection's accept: a
//     client that never finishes its handshake holds a connection slot, never a worker,
//     is the first evicted, and is closed at the deadline like any slow client;
//   - a plain HTTP request to a TLS listener is answered 400 in plain text ("client sent
//     an HTTP request to an HTTPS server", as Go's servers say) and closed;
//   - with basic_auth_users, "/" and /metrics need credentials (401 with
//     WWW-Authenticate: Basic otherwise); /livez and /readyz do not (they say "ok" or why
//     not and nothing else), so that a supervisor's probe needs no password in its
//     manifest and can never be made to wait for a password check. A bcrypt check runs on
//     a worker, at most one at a time, and at most kMaxWaitingVerifications wait: beyond
//     that a request with credentials not yet verified is answered 503 with Retry-After,
//     so a flood of wrong passwords holds a bounded number of connections and at most one
//     worker, and the probes and the cached scrapers keep being answered (basic_auth.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/serving/basic_auth.h"
#include "daemon/serving/http_tls.h"
#include "txn_recovery/base/status.h"

namespace txn_recovery::daemon {

// Where to listen: "HOST:PORT", "[IPV6]:PORT", or ":PORT".
struct ListenAddress {
  // ":PORT" means every address, IPv4 and IPv6, as node_exporter (and Go) read it: one
  // IPv6 socket that also accepts IPv4 (IPV6_V6ONLY off), or 0.0.0.0 where the host has
  // no IPv6. Otherwise `host` is a numeric IPv4 or IPv6 address (0.0.0.0 and :: ask for
  // every address of one family) or a name, resolved at Start.
  bool every_address = false;
  std::string host;  // without brackets; empty when every_address
  int port = 0;      // 0: any free port

  // "127.0.0.1:9464", "[::1]:9464", ":9464".
  std::string ToString() const;
};

// The one parser of a listen address: configuration loading (file and environment),
// check-config and run call it, so that what one accepts the others do. InvalidArgument
// naming the text for: no port, a port that is not a number from 0 to 65535, an IPv6
// address without brackets, and a host that is "0" or any other shorthand inet_aton would
// read as an IPv4 address ("0:9464" must not silently mean every address: write ":9464",
// "0.0.0.0:9464" or "127.0.0.1:9464").
txn_recovery::Status ParseListenAddress(std::string_view text, ListenAddress* out);

// Called from the server's worker threads, possibly at once: each must be thread-safe. An
// empty std::function leaves its path unserved (404).
struct HealthAndMetricsHandlers {
  std::function<std::string()> metrics;  // body of /metrics (Metrics::Render)
  // /livez: the sweep loop is making progress. Must never depend on the database, or an
  // outage would get a healthy daemon restarted.
  std::function<bool(std::string* why)> live;
  // /readyz: the database is reachable.
  std::function<bool(std::string* why)> ready;
};

struct HttpLimits {
  int max_connections = 128;
  std::chrono::milliseconds request_deadline{2000};
  std::chrono::milliseconds write_deadline{2000};
  int max_requests_per_connection = 100;
  std::size_t max_request_bytes = 8192;
  int workers = 2;
};

// What the server has done about its clients since it started (for logs and tests).
struct HttpCounters {
  std::uint64_t accepted = 0;
  std::uint64_t requests = 0;
  std::uint64_t evicted = 0;       // closed to make room for a new connection
  std::uint64_t refused = 0;       // closed at once: every slot busy answering
  std::uint64_t timed_out = 0;     // request or response past its deadline
  std::uint64_t tls_failed = 0;    // TLS handshakes refused or broken off
  std::uint64_t unauthorized = 0;  // answered 401
  std::uint64_t auth_busy = 0;     // answered 503: too many password checks waiting
};

// What a web configuration asks of the endpoint, ready to serve. Default: plain HTTP, no
// credentials asked, no extra headers.
struct HttpSecurity {
  std::shared_ptr<const TlsContext> tls;                     // null: plain HTTP
  std::shared_ptr<BasicAuth> auth;                           // null: no credentials asked
  std::vector<std::pair<std::string, std::string>> headers;  // added to every response
  std::string source;  // the web configuration's path; "" when none
};

// Reads the web configuration at `path` (ParseWebConfig) and the files it names (the
// certificate, the key, the client CA: TlsContext::Load). InvalidArgument naming the file,
// and the key and line where there is one; never a secret.
txn_recovery::Status LoadHttpSecurity(const std::string& path, HttpSecurity* out);

// Password checks (bcrypt) allowed to wait for the one running; see the header comment.
inline constexpr std::size_t kMaxWaitingVerifications = 8;

// Not copyable or movable (its threads point back at it). The destructor stops it.
// Start, Stop, port and address are for the owning thread; they are not meant to race
// one another.
class HealthAndMetricsServer {
 public:
  HealthAndMetricsServer();
  ~HealthAndMetricsServer();
  HealthAndMetricsServer(const HealthAndMetricsServer&) = delete;
  HealthAndMetricsServer& operator=(const HealthAndMetricsServer&) = delete;

  // Binds `listen` synchronously, so that a bad address or a port in use is reported here
  // and not on another thread later, then serves on its own threads until Stop.
  // InvalidArgument for an address ParseListenAddress refuses, Unavailable when binding
  // fails (a port in use, an address of another host, a name that does not resolve); both
  // messages name the address. Calling Start while serving is a programming error
  // (std::logic_error); after Stop it may be started again.
  // `security` applies to the connections accepted from then on. The pool has at least
  // two workers, so that one is free while another checks a password.
  txn_recovery::Status Start(const std::string& listen, HealthAndMetricsHandlers handlers,
                             HttpLimits limits = {}, HttpSecurity security = {});

  // Replaces the security of the connections accepted from now on (a reload: a renewed
  // certificate, new users); connections already open finish as they began. No-op when
  // not serving.
  void SetSecurity(HttpSecurity security);

  // The bound port and "host:port" ("[ipv6]:port") with the numeric address actually
  // bound ("[::]:port" for ":PORT"); 0 and "" when not serving.
  int port() const { return port_; }
  std::string address() const { return address_; }
  HttpCounters counters() const;

  // Closes the listener and every connection at once, and returns once no handler runs
  // any more (within the running handlers' own time; never waits for a client).
  // Idempotent; a no-op if never started.
  void Stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::string address_;
};

}  // namespace txn_recovery::daemon
