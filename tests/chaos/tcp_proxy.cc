#include "tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace txn_recovery::chaos {
namespace {

constexpr std::size_t kMaxBuffered = 1 << 20;

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
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
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SetNonBlocking(fd);
  }
  return fd;
}

// Moves bytes from `from` into `buffer`; false when the peer closed or failed.
bool ReadInto(int from, std::string* buffer) {
  char chunk[16384];
  while (buffer->size() < kMaxBuffered) {
    ssize_t n = recv(from, chunk, sizeof chunk, 0);
    if (n > 0) {
      buffer->append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return false;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  }
  return true;
}

bool WriteFrom(int to, std::string* buffer) {
  while (!buffer->empty()) {
    ssize_t n = send(to, buffer->data(), buffer->size(), MSG_NOSIGNAL);
    if (n > 0) {
      buffer->erase(0, static_cast<std::size_t>(n));
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
  return true;
}

}  // namespace

std::unique_ptr<TcpProxy> TcpProxy::Start(const std::string& target_host, int target_port,
                                          std::string* error) {
  std::unique_ptr<TcpProxy> p(new TcpProxy());
  p->target_host_ = target_host;
  p->target_port_ = target_port;
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
    *error = std::string("proxy: cannot listen: ") + std::strerror(errno);
    return nullptr;
  }
  SetNonBlocking(p->listen_fd_);
  p->port_ = ntohs(addr.sin_port);
  p->thread_ = std::thread([raw = p.get()] { raw->Loop(); });
  return p;
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  Wake();
  if (thread_.joinable()) thread_.join();
  for (auto& c : conns_) Close(c, false);
  if (listen_fd_ >= 0) close(listen_fd_);
  for (int fd : wake_)
    if (fd >= 0) close(fd);
}

void TcpProxy::Wake() {
  char b = 1;
  (void)!write(wake_[1], &b, 1);
}

void TcpProxy::Close(Conn& c, bool reset) {
  for (int* fd : {&c.client, &c.server}) {
    if (*fd < 0) continue;
    if (reset) {
      // Linger 0: close() sends RST instead of FIN, as a crashed middlebox or server does.
      linger l{1, 0};
      setsockopt(*fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    close(*fd);
    *fd = -1;
  }
}

int TcpProxy::Apply(Op op, double fraction, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution pick(fraction);
  int n = 0;
  {
    std::lock_guard lock(mu_);
    for (auto& c : conns_) {
      if (c.client < 0) continue;
      if (fraction < 1 && !pick(rng)) continue;
      ++n;
      if (op == Op::kStall) {
        c.stalled = true;
      } else {
        Close(c, op == Op::kReset);
      }
    }
  }
  Wake();
  return n;
}

int TcpProxy::Drop(double fraction, std::uint64_t seed) {
  return Apply(Op::kDrop, fraction, seed);
}
int TcpProxy::Reset(double fraction, std::uint64_t seed) {
  return Apply(Op::kReset, fraction, seed);
}
int TcpProxy::Stall(double fraction, std::uint64_t seed) {
  return Apply(Op::kStall, fraction, seed);
}

void TcpProxy::Unstall() {
  {
    std::lock_guard lock(mu_);
    for (auto& c : conns_) c.stalled = false;
  }
  Wake();
}

void TcpProxy::Refuse(bool on) {
  refuse_ = on;
}

void TcpProxy::Loop() {
  std::vector<pollfd> fds;
  std::vector<std::pair<std::size_t, bool>> owner;  // conn index, is client side
  while (!stop_) {
    fds.clear();
    owner.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    fds.push_back({wake_[0], POLLIN, 0});
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < conns_.size(); ++i) {
        Conn& c = conns_[i];
        if (c.client < 0 || c.stalled) continue;
        short client_events = 0, server_events = 0;
        if (c.to_server.size() < kMaxBuffered) client_events |= POLLIN;
        if (c.to_client.size() < kMaxBuffered) server_events |= POLLIN;
        if (!c.to_server.empty()) server_events |= POLLOUT;
        if (!c.to_client.empty()) client_events |= POLLOUT;
        fds.push_back({c.client, client_events, 0});
        owner.emplace_back(i, true);
        fds.push_back({c.server, server_events, 0});
        owner.emplace_back(i, false);
      }
    }
    if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) break;
    if (fds[1].revents) {
      char buf[64];
      while (read(wake_[0], buf, sizeof buf) > 0) {
      }
    }
    std::lock_guard lock(mu_);
    for (std::size_t k = 2; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Conn& c = conns_[owner[k - 2].first];
      // A command may have closed or stalled it while we polled.
      if (c.client < 0 || c.stalled) continue;
      bool client_side = owner[k - 2].second;
      int fd = client_side ? c.client : c.server;
      std::string* inbound = client_side ? &c.to_server : &c.to_client;
      std::string* outbound = client_side ? &c.to_client : &c.to_server;
      bool ok = true;
      if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) ok = ReadInto(fd, inbound);
      if (ok && (fds[k].revents & POLLOUT)) ok = WriteFrom(fd, outbound);
      if (ok && !inbound->empty()) ok = WriteFrom(client_side ? c.server : c.client, inbound);
      if (!ok) {
        // One side went away: pass the close on, as a direct connection would see it.
        Close(c, false);
      }
    }
    // Forget closed connections (commands close them too).
    std::size_t live = 0;
    for (auto& c : conns_)
      if (c.client >= 0) conns_[live++] = std::move(c);
    conns_.resize(live);
    open_ = static_cast<int>(live);

    if (fds[0].revents & POLLIN) {
      while (true) {
        int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (client < 0) break;
        accepted_++;
        if (refuse_) {
          close(client);
          continue;
        }
        int server = ConnectTo(target_host_, target_port_);
        if (server < 0) {
          close(client);
          continue;
        }
        int one = 1;
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        Conn c;
        c.client = client;
        c.server = server;
        conns_.push_back(std::move(c));
        open_++;
      }
    }
  }
}

}  // namespace txn_recovery::chaos
