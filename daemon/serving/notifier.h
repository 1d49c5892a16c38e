// Notifier: the daemon's half of systemd's service protocol (sd_notify). Every call is a
// cheap no-op when the process was not started by systemd (no NOTIFY_SOCKET), so the
// daemon runs the same way in a container or a terminal. Thread-safe. Never blocks for
// long: a receiver that does not read costs at most a second per state change and nothing
// for STATUS and WATCHDOG, which are dropped when its queue is full.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace txn_recovery::daemon {

class Notifier {
 public:
  Notifier();

  bool enabled() const noexcept { return enabled_; }
  // The interval at which WATCHDOG=1 must be sent (half of WatchdogSec=), if enabled.
  std::optional<std::chrono::milliseconds> watchdog_interval() const noexcept {
    return watchdog_interval_;
  }

  void Ready();
  void Reloading();  // RELOADING=1 with MONOTONIC_USEC, as Type=notify-reload expects
  void Stopping();
  void Status(std::string_view text);
  void Watchdog();

 private:
  void Send(std::string_view state, bool important = false);
  bool enabled_ = false;
  std::optional<std::chrono::milliseconds> watchdog_interval_;
};

}  // namespace txn_recovery::daemon
