// Scheduler: `txn-recoveryd run`, the long-running mode. Sweeps every watch each interval
// (with jitter), never exits because the database is unreachable (exponential backoff),
// reloads its configuration on SIGHUP and drains on SIGTERM/SIGINT. It owns the process's
// signal handling, the systemd notifications, the metrics and the health endpoint; the
// recovery itself is the core library's Sweeper.
#pragma once

#include <string>

#include "config.h"

namespace txn_recoveryd {

struct RunOptions {
  std::string config_path;
  // Command-line overrides (highest precedence); empty = not given.
  std::string log_format;
  std::string http_listen;
};

// Runs until SIGTERM/SIGINT. Returns the process exit code: 0 after a clean drain, 78 for
// a bad configuration at start, 69 if the HTTP listener cannot be bound.
int RunDaemon(const RunOptions& options, const EnvLookup& env);

}  // namespace txn_recoveryd
