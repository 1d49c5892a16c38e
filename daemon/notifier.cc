#include "notifier.h"

#include <systemd/sd-daemon.h>
#include <time.h>

#include <cstdlib>
#include <string>

namespace txn_recoveryd {

Notifier::Notifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
  std::uint64_t usec = 0;
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
    watchdog_interval_ = std::chrono::milliseconds(usec / 2000);
}

void Notifier::Send(std::string_view state) {
  if (!enabled_) return;
  std::string s(state);
  (void)sd_notify(0, s.c_str());  // best effort: systemd may be gone during shutdown
}

void Notifier::Ready() {
  Send("READY=1");
}

void Notifier::Reloading() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  auto usec = static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL +
              static_cast<unsigned long long>(ts.tv_nsec) / 1000ULL;
  Send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

void Notifier::Stopping() {
  Send("STOPPING=1");
}

void Notifier::Status(std::string_view text) {
  std::string line = "STATUS=";
  for (char c : text) line += c == '\n' ? ' ' : c;  // STATUS is one line
  Send(line);
}

void Notifier::Watchdog() {
  Send("WATCHDOG=1");
}

}  // namespace txn_recoveryd
