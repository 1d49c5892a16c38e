#include "daemon/run/database_status.h"

#include <spdlog/spdlog.h>

#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::daemon {

void DatabaseStatus::Reachable(const std::string& uri) {
  authentication_failed_ = false;
  if (!up_.exchange(true)) spdlog::info("database reachable at {}", txn_recovery::RedactUri(uri));
  metrics_.Set("txn_recoveryd_database_up", {}, 1);
}

void DatabaseStatus::Lost(bool authentication_failed) {
  authentication_failed_ = authentication_failed;
  up_ = false;
  metrics_.Set("txn_recoveryd_database_up", {}, 0);
}

void DatabaseStatus::PingFailed(const txn_recovery::Status& ping, const std::string& uri) {
  Lost(ping.IsUnauthenticated());
  if (ping.IsUnauthenticated()) {
    spdlog::error("authentication failed: the database refused the credentials of {}: {}",
                  txn_recovery::RedactUri(uri), ping.message());
  } else {
    spdlog::warn("database unreachable ({}): {}", txn_recovery::RedactUri(uri), ping.message());
  }
}

bool DatabaseStatus::Ready(std::string* why) const {
  if (requests_.stopping()) {
    *why = "stopping";
    return false;
  }
  if (!up_.load()) {
    *why = authentication_failed_.load()
               ? "authentication failed: the database refused the credentials (see the log)"
               : "the database is unreachable (see the log and txn_recoveryd_database_up)";
    return false;
  }
  return true;
}

}  // namespace txn_recovery::daemon
