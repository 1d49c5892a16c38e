#include "support/wire/forwarder.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <utility>

#include "support/wire/little_endian.h"
#include "support/wire/message.h"

namespace txn_recovery::testing {

// ---- URIs --------------------------------------------------------------------------------

std::optional<MongoUriParts> SplitMongoUri(const std::string& uri) {
  const std::string scheme = "mongodb://";
  if (uri.rfind(scheme, 0) != 0) return std::nullopt;
  const std::string rest = uri.substr(scheme.size());
  const std::size_t slash = rest.find_first_of("/?");
  std::string authority = rest.substr(0, slash);
  const std::string tail = slash == std::string::npos ? "" : rest.substr(slash);
  MongoUriParts parts;
  if (std::size_t at = authority.rfind('@'); at != std::string::npos) {
    parts.userinfo = authority.substr(0, at + 1);
    authority = authority.substr(at + 1);
  }
  parts.several_hosts = authority.find(',') != std::string::npos;
  std::string first = authority.substr(0, authority.find(','));
  if (std::size_t colon = first.rfind(':');
      colon != std::string::npos && first.find(']', colon) == std::string::npos) {
    const std::string port = first.substr(colon + 1);
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), parts.port);
    if (ec != std::errc() || end != port.data() + port.size() || port.empty()) return std::nullopt;
    first = first.substr(0, colon);
  }
  if (first.size() >= 2 && first.front() == '[') first = first.substr(1, first.size() - 2);
  parts.host = first;
  const std::size_t q = tail.find('?');
  if (!tail.empty() && tail.front() == '/') parts.database = tail.substr(1, q == 0 ? 0 : q - 1);
  if (q != std::string::npos) {
    const std::string opts = tail.substr(q + 1);
    for (std::size_t start = 0; start <= opts.size();) {
      const std::size_t amp = opts.find('&', start);
      const std::string opt = opts.substr(start, amp == std::string::npos ? amp : amp - start);
      std::string lower;
      for (char c : opt) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!opt.empty() && lower.rfind("replicaset=", 0) != 0 &&
          lower.rfind("directconnection=", 0) != 0)
        parts.options += (parts.options.empty() ? "" : "&") + opt;
      if (amp == std::string::npos) break;
      start = amp + 1;
    }
  }
  return parts;
}

std::string ForwardedUri(const MongoUriParts& server, int port) {
  std::string options = "directConnection=true";
  if (!server.options.empty()) options += "&" + server.options;
  return "mongodb://" + server.userinfo + "127.0.0.1:" + std::to_string(port) + "/" +
         server.database + "?" + options;
}

// ---- The forwarder -----------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;
using Then = WireForwarder::ReplyVerdict::Then;

// Per direction: beyond it, the sending side is no longer read (its peer is slower).
constexpr std::size_t kMaxBuffered = 1 << 20;
// Requests never answered (fire-and-forget writes) are forgotten past this many.
constexpr std::size_t kMaxNotes = 10000;

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int ConnectTo(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd >= 0) {
    NoDelay(fd);
    SetNonBlocking(fd);
  }
  return fd;
}

struct Chunk {
  std::string bytes;
  std::size_t sent = 0;
  Clock::time_point not_before;
  Then then = Then::kContinue;
};

struct Side {
  int fd = -1;
  std::string in;         // read, not yet a whole message (framed) or not yet moved (raw)
  std::deque<Chunk> out;  // to write to this side, in order
  std::size_t out_bytes = 0;

  bool Ready(Clock::time_point now) const { return !out.empty() && out.front().not_before <= now; }
  // False when the peer closed or failed.
  bool Read() {
    char chunk[16384];
    for (std::size_t got = 0; got < kMaxBuffered;) {
      ssize_t n = recv(fd, chunk, sizeof chunk, 0);
      if (n > 0) {
        in.append(chunk, static_cast<std::size_t>(n));
        got += static_cast<std::size_t>(n);
        continue;
      }
      if (n == 0) return false;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    return true;
  }
  void Enqueue(std::string bytes, Clock::time_point not_before, Then then, bool merge) {
    out_bytes += bytes.size();
    if (merge && !out.empty() && out.back().then == Then::kContinue &&
        out.back().not_before <= not_before) {
      out.back().bytes += bytes;
      return;
    }
    out.push_back(Chunk{std::move(bytes), 0, not_before, then});
  }
};

}  // namespace

struct WireForwarder::Conn {
  Side client, server;
  bool stalled = false;                    // by Stall(): nothing moves either way
  bool replies_ended = false;              // a reply that ends them is queued: read no more replies
  bool replies_stalled = false;            // that reply was kStallReplies and is sent
  std::map<std::int32_t, std::any> notes;  // by requestID

  bool open() const { return client.fd >= 0; }
  void Close(bool reset) {
    for (int* fd : {&client.fd, &server.fd}) {
      if (*fd < 0) continue;
      if (reset) {
        // Linger 0: close() sends RST instead of FIN, as a crashed middlebox or server does.
        linger l{1, 0};
        setsockopt(*fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      } else {
        shutdown(*fd, SHUT_RDWR);
      }
      close(*fd);
      *fd = -1;
    }
  }
  // Writes what is due to `to`; false when the connection must end (a failed write, or a
  // reply that closes it).
  bool Flush(Side& to, Clock::time_point now) {
    if (&to == &client && replies_stalled) return true;
    while (to.Ready(now)) {
      Chunk& ch = to.out.front();
      while (ch.sent < ch.bytes.size()) {
        ssize_t n = send(to.fd, ch.bytes.data() + ch.sent, ch.bytes.size() - ch.sent, MSG_NOSIGNAL);
        if (n > 0) {
          ch.sent += static_cast<std::size_t>(n);
        } else if (n < 0 && errno == EINTR) {
          continue;
        } else {
          return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        }
      }
      const Then then = ch.then;
      to.out_bytes -= ch.bytes.size();
      to.out.pop_front();
      if (then == Then::kClose) return false;
      if (then == Then::kStallReplies) {
        replies_stalled = true;
        return true;
      }
    }
    return true;
  }
};

std::unique_ptr<WireForwarder> WireForwarder::Start(const std::string& host, int port, Hooks hooks,
                                                    std::string* error) {
  std::unique_ptr<WireForwarder> p(new WireForwarder());
  p->host_ = host;
  p->target_port_ = port;
  p->framed_ = hooks.on_request || hooks.on_reply;
  p->hooks_ = std::move(hooks);
  p->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(p->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (p->listen_fd_ < 0 || bind(p->listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(p->listen_fd_, 128) != 0 ||
      getsockname(p->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      pipe2(p->wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    *error = std::string("cannot listen: ") + std::strerror(errno);
    return nullptr;
  }
  SetNonBlocking(p->listen_fd_);
  p->port_ = ntohs(addr.sin_port);
  p->thread_ = std::thread([raw = p.get()] { raw->Loop(); });
  return p;
}

WireForwarder::~WireForwarder() {
  stop_ = true;
  Wake();
  if (thread_.joinable()) thread_.join();
  for (auto& c : conns_) c->Close(false);
  if (listen_fd_ >= 0) close(listen_fd_);
  for (int fd : wake_)
    if (fd >= 0) close(fd);
}

void WireForwarder::Wake() {
  char b = 1;
  (void)!write(wake_[1], &b, 1);
}

int WireForwarder::Apply(Op op, double fraction, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution pick(fraction);
  int n = 0;
  {
    std::lock_guard lock(mu_);
    for (auto& c : conns_) {
      if (!c->open()) continue;
      if (fraction < 1 && !pick(rng)) continue;
      ++n;
      if (op == Op::kStall) {
        c->stalled = true;
      } else {
        c->Close(op == Op::kReset);
      }
    }
  }
  Wake();
  return n;
}

int WireForwarder::Drop(double fraction, std::uint64_t seed) {
  return Apply(Op::kDrop, fraction, seed);
}
int WireForwarder::Reset(double fraction, std::uint64_t seed) {
  return Apply(Op::kReset, fraction, seed);
}
int WireForwarder::Stall(double fraction, std::uint64_t seed) {
  return Apply(Op::kStall, fraction, seed);
}

void WireForwarder::Unstall() {
  {
    std::lock_guard lock(mu_);
    for (auto& c : conns_) c->stalled = false;
  }
  Wake();
}

void WireForwarder::Refuse(bool on) {
  refuse_ = on;
}

// Moves what the client (or the server) sent toward the other side: as it is, or whole
// message by whole message through the hooks. Closes the connection when the stream is not
// the wire protocol (a length no message has), as a server would.
void WireForwarder::Frame(Conn& c, bool from_client) {
  Side& from = from_client ? c.client : c.server;
  Side& to = from_client ? c.server : c.client;
  const Clock::time_point now = Clock::now();
  if (!framed_) {
    to.Enqueue(std::move(from.in), now, Then::kContinue, true);
    from.in.clear();
    return;
  }
  std::size_t at = 0;
  while (from.in.size() - at >= kMessageHeaderSize && (from_client || !c.replies_ended)) {
    const std::int32_t length = GetInt32(from.in, at);
    if (length < static_cast<std::int32_t>(kMessageHeaderSize) ||
        static_cast<std::size_t>(length) > kMaxMessageSize) {
      c.Close(false);
      return;
    }
    if (from.in.size() - at < static_cast<std::size_t>(length)) break;
    std::string message = from.in.substr(at, static_cast<std::size_t>(length));
    at += static_cast<std::size_t>(length);
    const MessageHeader h = *ReadHeader(message);
    if (from_client) {
      if (c.notes.size() > kMaxNotes) c.notes.clear();
      c.notes[h.request_id] = hooks_.on_request ? hooks_.on_request(message) : std::any();
      to.Enqueue(std::move(message), now, Then::kContinue, false);
      continue;
    }
    auto parsed = h.op_code == kOpMsg ? ParseOpMsg(message) : std::nullopt;
    const bool more_to_come = parsed && (parsed->flags & kMoreToCome);
    auto it = c.notes.find(h.response_to);
    std::any none;
    ReplyVerdict v;
    if (hooks_.on_reply) v = hooks_.on_reply(&message, it != c.notes.end() ? &it->second : &none);
    if (it != c.notes.end() && !more_to_come) c.notes.erase(it);
    if (v.then != Then::kContinue) c.replies_ended = true;
    to.Enqueue(std::move(message), now + v.delay, v.then, false);
  }
  from.in.erase(0, at);
}

void WireForwarder::Pump(Conn& c, Clock::time_point now) {
  if (c.open() && !c.Flush(c.server, now)) c.Close(false);
  if (c.open() && !c.Flush(c.client, now)) c.Close(false);
}

void WireForwarder::Accept() {
  while (true) {
    int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) break;
    accepted_++;
    if (refuse_) {
      close(client);
      continue;
    }
    // A server that cannot be reached: the client sees its connection closed, as it would
    // see a refused one.
    int server = ConnectTo(host_, target_port_);
    if (server < 0) {
      close(client);
      continue;
    }
    NoDelay(client);
    auto c = std::make_unique<Conn>();
    c->client.fd = client;
    c->server.fd = server;
    conns_.push_back(std::move(c));
    open_++;
  }
}

void WireForwarder::Loop() {
  std::vector<pollfd> fds;
  std::vector<std::pair<std::size_t, bool>> owner;  // conn index, is client side
  while (!stop_) {
    fds.clear();
    owner.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    fds.push_back({wake_[0], POLLIN, 0});
    Clock::time_point now = Clock::now();
    Clock::time_point wake_at = now + std::chrono::milliseconds(100);
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < conns_.size(); ++i) {
        Conn& c = *conns_[i];
        if (!c.open() || c.stalled) continue;
        short client_events = 0, server_events = 0;
        if (c.server.out_bytes < kMaxBuffered) client_events |= POLLIN;
        if (c.client.out_bytes < kMaxBuffered && !c.replies_ended) server_events |= POLLIN;
        if (c.server.Ready(now)) server_events |= POLLOUT;
        if (c.client.Ready(now) && !c.replies_stalled) client_events |= POLLOUT;
        for (const Side* s : {&c.client, &c.server})
          if (!s->out.empty() && s->out.front().not_before > now)
            wake_at = std::min(wake_at, s->out.front().not_before);
        fds.push_back({c.client.fd, client_events, 0});
        owner.emplace_back(i, true);
        fds.push_back({c.server.fd, server_events, 0});
        owner.emplace_back(i, false);
      }
    }
    const auto timeout =
        std::chrono::ceil<std::chrono::milliseconds>(std::max(wake_at - now, Clock::duration(0)));
    if (poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) < 0 && errno != EINTR)
      break;
    if (fds[1].revents) {
      char buf[64];
      while (read(wake_[0], buf, sizeof buf) > 0) {
      }
    }
    std::lock_guard lock(mu_);
    for (std::size_t k = 2; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Conn& c = *conns_[owner[k - 2].first];
      // A command may have closed or stalled it while we polled.
      if (!c.open() || c.stalled) continue;
      const bool client_side = owner[k - 2].second;
      Side& side = client_side ? c.client : c.server;
      const bool alive = side.Read();
      Frame(c, client_side);
      if (!alive && c.open()) {
        // One side went away: pass on what it said last, then the close, as a direct
        // connection would show it.
        Pump(c, Clock::now());
        c.Close(false);
      }
    }
    now = Clock::now();
    for (auto& c : conns_)
      if (c->open() && !c->stalled) Pump(*c, now);
    // Forget closed connections (commands close them too).
    std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) { return !c->open(); });
    open_ = static_cast<int>(conns_.size());

    if (fds[0].revents & POLLIN) Accept();
  }
}

}  // namespace txn_recovery::testing
