#include "http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <utility>

#include <httplib.h>

namespace txn_recoveryd {
namespace {

using txn_recovery::Status;

constexpr const char* kText = "text/plain; charset=utf-8";
constexpr const char* kExposition = "text/plain; version=0.0.4; charset=utf-8";

// A scraper or prober that stalls may hold one of the two workers this long, no more.
constexpr time_t kIoTimeoutSeconds = 2;
constexpr std::size_t kWorkers = 2;

// httplib keeps the listening socket to itself; the bound address (for port 0, and for a
// host name) is only known from it.
class Listener final : public httplib::Server {
 public:
  int listening_socket() const { return svr_sock_.load(); }
};

Status ParseListen(const std::string& listen, std::string* host, int* port) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("http listen address \"" + listen + "\": " + why);
  };
  std::string port_text;
  if (!listen.empty() && listen[0] == '[') {
    std::size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':')
      return bad("expected [ipv6-address]:port");
    *host = listen.substr(1, close - 1);
    in6_addr unused{};
    if (inet_pton(AF_INET6, host->c_str(), &unused) != 1)
      return bad("\"" + *host + "\" is not an IPv6 address");
    port_text = listen.substr(close + 2);
  } else {
    std::size_t colon = listen.rfind(':');
    if (colon == std::string::npos) return bad("expected host:port");
    *host = listen.substr(0, colon);
    if (host->find(':') != std::string::npos)
      return bad("an IPv6 address goes in brackets, as in [::1]:9090");
    port_text = listen.substr(colon + 1);
  }
  // An empty host would mean every interface; exposing the endpoints that widely must be
  // asked for explicitly.
  if (host->empty()) return bad("no host (0.0.0.0 or [::] listens on every interface)");
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port_text) > 65535)
    return bad("the port must be a number from 0 to 65535");
  *port = std::stoi(port_text);
  return Status::Ok();
}

// "127.0.0.1:9090" or "[::1]:9090" for a bound socket; false if the kernel will not say.
bool BoundAddress(int sock, std::string* address, int* port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(sock, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
  char ip[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    if (inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip)) == nullptr) return false;
    *port = ntohs(in->sin_port);
    *address = std::string(ip) + ":" + std::to_string(*port);
    return true;
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip)) == nullptr) return false;
    *port = ntohs(in6->sin6_port);
    // Appended piecewise: GCC 12 at -O3 warns (-Wrestrict, falsely) on "[" + std::string.
    address->assign("[").append(ip).append("]:").append(std::to_string(*port));
    return true;
  }
  return false;
}

void InternalError(httplib::Response& res) {
  res.status = 500;
  res.set_content("internal error\n", kText);
}

// Runs a handler so that whatever it throws becomes a 500 and a log line, never a dead
// worker thread or a terminated process.
template <typename Fn>
void Guarded(const httplib::Request& req, httplib::Response& res, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    spdlog::error("http {} {}: handler failed: {}", req.method, req.path, e.what());
    InternalError(res);
  } catch (...) {
    spdlog::error("http {} {}: handler failed with a non-standard exception", req.method, req.path);
    InternalError(res);
  }
}

httplib::Server::Handler Probe(std::function<bool(std::string*)> check, std::string failing) {
  return [check = std::move(check), failing = std::move(failing)](const httplib::Request& req,
                                                                  httplib::Response& res) {
    Guarded(req, res, [&] {
      std::string why;
      if (check(&why)) {
        res.status = 200;
        res.set_content("ok\n", kText);
        return;
      }
      if (why.empty()) why = failing;
      if (why.back() != '\n') why += '\n';
      res.status = 503;
      res.set_content(why, kText);
    });
  };
}

}  // namespace

HealthServer::HealthServer() = default;

HealthServer::~HealthServer() {
  Stop();
}

Status HealthServer::Start(const std::string& listen, HealthHandlers handlers) {
  if (server_ != nullptr)
    throw std::logic_error("HealthServer::Start while already serving on " + address_);
  std::string host;
  int port = 0;
  if (Status s = ParseListen(listen, &host, &port); !s.ok()) return s;

  auto server = std::make_unique<Listener>();
  server->new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
  server->set_read_timeout(kIoTimeoutSeconds);
  server->set_write_timeout(kIoTimeoutSeconds);
  // No keep-alive: probes and scrapes come seconds apart, and an idle kept-alive connection
  // would hold a worker (and Stop) until it timed out.
  server->set_keep_alive_max_count(1);
  server->set_keep_alive_timeout(kIoTimeoutSeconds);
  server->set_payload_max_length(4096);  // GET and HEAD carry no body
  // SO_REUSEADDR so that a restarted daemon can bind while old connections linger in
  // TIME_WAIT, and deliberately not httplib's SO_REUSEPORT, which would let a second
  // instance bind the same port and silently share the traffic instead of failing.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    (void)setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  server->set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "HEAD")
      return httplib::Server::HandlerResponse::Unhandled;
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("method not allowed\n", kText);
    return httplib::Server::HandlerResponse::Handled;
  });
  server->set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        if (res.status != 404 || !res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        res.set_content("not found\n", kText);
        return httplib::Server::HandlerResponse::Handled;
      }));
  // Guarded catches everything a handler throws; this covers what httplib itself might.
  server->set_exception_handler([](const httplib::Request&, httplib::Response& res,
                                   std::exception_ptr) { InternalError(res); });

  // httplib answers HEAD with the GET handler, without the body.
  if (handlers.metrics) {
    server->Get("/metrics", [metrics = std::move(handlers.metrics)](const httplib::Request& req,
                                                                    httplib::Response& res) {
      Guarded(req, res, [&] { res.set_content(metrics(), kExposition); });
    });
  }
  if (handlers.live) server->Get("/livez", Probe(std::move(handlers.live), "not live"));
  if (handlers.ready) server->Get("/readyz", Probe(std::move(handlers.ready), "not ready"));

  errno = 0;
  bool bound = port == 0 ? server->bind_to_any_port(host) >= 0 : server->bind_to_port(host, port);
  if (!bound) {
    // httplib reports only failure; errno is still bind's (or listen's) when that is what
    // failed. Anything else (an unresolvable host) gets no guessed reason.
    int err = errno;
    std::string why = err == EADDRINUSE || err == EACCES || err == EADDRNOTAVAIL
                          ? std::strerror(err)
                          : "cannot bind (unknown host, or no such local address)";
    return Status::Unavailable("http: cannot listen on " + listen + ": " + why);
  }
  std::string address;
  int bound_port = 0;
  if (!BoundAddress(server->listening_socket(), &address, &bound_port)) {
    address = listen;  // the kernel always knows; this is only a fallback
    bound_port = port;
  }

  auto done = std::make_shared<std::atomic<bool>>(false);
  Listener* raw = server.get();
  thread_ = std::thread([raw, done] {
    if (!raw->listen_after_bind())
      spdlog::error("http: the listener stopped on an error; health endpoints are down");
    done->store(true);
  });
  // httplib's stop() does nothing until the serving thread has marked itself running;
  // waiting for that here makes a Stop right after Start stop it.
  while (!raw->is_running() && !done->load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));

  server_ = std::move(server);
  address_ = std::move(address);
  port_ = bound_port;
  return Status::Ok();
}

void HealthServer::Stop() {
  if (server_ == nullptr) return;
  server_->stop();
  // listen_after_bind returns only after its workers have finished their requests.
  if (thread_.joinable()) thread_.join();
  server_.reset();
  port_ = 0;
  address_.clear();
}

}  // namespace txn_recoveryd
