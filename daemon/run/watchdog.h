// Whether `run`'s sweep loop makes progress: fed by the loop and by every transaction a
// sweep reports, so that a sweep of a million transactions is not mistaken for a hang; read
// by /livez and passed on to systemd's watchdog (WatchdogSec=).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "daemon/serving/notifier.h"

namespace txn_recovery::daemon {

class Watchdog {
 public:
  explicit Watchdog(Notifier* notifier) : notifier_(*notifier) {}

  // The loop is alive. Not called concurrently (the loop, or a sweep's reports, which
  // arrive one at a time).
  void Progress();
  // How long the loop may go without progress before /livez says it is stuck: three
  // sweep intervals, and never less than a minute.
  void SetInterval(std::chrono::milliseconds interval);
  // /livez, from any thread: false with the reason when the loop is stuck. Never depends
  // on the database, or an outage would get a healthy daemon restarted.
  bool Live(std::string* why) const;

 private:
  Notifier& notifier_;
  std::atomic<std::int64_t> last_progress_ms_{0};  // steady clock
  std::atomic<std::int64_t> live_limit_ms_{60'000};
  std::chrono::steady_clock::time_point last_watchdog_{};
};

}  // namespace txn_recovery::daemon
