#include "daemon/serving/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/serving/web_config.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;
using Clock = std::chrono::steady_clock;

// ---- Listen addresses --------------------------------------------------------------------

std::string ListenAddress::ToString() const {
  std::string p = std::to_string(port);
  if (every_address) return ":" + p;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + p;
  return host + ":" + p;
}

Status ParseListenAddress(std::string_view text, ListenAddress* out) {
  const std::string listen(text);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("listen address \"" + listen + "\": " + why);
  };
  ListenAddress a;
  std::string port_text;
  if (!listen.empty() && listen[0] == '[') {
    std::size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':')
      return bad("expected [ipv6-address]:port");
    a.host = listen.substr(1, close - 1);
    in6_addr unused{};
    if (inet_pton(AF_INET6, a.host.c_str(), &unused) != 1)
      return bad("\"" + a.host + "\" is not an IPv6 address");
    port_text = listen.substr(close + 2);
  } else {
    std::size_t colon = listen.rfind(':');
    if (colon == std::string::npos) return bad("expected host:port, or :port for every address");
    a.host = listen.substr(0, colon);
    if (a.host.find(':') != std::string::npos)
      return bad("an IPv6 address goes in brackets, as in [::1]:9464");
    port_text = listen.substr(colon + 1);
    if (a.host.empty()) {
      a.every_address = true;
    } else {
      in_addr v4{};
      const bool strict_v4 = inet_pton(AF_INET, a.host.c_str(), &v4) == 1;
      // inet_aton (and getaddrinfo) also read "0", "127.1" and "0x7f.1" as addresses;
      // "0:9464" would then silently listen on every address.
      if (!strict_v4 && inet_aton(a.host.c_str(), &v4) != 0)
        return bad("\"" + a.host +
                   "\" is not a host: write :PORT for every address, 0.0.0.0:PORT for every "
                   "IPv4 address, 127.0.0.1:PORT for this host only");
      if (!strict_v4) {
        bool name = std::isalnum(static_cast<unsigned char>(a.host.front())) != 0;
        for (unsigned char c : a.host) name = name && (std::isalnum(c) || c == '-' || c == '.');
        if (!name) return bad("\"" + a.host + "\" is not a host name or an IPv4 address");
      }
    }
  }
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port_text) > 65535)
    return bad("the port must be a number from 0 to 65535");
  a.port = std::stoi(port_text);
  *out = std::move(a);
  return Status::Ok();
}

namespace {

constexpr const char* kText = "text/plain; charset=utf-8";
constexpr const char* kExposition = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* kHtml = "text/html; charset=utf-8";
// Connections accepted per turn of the loop, so that reads and writes keep their turn
// during a flood of connections.
constexpr int kAcceptsPerTurn = 32;

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

struct Response {
  int status = 200;
  std::string content_type = kText;
  std::string body;
  bool allow_header = false;  // 405
  bool challenge = false;     // 401: WWW-Authenticate
  bool retry_after = false;   // 503 of a busy password check
};

// The extra headers of a web configuration, as lines of a response head.
std::string HeaderLines(const HttpSecurity* security) {
  std::string out;
  if (security != nullptr)
    for (const auto& [name, value] : security->headers) out += name + ": " + value + "\r\n";
  return out;
}

// The bytes of a response; HEAD gets the headers of GET (Content-Length included).
// `extra`: HeaderLines of the connection's web configuration.
std::string Serialize(const Response& r, bool head, bool close, const std::string& extra = {}) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += "Cache-Control: no-store\r\n";
  if (r.allow_header) out += "Allow: GET, HEAD\r\n";
  if (r.challenge) out += "WWW-Authenticate: Basic realm=\"txn-recoveryd\", charset=\"UTF-8\"\r\n";
  if (r.retry_after) out += "Retry-After: 1\r\n";
  out += extra;
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  if (!head) out += r.body;
  return out;
}

std::string LandingPage() {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>txn-recoveryd</title>"
         "</head>\n<body>\n<h1>txn-recoveryd " TXN_RECOVERYD_VERSION
         "</h1>\n<p>Recovers stuck MongoDB two-phase-commit transactions.</p>\n<ul>\n"
         "<li><a href=\"/metrics\">/metrics</a>: Prometheus metrics</li>\n"
         "<li><a href=\"/livez\">/livez</a>: the sweep loop is making progress</li>\n"
         "<li><a href=\"/readyz\">/readyz</a>: the database answered the last sweep</li>\n"
         "</ul>\n</body></html>\n";
}

struct Request {
  std::string method, path;
  std::string authorization;  // the header's value: a secret, never logged
  bool head = false;
  bool keep_alive = true;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return std::string(s);
}

// Parses a request head (without its blank line). nullopt with *error set to the response
// for what cannot be served. Headers other than Connection, Content-Length and
// Transfer-Encoding (Range among them) are ignored.
std::optional<Request> ParseHead(std::string_view head, Response* error) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start <= head.size();) {
    std::size_t end = head.find('\n', start);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  auto fail = [&](int status, const char* body) {
    error->status = status;
    error->body = body;
    return std::nullopt;
  };
  std::string_view first = lines.empty() ? std::string_view() : lines[0];
  std::size_t sp1 = first.find(' ');
  std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : first.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || first.find(' ', sp2 + 1) != std::string_view::npos)
    return fail(400, "bad request\n");
  Request r;
  r.method = std::string(first.substr(0, sp1));
  std::string_view target = first.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = first.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return fail(400, "bad request\n");
  if (target.empty() || target[0] != '/') return fail(400, "bad request\n");
  r.path = std::string(target.substr(0, target.find('?')));
  r.keep_alive = version == "HTTP/1.1";
  bool body = false;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::size_t colon = lines[i].find(':');
    if (colon == std::string_view::npos || colon == 0) return fail(400, "bad request\n");
    std::string name = Lower(std::string(lines[i].substr(0, colon)));
    std::string value = Trim(lines[i].substr(colon + 1));
    if (name == "authorization") {
      r.authorization = value;
    } else if (name == "connection") {
      std::string v = Lower(value);
      if (v.find("close") != std::string::npos) r.keep_alive = false;
      if (v.find("keep-alive") != std::string::npos && version == "HTTP/1.0") r.keep_alive = true;
    } else if (name == "transfer-encoding" || (name == "content-length" && value != "0")) {
      body = true;
    }
  }
  r.head = r.method == "HEAD";
  if (r.method != "GET" && !r.head) {
    error->status = 405;
    error->body = "method not allowed\n";
    error->allow_header = true;
    return std::nullopt;
  }
  // GET and HEAD carry no body here; one that comes anyway is not read.
  if (body) return fail(400, "a request body is not accepted\n");
  return r;
}

// Runs a handler so that whatever it throws becomes a 500 and a log line, never a dead
// worker thread or a terminated process.
template <typename Fn>
Response Guarded(const Request& req, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    spdlog::error("http {} {}: handler failed: {}", req.method, req.path, e.what());
  } catch (...) {
    spdlog::error("http {} {}: handler failed with a non-standard exception", req.method, req.path);
  }
  return Response{500, kText, "internal error\n", false};
}

Response Probe(const std::function<bool(std::string*)>& check, const char* failing) {
  std::string why;
  if (check(&why)) return Response{200, kText, "ok\n", false};
  if (why.empty()) why = failing;
  if (why.back() != '\n') why += '\n';
  return Response{503, kText, why, false};
}

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
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
    address->assign(ip).append(":").append(std::to_string(*port));
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

// A listening socket for `a`, or -1 with *error set. The kernel's full accept queue
// (SOMAXCONN): during a burst of connections the kernel queues a prober's connection
// instead of dropping its SYN (a retry a second later, too late for a 1 s probe), and the
// loop drains the queue at its own pace. SO_REUSEADDR so that a restarted
// daemon binds while old connections linger in TIME_WAIT, and deliberately not
// SO_REUSEPORT, which would let a second instance share the port instead of failing.
int Listen(const ListenAddress& a, std::string* error) {
  auto open_and_bind = [&](int family, const sockaddr* addr, socklen_t len) -> int {
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *error = std::strerror(errno);
      return -1;
    }
    int yes = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (family == AF_INET6) {
      // [::] alone (from ":PORT") also takes IPv4; an explicit IPv6 address only itself.
      int v6only = a.every_address ? 0 : 1;
      (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    }
    if (bind(fd, addr, len) != 0 || listen(fd, SOMAXCONN) != 0) {
      *error = std::strerror(errno);
      close(fd);
      return -1;
    }
    SetNonBlocking(fd);
    return fd;
  };
  if (a.every_address) {
    sockaddr_in6 any6{};
    any6.sin6_family = AF_INET6;
    any6.sin6_addr = in6addr_any;
    any6.sin6_port = htons(static_cast<std::uint16_t>(a.port));
    int fd = open_and_bind(AF_INET6, reinterpret_cast<sockaddr*>(&any6), sizeof any6);
    if (fd >= 0 || errno != EAFNOSUPPORT) return fd;
    sockaddr_in any4{};  // a host without IPv6
    any4.sin_family = AF_INET;
    any4.sin_addr.s_addr = htonl(INADDR_ANY);
    any4.sin_port = htons(static_cast<std::uint16_t>(a.port));
    return open_and_bind(AF_INET, reinterpret_cast<sockaddr*>(&any4), sizeof any4);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(a.host.c_str(), std::to_string(a.port).c_str(), &hints, &res);
  if (rc != 0) {
    *error = std::string("cannot resolve the host: ") + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next)
    fd = open_and_bind(ai->ai_family, ai->ai_addr, ai->ai_addrlen);
  freeaddrinfo(res);
  return fd;
}

enum class ConnState {
  kHandshaking,  // TLS: the handshake is under way
  kReading,      // waiting for (the rest of) a request head
  kHandling,     // a worker is answering it
  kWriting,      // the answer is being written
  kDraining,     // answered with "Connection: close": our side is shut, the client's read
                 // out, so that unread bytes of its request do not turn the close into a reset
};

struct Conn {
  int fd = -1;
  ConnState state = ConnState::kReading;
  std::string in;   // bytes read, not yet parsed
  std::string out;  // the response being written
  std::size_t sent = 0;
  Clock::time_point deadline;
  Clock::time_point waiting_since;  // start of the wait for the current request
  int served = 0;
  bool close_after = false;
  // The web configuration in force when the connection was accepted; never null.
  std::shared_ptr<const HttpSecurity> security;
  TlsSession tls;                  // empty for plain HTTP
  bool handshake_started = false;  // TLS: the client's first byte was a handshake record
  short want = 0;                  // TLS: the readiness OpenSSL waits for; 0: the state's
};

struct Job {
  std::uint64_t conn = 0;
  Request request;
  bool close = false;
  std::shared_ptr<const HttpSecurity> security;
  // The password to check (bcrypt) before answering; user and password empty otherwise.
  bool verify = false;
  std::string user, password;
};

// What a TLS client sends first: a record of content type handshake (RFC 8446, 5.1).
constexpr unsigned char kTlsHandshakeRecord = 0x16;

// The probes answer without credentials (http_server.h says why).
bool IsProbe(const std::string& path) {
  return path == "/livez" || path == "/readyz";
}

Response Unauthorized() {
  Response r{401, kText, "unauthorized\n", false};
  r.challenge = true;
  return r;
}

// The readiness a connection waits for before its next step.
short Events(const Conn& c) {
  if (c.want != 0 && c.state != ConnState::kDraining) return c.want;
  return c.state == ConnState::kWriting ? short{POLLOUT} : short{POLLIN};
}

// After a TLS call that could not finish: remembers the readiness it waits for. False when
// the connection is over (closed by the client, or failed).
bool Waits(Conn& c, TlsSession::Io io) {
  c.want = io == TlsSession::Io::kWantRead    ? short{POLLIN}
           : io == TlsSession::Io::kWantWrite ? short{POLLOUT}
                                              : short{0};
  return c.want != 0;
}

enum class Admission { kServe, kVerify, kRefuse };

// The workers that answer complete requests off the poll thread: a request's handler, after a
// password check (bcrypt) when it needs one, one check at a time, so that the other workers
// stay free for the probes. Each answer goes back to the poll thread (TakeDone), woken by
// `wake`.
class WorkerPool {
 public:
  // A connection's id, and its response's bytes and whether the connection closes after.
  using Done = std::pair<std::uint64_t, std::pair<std::string, bool>>;

  // `handlers` answer the requests; `unauthorized` counts the passwords refused.
  WorkerPool(const HealthAndMetricsHandlers* handlers, std::atomic<std::uint64_t>* unauthorized,
             std::function<void()> wake)
      : handlers_(*handlers), unauthorized_(*unauthorized), wake_(std::move(wake)) {}

  void Start(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Worker(); });
  }
  // Handlers already running finish (they read the daemon's state); none starts.
  void Stop() {
    {
      std::lock_guard lock(jobs_mu_);
      stop_ = true;
      jobs_.clear();
    }
    jobs_cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  void Serve(Job job) {
    {
      std::lock_guard lock(jobs_mu_);
      jobs_.push_back(std::move(job));
    }
    jobs_cv_.notify_one();
  }
  // Queues `job` for its password check; false, and the password erased, when
  // kMaxWaitingVerifications already wait.
  bool Verify(Job* job) {
    {
      std::lock_guard lock(jobs_mu_);
      if (verifications_.size() >= kMaxWaitingVerifications) {
        BasicAuth::Erase(&job->password);
        return false;
      }
      verifications_.push_back(std::move(*job));
    }
    jobs_cv_.notify_one();
    return true;
  }

  // The answers finished since the last call.
  std::vector<Done> TakeDone() {
    std::vector<Done> finished;
    std::lock_guard lock(done_mu_);
    finished.swap(done_);
    return finished;
  }

 private:
  Response Route(const Request& req) {
    if (req.path == "/") return Response{200, kHtml, LandingPage(), false};
    if (req.path == "/metrics" && handlers_.metrics)
      return Guarded(req, [&] { return Response{200, kExposition, handlers_.metrics(), false}; });
    if (req.path == "/livez" && handlers_.live)
      return Guarded(req, [&] { return Probe(handlers_.live, "not live"); });
    if (req.path == "/readyz" && handlers_.ready)
      return Guarded(req, [&] { return Probe(handlers_.ready, "not ready"); });
    return Response{404, kText, "not found\n", false};
  }

  // The next job: a request to answer first; a password to check only while no other
  // worker checks one, so that the others stay free for the probes. False at Stop.
  bool NextJob(Job* job) {
    std::unique_lock lock(jobs_mu_);
    jobs_cv_.wait(
        lock, [&] { return stop_ || !jobs_.empty() || (!verifications_.empty() && !verifying_); });
    if (stop_) return false;
    std::deque<Job>& from = !jobs_.empty() ? jobs_ : verifications_;
    *job = std::move(from.front());
    from.pop_front();
    if (job->verify) verifying_ = true;
    return true;
  }

  // The answer to a request whose password is to be checked.
  Response VerifyThenRoute(Job& job) {
    const bool ok = job.security->auth->Verify(job.user, job.password);
    BasicAuth::Erase(&job.password);
    {
      std::lock_guard lock(jobs_mu_);
      verifying_ = false;
    }
    jobs_cv_.notify_all();
    if (ok) return Route(job.request);
    unauthorized_++;
    return Unauthorized();
  }

  void Worker() {
    Job job;
    while (NextJob(&job)) {
      Response response = job.verify ? VerifyThenRoute(job) : Route(job.request);
      std::string bytes =
          Serialize(response, job.request.head, job.close, HeaderLines(job.security.get()));
      {
        std::lock_guard lock(done_mu_);
        done_.emplace_back(job.conn, std::make_pair(std::move(bytes), job.close));
      }
      wake_();
    }
  }

  const HealthAndMetricsHandlers& handlers_;
  std::atomic<std::uint64_t>& unauthorized_;
  std::function<void()> wake_;
  std::mutex jobs_mu_;  // guards jobs_, verifications_, verifying_, stop_
  std::condition_variable jobs_cv_;
  std::deque<Job> jobs_;
  std::deque<Job> verifications_;  // requests whose password is to be checked first
  bool verifying_ = false;         // a worker is checking one
  bool stop_ = false;
  std::vector<std::thread> threads_;
  std::mutex done_mu_;  // guards done_
  std::vector<Done> done_;
};

}  // namespace

struct HealthAndMetricsServer::Impl {
  HealthAndMetricsHandlers handlers;
  HttpLimits limits;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::atomic<bool> stop{false};
  std::thread loop;

  std::mutex security_mu;  // guards security
  std::shared_ptr<const HttpSecurity> security = std::make_shared<const HttpSecurity>();

  std::atomic<std::uint64_t> accepted{0}, requests{0}, evicted{0}, refused{0}, timed_out{0},
      tls_failed{0}, unauthorized{0}, auth_busy{0};

  WorkerPool pool{&handlers, &unauthorized, [this] { Wake(); }};

  // The loop thread's own.
  std::map<std::uint64_t, Conn> conns;
  std::uint64_t next_id = 1;

  ~Impl() {
    for (int fd : {listen_fd, wake[0], wake[1]})
      if (fd >= 0) close(fd);
  }

  void Wake() {
    char b = 1;
    (void)!write(wake[1], &b, 1);
  }

  std::shared_ptr<const HttpSecurity> Security() {
    std::lock_guard lock(security_mu);
    return security;
  }

  void Close(std::map<std::uint64_t, Conn>::iterator it) {
    close(it->second.fd);
    conns.erase(it);
  }

  void Respond(Conn& c, std::string bytes, bool close_after, Clock::time_point now) {
    c.out = std::move(bytes);
    c.sent = 0;
    c.close_after = close_after;
    c.state = ConnState::kWriting;
    c.deadline = now + limits.write_deadline;
  }

  // Takes the next complete request out of c.in, if there is one, and answers it or hands
  // it to a worker. Returns false if the connection is to be closed at once.
  bool TryRequest(std::uint64_t id, Conn& c, Clock::time_point now) {
    std::size_t end = c.in.find("\r\n\r\n");
    std::size_t skip = 4;
    if (std::size_t lf = c.in.find("\n\n"); lf != std::string::npos && lf < end) {
      end = lf;
      skip = 2;
    }
    const std::string extra = HeaderLines(c.security.get());
    if (end == std::string::npos) {
      if (c.in.size() > limits.max_request_bytes) {
        Respond(c,
                Serialize(Response{431, kText, "request too large\n", false}, false, true, extra),
                true, now);
      }
      return true;
    }
    std::string head = c.in.substr(0, end);
    c.in.erase(0, end + skip);
    requests++;
    Response error;
    std::optional<Request> req = ParseHead(head, &error);
    if (!req) {
      // Whatever follows may be a body or garbage: answered, then closed.
      Respond(c, Serialize(error, false, true, extra), true, now);
      return true;
    }
    const bool close_after = !req->keep_alive || c.served + 1 >= limits.max_requests_per_connection;
    const bool head_only = req->head;
    Job job;
    job.conn = id;
    job.request = std::move(*req);
    job.close = close_after;
    job.security = c.security;
    Response refusal;
    Admission admission = Admit(&job, &refusal);
    if (admission == Admission::kVerify && !pool.Verify(&job)) {
      admission = Admission::kRefuse;
      refusal = Response{503, kText, "busy checking credentials; retry\n", false};
      refusal.retry_after = true;
      auth_busy++;
    } else if (admission == Admission::kServe) {
      pool.Serve(std::move(job));
    }
    if (admission == Admission::kRefuse) {
      Respond(c, Serialize(refusal, head_only, close_after, extra), close_after, now);
      return true;
    }
    c.state = ConnState::kHandling;
    return true;
  }

  // Whether `job` needs credentials and has them: served at once (none needed, or verified
  // before), after a password check (kVerify: job->user and job->password set), or refused
  // with *refusal (401) by the poll thread, which never runs bcrypt.
  Admission Admit(Job* job, Response* refusal) {
    BasicAuth* auth = job->security->auth.get();
    if (auth == nullptr || IsProbe(job->request.path)) return Admission::kServe;
    std::string user, password;
    const bool given = BasicAuth::ParseHeader(job->request.authorization, &user, &password);
    BasicAuth::Erase(&job->request.authorization);
    if (!given) {
      unauthorized++;
      *refusal = Unauthorized();
      return Admission::kRefuse;
    }
    if (auth->Cached(user, password)) {
      BasicAuth::Erase(&password);
      return Admission::kServe;
    }
    job->verify = true;
    job->user = std::move(user);
    job->password = std::move(password);
    return Admission::kVerify;
  }

  // Reads what the client sent (through TLS when the connection has it); false when it
  // closed or failed.
  bool ReadFrom(Conn& c) {
    char buf[4096];
    c.want = 0;
    while (c.in.size() <= limits.max_request_bytes) {
      std::size_t got = 0;
      if (c.tls) {
        const TlsSession::Io io = c.tls.Read(buf, sizeof buf, &got);
        if (io != TlsSession::Io::kDone) return Waits(c, io);
      } else {
        ssize_t n = recv(c.fd, buf, sizeof buf, 0);
        if (n == 0) return false;
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        got = static_cast<std::size_t>(n);
      }
      c.in.append(buf, got);
    }
    return true;
  }

  // Writes what it can; false when the client went away.
  bool WriteTo(Conn& c) {
    c.want = 0;
    while (c.sent < c.out.size()) {
      std::size_t put = 0;
      if (c.tls) {
        const TlsSession::Io io = c.tls.Write(c.out.data() + c.sent, c.out.size() - c.sent, &put);
        if (io != TlsSession::Io::kDone) return Waits(c, io);
      } else {
        ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n <= 0) return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
        put = static_cast<std::size_t>(n);
      }
      c.sent += put;
    }
    return true;
  }

  // Drives the TLS handshake of `c` as far as the socket allows, then reads the request if
  // it came along; false when the connection is to be closed. A client speaking plain HTTP
  // is told so in plain HTTP, and closed.
  bool Handshake(std::uint64_t id, Conn& c, Clock::time_point now) {
    if (!c.handshake_started) {
      unsigned char first = 0;
      ssize_t n = recv(c.fd, &first, 1, MSG_PEEK);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      if (first != kTlsHandshakeRecord) {
        static const std::string kPlainHttp =
            "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Connection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
        tls_failed++;
        c.tls = TlsSession();  // the answer goes out in plain text
        Respond(c, kPlainHttp, true, now);
        return true;
      }
      c.handshake_started = true;
    }
    std::string error;
    const TlsSession::Io io = c.tls.Handshake(&error);
    if (io == TlsSession::Io::kDone) {
      c.state = ConnState::kReading;
      return ReadFrom(c) && TryRequest(id, c, now);
    }
    if (io == TlsSession::Io::kWantRead || io == TlsSession::Io::kWantWrite) return Waits(c, io);
    tls_failed++;
    // Debug only: a scanner's every attempt would otherwise be a warning.
    spdlog::debug("http: a TLS handshake failed: {}", error);
    return false;
  }

  // Makes room for one more connection when every slot is taken: closes the connection that
  // has waited longest for a request that never came whole (a slow or idle client, or one
  // that never finished its handshake), never one being answered. False when there is
  // none: every connection is being answered.
  bool MakeRoom() {
    if (static_cast<int>(conns.size()) < limits.max_connections) return true;
    auto oldest = conns.end();
    for (auto it = conns.begin(); it != conns.end(); ++it) {
      const ConnState st = it->second.state;
      if ((st == ConnState::kReading || st == ConnState::kDraining ||
           st == ConnState::kHandshaking) &&
          (oldest == conns.end() || it->second.waiting_since < oldest->second.waiting_since))
        oldest = it;
    }
    if (oldest == conns.end()) return false;
    evicted++;
    Close(oldest);
    spdlog::warn(
        "http: the connection limit ({}) is reached: the connection waiting longest for a "
        "request is closed to make room",
        limits.max_connections);
    return true;
  }

  void Accept(Clock::time_point now) {
    for (int i = 0; i < kAcceptsPerTurn; ++i) {
      int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      accepted++;
      if (!MakeRoom()) {
        refused++;
        // Plain text even on a TLS listener: the client is not worth a handshake now.
        static const std::string kBusy =
            Serialize(Response{503, kText, "busy\n", false}, false, true);
        (void)!send(fd, kBusy.data(), kBusy.size(), MSG_NOSIGNAL);
        close(fd);
        spdlog::warn("http: a connection was refused: all {} are being answered",
                     limits.max_connections);
        continue;
      }
      std::uint64_t id = next_id++;
      Conn& c = conns[id];
      c.fd = fd;
      c.waiting_since = now;
      // The handshake, when there is one, counts against the request's deadline.
      c.deadline = now + limits.request_deadline;
      c.security = Security();
      if (c.security->tls) {
        c.tls = TlsSession(*c.security->tls, fd);
        c.state = ConnState::kHandshaking;
        if (!c.tls || !Handshake(id, c, now)) Close(conns.find(id));
        continue;
      }
      // A prober's request is usually there already: answered before anything can evict it.
      if (!ReadFrom(c) || !TryRequest(id, c, now)) Close(conns.find(id));
    }
  }

  void Loop() {
    // OpenSSL writes to its sockets with write(), which raises SIGPIPE when the client has
    // gone; blocked in this thread, the only one writing to clients, it fails with EPIPE.
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
    std::vector<pollfd> fds;
    std::vector<std::uint64_t> ids;
    while (!stop.load()) {
      auto now = Clock::now();
      fds.clear();
      ids.clear();
      fds.push_back({listen_fd, POLLIN, 0});
      fds.push_back({wake[0], POLLIN, 0});
      auto next = now + std::chrono::seconds(1);
      for (auto& [id, c] : conns) {
        if (c.state == ConnState::kHandling) continue;  // nothing to do until the worker ends
        fds.push_back({c.fd, Events(c), 0});
        ids.push_back(id);
        next = std::min(next, c.deadline);
      }
      int timeout = static_cast<int>(std::max<std::int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1));
      if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
        spdlog::error("http: poll failed: {}; health endpoints are down", std::strerror(errno));
        break;
      }
      if (stop.load()) break;
      now = Clock::now();
      if (fds[1].revents != 0) {
        char buf[256];
        while (read(wake[0], buf, sizeof buf) > 0) {
        }
      }
      SendHandled(now);
      for (std::size_t k = 2; k < fds.size(); ++k) {
        if (fds[k].revents == 0) continue;
        auto it = conns.find(ids[k - 2]);
        if (it == conns.end()) continue;  // evicted or answered meanwhile
        OnReady(it, now);
      }
      if (fds[0].revents & POLLIN) Accept(now);
      CloseExpired(now);
    }
    for (auto& [id, c] : conns) close(c.fd);
    conns.clear();
  }

  // Starts sending the responses the workers have finished.
  void SendHandled(Clock::time_point now) {
    for (auto& [id, response] : pool.TakeDone()) {
      auto it = conns.find(id);
      if (it == conns.end() || it->second.state != ConnState::kHandling) continue;
      Respond(it->second, std::move(response.first), response.second, now);
      if (!WriteTo(it->second))
        Close(it);
      else if (it->second.sent == it->second.out.size())
        Finished(it, now);
    }
  }

  // The connection `it` polled ready: read, answer or write what it can.
  void OnReady(std::map<std::uint64_t, Conn>::iterator it, Clock::time_point now) {
    Conn& c = it->second;
    if (c.state == ConnState::kDraining) {
      char buf[4096];
      ssize_t n;
      while ((n = recv(c.fd, buf, sizeof buf, 0)) > 0) {
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) Close(it);
      return;
    }
    if (c.state == ConnState::kHandshaking) {
      if (!Handshake(it->first, c, now)) return Close(it);
      if (c.state == ConnState::kWriting && !WriteTo(c)) return Close(it);
    } else if (c.state == ConnState::kReading) {
      if (!ReadFrom(c)) return Close(it);
      TryRequest(it->first, c, now);
      if (c.state == ConnState::kWriting && !WriteTo(c)) return Close(it);
    } else if (c.state == ConnState::kWriting) {
      if (!WriteTo(c)) return Close(it);
    }
    if (c.state == ConnState::kWriting && c.sent == c.out.size()) Finished(it, now);
  }

  // Closes the connections past their deadline (but those a worker is answering).
  void CloseExpired(Clock::time_point now) {
    for (auto it = conns.begin(); it != conns.end();) {
      auto next_it = std::next(it);
      if (it->second.state != ConnState::kHandling && now >= it->second.deadline) {
        if (it->second.state != ConnState::kDraining) timed_out++;
        Close(it);
      }
      it = next_it;
    }
  }

  // A response went out whole: close, or wait for the next request of the connection.
  void Finished(std::map<std::uint64_t, Conn>::iterator it, Clock::time_point now) {
    Conn& c = it->second;
    if (c.close_after) {
      c.tls.Shutdown();  // close_notify, if the socket takes it now
      (void)shutdown(c.fd, SHUT_WR);
      c.state = ConnState::kDraining;
      c.in.clear();
      c.waiting_since = now;
      c.deadline = now + std::chrono::milliseconds(500);
      return;
    }
    c.served++;
    c.out.clear();
    c.sent = 0;
    c.state = ConnState::kReading;
    c.waiting_since = now;
    c.deadline = now + limits.request_deadline;
    TryRequest(it->first, c, now);  // pipelined: the next one may be there already
    if (c.state == ConnState::kWriting && WriteTo(c) && c.sent == c.out.size()) Finished(it, now);
  }
};

Status LoadHttpSecurity(const std::string& path, HttpSecurity* out) {
  WebConfig web;
  if (Status s = ParseWebConfig(path, &web); !s.ok()) return s;
  HttpSecurity security;
  security.source = path;
  security.headers = web.headers;
  if (web.tls.enabled()) {
    if (Status s = TlsContext::Load(web.tls, &security.tls); !s.ok())
      return Status::InvalidArgument(path + ": " + s.message());
  }
  if (!web.users.empty()) security.auth = std::make_shared<BasicAuth>(std::move(web.users));
  *out = std::move(security);
  return Status::Ok();
}

HealthAndMetricsServer::HealthAndMetricsServer() = default;

HealthAndMetricsServer::~HealthAndMetricsServer() {
  Stop();
}

HttpCounters HealthAndMetricsServer::counters() const {
  if (!impl_) return {};
  return HttpCounters{impl_->accepted.load(),     impl_->requests.load(),  impl_->evicted.load(),
                      impl_->refused.load(),      impl_->timed_out.load(), impl_->tls_failed.load(),
                      impl_->unauthorized.load(), impl_->auth_busy.load()};
}

void HealthAndMetricsServer::SetSecurity(HttpSecurity security) {
  if (impl_ == nullptr) return;
  auto next = std::make_shared<const HttpSecurity>(std::move(security));
  std::lock_guard lock(impl_->security_mu);
  impl_->security = std::move(next);
}

Status HealthAndMetricsServer::Start(const std::string& listen, HealthAndMetricsHandlers handlers,
                                     HttpLimits limits, HttpSecurity security) {
  if (impl_ != nullptr)
    throw std::logic_error("HealthAndMetricsServer::Start while already serving on " + address_);
  ListenAddress a;
  if (Status s = ParseListenAddress(listen, &a); !s.ok())
    return Status::InvalidArgument("http " + s.message());

  auto impl = std::make_unique<Impl>();
  impl->handlers = std::move(handlers);
  impl->limits = limits;
  impl->security = std::make_shared<const HttpSecurity>(std::move(security));
  std::string error;
  impl->listen_fd = Listen(a, &error);
  if (impl->listen_fd < 0)
    return Status::Unavailable("http: cannot listen on " + listen + ": " + error);
  if (pipe2(impl->wake, O_CLOEXEC | O_NONBLOCK) != 0)
    return Status::Unavailable(std::string("http: cannot create a pipe: ") + std::strerror(errno));
  std::string address;
  int bound_port = 0;
  if (!BoundAddress(impl->listen_fd, &address, &bound_port)) {
    address = listen;  // the kernel always knows; this is only a fallback
    bound_port = a.port;
  }
  Impl* raw = impl.get();
  // At least two: one stays free for the probes while another checks a password.
  impl->pool.Start(std::max(2, limits.workers));
  impl->loop = std::thread([raw] { raw->Loop(); });
  impl_ = std::move(impl);
  address_ = std::move(address);
  port_ = bound_port;
  return Status::Ok();
}

void HealthAndMetricsServer::Stop() {
  if (impl_ == nullptr) return;
  impl_->stop = true;
  impl_->Wake();
  if (impl_->loop.joinable()) impl_->loop.join();  // closes every connection
  impl_->pool.Stop();
  impl_.reset();
  port_ = 0;
  address_.clear();
}

}  // namespace txn_recovery::daemon
