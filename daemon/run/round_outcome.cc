#include "daemon/run/round_outcome.h"

#include <ctime>

#include "daemon/configuration/config.h"

namespace txn_recovery::daemon {

namespace {

std::string ClockTime() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string StatusLine(const RoundOutcome& o, std::chrono::milliseconds took,
                       std::chrono::milliseconds next) {
  if (o.authentication_failed)
    return "authentication failed: the database refused the credentials; retrying in " +
           FormatDuration(next);
  if (!o.database_up) return "database unreachable; retrying in " + FormatDuration(next);
  std::string status = "last sweep " + ClockTime() + " (" + FormatDuration(took) +
                       "): " + std::to_string(o.resolved) + " resolved, " +
                       std::to_string(o.failed) + " failed; " + std::to_string(o.stuck) + " stuck";
  if (o.oldest) status += " (oldest " + std::to_string(o.oldest->count() / 1000) + "s)";
  status += ", " + std::to_string(o.quarantined) + " quarantined; database up";
  if (!o.paused.empty()) status += "; PAUSED: " + std::to_string(o.paused.size()) + " watch(es)";
  if (!o.broken.empty()) status += "; failing: " + std::to_string(o.broken.size()) + " watch(es)";
  return status;
}

}  // namespace txn_recovery::daemon
