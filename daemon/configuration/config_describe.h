// The configuration rendered back to TOML: check-config's description of a loaded
// configuration, as the file would spell every value (secrets redacted).
#pragma once

#include <string>
#include <string_view>

namespace txn_recovery {
struct WatchSpec;
}

namespace txn_recovery::daemon {

struct Config;
struct KeySpec;

// The configuration with secrets redacted, as TOML (check-config).
std::string DescribeConfig(const Config& config);
// The participant steps of `watch` as the daemon understands them: the `steps` list of a
// described watch (as TOML), then one comment line per step, for every profile.
std::string DescribeSteps(const txn_recovery::WatchSpec& watch);

// The default of `spec` in a watch of `profile` (any profile for a key outside [[watch]]),
// as the file spells it; "" for none. Rendered from the values the loader starts from (a
// default Config, DefaultWatch), as check-config renders a loaded value: a default is typed
// in one place, the library's struct or the daemon's Config, never again as text.
std::string DefaultFor(const KeySpec& spec, std::string_view profile);
// The default of `spec` in every profile, as docs/configuration.md and the man page state
// it: the value of the first profile it belongs to, then "; PROFILE[, PROFILE]: VALUE" for
// each other value ("\"state\"; operations, tagged-insert: \"status\""); "" for none.
std::string DefaultText(const KeySpec& spec);

}  // namespace txn_recovery::daemon
