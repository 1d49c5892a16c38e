#include "config.h"

#include <toml++/toml.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include "http_server.h"
#include "txn_recovery/mongo_store.h"

namespace txn_recoveryd {

using txn_recovery::Profile;
using txn_recovery::Status;
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
    // Values injected from the environment carry the variable's name as their "file".
    os << (where.path && !where.path->empty() ? *where.path : path_) << ":" << where.begin.line
       << ":" << where.begin.column << ": " << key << ": " << problem;
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

// The keys every watch may have, whatever its profile.
constexpr std::string_view kCommonWatchKeys[] = {"name",
                                                 "database",
                                                 "collection",
                                                 "profile",
                                                 "resume_after",
                                                 "rollback_after",
                                                 "initial_timeout",
                                                 "late_write_window",
                                                 "state_field",
                                                 "time_field",
                                                 "lease_field",
                                                 "states",
                                                 "missing_time",
                                                 "owner_field",
                                                 "applications",
                                                 "include_unowned",
                                                 "retain_finished",
                                                 "archive_collection"};

// The keys of each protocol.
struct ProtocolKeys {
  std::string_view profile;
  std::vector<std::string_view> keys;
};
const std::vector<ProtocolKeys>& AllProtocolKeys() {
  static const std::vector<ProtocolKeys> kKeys = {
      {"transfer",
       {"participants", "source_field", "destination_field", "amount_field", "participant_key",
        "balance_field", "marker_field", "require_funds"}},
      {"operations",
       {"operations_field", "collection_key", "id_key", "inc_key", "set_key", "previous_key",
        "marker_field", "allowed_collections", "max_operations"}},
      {"tagged-insert", {"tagged_collections", "tag_field", "valid_field"}},
  };
  return kKeys;
}

// Every key of `t` must be a common key or one of `profile`'s; a key of another profile is
// named as such, since it would otherwise be silently ignored.
Status CheckWatchKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                      std::string_view profile) {
  for (const auto& [k, v] : t) {
    std::string_view key = k.str();
    bool known = false;
    for (auto c : kCommonWatchKeys) known = known || key == c;
    std::string_view other;
    for (const auto& pk : AllProtocolKeys())
      for (auto name : pk.keys)
        if (key == name) {
          if (pk.profile == profile) {
            known = true;
          } else if (other.empty()) {
            other = pk.profile;
          }
        }
    if (known) continue;
    if (!other.empty())
      return r.Error(k.source(), prefix + std::string(key),
                     "is a key of profile '" + std::string(other) + "', not of '" +
                         std::string(profile) + "'");
    return r.Error(k.source(), prefix + std::string(key),
                   "unknown key (check the spelling against config/txn-recoveryd.toml)");
  }
  return Status::Ok();
}

Status LoadTransferKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                        txn_recovery::TransferProfile* p) {
  Status s;
  if (!(s = r.String(t, prefix, "participants", &p->participants_collection)).ok() ||
      !(s = r.String(t, prefix, "source_field", &p->source_field)).ok() ||
      !(s = r.String(t, prefix, "destination_field", &p->destination_field)).ok() ||
      !(s = r.String(t, prefix, "amount_field", &p->amount_field)).ok() ||
      !(s = r.String(t, prefix, "participant_key", &p->participant_key)).ok() ||
      !(s = r.String(t, prefix, "balance_field", &p->balance_field)).ok() ||
      !(s = r.String(t, prefix, "marker_field", &p->marker_field)).ok() ||
      !(s = r.Bool(t, prefix, "require_funds", &p->require_funds)).ok())
    return s;
  return Status::Ok();
}

Status LoadOperationsKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                          txn_recovery::OperationsProfile* p) {
  Status s;
  long long max_operations = p->max_operations;
  if (!(s = r.String(t, prefix, "operations_field", &p->operations_field)).ok() ||
      !(s = r.String(t, prefix, "collection_key", &p->collection_key)).ok() ||
      !(s = r.String(t, prefix, "id_key", &p->id_key)).ok() ||
      !(s = r.String(t, prefix, "inc_key", &p->inc_key)).ok() ||
      !(s = r.String(t, prefix, "set_key", &p->set_key)).ok() ||
      !(s = r.String(t, prefix, "previous_key", &p->previous_key)).ok() ||
      !(s = r.String(t, prefix, "marker_field", &p->marker_field)).ok() ||
      !(s = r.StringList(t, prefix, "allowed_collections", &p->collections)).ok() ||
      !(s = r.Int(t, prefix, "max_operations", 1, 1'000'000, &max_operations)).ok())
    return s;
  p->max_operations = max_operations;
  return Status::Ok();
}

Status LoadTaggedInsertKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                            txn_recovery::TaggedInsertProfile* p) {
  Status s;
  if (!(s = r.StringList(t, prefix, "tagged_collections", &p->tagged_collections)).ok() ||
      !(s = r.String(t, prefix, "tag_field", &p->tag_field)).ok() ||
      !(s = r.String(t, prefix, "valid_field", &p->valid_field)).ok())
    return s;
  return Status::Ok();
}

// A collection list key naming the watch's own transactions collection: the daemon would
// change (or delete) transaction documents as if they were participants.
Status RefuseOwnCollection(const Reader& r, const toml::table& t, const std::string& prefix,
                           std::string_view key, const std::vector<std::string>& names,
                           const std::string& own) {
  for (const auto& n : names)
    if (n == own)
      return r.Error(t.get(key) ? t.get(key)->source() : t.source(), prefix + std::string(key),
                     "must not name the transactions collection '" + own + "'");
  return Status::Ok();
}

// The keys of [watch.states]: each state of the life cycle under the names the seeds give
// it. Two keys of one state in one table are refused.
struct StateKeys {
  txn_recovery::TxnState state;
  std::vector<std::string_view> keys;
};
const std::vector<StateKeys>& AllStateKeys() {
  using txn_recovery::TxnState;
  static const std::vector<StateKeys> kKeys = {
      {TxnState::kInitial, {"initial", "new"}},
      {TxnState::kPending, {"pending", "started"}},
      {TxnState::kApplied, {"applied", "committed", "finishing"}},
      {TxnState::kDone, {"done"}},
      {TxnState::kCanceling, {"canceling", "cancelling", "rollback"}},
      {TxnState::kCancelled, {"cancelled", "canceled"}},
  };
  return kKeys;
}

Status LoadStates(const Reader& r, const toml::node& node, const std::string& prefix,
                  const txn_recovery::Profile& profile, txn_recovery::StateAliases* states) {
  const toml::table* st = node.as_table();
  if (st == nullptr) return r.Error(node.source(), prefix + "states", "must be a table");
  const std::string sp = prefix + "states.";
  for (const auto& [k, v] : *st) {
    bool known = false;
    for (const auto& sk : AllStateKeys())
      for (auto key : sk.keys) known = known || k.str() == key;
    if (!known)
      return r.Error(k.source(), sp + std::string(k.str()),
                     "unknown state (one of initial|new, pending|started, "
                     "applied|committed|finishing, done, canceling|cancelling|rollback, "
                     "cancelled|canceled)");
  }
  for (const auto& sk : AllStateKeys()) {
    std::string_view given;
    for (auto key : sk.keys) {
      if (st->get(key) == nullptr) continue;
      if (!given.empty())
        return r.Error(st->get(key)->source(), sp + std::string(key),
                       "names the same state as '" + std::string(given) + "'");
      given = key;
      auto& list = states->For(sk.state);
      const toml::array* arr = st->get(key)->as_array();
      bool may_be_empty = false;
      for (auto o : profile.OptionalStates()) may_be_empty = may_be_empty || o == sk.state;
      if (may_be_empty && arr != nullptr && arr->empty()) {
        list.clear();  // this profile may do without the state
        continue;
      }
      if (Status s = r.StringList(*st, sp, key, &list); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

// The archive must be a collection of its own: archiving into the transactions, the
// participants or the control collection would mix finished transactions into live data.
Status CheckRetention(const WatchSpec& w) {
  const std::string& archive = w.retention.archive_collection;
  if (archive.empty()) return Status::Ok();
  if (!w.retention.enabled())
    return Status::InvalidArgument("needs retain_finished (retention is off without it)");
  if (archive[0] == '$' || archive.find('\0') != std::string::npos ||
      archive.rfind("system.", 0) == 0)
    return Status::InvalidArgument("'" + archive + "' is not a usable collection name");
  std::vector<std::string> taken = {w.ns.collection, w.control_collection};
  for (const auto& loc : w.profile.MarkerLocations(w.ns)) taken.push_back(loc.ns.collection);
  for (const auto& c : taken)
    if (archive == c)
      return Status::InvalidArgument("'" + archive +
                                     "' is a collection this watch already uses; the archive "
                                     "needs one of its own");
  return Status::Ok();
}

Status LoadWatch(const Reader& r, const toml::table& t, std::size_t index, WatchSpec* w) {
  const std::string prefix = "watch[" + std::to_string(index) + "].";
  Status s;
  // The profile first: it decides the defaults and which other keys are allowed.
  std::string kind = "transfer";
  if (!(s = r.String(t, prefix, "profile", &kind)).ok()) return s;
  std::optional<txn_recovery::Profile> profile = txn_recovery::Profile::Named(kind);
  if (!profile)
    return r.Error(t.get("profile")->source(), prefix + "profile",
                   "unknown profile '" + kind +
                       "' (this version supports: transfer, operations, tagged-insert)");
  if (!(s = CheckWatchKeys(r, t, prefix, kind)).ok()) return s;
  w->profile = std::move(*profile);
  Profile& p = w->profile;
  w->ns.collection = "transactions";
  std::string missing_time;
  if (!(s = r.String(t, prefix, "name", &w->name, true)).ok() ||
      !(s = r.String(t, prefix, "database", &w->ns.database, true)).ok() ||
      !(s = r.String(t, prefix, "collection", &w->ns.collection)).ok() ||
      !(s = r.Duration(t, prefix, "resume_after", &w->thresholds.resume_after)).ok() ||
      !(s = r.Duration(t, prefix, "rollback_after", &w->thresholds.rollback_after)).ok() ||
      !(s = r.Duration(t, prefix, "initial_timeout", &w->thresholds.initial_timeout)).ok() ||
      !(s = r.Duration(t, prefix, "late_write_window", &w->thresholds.late_write_window)).ok() ||
      !(s = r.String(t, prefix, "state_field", &p.state_field)).ok() ||
      !(s = r.String(t, prefix, "time_field", &p.time_field)).ok() ||
      !(s = r.String(t, prefix, "missing_time", &missing_time)).ok() ||
      !(s = r.String(t, prefix, "owner_field", &p.owner.field)).ok() ||
      !(s = r.StringList(t, prefix, "applications", &p.owner.applications)).ok() ||
      !(s = r.Bool(t, prefix, "include_unowned", &p.owner.include_unowned)).ok() ||
      !(s = r.String(t, prefix, "lease_field", &w->lease_field)).ok() ||
      !(s = r.Duration(t, prefix, "retain_finished", &w->retention.retain_finished)).ok() ||
      !(s = r.String(t, prefix, "archive_collection", &w->retention.archive_collection)).ok())
    return s;
  if (missing_time == "object_id") {
    p.missing_time = txn_recovery::MissingTime::kObjectIdTime;
  } else if (!missing_time.empty() && missing_time != "quarantine") {
    return r.Error(t.get("missing_time")->source(), prefix + "missing_time",
                   "must be \"quarantine\" or \"object_id\"");
  }
  if (auto* transfer = p.transfer())
    if (!(s = LoadTransferKeys(r, t, prefix, transfer)).ok()) return s;
  if (auto* ops = p.operations()) {
    if (!(s = LoadOperationsKeys(r, t, prefix, ops)).ok() ||
        !(s = RefuseOwnCollection(r, t, prefix, "allowed_collections", ops->collections,
                                  w->ns.collection))
             .ok())
      return s;
  }
  if (auto* tagged = p.tagged_insert()) {
    if (!(s = LoadTaggedInsertKeys(r, t, prefix, tagged)).ok() ||
        !(s = RefuseOwnCollection(r, t, prefix, "tagged_collections", tagged->tagged_collections,
                                  w->ns.collection))
             .ok())
      return s;
  }
  if (const toml::node* states = t.get("states"))
    if (!(s = LoadStates(r, *states, prefix, p, &p.states)).ok()) return s;
  if (Status v = p.Validate(); !v.ok()) {
    // The message names the offending keys first ("state_field and time_field must
    // differ"): point at the first of them this table sets, else name the first.
    const std::string& msg = v.message();
    std::string key = msg.substr(0, msg.find_first_of(" '"));
    if (key == "state") key = "states";
    const toml::node* at = nullptr;
    // Only the words before the verb name keys ("... must name the collections" does not
    // mean the key `name`).
    std::size_t verb = msg.size();
    for (const char* v : {" must ", " may ", " is ", " are ", " cannot "})
      verb = std::min(verb, msg.find(v));
    for (std::size_t i = 0; i < verb && at == nullptr;) {
      std::size_t end = msg.find_first_of(" '", i);
      if (end == std::string::npos || end > verb) end = verb;
      std::string word = msg.substr(i, end - i);
      if (word == "participants_collection") word = "participants";
      if (!word.empty() && (at = t.get(word)) != nullptr) key = word;
      i = end + 1;
    }
    return r.Error(at ? at->source() : t.source(), prefix + key, msg);
  }
  if (w->lease_field.empty() || w->lease_field[0] == '$' ||
      w->lease_field.find('.') != std::string::npos)
    return r.Error(t.source(), prefix + "lease_field", "must be a plain field name");
  if (Status v = CheckRetention(*w); !v.ok()) {
    const toml::node* at = t.get("archive_collection");
    return r.Error(at ? at->source() : t.source(), prefix + "archive_collection", v.message());
  }
  const auto& th = w->thresholds;
  if (th.rollback_after <= th.resume_after)
    return r.Error(t.get("rollback_after") ? t.get("rollback_after")->source()
                   : t.get("resume_after") ? t.get("resume_after")->source()
                                           : t.source(),
                   prefix + "rollback_after",
                   "must be longer than resume_after (" + FormatDuration(th.rollback_after) +
                       " <= " + FormatDuration(th.resume_after) + ")");
  return Status::Ok();
}

}  // namespace

// TXN_RECOVERYD_<SECTION>_<KEY> for every scalar key outside [[watch]] (a container's
// configuration comes from its environment). The value is read as a TOML value ("4",
// "0.5", "true") or else as a string ("10s", "info"), then validated like the file's, with
// errors naming the variable. The URI, log format and listen address have their own
// variables with their own rules, below.
static Status OverlayEnvironment(const EnvLookup& env, toml::table* root) {
  static const std::map<std::string, std::vector<std::string>> kKeys = {
      {"mongodb", {"server_selection_timeout", "socket_timeout"}},
      {"sweep",
       {"workers", "batch_size", "lease", "max_failures", "retention_batch_size", "retention_pause",
        "retention_max_batches", "marker_cap", "manage_indexes"}},
      {"daemon",
       {"interval", "jitter", "backoff_initial", "backoff_max", "drain_deadline",
        "orphan_scan_interval"}},
      {"log", {"level"}},
  };
  for (const auto& [section, keys] : kKeys) {
    for (const auto& key : keys) {
      std::string name = "TXN_RECOVERYD_" + section + "_" + key;
      for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      std::optional<std::string> v = env(name);
      if (!v || v->empty()) continue;
      toml::table parsed;
      try {
        parsed = toml::parse("v = " + *v, "environment " + name);
      } catch (const toml::parse_error&) {
        std::string quoted = "v = '";
        for (char ch : *v)
          if (ch != '\'' && ch != '\n') quoted += ch;
        parsed = toml::parse(quoted + "'", "environment " + name);
      }
      toml::node* existing = root->get(section);
      if (existing == nullptr) {
        root->insert_or_assign(section, toml::table{});
        existing = root->get(section);
      }
      toml::table* t = existing->as_table();
      if (t == nullptr) continue;  // the file's own error is reported later
      t->insert_or_assign(key, std::move(*parsed.get("v")));
    }
  }
  return Status::Ok();
}

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

  if (Status s = OverlayEnvironment(env, &root); !s.ok()) return s;
  if (Status s = r.OnlyKnownKeys(root, "", {"mongodb", "sweep", "daemon", "log", "http", "watch"});
      !s.ok())
    return s;

  // [mongodb]
  std::string uri_file;
  const toml::node* uri_file_node = nullptr;
  if (const toml::node* n = root.get("mongodb")) {
    const toml::table* m = n->as_table();
    if (m == nullptr) return r.Error(n->source(), "mongodb", "must be a table");
    Status s;
    if (!(s = r.OnlyKnownKeys(*m, "mongodb.",
                              {"uri", "uri_file", "server_selection_timeout", "socket_timeout"}))
             .ok() ||
        !(s = r.String(*m, "mongodb.", "uri", &c.mongodb.uri)).ok() ||
        !(s = r.String(*m, "mongodb.", "uri_file", &uri_file)).ok() ||
        !(s = r.Duration(*m, "mongodb.", "server_selection_timeout",
                         &c.mongodb.server_selection_timeout))
             .ok() ||
        !(s = r.Duration(*m, "mongodb.", "socket_timeout", &c.mongodb.socket_timeout)).ok())
      return s;
    uri_file_node = m->get("uri_file");
    if (!c.mongodb.uri.empty() && !uri_file.empty())
      return r.Error(m->source(), "mongodb", "set either uri or uri_file, not both");
    if (!c.mongodb.uri.empty()) c.mongodb.uri_source = path;
  }
  if (!uri_file.empty()) {
    if (Status s = ReadSecretFile(uri_file, &c.mongodb.uri); !s.ok())
      return uri_file_node ? r.Error(uri_file_node->source(), "mongodb.uri_file", s.message())
                           : r.Error("mongodb.uri_file", s.message());
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
    long long retention_batch = c.sweep.retention_batch_size,
              retention_batches = c.sweep.retention_max_batches, marker_cap = c.sweep.marker_cap;
    if (!(s = r.OnlyKnownKeys(
              *t, "sweep.",
              {"workers", "batch_size", "lease", "max_failures", "retention_batch_size",
               "retention_pause", "retention_max_batches", "marker_cap", "manage_indexes"}))
             .ok() ||
        !(s = r.Bool(*t, "sweep.", "manage_indexes", &c.sweep.manage_indexes)).ok() ||
        !(s = r.Int(*t, "sweep.", "marker_cap", 1, 1'000'000, &marker_cap)).ok() ||
        !(s = r.Int(*t, "sweep.", "retention_batch_size", 1, 100'000, &retention_batch)).ok() ||
        !(s = r.Int(*t, "sweep.", "retention_max_batches", 0, 1'000'000, &retention_batches))
             .ok() ||
        !(s = r.Duration(*t, "sweep.", "retention_pause", &c.sweep.retention_pause)).ok() ||
        !(s = r.Int(*t, "sweep.", "max_failures", 1, 1000, &max_failures)).ok() ||
        !(s = r.Int(*t, "sweep.", "workers", 1, 256, &workers)).ok() ||
        !(s = r.Int(*t, "sweep.", "batch_size", 1, 100'000, &batch)).ok() ||
        !(s = r.Duration(*t, "sweep.", "lease", &c.sweep.lease_duration)).ok())
      return s;
    c.sweep.workers = static_cast<int>(workers);
    c.sweep.batch_size = static_cast<std::int32_t>(batch);
    c.sweep.max_failures = static_cast<int>(max_failures);
    c.sweep.retention_batch_size = static_cast<std::int32_t>(retention_batch);
    c.sweep.retention_max_batches = static_cast<std::int32_t>(retention_batches);
    c.sweep.marker_cap = marker_cap;
    if (c.sweep.lease_duration < std::chrono::seconds(15))
      return r.Error(t->get("lease")->source(), "sweep.lease",
                     "must be at least 15s (the daemon stops writing 10s before it expires)");
  }

  // [daemon]
  if (const toml::node* n = root.get("daemon")) {
    const toml::table* t = n->as_table();
    if (t == nullptr) return r.Error(n->source(), "daemon", "must be a table");
    Status s;
    if (!(s = r.OnlyKnownKeys(*t, "daemon.",
                              {"interval", "jitter", "backoff_initial", "backoff_max",
                               "drain_deadline", "orphan_scan_interval"}))
             .ok() ||
        !(s = r.Duration(*t, "daemon.", "orphan_scan_interval", &c.daemon.orphan_scan_interval))
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
      return r.Error(t->get("backoff_max") ? t->get("backoff_max")->source()
                                           : t->get("backoff_initial")->source(),
                     "daemon.backoff_max", "must not be below backoff_initial");
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
    ListenAddress unused;
    if (!c.http.listen.empty())
      if (Status ls = ParseListenAddress(c.http.listen, &unused); !ls.ok())
        return r.Error(t->get("listen")->source(), "http.listen", ls.message());
  }
  // Empty is unset, as for every TXN_RECOVERYD_ variable: it must not silently switch off
  // the listener the file asks for.
  if (auto v = env("TXN_RECOVERYD_HTTP_LISTEN"); v && !v->empty()) {
    ListenAddress unused;
    if (Status ls = ParseListenAddress(*v, &unused); !ls.ok())
      return Status::InvalidArgument("environment TXN_RECOVERYD_HTTP_LISTEN: http.listen: " +
                                     ls.message());
    c.http.listen = *v;
  }

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
    w.retention.batch_size = c.sweep.retention_batch_size;
    w.retention.pause_between_batches = c.sweep.retention_pause;
    w.retention.max_batches = c.sweep.retention_max_batches;
    c.watches.push_back(std::move(w));
  }
  *config = std::move(c);
  return Status::Ok();
}

txn_recovery::MongoOptions MongoOptionsFor(const Config& config) {
  txn_recovery::MongoOptions mo;
  mo.uri = config.mongodb.uri;
  mo.server_selection_timeout = config.mongodb.server_selection_timeout;
  mo.socket_timeout = config.mongodb.socket_timeout;
  mo.max_pool_size = config.sweep.workers + 2;
  return mo;
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
     << "\nsocket_timeout = " << q(FormatDuration(c.mongodb.socket_timeout)) << "\n\n";
  os << "[sweep]\nworkers = " << c.sweep.workers << "\nbatch_size = " << c.sweep.batch_size
     << "\nlease = " << q(FormatDuration(c.sweep.lease_duration))
     << "\nmax_failures = " << c.sweep.max_failures
     << "\nretention_batch_size = " << c.sweep.retention_batch_size
     << "\nretention_pause = " << q(FormatDuration(c.sweep.retention_pause))
     << "\nretention_max_batches = " << c.sweep.retention_max_batches
     << "\nmarker_cap = " << c.sweep.marker_cap
     << "\nmanage_indexes = " << (c.sweep.manage_indexes ? "true" : "false") << "\n\n";
  os << "[daemon]\ninterval = " << q(FormatDuration(c.daemon.interval))
     << "\njitter = " << c.daemon.jitter
     << "\nbackoff_initial = " << q(FormatDuration(c.daemon.backoff_initial))
     << "\nbackoff_max = " << q(FormatDuration(c.daemon.backoff_max))
     << "\ndrain_deadline = " << q(FormatDuration(c.daemon.drain_deadline))
     << "\norphan_scan_interval = " << q(FormatDuration(c.daemon.orphan_scan_interval)) << "\n\n";
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
       << "\ncollection = " << q(w.ns.collection) << "\nprofile = " << q(std::string(p.kind()))
       << "\nresume_after = " << q(FormatDuration(t.resume_after))
       << "\nrollback_after = " << q(FormatDuration(t.rollback_after))
       << "\ninitial_timeout = " << q(FormatDuration(t.initial_timeout))
       << "\nlate_write_window = " << q(FormatDuration(t.late_write_window))
       << "\nstate_field = " << q(p.state_field) << "\ntime_field = " << q(p.time_field)
       << "\nmissing_time = "
       << q(p.missing_time == txn_recovery::MissingTime::kObjectIdTime ? "object_id" : "quarantine")
       << "\nowner_field = " << q(p.owner.field);
    if (!p.owner.applications.empty()) os << "\napplications = " << list(p.owner.applications);
    os << "\ninclude_unowned = " << (p.owner.include_unowned ? "true" : "false");
    if (const auto* tp = p.transfer()) {
      os << "\nparticipants = " << q(tp->participants_collection)
         << "\nsource_field = " << q(tp->source_field)
         << "\ndestination_field = " << q(tp->destination_field)
         << "\namount_field = " << q(tp->amount_field)
         << "\nparticipant_key = " << q(tp->participant_key)
         << "\nbalance_field = " << q(tp->balance_field)
         << "\nmarker_field = " << q(tp->marker_field)
         << "\nrequire_funds = " << (tp->require_funds ? "true" : "false");
    }
    if (const auto* op = p.operations()) {
      os << "\noperations_field = " << q(op->operations_field)
         << "\ncollection_key = " << q(op->collection_key) << "\nid_key = " << q(op->id_key)
         << "\ninc_key = " << q(op->inc_key) << "\nset_key = " << q(op->set_key)
         << "\nprevious_key = " << q(op->previous_key)
         << "\nmarker_field = " << q(op->marker_field);
      if (!op->collections.empty()) os << "\nallowed_collections = " << list(op->collections);
      os << "\nmax_operations = " << op->max_operations;
    }
    if (const auto* tg = p.tagged_insert()) {
      os << "\ntagged_collections = " << list(tg->tagged_collections)
         << "\ntag_field = " << q(tg->tag_field) << "\nvalid_field = " << q(tg->valid_field);
    }
    if (w.retention.enabled())
      os << "\nretain_finished = " << q(FormatDuration(w.retention.retain_finished));
    else
      os << "\n# retain_finished: off (finished transactions are kept)";
    if (!w.retention.archive_collection.empty())
      os << "\narchive_collection = " << q(w.retention.archive_collection);
    os << "\nlease_field = " << q(w.lease_field) << "\n[watch.states]";
    const std::pair<const char*, txn_recovery::TxnState> roles[] = {
        {"initial", txn_recovery::TxnState::kInitial},
        {"pending", txn_recovery::TxnState::kPending},
        {"applied", txn_recovery::TxnState::kApplied},
        {"done", txn_recovery::TxnState::kDone},
        {"canceling", txn_recovery::TxnState::kCanceling},
        {"cancelled", txn_recovery::TxnState::kCancelled}};
    for (const auto& [key, state] : roles)
      if (!p.states.For(state).empty()) os << "\n" << key << " = " << list(p.states.For(state));
    os << "\n";
  }
  return os.str();
}

}  // namespace txn_recoveryd
