// Scheduler: `txn-recoveryd run`, the long-running mode. Sweeps every watch each interval
// (with jitter), never exits because the database is unreachable (exponential backoff),
// reloads its configuration on SIGHUP and drains on SIGTERM/SIGINT. It owns the process's
// signal handling, the systemd notifications, the metrics and the health endpoint; the
// recovery itself is the core library's Sweeper.
#pragma once

#include <string>

#include "daemon/configuration/config.h"

namespace txn_recovery::daemon {

struct RunOptions {
  std::string config_path;
  // Command-line overrides (highest precedence); empty = not given. Re-applied on every
  // reload, so SIGHUP never undoes what the command line said.
  std::string log_format;
  std::string log_level;
  std::string http_listen;
  // --web.config.file: read on start and on every reload, like http.web_config.
  std::string web_config_file;
};

// Applies the command-line overrides of `options` to a loaded configuration (defined with
// the rest of the loading, config_source.cc).
// InvalidArgument (naming the option) for a value that does not parse.
txn_recovery::Status ApplyOverrides(const RunOptions& options, Config* config);

// Runs until SIGTERM/SIGINT. Must be called from main() before any other thread exists
// (it blocks the handled signals process-wide so that only its own thread receives them).
// Returns the process exit code: 0 after a clean drain (also when the drain deadline
// forced the exit), 78 for a bad configuration at start, 69 if the HTTP listener cannot be
// bound at start. Never returns because the database is unreachable.
int RunDaemon(const RunOptions& options, const EnvLookup& env);

}  // namespace txn_recovery::daemon
