// The configuration's one schema: every key the file accepts, with its type, bounds, the
// profiles it belongs to, where the loaded value lives and one line of documentation. Its
// default is not typed here: it is the value a default Config or DefaultWatch holds in that
// place (the library's own, config.h), rendered by DefaultFor (config_describe.h). The
// loader, the environment overlay (TXN_RECOVERYD_*), the unknown-key check, check-config's
// description and the CLI's log options read this table; the documentation
// (docs/configuration.md, the man page, config/txn-recoveryd.toml and the shell
// completions) is checked against it by tests/docs_test.cc. A key is added here, and
// nowhere else in the code.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace txn_recovery {
struct WatchSpec;
}

namespace txn_recovery::daemon {

struct Config;
enum class LogFormat;

enum class KeyType {
  kString,
  kDuration,  // "1h30m", as ParseDuration reads it
  kInteger,
  kNumber,  // an integer or a float
  kBool,
  kStringList,
  kWriteConcern,  // "majority" or a number of members
  kTable,         // a section of the file, or [watch.states]
  kTableList,     // [[watch]], and a watch's steps
};

// The profiles a watch key belongs to, one bit each, in the order of kProfileNames.
inline constexpr unsigned kTransfer = 1, kOperations = 2, kTaggedInsert = 4, kSteps = 8;
inline constexpr unsigned kEveryProfile = kTransfer | kOperations | kTaggedInsert | kSteps;
inline constexpr std::string_view kProfileNames[] = {"transfer", "operations", "tagged-insert",
                                                     "steps"};

enum KeyFlag : unsigned {
  kRequired = 1,  // no default: the watch must set it
  // TXN_RECOVERYD_<SECTION>_<KEY> overrides the file's value: read as the file's own.
  kFromEnvironment = 2,
  // TXN_RECOVERYD_<SECTION>_<KEY> exists but has rules of its own (the URI wins over every
  // other source; an empty listen address is ignored), which the section's loader applies.
  kOwnVariable = 4,
  // The section's loader reads the key itself: its checks go beyond its type's.
  kReadBySection = 8,
  kRedacted = 16,  // a secret: described through RedactUri
  // A collection list that must not name the watch's own transactions collection (whose
  // documents the daemon would then treat as participants).
  kNotTheTransactionsCollection = 32,
};

// Where a key's value lives in a loaded configuration: a field of `config` or of `watch`,
// or nothing when the watch's profile has no such key or the section's loader keeps it.
using FieldRef = std::variant<std::monostate, std::string*, int*, std::int64_t*, bool*, double*,
                              std::chrono::milliseconds*, std::vector<std::string>*, LogFormat*>;
using Field = FieldRef (*)(Config& config, txn_recovery::WatchSpec& watch);

struct KeySpec {
  // "" for the file's sections; "mongodb", "sweep", "daemon", "log", "http"; "watch",
  // "watch.states", "watch.steps" (one entry of a watch's steps).
  std::string_view section = {};
  std::string_view key = {};
  KeyType type = KeyType::kString;
  // Integers and numbers: the accepted range. Durations: the least (in ms; 0: any positive).
  double min = 0, max = 0;
  // Strings: the accepted values, as an error message lists them ("\"a\", \"b\" or \"c\"").
  std::string_view choices = {};
  // The reason for a duration's least value, said with it; null for none.
  std::string (*why_min)() = nullptr;
  unsigned profiles = 0;        // watch keys: the profiles it belongs to
  unsigned flags = 0;           // KeyFlag
  std::string_view state = {};  // [watch.states]: the state this spelling names
  Field field = nullptr;
  std::string_view doc = {};  // one line: what the key does
};

// Every key, each section's in the order check-config describes them.
std::span<const KeySpec> ConfigSchema();
// The keys of `section`, in the table's order.
std::vector<const KeySpec*> KeysOf(std::string_view section);
// The names of the keys of `section` (for "did you mean"), in the table's order, those of
// every profile first; of the watch keys of one profile or a few, only those of `profile`
// when given.
std::vector<std::string> KeyNames(std::string_view section, std::string_view profile = {});
// The key `section`.`key`; a key missing from the table is a programming error (abort).
const KeySpec& SchemaKey(std::string_view section, std::string_view key);

// "sweep.bulk_size", "watch.states.new", "mongodb".
std::string FullName(const KeySpec& spec);
// TXN_RECOVERYD_<SECTION>_<KEY>; meaningful for kFromEnvironment and kOwnVariable keys.
std::string VariableName(const KeySpec& spec);
// The profile's bit; 0 for a name that is none.
unsigned ProfileBit(std::string_view profile);
// The accepted values of a string key ("text", "json", "journal"); empty when any string.
std::vector<std::string> Choices(const KeySpec& spec);
// "text, json or journal".
std::string Alternatives(const std::vector<std::string>& names);
// The values a key accepts beyond its type, as the documentation states them: "1 to 10000",
// "positive", "at least 15s", "0 to 0.9", the choices; "" when the type says all.
std::string BoundsText(const KeySpec& spec);
// "string", "duration", "integer", ...
std::string_view TypeName(KeyType type);
// "transfer, operations"; "every profile"; "" outside [[watch]].
std::string ProfilesText(const KeySpec& spec);

}  // namespace txn_recovery::daemon
