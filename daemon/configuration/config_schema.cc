#include "daemon/configuration/config_schema.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "daemon/configuration/config.h"
#include "txn_recovery/engine/decision.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/tools/retention.h"

namespace txn_recovery::daemon {
namespace {

using txn_recovery::WatchSpec;
using K = KeyType;

// A field of the configuration, by the path of members leading to it.
template <auto... kPath>
FieldRef InConfig(Config& c, WatchSpec&) {
  return &(c.*....*kPath);
}
template <auto... kPath>
FieldRef InWatch(Config&, WatchSpec& w) {
  return &(w.*....*kPath);
}
template <class C, class T>
C ClassOf(T C::*);
// A field of one protocol: nothing in a watch of another.
template <auto kMember>
FieldRef InProtocol(Config&, WatchSpec& w) {
  using Protocol = decltype(ClassOf(kMember));
  if (auto* p = std::get_if<Protocol>(&w.profile.protocol)) return &(p->*kMember);
  return {};
}
// A key of one step: the watch's first step's. Its loader reads each step itself (LoadStep);
// the field gives the default of a step that sets none of its keys (DefaultFor).
template <auto kMember>
FieldRef InFirstStep(Config&, WatchSpec& w) {
  if (auto* p = w.profile.steps(); p != nullptr && !p->steps.empty())
    return &(p->steps.front().*kMember);
  return {};
}
// The steps profile reads its marker_field with its steps, and check-config prints it
// with them (DescribeSteps).
FieldRef MarkerField(Config&, WatchSpec& w) {
  if (auto* t = w.profile.transfer()) return &t->marker_field;
  if (auto* o = w.profile.operations()) return &o->marker_field;
  return {};
}

using txn_recovery::Namespace;
using txn_recovery::OperationsProfile;
using txn_recovery::OwnerFilter;
using txn_recovery::Profile;
using txn_recovery::RetentionPolicy;
using txn_recovery::StateAliases;
using txn_recovery::StepSpec;
using txn_recovery::TaggedInsertProfile;
using txn_recovery::Thresholds;
using txn_recovery::TransferProfile;

constexpr unsigned kEnv = kFromEnvironment;

// Why a lease must be long: the library's lease-deadline margin (LeaseOptions::margin).
std::string StopsWritingBeforeTheLeaseEnds() {
  return "the daemon stops writing " + FormatDuration(txn_recovery::LeaseOptions{}.margin) +
         " before it expires";
}

// The table. Within a section, the order is check-config's; in [[watch]] the keys of one
// profile follow the common keys up to include_unowned, and "did you mean" weighs the
// names in this order.
constexpr KeySpec kSchema[] = {
    // The file's sections.
    {.section = "", .key = "mongodb", .type = K::kTable, .doc = "the database to recover"},
    {.section = "", .key = "sweep", .type = K::kTable, .doc = "how a sweep works through a watch"},
    {.section = "",
     .key = "daemon",
     .type = K::kTable,
     .doc = "the long-running mode (txn-recoveryd run); the one-shot commands ignore it"},
    {.section = "",
     .key = "fleet",
     .type = K::kTable,
     .doc = "how the instances of run divide the work (docs/fleet.md)"},
    {.section = "", .key = "log", .type = K::kTable, .doc = "what the daemon logs, and how"},
    {.section = "", .key = "http", .type = K::kTable, .doc = "the metrics and health listener"},
    {.section = "",
     .key = "watch",
     .type = K::kTableList,
     .flags = kRequired,
     .doc = "one per transactions collection"},

    // [mongodb]
    {.section = "mongodb",
     .key = "uri",
     .flags = kOwnVariable | kRedacted,
     .field = InConfig<&Config::mongodb, &MongoConfig::uri>,
     .doc = "the deployment (or uri_file, or TXN_RECOVERYD_MONGODB_URI, which wins)"},
    {.section = "mongodb",
     .key = "uri_file",
     .flags = kReadBySection,
     .doc = "read the URI from this file's first line (keeps the password out of the "
            "configuration)"},
    {.section = "mongodb",
     .key = "server_selection_timeout",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::mongodb, &MongoConfig::server_selection_timeout>,
     .doc = "how long to wait for a usable server; the URI's serverSelectionTimeoutMS wins"},
    {.section = "mongodb",
     .key = "socket_timeout",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::mongodb, &MongoConfig::socket_timeout>,
     .doc = "how long one operation waits for a connected server's reply; the URI's "
            "socketTimeoutMS wins"},
    {.section = "mongodb",
     .key = "write_concern",
     .type = K::kWriteConcern,
     .min = 1,
     .max = 50,
     .flags = kEnv,
     .field = InConfig<&Config::mongodb, &MongoConfig::write_concern>,
     .doc = "how many members acknowledge each write (never 0); a URI setting another w= is "
            "refused"},
    {.section = "mongodb",
     .key = "write_concern_timeout",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::mongodb, &MongoConfig::write_concern_timeout>,
     .doc = "how long a write waits for that acknowledgement before the transaction is "
            "retried later"},
    {.section = "mongodb",
     .key = "read_concern",
     .choices = R"("majority" or "local")",
     .flags = kEnv,
     .field = InConfig<&Config::mongodb, &MongoConfig::read_concern>,
     .doc = "decide only on data no failover can roll back, or on the primary's latest; a URI "
            "setting another readConcernLevel= is refused"},
    {.section = "mongodb",
     .key = "server_clock",
     .choices = R"("auto", "server" or "daemon")",
     .flags = kEnv,
     .field = InConfig<&Config::mongodb, &MongoConfig::server_clock>,
     .doc = "who compares with the server's clock in a write's filter: the server ($$NOW), "
            "the daemon's estimate, or the server until it refuses $$NOW"},

    // [sweep]
    {.section = "sweep",
     .key = "workers",
     .type = K::kInteger,
     .min = 1,
     .max = 256,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::workers>,
     .doc = "threads driving transactions in parallel"},
    {.section = "sweep",
     .key = "batch_size",
     .type = K::kInteger,
     .min = 1,
     .max = 100'000,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::batch_size>,
     .doc = "documents per cursor batch (bounds memory)"},
    {.section = "sweep",
     .key = "bulk_size",
     .type = K::kInteger,
     .min = 1,
     .max = 10'000,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::bulk_size>,
     .doc = "transactions a worker drives together, each step one bulk write per collection "
            "(at most batch_size)"},
    {.section = "sweep",
     .key = "pace",
     .type = K::kInteger,
     .min = 0,
     .max = 1'000'000,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::pace>,
     .doc = "transactions per second the daemons of a fleet drive at most, divided among its "
            "members, so that a backlog drains beside the application's writes (0: unbounded)"},
    {.section = "sweep",
     .key = "lease",
     .type = K::kDuration,
     .min = 15'000,
     .why_min = StopsWritingBeforeTheLeaseEnds,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::lease_duration>,
     .doc = "how long a claim on a transaction lasts"},
    {.section = "sweep",
     .key = "max_failures",
     .type = K::kInteger,
     .min = 1,
     .max = 1000,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::max_failures>,
     .doc = "a transaction whose recovery fails this many sweeps in a row is quarantined with "
            "its last error"},
    {.section = "sweep",
     .key = "retention_batch_size",
     .type = K::kInteger,
     .min = 1,
     .max = 100'000,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::retention_batch_size>,
     .doc = "finished transactions retention removes per batch"},
    {.section = "sweep",
     .key = "retention_pause",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::retention_pause>,
     .doc = "the pause between two batches of retention"},
    {.section = "sweep",
     .key = "retention_max_batches",
     .type = K::kInteger,
     .min = 0,
     .max = 1'000'000,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::retention_max_batches>,
     .doc = "batches of retention per sweep (0: until nothing is left)"},
    {.section = "sweep",
     .key = "marker_cap",
     .type = K::kInteger,
     .min = 1,
     .max = 1'000'000,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::marker_cap>,
     .doc = "the orphan scan reports a participant carrying more markers than this"},
    {.section = "sweep",
     .key = "manage_indexes",
     .type = K::kBool,
     .flags = kEnv,
     .field = InConfig<&Config::sweep, &SweepConfig::manage_indexes>,
     .doc = "create the indexes the queries need at start; when off, each missing one is a "
            "warning at start and a line of inspect"},

    // [daemon]
    {.section = "daemon",
     .key = "interval",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::daemon, &DaemonConfig::interval>,
     .doc = "time between the starts of two sweeps in run mode"},
    {.section = "daemon",
     .key = "jitter",
     .type = K::kNumber,
     .min = 0,
     .max = 0.9,
     .flags = kEnv,
     .field = InConfig<&Config::daemon, &DaemonConfig::jitter>,
     .doc = "each wait is interval * (1 +/- jitter), so that hosts do not sweep in lockstep"},
    {.section = "daemon",
     .key = "backoff_initial",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::daemon, &DaemonConfig::backoff_initial>,
     .doc = "the first wait before a retry while the database is unreachable"},
    {.section = "daemon",
     .key = "backoff_max",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::daemon, &DaemonConfig::backoff_max>,
     .doc = "the longest wait, doubling from backoff_initial (not below it)"},
    {.section = "daemon",
     .key = "drain_deadline",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::daemon, &DaemonConfig::drain_deadline>,
     .doc = "the longest drain after SIGTERM before the process exits anyway"},
    {.section = "daemon",
     .key = "orphan_scan_interval",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::daemon, &DaemonConfig::orphan_scan_interval>,
     .doc = "how often run scans the participants for orphan markers"},

    // [fleet]
    {.section = "fleet",
     .key = "enabled",
     .type = K::kBool,
     .flags = kEnv,
     .field = InConfig<&Config::fleet, &FleetConfig::enabled>,
     .doc = "run keeps a member record and drives only its share of the candidates (the "
            "one-shot sweep drives everything)"},
    {.section = "fleet",
     .key = "members_collection",
     .flags = kEnv,
     .field = InConfig<&Config::fleet, &FleetConfig::members_collection>,
     .doc = "the collection of member records, in each watch's database"},
    {.section = "fleet",
     .key = "heartbeat",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::fleet, &FleetConfig::heartbeat>,
     .doc = "how often a member stamps its record with the server's time (unset: "
            "daemon.interval)"},
    {.section = "fleet",
     .key = "expiry",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::fleet, &FleetConfig::expiry>,
     .doc = "a member whose record is older than this on the server's clock has left "
            "(unset: 3 x heartbeat; more than heartbeat)"},
    {.section = "fleet",
     .key = "overdue_after",
     .type = K::kDuration,
     .flags = kEnv,
     .field = InConfig<&Config::fleet, &FleetConfig::overdue_after>,
     .doc = "a candidate a member has found stuck outside its share for this long is "
            "overdue, and driven by that member too, whatever its share (unset: 5 x expiry; at "
            "least expiry)"},

    // [log]
    {.section = "log",
     .key = "format",
     .choices = R"("text", "json" or "journal")",
     .flags = kOwnVariable | kReadBySection,
     .field = InConfig<&Config::log, &LogConfig::format>,
     .doc = "lines on stderr, one JSON object per line on stdout, or journald entries (the "
            "default under systemd with stderr to the journal)"},
    {.section = "log",
     .key = "level",
     .choices = "trace, debug, info, warn or error",
     .flags = kEnv,
     .field = InConfig<&Config::log, &LogConfig::level>,
     .doc = "the least severity logged"},

    // [http]
    {.section = "http",
     .key = "listen",
     .flags = kOwnVariable | kReadBySection,
     .field = InConfig<&Config::http, &HttpConfig::listen>,
     .doc = "where to serve /metrics, /livez and /readyz: HOST:PORT, [IPV6]:PORT or :PORT "
            "(every address); none when empty"},
    {.section = "http",
     .key = "web_config",
     .flags = kEnv | kReadBySection,
     .field = InConfig<&Config::http, &HttpConfig::web_config>,
     .doc = "a web configuration file (YAML, the Prometheus exporter-toolkit format): TLS, "
            "client certificates and basic authentication for the HTTP endpoint; plain "
            "HTTP when empty"},

    // [[watch]]: the keys of every profile.
    {.section = "watch",
     .key = "name",
     .profiles = kEveryProfile,
     .flags = kRequired,
     .field = InWatch<&WatchSpec::name>,
     .doc = "the watch's unique name, used in logs, reports and metrics"},
    {.section = "watch",
     .key = "database",
     .profiles = kEveryProfile,
     .flags = kRequired,
     .field = InWatch<&WatchSpec::ns, &Namespace::database>,
     .doc = "the database of the transactions collection"},
    {.section = "watch",
     .key = "collection",
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::ns, &Namespace::collection>,
     .doc = "the transactions collection"},
    {.section = "watch",
     .key = "profile",
     .choices = R"("transfer", "operations", "tagged-insert" or "steps")",
     .profiles = kEveryProfile,
     .flags = kReadBySection,
     .doc = "the protocol; it sets the defaults of the other keys, and a key of another "
            "profile is refused"},
    {.section = "watch",
     .key = "resume_after",
     .type = K::kDuration,
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::thresholds, &Thresholds::resume_after>,
     .doc = "pending, applied and canceling transactions older than this are driven on"},
    {.section = "watch",
     .key = "rollback_after",
     .type = K::kDuration,
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::thresholds, &Thresholds::rollback_after>,
     .doc = "pending transactions older than this are rolled back instead"},
    {.section = "watch",
     .key = "initial_timeout",
     .type = K::kDuration,
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::thresholds, &Thresholds::initial_timeout>,
     .doc = "initial transactions older than this are cancelled"},
    {.section = "watch",
     .key = "late_write_window",
     .type = K::kDuration,
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::thresholds, &Thresholds::late_write_window>,
     .doc = "finished transactions this recent are re-checked for late writes"},
    {.section = "watch",
     .key = "max_clock_skew",
     .type = K::kDuration,
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::thresholds, &Thresholds::max_clock_skew>,
     .doc = "a transaction further ahead of the server's clock is reported as failed until "
            "the clock reaches it"},
    {.section = "watch",
     .key = "state_field",
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::profile, &Profile::state_field>,
     .doc = "the transaction's state field"},
    {.section = "watch",
     .key = "time_field",
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::profile, &Profile::time_field>,
     .doc = "the transaction's time field"},
    {.section = "watch",
     .key = "missing_time",
     .choices = R"("first_seen", "quarantine" or "object_id")",
     .profiles = kEveryProfile,
     .flags = kReadBySection,
     .doc = "a transaction without a time field is aged from the daemon's first sighting, "
            "quarantined, or aged from its ObjectId; \"quarantine\" when the watch names its "
            "time_field"},
    {.section = "watch",
     .key = "owner_field",
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::profile, &Profile::owner, &OwnerFilter::field>,
     .doc = "the field naming the application that owns a transaction"},
    {.section = "watch",
     .key = "applications",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::profile, &Profile::owner, &OwnerFilter::applications>,
     .doc = "recover only the transactions owned by one of these applications (none: all)"},
    {.section = "watch",
     .key = "include_unowned",
     .type = K::kBool,
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::profile, &Profile::owner, &OwnerFilter::include_unowned>,
     .doc = "also (or, without applications, only) recover the transactions with no owner"},

    // [[watch]]: the keys of one profile or a few.
    {.section = "watch",
     .key = "participants",
     .profiles = kTransfer,
     .field = InProtocol<&TransferProfile::participants_collection>,
     .doc = "the participants collection"},
    {.section = "watch",
     .key = "source_field",
     .profiles = kTransfer,
     .field = InProtocol<&TransferProfile::source_field>,
     .doc = "the transaction's field naming the participant debited"},
    {.section = "watch",
     .key = "destination_field",
     .profiles = kTransfer,
     .field = InProtocol<&TransferProfile::destination_field>,
     .doc = "the transaction's field naming the participant credited"},
    {.section = "watch",
     .key = "amount_field",
     .profiles = kTransfer,
     .field = InProtocol<&TransferProfile::amount_field>,
     .doc = "the transaction's field holding the amount"},
    {.section = "watch",
     .key = "participant_key",
     .profiles = kTransfer,
     .field = InProtocol<&TransferProfile::participant_key>,
     .doc = "the participant field the source and destination name; another than _id must "
            "name one document"},
    {.section = "watch",
     .key = "balance_field",
     .profiles = kTransfer,
     .field = InProtocol<&TransferProfile::balance_field>,
     .doc = "the participant's balance"},
    {.section = "watch",
     .key = "operations_field",
     .profiles = kOperations,
     .field = InProtocol<&OperationsProfile::operations_field>,
     .doc = "the path of the list of operations in a transaction"},
    {.section = "watch",
     .key = "collection_key",
     .profiles = kOperations,
     .field = InProtocol<&OperationsProfile::collection_key>,
     .doc = "an operation's key naming its collection"},
    {.section = "watch",
     .key = "id_key",
     .profiles = kOperations,
     .field = InProtocol<&OperationsProfile::id_key>,
     .doc = "an operation's key naming its document's _id"},
    {.section = "watch",
     .key = "inc_key",
     .profiles = kOperations,
     .field = InProtocol<&OperationsProfile::inc_key>,
     .doc = "an operation's key holding {field: number} to $inc"},
    {.section = "watch",
     .key = "set_key",
     .profiles = kOperations,
     .field = InProtocol<&OperationsProfile::set_key>,
     .doc = "an operation's key holding {field: value} to $set"},
    {.section = "watch",
     .key = "previous_key",
     .profiles = kOperations,
     .field = InProtocol<&OperationsProfile::previous_key>,
     .doc = "an operation's key holding the values its set replaces"},
    {.section = "watch",
     .key = "steps",
     .type = K::kTableList,
     .profiles = kSteps,
     .flags = kRequired | kReadBySection,
     .doc = "the participant steps, one table each (the watch.steps keys)"},
    {.section = "watch",
     .key = "marker_field",
     .profiles = kTransfer | kOperations | kSteps,
     .field = MarkerField,
     .doc = "the marker array on each participant (steps: of every step naming no marker)"},
    {.section = "watch",
     .key = "orphan_scan_indexes",
     .type = K::kBool,
     .profiles = kTransfer | kOperations | kSteps,
     .field = InWatch<&WatchSpec::orphan_scan_indexes>,
     .doc = "also require (and with manage_indexes create) indexes of the marker arrays and "
            "finish traces on the participants; only the orphan scan uses them, and on "
            "DocumentDB they slow the application's participant writes 2.5 times"},
    {.section = "watch",
     .key = "require_funds",
     .type = K::kBool,
     .profiles = kTransfer,
     .field = InProtocol<&TransferProfile::require_funds>,
     .doc = "debit only while balance >= amount; a debit that can never apply rolls the "
            "transfer back"},
    {.section = "watch",
     .key = "allowed_collections",
     .type = K::kStringList,
     .profiles = kOperations,
     .flags = kNotTheTransactionsCollection,
     .field = InProtocol<&OperationsProfile::collections>,
     .doc = "the collections operations may change (none: any but the transactions "
            "collection and system.*)"},
    {.section = "watch",
     .key = "max_operations",
     .type = K::kInteger,
     .min = 1,
     .max = 1'000'000,
     .profiles = kOperations,
     .field = InProtocol<&OperationsProfile::max_operations>,
     .doc = "a transaction listing more operations is quarantined"},
    {.section = "watch",
     .key = "tagged_collections",
     .type = K::kStringList,
     .profiles = kTaggedInsert,
     .flags = kRequired | kNotTheTransactionsCollection,
     .field = InProtocol<&TaggedInsertProfile::tagged_collections>,
     .doc = "the collections the application inserts tagged documents into"},
    {.section = "watch",
     .key = "tag_field",
     .profiles = kTaggedInsert,
     .field = InProtocol<&TaggedInsertProfile::tag_field>,
     .doc = "the tag naming the transaction on each inserted document"},
    {.section = "watch",
     .key = "valid_field",
     .profiles = kTaggedInsert,
     .field = InProtocol<&TaggedInsertProfile::valid_field>,
     .doc = "the flag set on each document when its transaction commits"},

    // [[watch]]: the keys of every profile again.
    {.section = "watch",
     .key = "retain_finished",
     .type = K::kDuration,
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::retention, &RetentionPolicy::retain_finished>,
     .doc = "remove done and cancelled transactions older than this (and than "
            "late_write_window) after each sweep (none: keep them)"},
    {.section = "watch",
     .key = "archive_collection",
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::retention, &RetentionPolicy::archive_collection>,
     .doc = "move them to this collection of the same database instead of deleting them"},
    {.section = "watch",
     .key = "lease_field",
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::lease_field>,
     .doc = "the sub-document of each transaction the daemon keeps its lease, outcome and "
            "quarantine reason in"},
    {.section = "watch",
     .key = "states",
     .type = K::kTable,
     .profiles = kEveryProfile,
     .flags = kReadBySection,
     .doc = "the spellings of each state (the watch.states keys)"},

    // [watch.states]: each state under the names the application shapes give it, one per
    // state in a table. The first spelling of a list is the one written.
    {.section = "watch.states",
     .key = "initial",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "initial",
     .field = InWatch<&WatchSpec::profile, &Profile::states, &StateAliases::initial>,
     .doc = "the spellings of initial (nothing applied yet)"},
    {.section = "watch.states",
     .key = "new",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "initial",
     .doc = "another name of initial"},
    {.section = "watch.states",
     .key = "pending",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "pending",
     .field = InWatch<&WatchSpec::profile, &Profile::states, &StateAliases::pending>,
     .doc = "the spellings of pending (being applied)"},
    {.section = "watch.states",
     .key = "started",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "pending",
     .doc = "another name of pending"},
    {.section = "watch.states",
     .key = "resuming",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .field = InWatch<&WatchSpec::profile, &Profile::states, &StateAliases::resuming>,
     .doc = "pending as the daemon writes it once it has taken a transaction over to resume "
            "it, so that the application's own compare-and-set from pending fails"},
    {.section = "watch.states",
     .key = "applied",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "applied",
     .field = InWatch<&WatchSpec::profile, &Profile::states, &StateAliases::applied>,
     .doc = "the spellings of applied (committed, being finished)"},
    {.section = "watch.states",
     .key = "committed",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "applied",
     .doc = "another name of applied"},
    {.section = "watch.states",
     .key = "finishing",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "applied",
     .doc = "another name of applied"},
    {.section = "watch.states",
     .key = "done",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "done",
     .field = InWatch<&WatchSpec::profile, &Profile::states, &StateAliases::done>,
     .doc = "the spellings of done"},
    {.section = "watch.states",
     .key = "canceling",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "canceling",
     .field = InWatch<&WatchSpec::profile, &Profile::states, &StateAliases::canceling>,
     .doc = "the spellings of canceling (being rolled back)"},
    {.section = "watch.states",
     .key = "cancelling",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "canceling",
     .doc = "another name of canceling"},
    {.section = "watch.states",
     .key = "rollback",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "canceling",
     .doc = "another name of canceling"},
    {.section = "watch.states",
     .key = "cancelled",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "cancelled",
     .field = InWatch<&WatchSpec::profile, &Profile::states, &StateAliases::cancelled>,
     .doc = "the spellings of cancelled (rolled back; none: rollbacks end in done)"},
    {.section = "watch.states",
     .key = "canceled",
     .type = K::kStringList,
     .profiles = kEveryProfile,
     .state = "cancelled",
     .doc = "another name of cancelled"},

    // One entry of a watch's steps: paths are into the transaction document.
    {.section = "watch.steps",
     .key = "collection",
     .profiles = kSteps,
     .flags = kRequired | kReadBySection,
     .doc = "the participant's collection (of the watch's database)"},
    {.section = "watch.steps",
     .key = "key",
     .profiles = kSteps,
     .flags = kReadBySection,
     .field = InFirstStep<&StepSpec::key>,
     .doc = "the participant field key_path names; another than _id must name one document"},
    {.section = "watch.steps",
     .key = "key_path",
     .profiles = kSteps,
     .flags = kRequired | kReadBySection,
     .doc = "the path of the participant's key"},
    {.section = "watch.steps",
     .key = "inc",
     .type = K::kTable,
     .profiles = kSteps,
     .flags = kReadBySection,
     .doc = "field = \"path\" to $inc by the number there (\"-path\": negated)"},
    {.section = "watch.steps",
     .key = "set",
     .type = K::kTable,
     .profiles = kSteps,
     .flags = kReadBySection,
     .doc = "field = \"path\" to $set to the value there"},
    {.section = "watch.steps",
     .key = "previous",
     .type = K::kTable,
     .profiles = kSteps,
     .flags = kReadBySection,
     .doc = "field = \"path\" of the value each set replaces (its exact inverse)"},
    {.section = "watch.steps",
     .key = "guard",
     .type = K::kStringList,
     .profiles = kSteps,
     .flags = kReadBySection,
     .doc = "conditions FIELD OP PATH on the participant (OP one of >= <= < == !=), or one "
            "such string"},
    {.section = "watch.steps",
     .key = "marker",
     .profiles = kSteps,
     .flags = kReadBySection,
     .field = InFirstStep<&StepSpec::marker_field>,
     .doc = "the step's marker array (none: the watch's marker_field)"},
    {.section = "watch.steps",
     .key = "label",
     .profiles = kSteps,
     .flags = kReadBySection,
     .field = InFirstStep<&StepSpec::label>,
     .doc = "a report's words for the step: \"debit {amount} from {key}\""},
    {.section = "watch.steps",
     .key = "positive",
     .type = K::kBool,
     .profiles = kSteps,
     .flags = kReadBySection,
     .field = InFirstStep<&StepSpec::positive_amounts>,
     .doc = "every amount must be a positive number"},
};

std::string Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string(s);
}

// "1", "1000000", "0.9".
std::string Number(double v) {
  if (v == static_cast<double>(static_cast<long long>(v)))
    return std::to_string(static_cast<long long>(v));
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::span<const KeySpec> ConfigSchema() {
  return kSchema;
}

std::vector<const KeySpec*> KeysOf(std::string_view section) {
  std::vector<const KeySpec*> out;
  for (const auto& k : kSchema)
    if (k.section == section) out.push_back(&k);
  return out;
}

std::vector<std::string> KeyNames(std::string_view section, std::string_view profile) {
  const unsigned bit = profile.empty() ? kEveryProfile : ProfileBit(profile);
  std::vector<std::string> out;
  // The keys of every profile first, then those of `profile`.
  for (bool every : {true, false})
    for (const auto* k : KeysOf(section))
      if ((k->profiles == 0 || k->profiles == kEveryProfile) == every &&
          (k->profiles == 0 || (k->profiles & bit) != 0))
        out.emplace_back(k->key);
  return out;
}

const KeySpec& SchemaKey(std::string_view section, std::string_view key) {
  for (const auto& k : kSchema)
    if (k.section == section && k.key == key) return k;
  std::fprintf(stderr, "configuration key %.*s.%.*s is not in the schema\n",
               static_cast<int>(section.size()), section.data(), static_cast<int>(key.size()),
               key.data());
  std::abort();
}

std::string FullName(const KeySpec& spec) {
  if (spec.section.empty()) return std::string(spec.key);
  return std::string(spec.section) + "." + std::string(spec.key);
}

std::string VariableName(const KeySpec& spec) {
  std::string name = "TXN_RECOVERYD_" + std::string(spec.section) + "_" + std::string(spec.key);
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return name;
}

unsigned ProfileBit(std::string_view profile) {
  for (std::size_t i = 0; i < std::size(kProfileNames); ++i)
    if (kProfileNames[i] == profile) return 1u << i;
  return 0;
}

std::vector<std::string> Choices(const KeySpec& spec) {
  std::vector<std::string> out;
  std::string_view text = spec.choices;
  while (!text.empty()) {
    std::size_t comma = text.find(", "), other = text.find(" or ");
    std::size_t end = std::min(comma, other);
    std::string item = Trim(text.substr(0, end));
    if (item.size() >= 2 && item.front() == '"') item = item.substr(1, item.size() - 2);
    out.push_back(item);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + (end == comma ? 2 : 4));
  }
  return out;
}

std::string Alternatives(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

std::string BoundsText(const KeySpec& spec) {
  switch (spec.type) {
    case KeyType::kInteger:
    case KeyType::kNumber:
      return Number(spec.min) + " to " + Number(spec.max);
    case KeyType::kWriteConcern:
      return "\"majority\" or " + Number(spec.min) + " to " + Number(spec.max);
    case KeyType::kDuration:
      if (spec.min > 0)
        return "at least " +
               FormatDuration(std::chrono::milliseconds(static_cast<long long>(spec.min)));
      return "positive";
    default:
      return std::string(spec.choices);
  }
}

std::string_view TypeName(KeyType type) {
  switch (type) {
    case KeyType::kString:
      return "string";
    case KeyType::kDuration:
      return "duration";
    case KeyType::kInteger:
      return "integer";
    case KeyType::kNumber:
      return "number";
    case KeyType::kBool:
      return "boolean";
    case KeyType::kStringList:
      return "list of strings";
    case KeyType::kWriteConcern:
      return "string or integer";
    case KeyType::kTable:
      return "table";
    case KeyType::kTableList:
      return "list of tables";
  }
  return "";
}

std::string ProfilesText(const KeySpec& spec) {
  if (spec.profiles == 0) return "";
  if (spec.profiles == kEveryProfile) return "every profile";
  std::string out;
  for (std::size_t i = 0; i < std::size(kProfileNames); ++i)
    if (spec.profiles & (1u << i)) out += (out.empty() ? "" : ", ") + std::string(kProfileNames[i]);
  return out;
}

}  // namespace txn_recovery::daemon
