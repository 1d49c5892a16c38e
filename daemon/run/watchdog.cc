#include "daemon/run/watchdog.h"

#include <algorithm>

namespace txn_recovery::daemon {

using Steady = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

void Watchdog::Progress() {
  auto now = Steady::now();
  last_progress_ms_ = duration_cast<milliseconds>(now.time_since_epoch()).count();
  if (auto wd = notifier_.watchdog_interval(); wd && now - last_watchdog_ >= *wd / 2) {
    notifier_.Watchdog();
    last_watchdog_ = now;
  }
}

void Watchdog::SetInterval(milliseconds interval) {
  live_limit_ms_ = std::max<std::int64_t>(60'000, 3 * interval.count());
}

bool Watchdog::Live(std::string* why) const {
  auto now = duration_cast<milliseconds>(Steady::now().time_since_epoch()).count();
  auto idle = now - last_progress_ms_.load();
  if (idle <= live_limit_ms_.load()) return true;
  *why = "the sweep loop has made no progress for " + std::to_string(idle / 1000) + "s";
  return false;
}

}  // namespace txn_recovery::daemon
