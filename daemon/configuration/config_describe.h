// The configuration rendered back to TOML: check-config's description of a loaded
// configuration, as the file would spell every value (secrets redacted).
#pragma once

#include <string>

namespace txn_recovery {
struct WatchSpec;
}

namespace txn_recoveryd {

struct Config;

// The configuration with secrets redacted, as TOML (check-config).
std::string DescribeConfig(const Config& config);
// The participant steps of `watch` as the daemon understands them: the `steps` list of a
// described watch (as TOML), then one comment line per step, for every profile.
std::string DescribeSteps(const txn_recovery::WatchSpec& watch);

}  // namespace txn_recoveryd
