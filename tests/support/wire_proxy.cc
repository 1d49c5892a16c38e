#include "support/wire_proxy.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "support/wire/little_endian.h"

namespace txn_recovery::testing {

// ---- The proxy ---------------------------------------------------------------------------

namespace {

constexpr std::int32_t kOpReply = 1;
constexpr std::int32_t kOpQuery = 2004;
constexpr std::int32_t kOpMsg = 2013;
constexpr std::size_t kMaxMessage = 64u << 20;

bool ReadFull(int fd, char* buf, std::size_t n) {
  while (n > 0) {
    ssize_t got = recv(fd, buf, n, 0);
    if (got > 0) {
      buf += got;
      n -= static_cast<std::size_t>(got);
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

bool WriteFull(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t sent = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent > 0) {
      data.remove_prefix(static_cast<std::size_t>(sent));
    } else if (sent < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

// One whole message (header included), or nullopt when the peer closed or sent garbage.
std::optional<std::string> ReadMessage(int fd) {
  char header[16];
  if (!ReadFull(fd, header, sizeof header)) return std::nullopt;
  std::int32_t length = GetInt32(std::string_view(header, 16), 0);
  if (length < 16 || static_cast<std::size_t>(length) > kMaxMessage) return std::nullopt;
  std::string message(header, sizeof header);
  message.resize(static_cast<std::size_t>(length));
  if (!ReadFull(fd, message.data() + 16, message.size() - 16)) return std::nullopt;
  return message;
}

std::string DocumentAt(std::string_view s, std::size_t at) {
  if (at + 4 > s.size()) return {};
  std::int32_t n = GetInt32(s, at);
  if (n < 5 || at + static_cast<std::size_t>(n) > s.size()) return {};
  return std::string(s.substr(at, static_cast<std::size_t>(n)));
}

// Where an OP_MSG's body section (kind 0) starts, or npos.
std::size_t MsgBodyOffset(std::string_view m) {
  std::size_t at = 20;  // header, flagBits
  std::uint32_t flags = static_cast<std::uint32_t>(GetInt32(m, 16));
  std::size_t end = m.size() - ((flags & 1) ? 4 : 0);
  while (at < end) {
    char kind = m[at];
    if (kind == 0) return at + 1;
    if (kind != 1 || at + 5 > end) return std::string_view::npos;
    at += 1 + static_cast<std::size_t>(GetInt32(m, at + 1));
  }
  return std::string_view::npos;
}

}  // namespace

struct WireProxy::Conn {
  int client = -1, server = -1;
  std::atomic<bool> closed{false};
  std::mutex mu;
  std::map<std::int32_t, Request> requests;  // by requestID, guarded by mu

  void Shutdown() {
    closed = true;
    if (client >= 0) shutdown(client, SHUT_RDWR);
    if (server >= 0) shutdown(server, SHUT_RDWR);
  }
  ~Conn() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
};

std::unique_ptr<WireProxy> WireProxy::Start(const std::string& host, int port, std::string* error) {
  std::unique_ptr<WireProxy> p(new WireProxy());
  p->host_ = host;
  p->target_port_ = port;
  p->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(p->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (p->listen_fd_ < 0 || bind(p->listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(p->listen_fd_, 128) != 0 ||
      getsockname(p->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    *error = std::string("wire proxy: cannot listen: ") + std::strerror(errno);
    return nullptr;
  }
  p->port_ = ntohs(addr.sin_port);
  p->accept_thread_ = std::thread([raw = p.get()] { raw->AcceptLoop(); });
  return p;
}

namespace {

// The first host of a mongodb:// URI and the URI's parts around it.
struct UriParts {
  std::string userinfo;  // "user:pass@" or ""
  std::string host;
  int port = 27017;
  std::string options;  // after '?', without replicaSet / directConnection
};

std::optional<UriParts> SplitUri(const std::string& uri) {
  const std::string scheme = "mongodb://";
  if (uri.rfind(scheme, 0) != 0) return std::nullopt;
  std::string rest = uri.substr(scheme.size());
  std::size_t slash = rest.find_first_of("/?");
  std::string authority = rest.substr(0, slash);
  std::string tail = slash == std::string::npos ? "" : rest.substr(slash);
  UriParts parts;
  if (std::size_t at = authority.rfind('@'); at != std::string::npos) {
    parts.userinfo = authority.substr(0, at + 1);
    authority = authority.substr(at + 1);
  }
  std::string first = authority.substr(0, authority.find(','));
  std::size_t colon = first.rfind(':');
  if (colon != std::string::npos && first.find(']', colon) == std::string::npos) {
    parts.port = std::stoi(first.substr(colon + 1));
    first = first.substr(0, colon);
  }
  if (!first.empty() && first.front() == '[') first = first.substr(1, first.size() - 2);
  parts.host = first;
  if (std::size_t q = tail.find('?'); q != std::string::npos) {
    std::string opts = tail.substr(q + 1);
    std::size_t start = 0;
    while (start <= opts.size()) {
      std::size_t amp = opts.find('&', start);
      std::string opt = opts.substr(start, amp == std::string::npos ? amp : amp - start);
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

}  // namespace

std::unique_ptr<WireProxy> WireProxy::StartFor(const std::string& server_uri, std::string* error) {
  auto parts = SplitUri(server_uri);
  if (!parts) {
    *error = "wire proxy: needs a mongodb:// URI of a server speaking plain TCP";
    return nullptr;
  }
  return Start(parts->host, parts->port, error);
}

std::string WireProxy::Uri(const std::string& server_uri) const {
  auto parts = SplitUri(server_uri);
  std::string options = "directConnection=true";
  if (parts && !parts->options.empty()) options += "&" + parts->options;
  return "mongodb://" + (parts ? parts->userinfo : std::string()) +
         "127.0.0.1:" + std::to_string(port_) + "/?" + options;
}

WireProxy::~WireProxy() {
  stop_ = true;
  cv_.notify_all();
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    for (auto& c : conns_) c->Shutdown();
    threads = std::move(threads_);
  }
  for (auto& t : threads) t.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void WireProxy::SetRule(Rule rule) {
  std::lock_guard lock(rule_mu_);
  rule_ = std::move(rule);
}

bool WireProxy::Sleep(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stop_.load(); });
}

void WireProxy::AcceptLoop() {
  while (!stop_) {
    int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR) continue;
      return;
    }
    accepted_++;
    auto c = std::make_shared<Conn>();
    c->client = client;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host_.c_str(), std::to_string(target_port_).c_str(), &hints, &res) == 0) {
      for (addrinfo* a = res; a && c->server < 0; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          c->server = fd;
        } else {
          close(fd);
        }
      }
      freeaddrinfo(res);
    }
    if (c->server < 0) continue;  // c closes the client: as a refused connection looks
    int one = 1;
    setsockopt(c->client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard lock(mu_);
    if (stop_) return;
    std::erase_if(conns_, [](const std::shared_ptr<Conn>& old) { return old->closed.load(); });
    conns_.push_back(c);
    threads_.emplace_back([this, c] { ClientToServer(c); });
    threads_.emplace_back([this, c] { ServerToClient(c); });
  }
}

void WireProxy::ClientToServer(const std::shared_ptr<Conn>& c) {
  while (!stop_) {
    std::optional<std::string> m = ReadMessage(c->client);
    if (!m) break;
    std::int32_t request_id = GetInt32(*m, 4);
    std::int32_t op = GetInt32(*m, 12);
    Request r;
    std::string body;
    if (op == kOpMsg) {
      std::size_t at = MsgBodyOffset(*m);
      if (at != std::string_view::npos) body = DocumentAt(*m, at);
      if (!body.empty()) r.database = StringField(body, "$db").value_or("");
    } else if (op == kOpQuery && m->size() > 20) {
      std::size_t name_end = m->find('\0', 20);
      if (name_end != std::string::npos) {
        std::string ns = m->substr(20, name_end - 20);
        r.database = ns.substr(0, ns.find('.'));
        body = DocumentAt(*m, name_end + 1 + 8);
        // {$query: {...}, $readPreference: ...}: the command is inside.
        if (auto inner = FindElement(body, "$query"); inner && inner->type == kBsonDocument)
          body = inner->value;
      }
    }
    if (auto elements = body.empty() ? std::nullopt : ReadElements(body);
        elements && !elements->empty()) {
      r.command = elements->front().key;
      if (elements->front().type == kBsonString && elements->front().value.size() >= 5)
        r.collection = elements->front().value.substr(4, elements->front().value.size() - 5);
    }
    {
      std::lock_guard lock(c->mu);
      if (c->requests.size() > 10000) c->requests.clear();  // never answered: forget them
      c->requests[request_id] = std::move(r);
    }
    if (!WriteFull(c->server, *m)) break;
  }
  c->Shutdown();
}

void WireProxy::ServerToClient(const std::shared_ptr<Conn>& c) {
  while (!stop_) {
    std::optional<std::string> m = ReadMessage(c->server);
    if (!m) break;
    std::int32_t op = GetInt32(*m, 12);
    std::int32_t response_to = GetInt32(*m, 8);
    Reply reply;
    std::size_t body_at = std::string::npos;
    if (op == kOpMsg) {
      body_at = MsgBodyOffset(*m);
    } else if (op == kOpReply && m->size() >= 36 && GetInt32(*m, 32) >= 1) {
      body_at = 36;
    }
    if (body_at != std::string::npos) reply.body = DocumentAt(*m, body_at);
    if (reply.body.empty()) {
      if (!WriteFull(c->client, *m)) break;
      continue;
    }
    {
      std::lock_guard lock(c->mu);
      auto it = c->requests.find(response_to);
      if (it != c->requests.end()) {
        reply.command = it->second.command;
        reply.database = it->second.database;
        reply.collection = it->second.collection;
        // Streaming replies (moreToCome) answer the same request again: keep it.
        if (op != kOpMsg || (GetInt32(*m, 16) & 2) == 0) c->requests.erase(it);
      }
    }
    const std::string original = reply.body;
    Verdict verdict;
    {
      std::lock_guard lock(rule_mu_);
      if (rule_) verdict = rule_(&reply);
    }
    if (verdict.fate != Fate::kForward || reply.body != original) forged_++;
    std::string out = *m;
    if (reply.body != original) {
      // The same message around the new body; an OP_MSG checksum would no longer match, so
      // it goes (and its flag with it).
      std::string rebuilt = m->substr(0, body_at);
      std::size_t old_end = body_at + original.size();
      std::size_t end = m->size();
      if (op == kOpMsg) {
        std::uint32_t flags = static_cast<std::uint32_t>(GetInt32(*m, 16));
        if (flags & 1) end -= 4;
        flags &= ~1u;
        std::string f;
        PutInt32(&f, static_cast<std::int32_t>(flags));
        rebuilt.replace(16, 4, f);
      }
      rebuilt += reply.body;
      rebuilt += m->substr(old_end, end - old_end);
      std::string length;
      PutInt32(&length, static_cast<std::int32_t>(rebuilt.size()));
      rebuilt.replace(0, 4, length);
      out = std::move(rebuilt);
    }
    bool ok = true;
    switch (verdict.fate) {
      case Fate::kForward:
        ok = WriteFull(c->client, out);
        break;
      case Fate::kDelay:
        ok = Sleep(verdict.delay) && WriteFull(c->client, out);
        break;
      case Fate::kTruncateAndClose:
        (void)WriteFull(c->client, std::string_view(out).substr(0, out.size() / 2));
        ok = false;
        break;
      case Fate::kTruncateAndStall:
        (void)WriteFull(c->client, std::string_view(out).substr(0, out.size() / 2));
        // Nothing more until the client gives up (its socket timeout) or the proxy stops.
        while (!c->closed && Sleep(std::chrono::milliseconds(50))) {
        }
        ok = false;
        break;
      case Fate::kOversized: {
        std::string header = out.substr(0, 16);
        std::string length;
        PutInt32(&length, static_cast<std::int32_t>(kMaxMessage));
        header.replace(0, 4, length);
        (void)WriteFull(c->client, header + out.substr(16));
        ok = false;
        break;
      }
      case Fate::kClose:
        ok = false;
        break;
    }
    if (!ok) break;
  }
  c->Shutdown();
}

}  // namespace txn_recovery::testing
