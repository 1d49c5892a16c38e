#include "config.h"

#include <toml++/toml.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include "txn_recovery/mongo_store.h"

namespace txn_recoveryd {

using txn_recovery::Status;
using txn_recovery::TransferProfile;
using txn_recovery::WatchSpec;

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Status ParseDuration(std::string_view text, std::chrono::milliseconds* out) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0 || i > 12)
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a duration (use e.g. \"30s\", \"5m\", \"2h\")");
  long long n = std::stoll(std::string(text.substr(0, i)));
  std::string_view unit = text.substr(i);
  long long factor;
  if (unit == "ms") {
    factor = 1;
  } else if (unit == "s") {
    factor = 1000;
  } else if (unit == "m") {
    factor = 60'000;
  } else if (unit == "h") {
    factor = 3'600'000;
  } else if (unit == "d") {
    factor = 86'400'000;
  } else {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' has no valid unit (ms, s, m, h or d)");
  }
  long long ms;
  if (__builtin_mul_overflow(n, factor, &ms))
    return Status::InvalidArgument("'" + std::string(text) + "' is too long a duration");
  *out = std::chrono::milliseconds(ms);
  return Status::Ok();
}

std::string FormatDuration(std::chrono::milliseconds d) {
  long long ms = d.count();
  if (ms % 86'400'000 == 0 && ms) return std::to_string(ms / 86'400'000) + "d";
  if (ms % 3'600'000 == 0 && ms) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0 && ms) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0 && ms) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

namespace {

// Collects the file name and turns a node's position into the "FILE:LINE:COL: KEY: ..."
// prefix every message carries.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  Status Error(const toml::source_region& where, const std::string& key,
               const std::string& problem) const {
    std::ostringstream os;
    os << path_ << ":" << where.begin.line << ":" << where.begin.column << ": " << key << ": "
       << problem;
    return Status::InvalidArgument(os.str());
  }
  Status Error(const std::string& key, const std::string& problem) const {
    return Status::InvalidArgument(path_ + ": " + key + ": " + problem);
  }

  // Rejects keys this version does not know: a typo must not silently fall back to a
  // default that could roll back live transactions.
  Status OnlyKnownKeys(const toml::table& t, const std::string& prefix,
                       std::initializer_list<std::string_view> known) const {
    for (const auto& [k, v] : t) {
      bool ok = false;
      for (auto name : known) ok = ok || k.str() == name;
      if (!ok)
        return Error(k.source(), prefix + std::string(k.str()),
                     "unknown key (check the spelling against config/txn-recoveryd.toml)");
    }
    return Status::Ok();
  }

  Status String(const toml::table& t, const std::string& prefix, std::string_view key,
                std::string* out, bool required = false) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
      if (required) return Error(t.source(), prefix + std::string(key), "is required");
      return Status::Ok();
    }
    const auto* s = n->as_string();
    if (s == nullptr) return Error(n->source(), prefix + std::string(key), "must be a string");
    if (s->get().empty()) return Error(n->source(), prefix + std::string(key), "must not be empty");
    *out = s->get();
    return Status::Ok();
  }

  Status Duration(const toml::table& t, const std::string& prefix, std::string_view key,
                  std::chrono::milliseconds* out) const {
    std::string text;
    if (Status s = String(t, prefix, key, &text); !s.ok()) return s;
    if (text.empty()) return Status::Ok();
    if (Status s = ParseDuration(text, out); !s.ok())
      return Error(t.get(key)->source(), prefix + std::string(key), s.message());
    if (out->count() <= 0)
      return Error(t.get(key)->source(), prefix + std::string(key), "must be positive");
    return Status::Ok();
  }

  Status Bool(const toml::table& t, const std::string& prefix, std::string_view key,
              bool* out) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) return Status::Ok();
    const auto* b = n->as_boolean();
    if (b == nullptr) return Error(n->source(), prefix + std::string(key), "must be true or false");
    *out = b->get();
    return Status::Ok();
  }

  Status Int(const toml::table& t, const std::string& prefix, std::string_view key, long long lo,
             long long hi, long long* out) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) return Status::Ok();
    const auto* i = n->as_integer();
    if (i == nullptr) return Error(n->source(), prefix + std::string(key), "must be an integer");
    if (i->get() < lo || i->get() > hi)
      return Error(n->source(), prefix + std::string(key),
                   "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    *out = i->get();
    return Status::Ok();
  }

  Status StringList(const toml::table& t, const std::string& prefix, std::string_view key,
                    std::vector<std::string>* out) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) return Status::Ok();
    const auto* arr = n->as_array();
    if (arr == nullptr || arr->empty())
      return Error(n->source(), prefix + std::string(key), "must be a non-empty list of strings");
    std::vector<std::string> values;
    for (const auto& e : *arr) {
      const auto* s = e.as_string();
      if (s == nullptr || s->get().empty())
        return Error(e.source(), prefix + std::string(key), "must hold non-empty strings only");
      values.push_back(s->get());
    }
    *out = std::move(values);
    return Status::Ok();
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Status ReadSecretFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  if (s.empty()) return Status::InvalidArgument(path + " is empty");
  *out = std::move(s);
  return Status::Ok();
}

Status LoadWatch(const Reader& r, const toml::table& t, std::size_t index, WatchSpec* w) {
  const std::string prefix = "watch[" + std::to_string(index) + "].";
  if (Status s = r.OnlyKnownKeys(t, prefix, {"name",
                                             "database",
                                             "collection",
                                             "profile",
                                             "participants",
                                             "resume_after",
                                             "rollback_after",
                                             "initial_timeout",
                                             "late_write_window",
                                             "state_field",
                                             "time_field",
                                             "source_field",
                                             "destination_field",
                                             "amount_field",
                                             "participant_key",
                                             "balance_field",
                                             "marker_field",
                                             "require_funds",
                                             "lease_field",
                                             "states"});
      !s.ok())
    return s;
  std::string profile = "transfer";
  w->ns.collection = "transactions";
  TransferProfile& p = w->profile;
  Status s;
  if (!(s = r.String(t, prefix, "name", &w->name, true)).ok() ||
      !(s = r.String(t, prefix, "database", &w->ns.database, true)).ok() ||
      !(s = r.String(t, prefix, "collection", &w->ns.collection)).ok() ||
      !(s = r.String(t, prefix, "profile", &profile)).ok() ||
      !(s = r.String(t, prefix, "participants", &p.participants_collection)).ok() ||
      !(s = r.Duration(t, prefix, "resume_after", &w->thresholds.resume_after)).ok() ||
      !(s = r.Duration(t, prefix, "rollback_after", &w->thresholds.rollback_after)).ok() ||
      !(s = r.Duration(t, prefix, "initial_timeout", &w->thresholds.initial_timeout)).ok() ||
      !(s = r.Duration(t, prefix, "late_write_window", &w->thresholds.late_write_window)).ok() ||
      !(s = r.String(t, prefix, "state_field", &p.state_field)).ok() ||
      !(s = r.String(t, prefix, "time_field", &p.time_field)).ok() ||
      !(s = r.String(t, prefix, "source_field", &p.source_field)).ok() ||
      !(s = r.String(t, prefix, "destination_field", &p.destination_field)).ok() ||
      !(s = r.String(t, prefix, "amount_field", &p.amount_field)).ok() ||
      !(s = r.String(t, prefix, "participant_key", &p.participant_key)).ok() ||
      !(s = r.String(t, prefix, "balance_field", &p.balance_field)).ok() ||
      !(s = r.String(t, prefix, "marker_field", &p.marker_field)).ok() ||
      !(s = r.Bool(t, prefix, "require_funds", &p.require_funds)).ok() ||
      !(s = r.String(t, prefix, "lease_field", &w->lease_field)).ok())
    return s;
  if (profile != "transfer")
    return r.Error(t.get("profile")->source(), prefix + "profile",
                   "unknown profile '" + profile + "' (this version supports: transfer)");
  if (const toml::node* states = t.get("states")) {
    const toml::table* st = states->as_table();
    if (st == nullptr) return r.Error(states->source(), prefix + "states", "must be a table");
    const std::string sp = prefix + "states.";
    if (!(s = r.OnlyKnownKeys(*st, sp,
                              {"initial", "pending", "applied", "done", "canceling", "cancelled"}))
             .ok() ||
        !(s = r.StringList(*st, sp, "initial", &p.states.initial)).ok() ||
        !(s = r.StringList(*st, sp, "pending", &p.states.pending)).ok() ||
        !(s = r.StringList(*st, sp, "applied", &p.states.applied)).ok() ||
        !(s = r.StringList(*st, sp, "done", &p.states.done)).ok() ||
        !(s = r.StringList(*st, sp, "canceling", &p.states.canceling)).ok() ||
        !(s = r.StringList(*st, sp, "cancelled", &p.states.cancelled)).ok())
      return s;
  }
  if (Status v = p.Validate(); !v.ok()) return r.Error(t.source(), prefix, v.message());
  if (w->lease_field.empty() || w->lease_field[0] == '$' ||
      w->lease_field.find('.') != std::string::npos)
    return r.Error(t.source(), prefix + "lease_field", "must be a plain field name");
  const auto& th = w->thresholds;
  if (th.rollback_after <= th.resume_after)
    return r.Error(t.source(), prefix + "rollback_after",
                   "must be longer than resume_after (" + FormatDuration(th.rollback_after) +
                       " <= " + FormatDuration(th.resume_after) + ")");
  return Status::Ok();
}

}  // namespace

Status LoadConfig(const std::string& path, const EnvLookup& env, Config* config) {
  Config c;
  c.path = path;
  Reader r(path);
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    if (e.source().begin.line == 0)
      return Status::InvalidArgument(path + ": " + std::string(e.description()));
    return r.Error(e.source(), "(syntax)", std::string(e.description()));
  }

  if (Status s = r.OnlyKnownKeys(root, "", {"mongodb", "sweep", "daemon", "log", "http", "watch"});
      !s.ok())
    return s;

  // [mongodb]
  std::string uri_file;
  if (const toml::node* n = root.get("mongodb")) {
    const toml::table* m = n->as_table();
    if (m == nullptr) return r.Error(n->source(), "mongodb", "must be a table");
    Status s;
    if (!(s = r.OnlyKnownKeys(*m, "mongodb.", {"uri", "uri_file", "server_selection_timeout"}))
             .ok() ||
        !(s = r.String(*m, "mongodb.", "uri", &c.mongodb.uri)).ok() ||
        !(s = r.String(*m, "mongodb.", "uri_file", &uri_file)).ok() ||
        !(s = r.Duration(*m, "mongodb.", "server_selection_timeout",
                         &c.mongodb.server_selection_timeout))
             .ok())
      return s;
    if (!c.mongodb.uri.empty() && !uri_file.empty())
      return r.Error(m->source(), "mongodb", "set either uri or uri_file, not both");
    if (!c.mongodb.uri.empty()) c.mongodb.uri_source = path;
  }
  if (!uri_file.empty()) {
    if (Status s = ReadSecretFile(uri_file, &c.mongodb.uri); !s.ok())
      return r.Error("mongodb.uri_file", s.message());
    c.mongodb.uri_source = "uri_file " + uri_file;
  }
  // systemd's LoadCredential=mongodb-uri:... puts the secret where only this service reads it.
  if (auto dir = env("CREDENTIALS_DIRECTORY"); dir && !dir->empty()) {
    std::string cred = *dir + "/mongodb-uri";
    if (std::ifstream(cred).good()) {
      if (Status s = ReadSecretFile(cred, &c.mongodb.uri); !s.ok())
        return r.Error("mongodb.uri", "systemd credential: " + s.message());
      c.mongodb.uri_source = "systemd credential " + cred;
    }
  }
  if (auto v = env("TXN_RECOVERYD_MONGODB_URI"); v && !v->empty()) {
    c.mongodb.uri = *v;
    c.mongodb.uri_source = "environment TXN_RECOVERYD_MONGODB_URI";
  }
  if (c.mongodb.uri.empty())
    return r.Error("mongodb.uri",
                   "no MongoDB URI: set mongodb.uri or mongodb.uri_file, or the environment "
                   "variable TXN_RECOVERYD_MONGODB_URI");

  // [sweep]
  if (const toml::node* n = root.get("sweep")) {
    const toml::table* t = n->as_table();
    if (t == nullptr) return r.Error(n->source(), "sweep", "must be a table");
    long long workers = c.sweep.workers, batch = c.sweep.batch_size,
              max_failures = c.sweep.max_failures;
    Status s;
    if (!(s = r.OnlyKnownKeys(*t, "sweep.", {"workers", "batch_size", "lease", "max_failures"}))
             .ok() ||
        !(s = r.Int(*t, "sweep.", "max_failures", 1, 1000, &max_failures)).ok() ||
        !(s = r.Int(*t, "sweep.", "workers", 1, 256, &workers)).ok() ||
        !(s = r.Int(*t, "sweep.", "batch_size", 1, 100'000, &batch)).ok() ||
        !(s = r.Duration(*t, "sweep.", "lease", &c.sweep.lease_duration)).ok())
      return s;
    c.sweep.workers = static_cast<int>(workers);
    c.sweep.batch_size = static_cast<std::int32_t>(batch);
    c.sweep.max_failures = static_cast<int>(max_failures);
    if (c.sweep.lease_duration < std::chrono::seconds(15))
      return r.Error(t->get("lease")->source(), "sweep.lease",
                     "must be at least 15s (the daemon stops writing 10s before it expires)");
  }

  // [daemon]
  if (const toml::node* n = root.get("daemon")) {
    const toml::table* t = n->as_table();
    if (t == nullptr) return r.Error(n->source(), "daemon", "must be a table");
    Status s;
    if (!(s = r.OnlyKnownKeys(
              *t, "daemon.",
              {"interval", "jitter", "backoff_initial", "backoff_max", "drain_deadline"}))
             .ok() ||
        !(s = r.Duration(*t, "daemon.", "interval", &c.daemon.interval)).ok() ||
        !(s = r.Duration(*t, "daemon.", "backoff_initial", &c.daemon.backoff_initial)).ok() ||
        !(s = r.Duration(*t, "daemon.", "backoff_max", &c.daemon.backoff_max)).ok() ||
        !(s = r.Duration(*t, "daemon.", "drain_deadline", &c.daemon.drain_deadline)).ok())
      return s;
    if (const toml::node* j = t->get("jitter")) {
      std::optional<double> v = j->value<double>();
      if (!v || *v < 0 || *v > 0.9)
        return r.Error(j->source(), "daemon.jitter", "must be a number from 0 to 0.9");
      c.daemon.jitter = *v;
    }
    if (c.daemon.backoff_max < c.daemon.backoff_initial)
      return r.Error(t->source(), "daemon.backoff_max", "must not be below backoff_initial");
  }

  // [log]
  std::string log_format;
  if (const toml::node* n = root.get("log")) {
    const toml::table* t = n->as_table();
    if (t == nullptr) return r.Error(n->source(), "log", "must be a table");
    Status s;
    if (!(s = r.OnlyKnownKeys(*t, "log.", {"format", "level"})).ok() ||
        !(s = r.String(*t, "log.", "format", &log_format)).ok() ||
        !(s = r.String(*t, "log.", "level", &c.log.level)).ok())
      return s;
    if (!log_format.empty() && log_format != "text" && log_format != "json" &&
        log_format != "journal")
      return r.Error(t->get("format")->source(), "log.format",
                     "must be \"text\", \"json\" or \"journal\"");
    if (c.log.level != "trace" && c.log.level != "debug" && c.log.level != "info" &&
        c.log.level != "warn" && c.log.level != "error")
      return r.Error(t->get("level")->source(), "log.level",
                     "must be trace, debug, info, warn or error");
  }
  if (auto v = env("TXN_RECOVERYD_LOG_FORMAT"); v && !v->empty()) {
    if (*v != "text" && *v != "json" && *v != "journal")
      return Status::InvalidArgument(
          "environment TXN_RECOVERYD_LOG_FORMAT: must be text, json "
          "or journal, not '" +
          *v + "'");
    log_format = *v;
  }
  // Under systemd with stderr connected to the journal, speak its language by default.
  if (log_format.empty()) log_format = env("JOURNAL_STREAM") ? "journal" : "text";
  c.log.format = log_format == "json"      ? LogFormat::kJson
                 : log_format == "journal" ? LogFormat::kJournal
                                           : LogFormat::kText;

  // [http]
  if (const toml::node* n = root.get("http")) {
    const toml::table* t = n->as_table();
    if (t == nullptr) return r.Error(n->source(), "http", "must be a table");
    Status s;
    if (!(s = r.OnlyKnownKeys(*t, "http.", {"listen"})).ok() ||
        !(s = r.String(*t, "http.", "listen", &c.http.listen)).ok())
      return s;
  }
  if (auto v = env("TXN_RECOVERYD_HTTP_LISTEN"); v) c.http.listen = *v;

  // [[watch]]
  const toml::node* wn = root.get("watch");
  if (wn == nullptr) return r.Error("watch", "no [[watch]] entry: nothing to recover");
  const toml::array* watches = wn->as_array();
  if (watches == nullptr || !watches->is_array_of_tables())
    return r.Error(wn->source(), "watch", "must be an array of tables ([[watch]])");
  std::set<std::string> names;
  for (std::size_t i = 0; i < watches->size(); ++i) {
    const toml::table& t = *watches->get(i)->as_table();
    WatchSpec w;
    if (Status s = LoadWatch(r, t, i, &w); !s.ok()) return s;
    if (!names.insert(w.name).second)
      return r.Error(t.source(), "watch[" + std::to_string(i) + "].name",
                     "duplicate watch name '" + w.name + "'");
    c.watches.push_back(std::move(w));
  }
  *config = std::move(c);
  return Status::Ok();
}

std::string DescribeConfig(const Config& c) {
  auto q = [](const std::string& s) {
    std::string out = "\"";
    for (char ch : s) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    return out + "\"";
  };
  auto list = [&](const std::vector<std::string>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + q(v[i]);
    return out + "]";
  };
  std::ostringstream os;
  os << "# effective configuration of " << c.path << "\n";
  os << "[mongodb]\nuri = " << q(txn_recovery::RedactUri(c.mongodb.uri)) << "  # from "
     << c.mongodb.uri_source
     << "\nserver_selection_timeout = " << q(FormatDuration(c.mongodb.server_selection_timeout))
     << "\n\n";
  os << "[sweep]\nworkers = " << c.sweep.workers << "\nbatch_size = " << c.sweep.batch_size
     << "\nlease = " << q(FormatDuration(c.sweep.lease_duration))
     << "\nmax_failures = " << c.sweep.max_failures << "\n\n";
  os << "[daemon]\ninterval = " << q(FormatDuration(c.daemon.interval))
     << "\njitter = " << c.daemon.jitter
     << "\nbackoff_initial = " << q(FormatDuration(c.daemon.backoff_initial))
     << "\nbackoff_max = " << q(FormatDuration(c.daemon.backoff_max))
     << "\ndrain_deadline = " << q(FormatDuration(c.daemon.drain_deadline)) << "\n\n";
  os << "[log]\nformat = "
     << q(c.log.format == LogFormat::kJson      ? "json"
          : c.log.format == LogFormat::kJournal ? "journal"
                                                : "text")
     << "\nlevel = " << q(c.log.level) << "\n\n";
  os << "[http]\nlisten = " << q(c.http.listen) << "\n";
  for (const auto& w : c.watches) {
    const auto& p = w.profile;
    const auto& t = w.thresholds;
    os << "\n[[watch]]\nname = " << q(w.name) << "\ndatabase = " << q(w.ns.database)
       << "\ncollection = " << q(w.ns.collection)
       << "\nprofile = \"transfer\"\nparticipants = " << q(p.participants_collection)
       << "\nresume_after = " << q(FormatDuration(t.resume_after))
       << "\nrollback_after = " << q(FormatDuration(t.rollback_after))
       << "\ninitial_timeout = " << q(FormatDuration(t.initial_timeout))
       << "\nlate_write_window = " << q(FormatDuration(t.late_write_window))
       << "\nstate_field = " << q(p.state_field) << "\ntime_field = " << q(p.time_field)
       << "\nsource_field = " << q(p.source_field)
       << "\ndestination_field = " << q(p.destination_field)
       << "\namount_field = " << q(p.amount_field) << "\nparticipant_key = " << q(p.participant_key)
       << "\nbalance_field = " << q(p.balance_field) << "\nmarker_field = " << q(p.marker_field)
       << "\nrequire_funds = " << (p.require_funds ? "true" : "false")
       << "\nlease_field = " << q(w.lease_field)
       << "\n[watch.states]\ninitial = " << list(p.states.initial)
       << "\npending = " << list(p.states.pending) << "\napplied = " << list(p.states.applied)
       << "\ndone = " << list(p.states.done) << "\ncanceling = " << list(p.states.canceling)
       << "\ncancelled = " << list(p.states.cancelled) << "\n";
  }
  return os.str();
}

}  // namespace txn_recoveryd
