// The environment's part of the configuration: TXN_RECOVERYD_<SECTION>_<KEY> overrides the
// file's value of each key the schema lets it set (config_schema.h, kFromEnvironment), and
// a few variables have rules of their own (kOwnVariable). The overlay itself is applied by
// LoadConfig; these are the names and the checks the rest of the daemon shares.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "txn_recovery/base/status.h"

namespace txn_recovery::daemon {

// Looks up an environment variable; injectable so tests need not touch the real one.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

// Every TXN_RECOVERYD_* variable the configuration reads, sorted.
std::vector<std::string> EnvironmentVariables();
// The names among `present` (e.g. every variable of the process's environment) that start
// with TXN_RECOVERYD_ but are none of EnvironmentVariables(), each with a suggestion when
// one is close: "TXN_RECOVERYD_SWEEP_WORKER (did you mean TXN_RECOVERYD_SWEEP_WORKERS?)".
// A misspelt variable would otherwise be ignored without a word.
std::vector<std::string> UnknownEnvironmentVariables(const std::vector<std::string>& present);
// The names of the process's environment variables.
std::vector<std::string> ProcessEnvironmentNames();

// A TXN_RECOVERYD_* variable: nullopt when unset or empty, InvalidArgument naming the
// variable when it holds a control character (no setting is spelt with one).
txn_recovery::Status ReadVariable(const EnvLookup& env, const std::string& name,
                                  std::optional<std::string>* out);

}  // namespace txn_recovery::daemon
