// What one round of `run` (a sweep of every watch) found, summed over the watches, and the
// status line systemd shows for it (systemctl status).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace txn_recovery::daemon {

struct RoundOutcome {
  bool database_up = true;
  bool authentication_failed = false;
  std::int64_t resolved = 0, failed = 0, stuck = 0, quarantined = 0;
  std::optional<std::chrono::milliseconds> oldest;
  std::vector<std::string> paused, broken;
};

// "last sweep 12:00:00Z (1.5s): 3 resolved, 0 failed; ...", or why there was none; `took`
// is the round's time, `next` the wait before the next one.
std::string StatusLine(const RoundOutcome& o, std::chrono::milliseconds took,
                       std::chrono::milliseconds next);

}  // namespace txn_recovery::daemon
