#include "wire_counter.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "support/wire_proxy.h"

namespace txn_recovery::bench {

namespace {

constexpr std::int32_t kOpMsg = 2013;

std::uint32_t Le32(std::string_view s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i)
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

std::uint64_t Le64(std::string_view s) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
  return v;
}

// An integer field of a raw BSON document, 0 when absent or of another type.
std::int64_t IntField(std::string_view document, std::string_view key) {
  auto e = testing::FindElement(document, key);
  if (!e) return 0;
  if (e->type == testing::kBsonInt32 && e->value.size() == 4)
    return static_cast<std::int32_t>(Le32(e->value, 0));
  if (e->type == testing::kBsonInt64 && e->value.size() == 8)
    return static_cast<std::int64_t>(Le64(e->value));
  if (e->type == testing::kBsonDouble && e->value.size() == 8) {
    std::uint64_t u = Le64(e->value);
    double d = 0;
    std::memcpy(&d, &u, sizeof d);
    return static_cast<std::int64_t>(d);
  }
  return 0;
}

// An OP_MSG: its body, and how many documents each document sequence holds.
struct OpMsg {
  std::string_view body;
  std::map<std::string, std::int64_t> sequences;
};

std::optional<OpMsg> ParseOpMsg(std::string_view m) {
  if (m.size() < 21 || static_cast<std::int32_t>(Le32(m, 12)) != kOpMsg) return std::nullopt;
  const std::uint32_t flags = Le32(m, 16);
  const std::size_t end = m.size() - ((flags & 1u) ? 4 : 0);  // checksumPresent
  OpMsg msg;
  for (std::size_t pos = 20; pos < end;) {
    const char kind = m[pos++];
    if (pos + 4 > end) return std::nullopt;
    const std::size_t size = Le32(m, pos);
    if (size < 5 || pos + size > end) return std::nullopt;
    if (kind == 0) {
      msg.body = m.substr(pos, size);
    } else if (kind == 1) {
      std::size_t p = pos + 4;
      const std::size_t name_end = m.find('\0', p);
      if (name_end == std::string_view::npos || name_end >= pos + size) return std::nullopt;
      std::string name(m.substr(p, name_end - p));
      std::int64_t n = 0;
      for (p = name_end + 1; p + 4 <= pos + size; ++n) {
        const std::size_t len = Le32(m, p);
        if (len < 5 || p + len > pos + size) return std::nullopt;
        p += len;
      }
      msg.sequences[name] += n;
    } else {
      return std::nullopt;
    }
    pos += size;
  }
  if (msg.body.empty()) return std::nullopt;
  return msg;
}

bool ReadFull(int fd, char* buf, std::size_t n) {
  while (n > 0) {
    ssize_t got = recv(fd, buf, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buf += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool WriteFull(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t sent = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(sent));
  }
  return true;
}

// One whole wire message (header included), or nullopt at the end of the stream.
std::optional<std::string> ReadMessage(int fd) {
  char header[16];
  if (!ReadFull(fd, header, sizeof header)) return std::nullopt;
  const std::size_t length = Le32(std::string_view(header, sizeof header), 0);
  if (length < 16 || length > (64u << 20)) return std::nullopt;
  std::string message(header, sizeof header);
  message.resize(length);
  if (!ReadFull(fd, message.data() + 16, length - 16)) return std::nullopt;
  return message;
}

struct UriParts {
  std::string userinfo, host, options;
  int port = 27017;
};

std::optional<UriParts> SplitUri(const std::string& uri) {
  const std::string scheme = "mongodb://";
  if (uri.rfind(scheme, 0) != 0) return std::nullopt;
  const std::string rest = uri.substr(scheme.size());
  const std::size_t slash = rest.find_first_of("/?");
  std::string authority = rest.substr(0, slash);
  const std::string tail = slash == std::string::npos ? "" : rest.substr(slash);
  UriParts parts;
  if (std::size_t at = authority.rfind('@'); at != std::string::npos) {
    parts.userinfo = authority.substr(0, at + 1);
    authority = authority.substr(at + 1);
  }
  std::string first = authority.substr(0, authority.find(','));
  if (std::size_t colon = first.rfind(':');
      colon != std::string::npos && first.find(']', colon) == std::string::npos) {
    parts.port = std::stoi(first.substr(colon + 1));
    first = first.substr(0, colon);
  }
  if (!first.empty() && first.front() == '[') first = first.substr(1, first.size() - 2);
  parts.host = first;
  if (std::size_t q = tail.find('?'); q != std::string::npos) {
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

}  // namespace

struct WireCounter::Conn {
  int client = -1, server = -1;
  std::mutex mu;  // guards pending
  struct Request {
    std::string command, collection;
    std::int64_t statements = 0;  // > 0: an update or findAndModify
    std::chrono::steady_clock::time_point sent;
  };
  std::map<std::int32_t, Request> pending;  // by requestID
  void Shutdown() {
    shutdown(client, SHUT_RDWR);
    shutdown(server, SHUT_RDWR);
  }
  ~Conn() {
    close(client);
    close(server);
  }
};

std::int64_t WireCounter::Statements(const std::string& message, std::string* collection) {
  std::optional<OpMsg> msg = ParseOpMsg(message);
  if (!msg) return 0;
  auto elements = testing::ReadElements(msg->body);
  if (!elements || elements->empty()) return 0;
  const testing::BsonElement& command = elements->front();
  if (command.key != "update" && command.key != "findAndModify") return 0;
  if (auto name = testing::StringField(msg->body, command.key)) *collection = *name;
  if (command.key == "findAndModify") return 1;
  std::int64_t n = 0;
  if (auto it = msg->sequences.find("updates"); it != msg->sequences.end()) n += it->second;
  for (const auto& e : *elements)
    if (e.key == "updates" && e.type == testing::kBsonArray)
      if (auto items = testing::ReadElements(e.value))
        n += static_cast<std::int64_t>(items->size());
  return n;
}

WireCounter::WireCounter(const std::string& server_uri) {
  std::optional<UriParts> parts = SplitUri(server_uri);
  if (!parts) throw std::runtime_error("wire counter: needs a mongodb:// URI");
  host_ = parts->host;
  target_port_ = parts->port;
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 64) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (listen_fd_ >= 0) close(listen_fd_);
    throw std::runtime_error(std::string("wire counter: cannot listen: ") + strerror(errno));
  }
  const int port = ntohs(addr.sin_port);
  std::string options = "directConnection=true";
  if (!parts->options.empty()) options += "&" + parts->options;
  uri_ = "mongodb://" + parts->userinfo + "127.0.0.1:" + std::to_string(port) + "/?" + options;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

WireCounter::~WireCounter() {
  stop_ = true;
  shutdown(listen_fd_, SHUT_RDWR);
  accept_thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    for (auto& c : conns_) c->Shutdown();
    threads = std::move(threads_);
  }
  for (auto& t : threads) t.join();
  close(listen_fd_);
}

std::map<std::string, WireCounter::Counts> WireCounter::Take() {
  std::lock_guard lock(mu_);
  return std::exchange(counts_, {});
}

void WireCounter::AcceptLoop() {
  while (!stop_) {
    int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR) continue;
      return;
    }
    int server = -1;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host_.c_str(), std::to_string(target_port_).c_str(), &hints, &found) == 0) {
      for (addrinfo* a = found; a != nullptr && server < 0; a = a->ai_next) {
        server = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (server >= 0 && connect(server, a->ai_addr, a->ai_addrlen) != 0) {
          close(server);
          server = -1;
        }
      }
      freeaddrinfo(found);
    }
    if (server < 0) {
      close(client);
      continue;
    }
    const int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_shared<Conn>();
    c->client = client;
    c->server = server;
    std::lock_guard lock(mu_);
    conns_.push_back(c);
    threads_.emplace_back([this, c] { Pump(c, true); });
    threads_.emplace_back([this, c] { Pump(c, false); });
  }
}

void WireCounter::Pump(const std::shared_ptr<Conn>& c, bool to_server) {
  const int from = to_server ? c->client : c->server;
  const int to = to_server ? c->server : c->client;
  while (std::optional<std::string> m = ReadMessage(from)) {
    if (to_server) {
      if (auto msg = ParseOpMsg(*m)) {
        auto first = testing::ReadElements(msg->body);
        Conn::Request r;
        r.command = first && !first->empty() ? first->front().key : "?";
        r.statements = Statements(*m, &r.collection);
        r.sent = std::chrono::steady_clock::now();
        if (r.statements > 0) {
          std::lock_guard lock(mu_);
          Counts& k = counts_[r.collection];
          ++k.commands;
          k.statements += r.statements;
        }
        std::lock_guard lock(c->mu);
        c->pending[static_cast<std::int32_t>(Le32(*m, 4))] = std::move(r);
      }
    } else if (auto msg = ParseOpMsg(*m)) {
      std::optional<Conn::Request> request;
      {
        std::lock_guard lock(c->mu);
        if (auto it = c->pending.find(static_cast<std::int32_t>(Le32(*m, 8)));
            it != c->pending.end()) {
          request = std::move(it->second);
          c->pending.erase(it);
        }
      }
      if (request) {
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - request->sent).count();
        std::int64_t matched = 0;
        if (request->command == "update") {
          matched = IntField(msg->body, "n");
        } else if (auto last = testing::FindElement(msg->body, "lastErrorObject");
                   request->command == "findAndModify" && last &&
                   last->type == testing::kBsonDocument) {
          matched = IntField(last->value, "n");
        }
        std::lock_guard lock(mu_);
        if (request->statements > 0) counts_[request->collection].matched += matched;
        Timing& t = timings_[request->command];
        ++t.count;
        t.seconds += seconds;
      }
    }
    if (!WriteFull(to, *m)) break;
  }
  c->Shutdown();
}

std::map<std::string, WireCounter::Timing> WireCounter::TakeTimings() {
  std::lock_guard lock(mu_);
  return std::exchange(timings_, {});
}

}  // namespace txn_recovery::bench
