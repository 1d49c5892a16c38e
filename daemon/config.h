// Configuration: the TOML file, the environment and the defaults, merged and validated
// into the watches the core library sweeps. Precedence: command line > environment
// (TXN_RECOVERYD_*) > file > defaults. Every error names the file, the line and the key.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "txn_recovery/status.h"
#include "txn_recovery/sweeper.h"

namespace txn_recoveryd {

struct MongoConfig {
  std::string uri;         // may hold a password: print only through RedactUri
  std::string uri_source;  // where the URI came from ("file", "uri_file /path", "env ...")
  std::chrono::milliseconds server_selection_timeout{5000};
};

struct SweepConfig {
  int workers = 4;
  std::int32_t batch_size = 500;
  std::chrono::milliseconds lease_duration{std::chrono::seconds(60)};
};

struct Config {
  std::string path;  // the file it was loaded from
  MongoConfig mongodb;
  SweepConfig sweep;
  std::vector<txn_recovery::WatchSpec> watches;
};

// Looks up an environment variable; injectable so tests need not touch the real one.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

// Loads and validates `path`. InvalidArgument with "FILE:LINE:COL: KEY: problem" on any
// error; never a partial result.
txn_recovery::Status LoadConfig(const std::string& path, const EnvLookup& env, Config* config);

// "250ms", "30s", "5m", "2h", "1d" (one number, one unit). InvalidArgument otherwise.
txn_recovery::Status ParseDuration(std::string_view text, std::chrono::milliseconds* out);
std::string FormatDuration(std::chrono::milliseconds d);

}  // namespace txn_recoveryd
