// Whether the database answered `run`'s last round: the gauge txn_recoveryd_database_up,
// the log lines when it goes and comes back, and what /readyz says.
#pragma once

#include <atomic>
#include <string>

#include "daemon/run/loop_requests.h"
#include "daemon/serving/metrics.h"
#include "txn_recovery/base/status.h"

namespace txn_recovery::daemon {

class DatabaseStatus {
 public:
  DatabaseStatus(Metrics* metrics, const LoopRequests* requests)
      : metrics_(*metrics), requests_(*requests) {}

  // A round's ping was answered by the database at `uri` (said when it had been down).
  void Reachable(const std::string& uri);
  // A round found the database gone: it refused the credentials, or could not be reached.
  void Lost(bool authentication_failed);
  // A round's ping failed: Lost, and said once per attempt (the rate limiter keeps an
  // outage to a line a minute).
  void PingFailed(const txn_recovery::Status& ping, const std::string& uri);

  // /readyz, from any thread: false with the reason while stopping or without a database.
  bool Ready(std::string* why) const;

 private:
  Metrics& metrics_;
  const LoopRequests& requests_;
  std::atomic<bool> up_{false};
  // The last failed ping was a refused login, not an unreachable server (/readyz says so).
  std::atomic<bool> authentication_failed_{false};
};

}  // namespace txn_recovery::daemon
