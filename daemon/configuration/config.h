// Configuration: the TOML file, the environment and the defaults, merged and validated
// into the watches the core library sweeps. Precedence: command line > environment
// (TXN_RECOVERYD_*) > file > defaults. Every error names the file, the line and the key.
// Three jobs, three files: loading (config.cc: the sections; config_watch.cc: the watches;
// config_reading.h: a value as the schema types it), the environment's overlay
// (config_environment.h) and the rendering back to TOML (config_describe.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/configuration/config_describe.h"
#include "daemon/configuration/config_environment.h"
#include "daemon/serving/http_server.h"
#include "txn_recovery/base/duration.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/engine/fleet_member.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/mongo_store.h"
#include "txn_recovery/tools/orphans.h"

namespace txn_recovery::daemon {

// The name of a ServerClock as mongodb.server_clock spells it ("auto", "server", "daemon");
// nullopt for any other name.
std::string ServerClockName(txn_recovery::MongoOptions::ServerClock clock);
std::optional<txn_recovery::MongoOptions::ServerClock> ServerClockNamed(std::string_view name);

// The values of the sections outside [[watch]], each initialized to its default: the
// library's own where the value is one of the library's options (so that a default is
// typed once, in the library's struct), the daemon's here otherwise. The schema's
// documentation of each default is rendered from these (DefaultFor, config_describe.h).
// The comments say what the code does with them.
struct MongoConfig {
  std::string uri;         // may hold a password: print only through RedactUri
  std::string uri_source;  // where the URI came from ("file", "uri_file /path", "env ...")
  // The file the URI was read from (mongodb.uri_file, or the systemd credential's copy);
  // empty when it came from the configuration file or the environment. `run` reads it
  // again before every round, so that a rotated URI is taken up without a signal.
  std::string uri_path;
  std::chrono::milliseconds server_selection_timeout =
      txn_recovery::MongoOptions{}.server_selection_timeout;
  // How long one operation may wait for a reply from a connected server.
  std::chrono::milliseconds socket_timeout = txn_recovery::MongoOptions{}.socket_timeout;
  // Durability on a replica set (see MongoOptions): "majority" or a number of members.
  std::string write_concern = txn_recovery::MongoOptions{}.write_concern;
  std::chrono::milliseconds write_concern_timeout =
      txn_recovery::MongoOptions{}.write_concern_timeout;
  std::string read_concern = txn_recovery::MongoOptions{}.read_concern;  // "majority" or "local"
  // Who compares with the server's clock in filters: "auto", "server" ($$NOW) or "daemon"
  // (its estimate; servers without $$NOW in filters, docs/compatibility.md).
  std::string server_clock = ServerClockName(txn_recovery::MongoOptions{}.server_clock);
};

struct SweepConfig {
  int workers = txn_recovery::SweepOptions{}.workers;
  // Documents per cursor batch (bounds memory), of the sweep and of the orphan scan.
  std::int32_t batch_size = txn_recovery::SweepOptions{}.batch_size;
  // Transactions a worker drives together, each phase one bulk write per collection.
  std::int32_t bulk_size = txn_recovery::SweepOptions{}.bulk_size;
  // Transactions per second driven at most, by the whole fleet (each member its part):
  // txn_recovery::Pace. 0: unbounded. The daemon's default: the library has no pace of its
  // own (a SweepOptions without one is unbounded).
  std::int64_t pace = 100;
  std::chrono::milliseconds lease_duration = txn_recovery::LeaseOptions{}.duration;
  int max_failures = txn_recovery::SweepOptions{}.max_failures;
  // How every watch's retention removes finished transactions (see retention.h): documents
  // per batch, the pause between batches, and batches per sweep.
  std::int32_t retention_batch_size = txn_recovery::RetentionPolicy{}.batch_size;
  std::chrono::milliseconds retention_pause = txn_recovery::RetentionPolicy{}.pause_between_batches;
  std::int32_t retention_max_batches = txn_recovery::RetentionPolicy{}.max_batches;
  // The orphan scan reports a participant carrying more markers than this.
  std::int64_t marker_cap = txn_recovery::OrphanOptions{}.marker_cap;
  // Create the indexes each watch's queries need at start (otherwise only report the
  // missing ones). Off by default: building an index on a large production collection
  // loads the server and needs the createIndex privilege, an operator's decision.
  bool manage_indexes = false;
};

// The long-running mode (`txn-recoveryd run`). Its values are the daemon's own: none of
// them is one of the library's options.
struct DaemonConfig {
  std::chrono::milliseconds interval = std::chrono::seconds(10);
  // Each wait is interval * (1 +/- jitter), so that hosts do not sweep in lockstep.
  double jitter = 0.2;
  // While the database is unreachable: wait backoff_initial, doubling up to backoff_max
  // (the retry schedule of the tagged inserts).
  std::chrono::milliseconds backoff_initial = std::chrono::milliseconds(100);
  std::chrono::milliseconds backoff_max = std::chrono::seconds(30);
  // After SIGTERM: how long the transactions in hand may take before the process exits
  // anyway (everything it leaves is safe to repeat; its leases simply expire).
  std::chrono::milliseconds drain_deadline = std::chrono::seconds(8);
  // How often `run` scans the participants for orphan markers (orphans.h). It reads every
  // marked participant, hence the low rate.
  std::chrono::milliseconds orphan_scan_interval = std::chrono::hours(1);
};

// How `run` instances divide the candidates between them (docs/fleet.md).
struct FleetConfig {
  bool enabled = true;
  // In each watch's database: one record per running instance.
  std::string members_collection = txn_recovery::FleetMemberOptions{}.members_collection;
  // How often an instance stamps its record; 0 in the file (unset): daemon.interval.
  std::chrono::milliseconds heartbeat{};
  // A record not stamped for this long is no longer a member; unset: 3 x heartbeat.
  std::chrono::milliseconds expiry{};
  // A candidate a member has found stuck outside its share for this long is driven by it
  // too (SweepOptions::overdue_after); unset: 5 x expiry.
  std::chrono::milliseconds overdue_after{};
};

enum class LogFormat { kText, kJson, kJournal };

// log.format's values as the file, the environment and --log-format spell them
// ("text", "json", "journal"); nullopt for any other name.
std::optional<LogFormat> LogFormatNamed(std::string_view name);
std::string LogFormatName(LogFormat format);

struct LogConfig {
  LogFormat format = LogFormat::kText;
  std::string level = "info";  // trace, debug, info, warn, error
};

struct HttpConfig {
  std::string listen;  // "host:port"; empty = no HTTP listener
  // The web configuration file (TLS, basic authentication); empty: plain HTTP, no
  // credentials. Loaded with the configuration, so that a bad file is a bad configuration.
  std::string web_config;
  HttpSecurity security;
};

struct Config {
  std::string path;  // the file it was loaded from
  MongoConfig mongodb;
  SweepConfig sweep;
  DaemonConfig daemon;
  FleetConfig fleet;
  LogConfig log;
  HttpConfig http;
  std::vector<txn_recovery::WatchSpec> watches;
};

// A [[watch]] of `profile` as the file's defaults make it, before its own keys are read:
// the profile's own (the library's, Profile::Named, with the missing_time of a watch that
// names no time field), the transactions collection below, and the retention pacing of
// `config`'s [sweep]. nullopt for a name that is no profile. The loader starts each watch
// from it, and the schema's documentation renders each watch key's default from it.
std::optional<txn_recovery::WatchSpec> DefaultWatch(std::string_view profile, const Config& config);
// The profile of a watch that names none: the library's default Profile's.
std::string DefaultProfileName();
// The transactions collection of a watch that names none.
inline constexpr const char* kDefaultTransactionsCollection = "transactions";

// Where every command looks for its configuration unless --config says otherwise (the
// Debian package's conffile; the container mounts its own there).
inline constexpr const char* kDefaultConfigPath = "/etc/txn-recoveryd/txn-recoveryd.toml";

// Loads and validates `path`. InvalidArgument with "FILE:LINE:COL: KEY: problem" on any
// error; never a partial result, never an exception. This is the one validation: what
// check-config accepts, run accepts (less what only exists at run time: a port in use).
txn_recovery::Status LoadConfig(const std::string& path, const EnvLookup& env, Config* config);

// Reads a URI from a secret file (mongodb.uri_file, the systemd credential): its first line,
// without surrounding blanks. InvalidArgument when it cannot be read or that line is empty.
txn_recovery::Status ReadSecretFile(const std::string& path, std::string* out);

// The [http] listen address parsed as the HTTP server parses it (ParseListenAddress,
// daemon/serving/http_server.h), so that check-config refuses what run would refuse, with
// exit 78.
txn_recovery::Status CheckHttpListen(const std::string& listen);

// Keeps only the watches named in `names` (all of them when `names` is empty), in the
// configuration's order. InvalidArgument naming the unknown name and the known ones.
txn_recovery::Status SelectWatches(const std::vector<std::string>& names, Config* config);

// How to open the database for `config`: URI, timeouts, and a pool with a client for each
// sweep worker plus the scheduler's own calls.
txn_recovery::MongoOptions MongoOptionsFor(const Config& config);
// The terms of every claim under `config`: the [sweep] lease, and the library's margin (no
// key sets it). The owner is the caller's: a process names itself once (MakeOwnerId, or a
// name of its own) and claims under that name. Built here only, for `run`, `sweep`,
// `rehearse` and the operator's commands alike.
txn_recovery::LeaseOptions LeaseOptionsFor(const Config& config);
// The orphan scan's options under `config` ([sweep] batch_size and marker_cap), claiming
// under `lease`. The rest is the caller's: a dry run, the stop flag, the progress callback.
// Built here only, for `run` and `sweep --orphans` alike.
txn_recovery::OrphanOptions OrphanOptionsFor(const Config& config,
                                             const txn_recovery::LeaseOptions& lease);

// The configuration's durations (txn_recovery/base/duration.h).
using txn_recovery::FormatDuration;
using txn_recovery::ParseDuration;

}  // namespace txn_recovery::daemon
