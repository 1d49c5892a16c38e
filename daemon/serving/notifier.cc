#include "daemon/serving/notifier.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

namespace txn_recovery::daemon {

Notifier::Notifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
  std::uint64_t usec = 0;
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
    watchdog_interval_ = std::chrono::milliseconds(usec / 2000);
}

// sd_notify() blocks while the receiver's queue is full (net.unix.max_dgram_qlen, 10 by
// default), and a PID 1 busy for a while would then stall the sweep loop, the workers that
// feed the watchdog, and even the drain after SIGTERM. So the datagram is sent here without
// blocking: a STATUS or WATCHDOG that does not fit is dropped (the next one supersedes it),
// and a state change (READY, RELOADING, STOPPING) is retried for up to a second.
void Notifier::Send(std::string_view state, bool important) {
  if (!enabled_) return;
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || *path == '\0') return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::size_t len = std::strlen(path);
  if (len >= sizeof addr.sun_path || (path[0] != '/' && path[0] != '@')) {
    (void)sd_notify(0, std::string(state).c_str());  // an address kind we do not know
    return;
  }
  std::memcpy(addr.sun_path, path, len);
  if (path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  socklen_t addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  for (int attempt = 0;; ++attempt) {
    ssize_t n = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                       reinterpret_cast<const sockaddr*>(&addr), addr_len);
    if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || !important || attempt >= 20) break;
    poll(nullptr, 0, 50);  // the receiver is busy: give it a moment
  }
  close(fd);
}

void Notifier::Ready() {
  Send("READY=1", true);
}

void Notifier::Reloading() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  auto usec = static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL +
              static_cast<unsigned long long>(ts.tv_nsec) / 1000ULL;
  Send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec), true);
}

void Notifier::Stopping() {
  Send("STOPPING=1", true);
}

void Notifier::Status(std::string_view text) {
  std::string line = "STATUS=";
  for (char c : text) line += c == '\n' ? ' ' : c;  // STATUS is one line
  Send(line);
}

void Notifier::Watchdog() {
  Send("WATCHDOG=1");
}

}  // namespace txn_recovery::daemon
