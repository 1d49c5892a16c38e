// HealthServer: the optional HTTP listener ([http] listen) that serves the Prometheus
// metrics and the two probes a supervisor (Kubernetes, a load balancer, a script) asks:
//   GET /metrics — 200, text/plain; version=0.0.4; charset=utf-8
//   GET /livez   — 200 "ok\n", or 503 with the reason: the sweep loop is stuck
//   GET /readyz  — 200 "ok\n", or 503 with the reason: the database is unreachable
// HEAD is answered like GET without a body, any other method with 405, any other path with
// 404, and a handler that throws with 500 (logged; the server keeps serving).
//
// Built on cpp-httplib with two worker threads, no keep-alive and 2-second read and write
// timeouts, so that a scraper that connects and stalls holds one worker for two seconds at
// most and never the daemon itself.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "txn_recovery/status.h"

namespace httplib {
class Server;
}

namespace txn_recoveryd {

// Called from the server's threads, possibly two at once: each must be thread-safe. An
// empty std::function leaves its path unserved (404).
struct HealthHandlers {
  std::function<std::string()> metrics;  // body of /metrics (Metrics::Render)
  // /livez: the sweep loop is making progress. Must never depend on the database, or an
  // outage would get a healthy daemon restarted.
  std::function<bool(std::string* why)> live;
  // /readyz: the database is reachable.
  std::function<bool(std::string* why)> ready;
};

// Not copyable or movable (its threads point back at it). The destructor stops it.
// Start, Stop, port and address are for the owning thread; they are not meant to race
// one another.
class HealthServer {
 public:
  HealthServer();
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  // Binds `listen` synchronously, so that a bad address or a port in use is reported here
  // and not on another thread later, then serves on its own threads until Stop.
  // `listen` is "host:port" or "[ipv6]:port"; the host may be a name; port 0 takes any
  // free port (see port()). Returns InvalidArgument for an address that cannot be parsed
  // (including an empty host: listening on every interface must be asked for, as
  // 0.0.0.0 or [::]), Unavailable when binding fails; both messages name the address.
  // Calling Start while serving is a programming error (std::logic_error); after Stop it
  // may be started again.
  txn_recovery::Status Start(const std::string& listen, HealthHandlers handlers);

  // The bound port and "host:port" ("[ipv6]:port") with the numeric address actually
  // bound; 0 and "" when not serving.
  int port() const { return port_; }
  std::string address() const { return address_; }

  // Stops listening and returns once no handler runs any more: within a handler's own
  // time plus the 2-second read timeout of a client that connected and sent nothing.
  // Idempotent; a no-op if never started.
  void Stop();

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::string address_;
};

}  // namespace txn_recoveryd
