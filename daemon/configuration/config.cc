#include "daemon/configuration/config.h"

#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <variant>

#include "daemon/base/journal_stream.h"
#include "daemon/base/suggest.h"
#include "daemon/configuration/config_schema.h"
#include "daemon/serving/http_server.h"
#include "txn_recovery/shapes/config_problem.h"
#include "txn_recovery/stores/mongo_store.h"

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

std::optional<LogFormat> LogFormatNamed(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  if (name == "journal") return LogFormat::kJournal;
  return std::nullopt;
}

std::string LogFormatName(LogFormat format) {
  return format == LogFormat::kJson ? "json" : format == LogFormat::kJournal ? "journal" : "text";
}

std::vector<std::string> ProcessEnvironmentNames() {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    names.emplace_back(entry.substr(0, entry.find('=')));
  }
  return names;
}

namespace {

constexpr std::string_view kVariablePrefix = "TXN_RECOVERYD_";

}  // namespace

std::vector<std::string> EnvironmentVariables() {
  std::vector<std::string> names;
  for (const auto& k : ConfigSchema())
    if (k.flags & (kFromEnvironment | kOwnVariable)) names.push_back(VariableName(k));
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> UnknownEnvironmentVariables(const std::vector<std::string>& present) {
  const std::vector<std::string> known = EnvironmentVariables();
  std::vector<std::string> out;
  for (const auto& name : present) {
    if (name.rfind(kVariablePrefix, 0) != 0) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string closest = Closest(name, known);
    out.push_back(closest.empty() ? name : name + " (did you mean " + closest + "?)");
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// Where an installed system keeps the documented example of every key (the Debian package
// and the container image both carry it there), for the hints of configuration errors.
constexpr const char* kInstalledExample = "/usr/share/doc/txn-recoveryd/txn-recoveryd.toml";

// "unknown key (did you mean 'interval'? every key: EXAMPLE)".
std::string UnknownKey(std::string_view what, std::string_view key,
                       const std::vector<std::string>& known) {
  std::string closest = Closest(key, known);
  return "unknown " + std::string(what) + " (" +
         (closest.empty() ? "" : "did you mean '" + closest + "'? ") +
         "every key is explained in " + kInstalledExample + ")";
}

// The problems of a part of the file, one "FILE:LINE:COL: KEY: problem" line each: the
// loaders go on after a problem so that an operator learns of every one at once, not one
// per attempt. Checks that relate several values run only once each value was read.
class Collected {
 public:
  // Keeps the problem `s` reports, if any; whether it reported none.
  bool Add(const Status& s) {
    if (s.ok()) return true;
    if (!text_.empty()) text_ += "\n";
    text_ += s.message();
    return false;
  }
  bool ok() const { return text_.empty(); }
  Status status() const { return ok() ? Status::Ok() : Status::InvalidArgument(text_); }
  // The problems in the order of their lines in `path` (then those without a position).
  Status InFileOrder(const std::string& path) const {
    if (ok()) return Status::Ok();
    std::vector<std::pair<std::pair<long, long>, std::string>> lines;
    std::istringstream in(text_);
    for (std::string line; std::getline(in, line);) {
      long row = std::numeric_limits<long>::max(), column = 0;
      if (line.rfind(path + ":", 0) == 0)
        std::sscanf(line.c_str() + path.size(), ":%ld:%ld:", &row, &column);
      lines.push_back({{row, column}, line});
    }
    std::stable_sort(lines.begin(), lines.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string text;
    for (const auto& [where, line] : lines) text += (text.empty() ? "" : "\n") + line;
    return Status::InvalidArgument(text);
  }

 private:
  std::string text_;
};

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
                       const std::vector<std::string>& names) const {
    Collected problems;
    for (const auto& [k, v] : t)
      if (std::find(names.begin(), names.end(), k.str()) == names.end())
        problems.Add(
            Error(k.source(), prefix + std::string(k.str()), UnknownKey("key", k.str(), names)));
    return problems.status();
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

}  // namespace

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

// mongodb.write_concern: "majority", or how many members must acknowledge a write. Never
// 0: the daemon must know whether each of its guarded writes matched.
Status ReadWriteConcern(const Reader& r, const toml::table& t, const std::string& prefix,
                        const KeySpec& spec, std::string* out) {
  const toml::node* n = t.get(spec.key);
  if (n == nullptr) return Status::Ok();
  const std::string problem = "must be \"majority\" or a number of members from " +
                              std::to_string(static_cast<long long>(spec.min)) + " to " +
                              std::to_string(static_cast<long long>(spec.max));
  if (const auto* i = n->as_integer()) {
    if (i->get() < spec.min || i->get() > spec.max)
      return r.Error(n->source(), prefix + std::string(spec.key), problem);
    *out = std::to_string(i->get());
    return Status::Ok();
  }
  const auto* s = n->as_string();
  if (s == nullptr || s->get() != "majority")
    return r.Error(n->source(), prefix + std::string(spec.key), problem);
  *out = s->get();
  return Status::Ok();
}

// A string key, one of the schema's choices when it has some.
Status ReadString(const Reader& r, const toml::table& t, const std::string& prefix,
                  const KeySpec& spec, std::string* out) {
  if (Status s = r.String(t, prefix, spec.key, out, (spec.flags & kRequired) != 0); !s.ok())
    return s;
  const std::vector<std::string> choices = Choices(spec);
  if (const toml::node* n = t.get(spec.key);
      n != nullptr && !choices.empty() &&
      std::find(choices.begin(), choices.end(), *out) == choices.end())
    return r.Error(n->source(), prefix + std::string(spec.key),
                   "must be " + std::string(spec.choices));
  return Status::Ok();
}

// A duration key, at least the schema's least value. A duration read but not positive is
// both: each said.
Status ReadDuration(const Reader& r, const toml::table& t, const std::string& prefix,
                    const KeySpec& spec, std::chrono::milliseconds* out) {
  Collected problems;
  problems.Add(r.Duration(t, prefix, spec.key, out));
  if (const toml::node* n = t.get(spec.key); n != nullptr && out->count() < spec.min)
    problems.Add(
        r.Error(n->source(), prefix + std::string(spec.key),
                "must be at least " +
                    FormatDuration(std::chrono::milliseconds(static_cast<long long>(spec.min))) +
                    " (" + std::string(spec.why_min) + ")"));
  return problems.status();
}

// A number key within the schema's range.
Status ReadNumber(const Reader& r, const toml::table& t, const std::string& prefix,
                  const KeySpec& spec, double* out) {
  const toml::node* n = t.get(spec.key);
  if (n == nullptr) return Status::Ok();
  std::optional<double> v = n->value<double>();
  if (!v || *v < spec.min || *v > spec.max) {
    std::ostringstream range;
    range << spec.min << " to " << spec.max;
    return r.Error(n->source(), prefix + std::string(spec.key),
                   "must be a number from " + range.str());
  }
  *out = *v;
  return Status::Ok();
}

template <class Int>
Status ReadInteger(const Reader& r, const toml::table& t, const std::string& prefix,
                   const KeySpec& spec, Int* out) {
  long long v = *out;
  Status s = r.Int(t, prefix, spec.key, static_cast<long long>(spec.min),
                   static_cast<long long>(spec.max), &v);
  *out = static_cast<Int>(v);
  return s;
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
// C++20 deduces this from the aggregate; clang before 17 (clang-tidy 14) needs it spelled.
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// Reads `spec` from `t` into `field` with the checks of its type and the schema's bounds.
Status ReadKey(const Reader& r, const toml::table& t, const std::string& prefix,
               const KeySpec& spec, FieldRef field) {
  return std::visit(
      Overloaded{
          [](std::monostate) { return Status::Ok(); },
          [&](std::string* out) {
            return spec.type == KeyType::kWriteConcern ? ReadWriteConcern(r, t, prefix, spec, out)
                                                       : ReadString(r, t, prefix, spec, out);
          },
          [&](int* out) { return ReadInteger(r, t, prefix, spec, out); },
          [&](std::int64_t* out) { return ReadInteger(r, t, prefix, spec, out); },
          [&](bool* out) { return r.Bool(t, prefix, spec.key, out); },
          [&](double* out) { return ReadNumber(r, t, prefix, spec, out); },
          [&](std::chrono::milliseconds* out) { return ReadDuration(r, t, prefix, spec, out); },
          [&](std::vector<std::string>* out) { return r.StringList(t, prefix, spec.key, out); },
          [&](LogFormat* out) {
            std::string name = LogFormatName(*out);
            Status s = ReadString(r, t, prefix, spec, &name);
            if (s.ok()) *out = *LogFormatNamed(name);
            return s;
          },
      },
      field);
}

// Which keys of a section ReadKeys reads.
enum class Keys { kAll, kOfEveryProfile, kOfSomeProfiles };

// Every key of `section` the schema reads (those the section's loader reads itself left to
// it), from `t` into `config` and `watch`.
Status ReadKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                std::string_view section, Keys which, Config* config, WatchSpec* watch) {
  Collected problems;
  for (const KeySpec* k : KeysOf(section)) {
    if ((k->flags & kReadBySection) || k->field == nullptr) continue;
    if (which != Keys::kAll && (k->profiles == kEveryProfile) != (which == Keys::kOfEveryProfile))
      continue;
    problems.Add(ReadKey(r, t, prefix, *k, k->field(*config, *watch)));
  }
  return problems.status();
}

// Every key of `t` must be a key of every profile or one of `profile`'s; a key of another
// profile is named as such, since it would otherwise be silently ignored.
Status CheckWatchKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                      std::string_view profile) {
  const unsigned bit = ProfileBit(profile);
  Collected problems;
  for (const auto& [k, v] : t) {
    std::string_view key = k.str();
    unsigned profiles = 0;
    for (const KeySpec* spec : KeysOf("watch"))
      if (spec->key == key) profiles = spec->profiles;
    if (profiles & bit) continue;
    if (profiles != 0)
      problems.Add(r.Error(k.source(), prefix + std::string(key),
                           "is a key of profile '" +
                               std::string(kProfileNames[std::countr_zero(profiles)]) +
                               "', not of '" + std::string(profile) + "'"));
    else
      problems.Add(r.Error(k.source(), prefix + std::string(key),
                           UnknownKey("key", key, KeyNames("watch", profile))));
  }
  return problems.status();
}

// A collection list naming the watch's own transactions collection: the daemon would
// change (or delete) transaction documents as if they were participants.
Status RefuseOwnCollections(const Reader& r, const toml::table& t, const std::string& prefix,
                            Config* config, WatchSpec* w) {
  for (const KeySpec* k : KeysOf("watch")) {
    if (!(k->flags & kNotTheTransactionsCollection)) continue;
    FieldRef field = k->field(*config, *w);
    auto* names = std::get_if<std::vector<std::string>*>(&field);
    if (names == nullptr) continue;
    for (const auto& n : **names)
      if (n == w->ns.collection)
        return r.Error(t.get(k->key) ? t.get(k->key)->source() : t.source(),
                       prefix + std::string(k->key),
                       "must not name the transactions collection '" + w->ns.collection + "'");
  }
  return Status::Ok();
}

// A table of `field = "path"` entries of one step (inc, set, previous): each value a
// non-empty string.
Status StepFields(const Reader& r, const toml::table& step, const std::string& at,
                  std::string_view key, std::vector<std::pair<std::string, std::string>>* out) {
  const toml::node* n = step.get(key);
  if (n == nullptr) return Status::Ok();
  const toml::table* t = n->as_table();
  if (t == nullptr || t->empty())
    return r.Error(n->source(), at + std::string(key),
                   "must be a table of field = \"path in the transaction document\"");
  for (const auto& [k, v] : *t) {
    const auto* path = v.as_string();
    if (path == nullptr || path->get().empty())
      return r.Error(v.source(), at + std::string(key) + "." + std::string(k.str()),
                     "must be a non-empty string: a path in the transaction document");
    out->emplace_back(std::string(k.str()), path->get());
  }
  return Status::Ok();
}

// One entry of `steps`: where the participant is, and what the step changes, in paths into
// the transaction document.
Status LoadStep(const Reader& r, const toml::node& node, const std::string& at,
                txn_recovery::StepSpec* spec) {
  const toml::table* t = node.as_table();
  if (t == nullptr)
    return r.Error(node.source(), at.substr(0, at.size() - 1),
                   "must be a table: {collection = ..., key_path = ..., inc = {...}}");
  Collected problems;
  Status s;
  problems.Add(r.OnlyKnownKeys(*t, at, KeyNames("watch.steps")));
  problems.Add(r.String(*t, at, "collection", &spec->collection, true));
  problems.Add(r.String(*t, at, "key", &spec->key));
  problems.Add(r.String(*t, at, "key_path", &spec->key_path, true));
  problems.Add(r.String(*t, at, "marker", &spec->marker_field));
  problems.Add(r.String(*t, at, "label", &spec->label));
  problems.Add(r.Bool(*t, at, "positive", &spec->positive_amounts));
  if (!problems.ok()) return problems.status();
  std::vector<std::pair<std::string, std::string>> inc, set, previous;
  if (!(s = StepFields(r, *t, at, "inc", &inc)).ok() ||
      !(s = StepFields(r, *t, at, "set", &set)).ok() ||
      !(s = StepFields(r, *t, at, "previous", &previous)).ok())
    return s;
  for (auto& [field, path] : inc) {
    // "-path": the amount negated (a debit of the amount the document names).
    const bool negate = path.size() > 1 && path[0] == '-';
    spec->inc.push_back({field, negate ? path.substr(1) : path, negate});
  }
  for (auto& [field, path] : set) {
    std::string before;
    for (const auto& [pf, pp] : previous)
      if (pf == field) before = pp;
    if (before.empty())
      return r.Error(
          t->get("set")->source(), at + "set." + field,
          "needs previous." + field + ": the path of the value it replaces (its exact inverse)");
    spec->set.push_back({field, path, before});
  }
  for (const auto& [pf, pp] : previous)
    if (t->get("set") == nullptr || t->get("set")->as_table()->get(pf) == nullptr)
      return r.Error(t->get("previous")->source(), at + "previous." + pf,
                     "has no counterpart in set");
  std::vector<std::string> guards;
  if (const toml::node* g = t->get("guard"); g != nullptr && g->is_string()) {
    guards.push_back(g->as_string()->get());
  } else if (!(s = r.StringList(*t, at, "guard", &guards)).ok()) {
    return s;
  }
  for (const auto& text : guards) {
    auto guard = txn_recovery::ParseGuard(text);
    if (!guard)
      return r.Error(t->get("guard")->source(), at + "guard",
                     "'" + text +
                         "' does not read FIELD OP PATH with OP one of >= <= < == != "
                         "(e.g. \"balance >= value\")");
    spec->guards.push_back(std::move(*guard));
  }
  return Status::Ok();
}

Status LoadStepsKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                     const std::string& own_collection, txn_recovery::StepsProfile* p) {
  if (Status s = r.String(t, prefix, "marker_field", &p->marker_field); !s.ok()) return s;
  const toml::node* n = t.get("steps");
  if (n == nullptr) return r.Error(t.source(), prefix + "steps", "is required by profile 'steps'");
  const toml::array* list = n->as_array();
  if (list == nullptr || list->empty())
    return r.Error(n->source(), prefix + "steps", "must be a non-empty list of steps");
  Collected problems;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string at = prefix + "steps[" + std::to_string(i) + "].";
    txn_recovery::StepSpec spec;
    if (!problems.Add(LoadStep(r, *list->get(i), at, &spec))) continue;
    if (spec.collection == own_collection) {
      problems.Add(r.Error(list->get(i)->source(), at + "collection",
                           "must not name the transactions collection '" + own_collection + "'"));
      continue;
    }
    p->steps.push_back(std::move(spec));
  }
  return problems.status();
}

// The keys of [watch.states] that name `state` (its canonical name first).
std::vector<std::string_view> StateKeys(txn_recovery::TxnState state) {
  std::vector<std::string_view> keys;
  for (const KeySpec* k : KeysOf("watch.states"))
    if (k->state == txn_recovery::TxnStateName(state)) keys.push_back(k->key);
  return keys;
}

// "one of initial|new, pending|started, resuming, ...": every state with its names.
std::string StateKeysText() {
  std::string text;
  std::string_view last_state;
  for (const KeySpec* k : KeysOf("watch.states")) {
    const bool same = !k->state.empty() && k->state == last_state;
    text += (same ? "|" : text.empty() ? "" : ", ") + std::string(k->key);
    last_state = k->state;
  }
  return "one of " + text;
}

// A [watch.states] key that is none: an error naming the closest.
Status UnknownStates(const Reader& r, const toml::table& st, const std::string& sp) {
  const std::vector<std::string> names = KeyNames("watch.states");
  Collected unknown;
  for (const auto& [k, v] : st) {
    if (std::find(names.begin(), names.end(), k.str()) != names.end()) continue;
    std::string closest = Closest(k.str(), names);
    unknown.Add(r.Error(k.source(), sp + std::string(k.str()),
                        "unknown state (" +
                            (closest.empty() ? "" : "did you mean '" + closest + "'? ") +
                            StateKeysText() + ")"));
  }
  return unknown.status();
}

// [watch.states]: each state's spellings, under any one of its names. Two keys of one state
// in one table are refused.
Status LoadStates(const Reader& r, const toml::node& node, const std::string& prefix,
                  const txn_recovery::Profile& profile, txn_recovery::StateAliases* states) {
  const toml::table* st = node.as_table();
  if (st == nullptr) return r.Error(node.source(), prefix + "states", "must be a table");
  const std::string sp = prefix + "states.";
  if (Status s = UnknownStates(r, *st, sp); !s.ok()) return s;
  // Pending as the daemon writes it once it has taken a transaction over to resume it.
  if (Status s = r.StringList(*st, sp, "resuming", &states->resuming); !s.ok()) return s;
  for (const auto state : txn_recovery::kAllTxnStates) {
    std::string_view given;
    for (auto key : StateKeys(state)) {
      if (st->get(key) == nullptr) continue;
      if (!given.empty())
        return r.Error(st->get(key)->source(), sp + std::string(key),
                       "names the same state as '" + std::string(given) + "'");
      given = key;
      auto& list = states->For(state);
      const toml::array* arr = st->get(key)->as_array();
      bool may_be_empty = false;
      for (auto o : profile.OptionalStates()) may_be_empty = may_be_empty || o == state;
      if (may_be_empty && arr != nullptr && arr->empty()) {
        list.clear();  // this profile may do without the state
        continue;
      }
      if (Status s = r.StringList(*st, sp, key, &list); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

// Where a problem of a watch's Validate() is in the file: the key itself, else the first
// related key the table sets, else the table. A state list ("states.pending") is found
// under whichever of that state's names the [watch.states] table uses. Returns the node
// and the key as the file spells it.
std::pair<const toml::node*, std::string> Locate(const toml::table& t,
                                                 const txn_recovery::ConfigProblem& p) {
  auto find = [&t](const std::string& key) -> std::pair<const toml::node*, std::string> {
    if (key.rfind("states.", 0) != 0) return {t.get(key), key};
    const toml::table* st = t.get("states") ? t.get("states")->as_table() : nullptr;
    if (st == nullptr) return {nullptr, key};
    std::string_view canonical = std::string_view(key).substr(7);
    for (const auto state : txn_recovery::kAllTxnStates) {
      if (txn_recovery::TxnStateName(state) != canonical) continue;
      for (auto name : StateKeys(state))
        if (const toml::node* n = st->get(name)) return {n, "states." + std::string(name)};
    }
    return {st, "states"};
  };
  auto [node, key] = find(p.key);
  if (node != nullptr) return {node, key};
  for (const auto& related : p.related)
    if (const toml::node* n = find(related).first; n != nullptr) return {n, p.key};
  return {&t, p.key};
}

// Every problem a Validate() found, one "FILE:LINE:COL: KEY: problem" line each.
Status Problems(const Reader& r, const toml::table& t, const std::string& prefix,
                const txn_recovery::ConfigProblems& problems) {
  if (problems.empty()) return Status::Ok();
  std::string message;
  for (const auto& p : problems) {
    auto [node, key] = Locate(t, p);
    if (!message.empty()) message += "\n";
    message += r.Error(node->source(), prefix + key, p.problem).message();
  }
  return Status::InvalidArgument(message);
}

// A string key's default without its quotes.
std::string StringDefault(const KeySpec& spec) {
  std::string value = DefaultFor(spec, "");
  return value.size() >= 2 ? value.substr(1, value.size() - 2) : value;
}

// The profile first: it decides the defaults and which other keys the watch may have.
Status LoadWatchProfile(const Reader& r, const toml::table& t, const std::string& prefix,
                        WatchSpec* w) {
  std::string kind = StringDefault(SchemaKey("watch", "profile"));
  if (Status s = r.String(t, prefix, "profile", &kind); !s.ok()) return s;
  std::optional<txn_recovery::Profile> profile = txn_recovery::Profile::Named(kind);
  if (!profile) {
    std::string names;
    for (auto name : kProfileNames) names += (names.empty() ? "" : ", ") + std::string(name);
    return r.Error(t.get("profile")->source(), prefix + "profile",
                   "unknown profile '" + kind + "' (this version supports: " + names + ")");
  }
  w->profile = std::move(*profile);
  return Status::Ok();
}

// missing_time, whose default depends on the file: an application that names no time field
// may write none (the transfer without a time field).
Status LoadMissingTime(const Reader& r, const toml::table& t, const std::string& prefix,
                       Profile* p) {
  const KeySpec& spec = SchemaKey("watch", "missing_time");
  std::string missing_time;
  if (Status s = r.String(t, prefix, spec.key, &missing_time); !s.ok()) return s;
  if (missing_time.empty()) {
    p->missing_time = p->DefaultMissingTime(/*time_field_named=*/t.get("time_field") != nullptr);
  } else if (auto parsed = txn_recovery::ParseMissingTime(missing_time)) {
    p->missing_time = *parsed;
  } else {
    return r.Error(t.get(spec.key)->source(), prefix + std::string(spec.key),
                   "must be " + std::string(spec.choices));
  }
  return Status::Ok();
}

// The keys every watch has, whatever its profile. The transactions collection is the one
// whose default is the daemon's, not the profile's.
Status LoadCommonWatchKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                           Config* c, WatchSpec* w) {
  w->ns.collection = StringDefault(SchemaKey("watch", "collection"));
  Collected problems;
  problems.Add(ReadKeys(r, t, prefix, "watch", Keys::kOfEveryProfile, c, w));
  problems.Add(LoadMissingTime(r, t, prefix, &w->profile));
  return problems.status();
}

// The keys of the watch's protocol, and its state spellings.
Status LoadProtocolKeys(const Reader& r, const toml::table& t, const std::string& prefix, Config* c,
                        WatchSpec* w) {
  Profile& p = w->profile;
  Collected problems;
  if (problems.Add(ReadKeys(r, t, prefix, "watch", Keys::kOfSomeProfiles, c, w)))
    problems.Add(RefuseOwnCollections(r, t, prefix, c, w));
  if (auto* described = p.steps())
    problems.Add(LoadStepsKeys(r, t, prefix, w->ns.collection, described));
  if (const toml::node* states = t.get("states"))
    problems.Add(LoadStates(r, *states, prefix, p, &p.states));
  return problems.status();
}

// What the library says of the loaded watch: its profile, thresholds and retention, every
// problem at the position of its key.
Status ValidateWatch(const Reader& r, const toml::table& t, const std::string& prefix,
                     const WatchSpec& w) {
  txn_recovery::ConfigProblems problems = w.profile.Validate();
  if (w.lease_field.empty() || w.lease_field[0] == '$' ||
      w.lease_field.find('.') != std::string::npos)
    problems.push_back({"lease_field", "must be a plain field name"});
  txn_recovery::ConfigProblems thresholds = txn_recovery::ValidateThresholds(w.thresholds);
  problems.insert(problems.end(), thresholds.begin(), thresholds.end());
  std::vector<std::string> in_use = {w.ns.collection, w.control_collection};
  for (const auto& loc : w.profile.MarkerLocations(w.ns)) in_use.push_back(loc.ns.collection);
  txn_recovery::ConfigProblems retention = w.retention.Validate(in_use);
  problems.insert(problems.end(), retention.begin(), retention.end());
  return Problems(r, t, prefix, problems);
}

Status LoadWatch(const Reader& r, const toml::table& t, std::size_t index, Config* c,
                 WatchSpec* w) {
  const std::string prefix = "watch[" + std::to_string(index) + "].";
  // Without a known profile, no other key of the watch can be judged.
  if (Status s = LoadWatchProfile(r, t, prefix, w); !s.ok()) return s;
  Collected problems;
  problems.Add(CheckWatchKeys(r, t, prefix, w->profile.kind()));
  problems.Add(LoadCommonWatchKeys(r, t, prefix, c, w));
  problems.Add(LoadProtocolKeys(r, t, prefix, c, w));
  // The profile's, thresholds' and retention's checks weigh values together: only once each
  // was read.
  if (problems.ok()) problems.Add(ValidateWatch(r, t, prefix, *w));
  return problems.status();
}

// InvalidArgument naming the variable when its value holds a control character: no
// setting is spelt with one, and a value pasted with a stray escape or newline must be
// refused here rather than reach the TOML parser or a log line.
Status CheckVariable(const std::string& name, const std::string& value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      return Status::InvalidArgument("environment " + name + ": byte " + std::to_string(i + 1) +
                                     " is a control character (" + hex +
                                     "); no setting contains one");
    }
  }
  return Status::Ok();
}

// A TXN_RECOVERYD_* variable: nullopt when unset or empty, an error when it holds a
// control character.
Status Variable(const EnvLookup& env, const std::string& name, std::optional<std::string>* out) {
  *out = env(name);
  if (*out && (*out)->empty()) out->reset();
  if (*out) return CheckVariable(name, **out);
  return Status::Ok();
}

// One variable's value as a TOML node whose source names the variable: a TOML value
// ("4", "0.5", "true") if it reads as one, else the text as a string ("10s", "info").
Status VariableAsToml(const std::string& name, const std::string& value, toml::table* parsed) {
  const std::string source = "environment " + name;
  try {
    *parsed = toml::parse("v = " + value, source);
    return Status::Ok();
  } catch (const toml::parse_error&) {
    // Not a TOML value: the text itself, as a basic string (control characters were
    // refused before; quotes and backslashes are escaped).
  }
  std::string quoted = "v = \"";
  for (char ch : value) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += ch;
  }
  try {
    *parsed = toml::parse(quoted + "\"", source);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(source +
                                   ": cannot be read as a value: " + std::string(e.description()));
  }
  return Status::Ok();
}

// TXN_RECOVERYD_<SECTION>_<KEY> for every key the schema lets the environment set, merged
// into the file's tables and then validated like the file's own values, with errors naming
// the variable. The sections are taken in the order of their names, so that of two
// unreadable variables the same one is named as ever.
Status OverlayEnvironment(const EnvLookup& env, toml::table* root) {
  std::vector<const KeySpec*> keys;
  for (const auto& k : ConfigSchema())
    if (k.flags & kFromEnvironment) keys.push_back(&k);
  std::stable_sort(keys.begin(), keys.end(),
                   [](const KeySpec* a, const KeySpec* b) { return a->section < b->section; });
  for (const KeySpec* k : keys) {
    const std::string name = VariableName(*k);
    std::optional<std::string> v;
    if (Status s = Variable(env, name, &v); !s.ok()) return s;
    if (!v) continue;
    toml::table parsed;
    if (Status s = VariableAsToml(name, *v, &parsed); !s.ok()) return s;
    toml::node* existing = root->get(k->section);
    if (existing == nullptr) {
      root->insert_or_assign(k->section, toml::table{});
      existing = root->get(k->section);
    }
    toml::table* t = existing->as_table();
    if (t == nullptr) continue;  // the file's own error is reported later
    t->insert_or_assign(k->key, std::move(*parsed.get("v")));
  }
  return Status::Ok();
}

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
  if (Status s = Variable(env, variable, &from_env); !s.ok()) return s;
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
  if (Status s = Variable(env, variable, &v); !s.ok()) return s;
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
  if (Status s = Variable(env, variable, &v); !s.ok()) return s;
  if (v) {
    if (Status bad = CheckHttpListen(*v); !bad.ok())
      return Status::InvalidArgument("environment " + variable + ": " + bad.message());
    c->http.listen = *v;
  }
  return Status::Ok();
}

Status LoadWatches(const Reader& r, const toml::table& root, Config* c) {
  const toml::node* wn = root.get("watch");
  if (wn == nullptr) return r.Error("watch", "no [[watch]] entry: nothing to recover");
  const toml::array* watches = wn->as_array();
  if (watches == nullptr || !watches->is_array_of_tables())
    return r.Error(wn->source(), "watch", "must be an array of tables ([[watch]])");
  std::set<std::string> names;
  Collected problems;
  for (std::size_t i = 0; i < watches->size(); ++i) {
    const toml::table& t = *watches->get(i)->as_table();
    WatchSpec w;
    // The [sweep] pacing of retention first: the watch's validation covers it too.
    w.retention.batch_size = c->sweep.retention_batch_size;
    w.retention.pause_between_batches = c->sweep.retention_pause;
    w.retention.max_batches = c->sweep.retention_max_batches;
    if (!problems.Add(LoadWatch(r, t, i, c, &w))) continue;
    if (!names.insert(w.name).second) {
      problems.Add(r.Error(t.source(), "watch[" + std::to_string(i) + "].name",
                           "duplicate watch name '" + w.name + "'"));
      continue;
    }
    c->watches.push_back(std::move(w));
  }
  return problems.status();
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
  txn_recovery::MongoOptions mo;
  mo.uri = config.mongodb.uri;
  mo.server_selection_timeout = config.mongodb.server_selection_timeout;
  mo.socket_timeout = config.mongodb.socket_timeout;
  mo.write_concern = config.mongodb.write_concern;
  mo.write_concern_timeout = config.mongodb.write_concern_timeout;
  mo.read_concern = config.mongodb.read_concern;
  using Clock = txn_recovery::MongoOptions::ServerClock;
  mo.server_clock = config.mongodb.server_clock == "server"   ? Clock::kServer
                    : config.mongodb.server_clock == "daemon" ? Clock::kDaemon
                                                              : Clock::kAuto;
  mo.max_pool_size = config.sweep.workers + 2;
  return mo;
}

namespace {

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// One described step as the configuration spells it.
std::string StepToml(const txn_recovery::StepSpec& s) {
  std::string out = "{collection = " + Quoted(s.collection) + ", key = " + Quoted(s.key) +
                    ", key_path = " + Quoted(s.key_path);
  auto table = [&](const char* name, const std::vector<std::pair<std::string, std::string>>& kv) {
    if (kv.empty()) return;
    out.append(", ").append(name).append(" = {");
    for (std::size_t i = 0; i < kv.size(); ++i)
      out.append(i ? ", " : "")
          .append(Quoted(kv[i].first))
          .append(" = ")
          .append(Quoted(kv[i].second));
    out += "}";
  };
  std::vector<std::pair<std::string, std::string>> inc, set, previous;
  for (const auto& i : s.inc) inc.emplace_back(i.field, (i.negate ? "-" : "") + i.path);
  for (const auto& x : s.set) {
    set.emplace_back(x.field, x.path);
    previous.emplace_back(x.field, x.previous_path);
  }
  table("inc", inc);
  table("set", set);
  table("previous", previous);
  if (!s.guards.empty()) {
    out += ", guard = [";
    for (std::size_t i = 0; i < s.guards.size(); ++i) {
      const auto& g = s.guards[i];
      out.append(i ? ", " : "")
          .append(
              Quoted(g.field + " " + std::string(txn_recovery::GuardOpName(g.op)) + " " + g.path));
    }
    out += "]";
  }
  if (!s.marker_field.empty()) out += ", marker = " + Quoted(s.marker_field);
  if (!s.label.empty()) out += ", label = " + Quoted(s.label);
  if (s.positive_amounts) out += ", positive = true";
  return out + "}";
}

}  // namespace

std::string DescribeSteps(const txn_recovery::WatchSpec& w) {
  const txn_recovery::Profile& p = w.profile;
  std::ostringstream os;
  std::optional<txn_recovery::StepsProfile> described;
  if (const auto* sp = p.steps()) described = *sp;
  if (const auto* tp = p.transfer()) described = tp->AsSteps();
  if (described) {
    if (p.steps()) {
      os << "\nmarker_field = " << Quoted(described->marker_field) << "\nsteps = [";
      for (const auto& step : described->steps) os << "\n  " << StepToml(step) << ",";
      os << "\n]";
    }
    os << "\n# the steps, as the daemon understands them (each applied only where the marker is "
          "absent,\n# pushing it; undone by the exact inverse where it is present):";
    for (std::size_t i = 0; i < described->steps.size(); ++i)
      os << "\n#   [" << i << "] " << described->steps[i].ToString(described->marker_field);
  }
  if (const auto* op = p.operations())
    os << "\n# the steps: one per entry of " << op->operations_field << " ({" << op->collection_key
       << ", " << op->id_key << ", " << op->inc_key << " | " << op->set_key << " + "
       << op->previous_key << "}), marker " << op->marker_field;
  if (const auto* tg = p.tagged_insert())
    os << "\n# no participant steps: documents tagged " << tg->tag_field << " = <_id> in the "
       << "tagged collections are untagged (finish) or deleted (rollback)";
  return os.str();
}

namespace {

std::string List(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Quoted(v[i]);
  return out + "]";
}

// A value as check-config prints it: as the file would spell it.
std::string ValueText(const KeySpec& spec, const FieldRef& field) {
  return std::visit(
      Overloaded{
          [](std::monostate) { return std::string(); },
          [&](std::string* v) {
            return spec.type == KeyType::kWriteConcern && *v != "majority" ? *v : Quoted(*v);
          },
          [](int* v) { return std::to_string(*v); },
          [](std::int64_t* v) { return std::to_string(*v); },
          [](bool* v) { return std::string(*v ? "true" : "false"); },
          [](double* v) {
            std::ostringstream os;
            os << *v;
            return os.str();
          },
          [](std::chrono::milliseconds* v) { return Quoted(FormatDuration(*v)); },
          [](std::vector<std::string>* v) { return List(*v); },
          [](LogFormat* v) { return Quoted(LogFormatName(*v)); },
      },
      field);
}

// One section outside [[watch]], every key the configuration holds.
void DescribeSection(std::ostream& os, std::string_view section, Config& c) {
  WatchSpec no_watch;
  os << "[" << section << "]";
  for (const KeySpec* k : KeysOf(section)) {
    if (k->field == nullptr) continue;
    FieldRef field = k->field(c, no_watch);
    os << "\n" << k->key << " = ";
    if (k->flags & kRedacted)
      os << Quoted(txn_recovery::RedactUri(*std::get<std::string*>(field))) << "  # from "
         << c.mongodb.uri_source;
    else
      os << ValueText(*k, field);
  }
}

// One key of a watch as check-config prints it ("\nkey = value"), or nothing: a key the
// profile does not have, one without a default left unset, or one printed elsewhere.
std::string WatchKeyText(const KeySpec& k, Config& c, WatchSpec& w) {
  const txn_recovery::Profile& p = w.profile;
  const std::string key(k.key);
  if (key == "profile") return "\nprofile = " + Quoted(std::string(p.kind()));
  if (key == "missing_time")
    return "\nmissing_time = " + Quoted(std::string(txn_recovery::MissingTimeName(p.missing_time)));
  if (key == "retain_finished" && !w.retention.enabled())
    return "\n# retain_finished: off (finished transactions are kept)";
  if (k.field == nullptr) return "";
  FieldRef field = k.field(c, w);
  if (std::holds_alternative<std::monostate>(field)) return "";
  const bool unset = std::visit(Overloaded{[](std::string* v) { return v->empty(); },
                                           [](std::vector<std::string>* v) { return v->empty(); },
                                           [](auto) { return false; }},
                                field);
  if (unset && k.default_value.empty() && !(k.flags & kRequired)) return "";
  return "\n" + key + " = " + ValueText(k, field);
}

// A watch: its keys, its profile's steps, its state spellings.
void DescribeWatch(std::ostream& os, Config& c, WatchSpec& w) {
  os << "\n[[watch]]";
  bool in_protocol = false;
  for (const KeySpec* k : KeysOf("watch")) {
    const bool protocol = k->profiles != kEveryProfile;
    // The steps as the daemon understands them, after the keys of its profile.
    if (in_protocol && !protocol) os << DescribeSteps(w);
    in_protocol = protocol;
    os << WatchKeyText(*k, c, w);
  }
  os << "\n[watch.states]";
  const txn_recovery::StateAliases& states = w.profile.states;
  for (const auto state : txn_recovery::kAllTxnStates)
    if (!states.For(state).empty())
      os << "\n" << txn_recovery::TxnStateName(state) << " = " << List(states.For(state));
  if (!states.resuming.empty()) os << "\nresuming = " << List(states.resuming);
  os << "\n";
}

}  // namespace

std::string DescribeConfig(const Config& config) {
  // The schema's fields are for reading and writing alike; nothing here writes.
  Config& c = const_cast<Config&>(config);
  std::ostringstream os;
  os << "# effective configuration of " << c.path << "\n";
  bool first = true;
  for (const KeySpec* section : KeysOf(""))
    if (section->type == KeyType::kTable) {
      os << (first ? "" : "\n\n");
      DescribeSection(os, section->key, c);
      first = false;
    }
  os << "\n";
  for (auto& w : c.watches) DescribeWatch(os, c, w);
  return os.str();
}

Config::Config() {
  // The defaults of every key outside [[watch]], read from the schema as the file's values
  // are (those of a watch are its profile's).
  Reader r("(the schema's defaults)");
  WatchSpec no_watch;
  for (const KeySpec& k : ConfigSchema()) {
    if (k.field == nullptr || k.default_value.empty() || k.section.rfind("watch", 0) == 0) continue;
    toml::table t = toml::parse(std::string(k.key) + " = " + std::string(k.default_value));
    (void)ReadKey(r, t, "", k, k.field(*this, no_watch));
  }
}

}  // namespace txn_recoveryd
