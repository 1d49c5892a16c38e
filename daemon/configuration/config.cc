#include "daemon/configuration/config.h"

#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "daemon/base/journal_stream.h"
#include "daemon/configuration/config_reading.h"
#include "daemon/configuration/config_schema.h"
#include "daemon/serving/http_server.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::daemon {

using txn_recovery::WatchSpec;

std::optional<LogFormat> LogFormatNamed(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  if (name == "journal") return LogFormat::kJournal;
  return std::nullopt;
}

std::string LogFormatName(LogFormat format) {
  return format == LogFormat::kJson ? "json" : format == LogFormat::kJournal ? "journal" : "text";
}

namespace {

using ServerClock = txn_recovery::MongoOptions::ServerClock;
constexpr std::pair<ServerClock, std::string_view> kServerClockNames[] = {
    {ServerClock::kAuto, "auto"},
    {ServerClock::kServer, "server"},
    {ServerClock::kDaemon, "daemon"}};

}  // namespace

std::string ServerClockName(ServerClock clock) {
  for (const auto& [c, name] : kServerClockNames)
    if (c == clock) return std::string(name);
  return "";
}

std::optional<ServerClock> ServerClockNamed(std::string_view name) {
  for (const auto& [c, n] : kServerClockNames)
    if (n == name) return c;
  return std::nullopt;
}

// The URI is the file's first line, as documented (a credential file may go on with a
// comment or a second, rotated-in URI); surrounding blanks and a CR are not part of it.
Status ReadSecretFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot read " + path);
  std::string s;
  std::getline(in, s);
  auto blank = [](char c) { return c == '\r' || c == ' ' || c == '\t'; };
  while (!s.empty() && blank(s.back())) s.pop_back();
  std::size_t first = 0;
  while (first < s.size() && blank(s[first])) ++first;
  s.erase(0, first);
  if (s.empty()) return Status::InvalidArgument(path + ": the first line is empty");
  *out = std::move(s);
  return Status::Ok();
}

namespace {

// A table of the root, or null when absent; an error when the key holds something else.
Status Section(const Reader& r, const toml::table& root, std::string_view name,
               const toml::table** out) {
  *out = nullptr;
  const toml::node* n = root.get(name);
  if (n == nullptr) return Status::Ok();
  *out = n->as_table();
  if (*out == nullptr) return r.Error(n->source(), std::string(name), "must be a table");
  return Status::Ok();
}

// A section's unknown keys, then every key the schema reads for it.
Status LoadSection(const Reader& r, const toml::table& t, std::string_view section, Config* c) {
  const std::string prefix = std::string(section) + ".";
  WatchSpec no_watch;
  Collected problems;
  problems.Add(r.OnlyKnownKeys(t, prefix, KeyNames(section)));
  problems.Add(ReadKeys(r, t, prefix, section, Keys::kAll, c, &no_watch));
  return problems.status();
}

// Where the URI comes from, highest precedence first: the environment, the systemd
// credential, uri_file, uri. `m` is [mongodb] (or null); `uri_file` its uri_file.
Status ResolveUri(const Reader& r, const toml::table* m, const std::string& uri_file,
                  const EnvLookup& env, Config* c) {
  const toml::node* uri_node = nullptr;
  if (m != nullptr && !c->mongodb.uri.empty()) {
    c->mongodb.uri_source = r.path();
    uri_node = m->get("uri");
  }
  if (!uri_file.empty()) {
    const toml::node* at = m->get("uri_file");
    if (Status s = ReadSecretFile(uri_file, &c->mongodb.uri); !s.ok())
      return r.Error(at->source(), "mongodb.uri_file", s.message());
    c->mongodb.uri_source = "uri_file " + uri_file;
    c->mongodb.uri_path = uri_file;
    uri_node = at;
  }
  // systemd's LoadCredential=mongodb-uri:... puts the secret where only this service reads it.
  if (auto dir = env("CREDENTIALS_DIRECTORY"); dir && !dir->empty()) {
    std::string cred = *dir + "/mongodb-uri";
    if (std::ifstream(cred).good()) {
      if (Status s = ReadSecretFile(cred, &c->mongodb.uri); !s.ok())
        return r.Error("mongodb.uri", "systemd credential: " + s.message());
      c->mongodb.uri_source = "systemd credential " + cred;
      c->mongodb.uri_path = cred;
      uri_node = nullptr;
    }
  }
  const std::string variable = VariableName(SchemaKey("mongodb", "uri"));
  std::optional<std::string> from_env;
  if (Status s = ReadVariable(env, variable, &from_env); !s.ok()) return s;
  if (from_env) {
    c->mongodb.uri = *from_env;
    c->mongodb.uri_source = "environment " + variable;
    c->mongodb.uri_path.clear();
    uri_node = nullptr;
  }
  if (c->mongodb.uri.empty())
    return r.Error("mongodb.uri",
                   "no MongoDB URI: set mongodb.uri or mongodb.uri_file, or the environment "
                   "variable " +
                       variable);
  if (Status s = txn_recovery::ValidateMongoUri(c->mongodb.uri); !s.ok()) {
    std::string problem = "not a usable MongoDB URI: " + s.message();
    if (uri_node != nullptr) return r.Error(uri_node->source(), "mongodb.uri", problem);
    return Status::InvalidArgument(c->mongodb.uri_source + ": mongodb.uri: " + problem);
  }
  return Status::Ok();
}

// [mongodb] and the URI's other sources; the URI itself checked as the driver will read it.
Status LoadMongo(const Reader& r, const toml::table& root, const EnvLookup& env, Config* c) {
  const toml::table* m = nullptr;
  if (Status s = Section(r, root, "mongodb", &m); !s.ok()) return s;
  std::string uri_file;
  if (m != nullptr) {
    Collected problems;
    problems.Add(LoadSection(r, *m, "mongodb", c));
    problems.Add(r.String(*m, "mongodb.", "uri_file", &uri_file));
    // Where the URI comes from is decided below: not before the file's keys are sound.
    if (!problems.ok()) return problems.status();
    if (!c->mongodb.uri.empty() && !uri_file.empty())
      return r.Error(m->source(), "mongodb", "set either uri or uri_file, not both");
  }
  return ResolveUri(r, m, uri_file, env, c);
}

Status LoadSweep(const Reader& r, const toml::table& root, Config* c) {
  const toml::table* t = nullptr;
  if (Status s = Section(r, root, "sweep", &t); !s.ok() || t == nullptr) return s;
  return LoadSection(r, *t, "sweep", c);
}

Status LoadDaemon(const Reader& r, const toml::table& root, Config* c) {
  const toml::table* t = nullptr;
  if (Status s = Section(r, root, "daemon", &t); !s.ok() || t == nullptr) return s;
  if (Status s = LoadSection(r, *t, "daemon", c); !s.ok()) return s;
  if (c->daemon.backoff_max < c->daemon.backoff_initial)
    return r.Error(t->get("backoff_max") ? t->get("backoff_max")->source()
                                         : t->get("backoff_initial")->source(),
                   "daemon.backoff_max", "must not be below backoff_initial");
  return Status::Ok();
}

Status LoadFleet(const Reader& r, const toml::table& root, Config* c) {
  const toml::table* t = nullptr;
  if (Status s = Section(r, root, "fleet", &t); !s.ok()) return s;
  if (t != nullptr)
    if (Status s = LoadSection(r, *t, "fleet", c); !s.ok()) return s;
  // Derived from [daemon], read (or defaulted) before.
  if (c->fleet.heartbeat.count() == 0) c->fleet.heartbeat = c->daemon.interval;
  if (c->fleet.expiry.count() == 0) c->fleet.expiry = 3 * c->fleet.heartbeat;
  if (c->fleet.expiry <= c->fleet.heartbeat) {
    const toml::node* at = t != nullptr ? t->get("expiry") : nullptr;
    if (at == nullptr && t != nullptr) at = t->get("heartbeat");
    const std::string why = "must be more than fleet.heartbeat (" +
                            std::to_string(c->fleet.heartbeat.count()) +
                            "ms): a member would "
                            "expire between two of its heartbeats";
    return at != nullptr ? r.Error(at->source(), "fleet.expiry", why)
                         : r.Error("fleet.expiry", why);
  }
  if (c->fleet.overdue_after.count() == 0) c->fleet.overdue_after = 5 * c->fleet.expiry;
  // Sooner than a member's record expires, a member that is merely slow (a long batch, a
  // pause shorter than the expiry) would race the others for its own share.
  if (c->fleet.overdue_after < c->fleet.expiry) {
    const toml::node* at = t != nullptr ? t->get("overdue_after") : nullptr;
    const std::string why = "must be at least fleet.expiry (" +
                            std::to_string(c->fleet.expiry.count()) +
                            "ms): a member that is merely slow would race the others for its "
                            "own share";
    return at != nullptr ? r.Error(at->source(), "fleet.overdue_after", why)
                         : r.Error("fleet.overdue_after", why);
  }
  return Status::Ok();
}

// Member records written into a collection the daemon reads as transactions or
// participants would be taken for them (and quarantined, or counted as orphans).
Status CheckMembersCollection(const Reader& r, const toml::table& root, const Config& c) {
  if (!c.fleet.enabled) return Status::Ok();
  const toml::table* fleet = root.get_as<toml::table>("fleet");
  const toml::node* at = fleet != nullptr ? fleet->get("members_collection") : nullptr;
  for (const auto& w : c.watches) {
    std::vector<std::string> in_use = {w.ns.collection, w.control_collection};
    for (const auto& loc : w.profile.MarkerLocations(w.ns))
      if (loc.ns.database == w.ns.database) in_use.push_back(loc.ns.collection);
    if (std::find(in_use.begin(), in_use.end(), c.fleet.members_collection) == in_use.end())
      continue;
    const std::string why = "\"" + c.fleet.members_collection + "\" is a collection watch " +
                            w.name + " reads or writes in " + w.ns.database +
                            "; the member records need their own";
    return at != nullptr ? r.Error(at->source(), "fleet.members_collection", why)
                         : r.Error("fleet.members_collection", why);
  }
  return Status::Ok();
}

Status LoadLog(const Reader& r, const toml::table& root, const EnvLookup& env, Config* c) {
  const toml::table* t = nullptr;
  if (Status s = Section(r, root, "log", &t); !s.ok()) return s;
  const KeySpec& format_key = SchemaKey("log", "format");
  std::string format;
  if (t != nullptr) {
    Collected problems;
    problems.Add(LoadSection(r, *t, "log", c));
    problems.Add(ReadString(r, *t, "log.", format_key, &format));
    if (!problems.ok()) return problems.status();
  }
  const std::string variable = VariableName(format_key);
  std::optional<std::string> v;
  if (Status s = ReadVariable(env, variable, &v); !s.ok()) return s;
  if (v) {
    if (!LogFormatNamed(*v))
      return Status::InvalidArgument("environment " + variable + ": must be " +
                                     Alternatives(Choices(format_key)) + ", not '" + *v + "'");
    format = *v;
  }
  // Under systemd with stderr connected to the journal, speak its language by default. The
  // variable alone is not enough: it is inherited by children whose stderr goes elsewhere
  // (systemd.exec(5) says to compare it with stderr's device and inode).
  if (format.empty()) {
    std::optional<std::string> stream = env("JOURNAL_STREAM");
    format = stream && StreamIsJournal(*stream, STDERR_FILENO) ? "journal" : "text";
  }
  c->log.format = *LogFormatNamed(format);
  return Status::Ok();
}

Status LoadHttp(const Reader& r, const toml::table& root, const EnvLookup& env, Config* c) {
  const toml::table* t = nullptr;
  if (Status s = Section(r, root, "http", &t); !s.ok()) return s;
  if (t != nullptr) {
    Collected problems;
    problems.Add(LoadSection(r, *t, "http", c));
    if (problems.Add(r.String(*t, "http.", "listen", &c->http.listen)) && !c->http.listen.empty())
      if (Status bad = CheckHttpListen(c->http.listen); !bad.ok())
        problems.Add(r.Error(t->get("listen")->source(), "http.listen", bad.message()));
    // The web configuration, and the certificate and key it names, are read now: a file
    // that run would refuse is a bad configuration for check-config too.
    if (problems.Add(r.String(*t, "http.", "web_config", &c->http.web_config)) &&
        !c->http.web_config.empty())
      if (Status bad = LoadHttpSecurity(c->http.web_config, &c->http.security); !bad.ok())
        problems.Add(r.Error(t->get("web_config")->source(), "http.web_config", bad.message()));
    if (!problems.ok()) return problems.status();
  }
  const std::string variable = VariableName(SchemaKey("http", "listen"));
  std::optional<std::string> v;
  if (Status s = ReadVariable(env, variable, &v); !s.ok()) return s;
  if (v) {
    if (Status bad = CheckHttpListen(*v); !bad.ok())
      return Status::InvalidArgument("environment " + variable + ": " + bad.message());
    c->http.listen = *v;
  }
  return Status::Ok();
}

// Reads the file's TOML (syntax errors with their position).
Status ParseFile(const Reader& r, toml::table* root) {
  try {
    *root = toml::parse_file(r.path());
  } catch (const toml::parse_error& e) {
    if (e.source().begin.line == 0)
      return Status::InvalidArgument(r.path() + ": " + std::string(e.description()));
    return r.Error(e.source(), "(syntax)", std::string(e.description()));
  }
  return Status::Ok();
}

Status LoadAll(const std::string& path, const EnvLookup& env, Config* c) {
  c->path = path;
  Reader r(path);
  toml::table root;
  Status s;
  if (!(s = ParseFile(r, &root)).ok() || !(s = OverlayEnvironment(env, &root)).ok()) return s;
  // Each section on its own: a problem in one does not hide those of the next.
  Collected problems;
  problems.Add(r.OnlyKnownKeys(root, "", KeyNames("")));
  problems.Add(LoadMongo(r, root, env, c));
  problems.Add(LoadSweep(r, root, c));
  problems.Add(LoadDaemon(r, root, c));
  problems.Add(LoadFleet(r, root, c));
  problems.Add(LoadLog(r, root, env, c));
  problems.Add(LoadHttp(r, root, env, c));
  // The watches' retention takes its pacing from [sweep], read (or defaulted) above.
  problems.Add(LoadWatches(r, root, c));
  if (problems.ok()) problems.Add(CheckMembersCollection(r, root, *c));
  return problems.InFileOrder(path);
}

}  // namespace

Status CheckHttpListen(const std::string& listen) {
  ListenAddress unused;
  return ParseListenAddress(listen, &unused);
}

Status LoadConfig(const std::string& path, const EnvLookup& env, Config* config) {
  Config c;
  try {
    if (Status s = LoadAll(path, env, &c); !s.ok()) return s;
  } catch (const std::exception& e) {
    // Nothing above is meant to throw; a configuration loader that crashes the daemon on
    // SIGHUP is worse than one that reports its own bug.
    return Status::InvalidArgument(path + ": the configuration could not be read: " + e.what());
  }
  *config = std::move(c);
  return Status::Ok();
}

Status SelectWatches(const std::vector<std::string>& names, Config* config) {
  if (names.empty()) return Status::Ok();
  std::string known;
  for (const auto& w : config->watches) known += (known.empty() ? "" : ", ") + w.name;
  for (const auto& name : names) {
    bool found = false;
    for (const auto& w : config->watches) found = found || w.name == name;
    if (!found)
      return Status::InvalidArgument("--watch " + name + ": no watch of that name in " +
                                     config->path + " (it has: " + known + ")");
  }
  std::vector<WatchSpec> kept;
  for (auto& w : config->watches)
    if (std::find(names.begin(), names.end(), w.name) != names.end()) kept.push_back(std::move(w));
  config->watches = std::move(kept);
  return Status::Ok();
}

txn_recovery::MongoOptions MongoOptionsFor(const Config& config) {
  txn_recovery::MongoOptions options;
  options.uri = config.mongodb.uri;
  options.server_selection_timeout = config.mongodb.server_selection_timeout;
  options.socket_timeout = config.mongodb.socket_timeout;
  options.write_concern = config.mongodb.write_concern;
  options.write_concern_timeout = config.mongodb.write_concern_timeout;
  options.read_concern = config.mongodb.read_concern;
  // The loader accepts only the names of the schema's choices.
  options.server_clock = ServerClockNamed(config.mongodb.server_clock).value_or(ServerClock::kAuto);
  options.max_pool_size = config.sweep.workers + 2;
  return options;
}

txn_recovery::LeaseOptions LeaseOptionsFor(const Config& config) {
  txn_recovery::LeaseOptions lease;
  lease.duration = config.sweep.lease_duration;
  return lease;
}

txn_recovery::OrphanOptions OrphanOptionsFor(const Config& config,
                                             const txn_recovery::LeaseOptions& lease) {
  txn_recovery::OrphanOptions options;
  options.lease = lease;
  options.batch_size = config.sweep.batch_size;
  options.marker_cap = config.sweep.marker_cap;
  return options;
}

std::string DefaultProfileName() {
  return std::string(txn_recovery::Profile{}.kind());
}

std::optional<WatchSpec> DefaultWatch(std::string_view profile, const Config& config) {
  std::optional<txn_recovery::Profile> p = txn_recovery::Profile::Named(profile);
  if (!p) return std::nullopt;
  WatchSpec w;
  w.profile = std::move(*p);
  w.profile.missing_time = w.profile.DefaultMissingTime(/*time_field_named=*/false);
  w.ns.collection = kDefaultTransactionsCollection;
  w.retention.batch_size = config.sweep.retention_batch_size;
  w.retention.pause_between_batches = config.sweep.retention_pause;
  w.retention.max_batches = config.sweep.retention_max_batches;
  return w;
}

}  // namespace txn_recovery::daemon
