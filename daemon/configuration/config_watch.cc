// Loading one [[watch]]: its profile first, then the keys of every profile and those of
// its own, its steps and its state spellings, then what the library says of the whole.
#include <bit>
#include <optional>
#include <set>

#include "daemon/base/suggest.h"
#include "daemon/configuration/config_reading.h"
#include "txn_recovery/shapes/config_problem.h"

namespace txn_recovery::daemon {

using txn_recovery::Profile;
using txn_recovery::WatchSpec;

namespace {

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

// The profile first: it decides the defaults and which other keys the watch may have. The
// watch starts as the defaults make it (DefaultWatch), its own keys read over them.
Status LoadWatchProfile(const Reader& r, const toml::table& t, const std::string& prefix,
                        const Config& c, WatchSpec* w) {
  std::string kind = DefaultProfileName();
  if (Status s = r.String(t, prefix, "profile", &kind); !s.ok()) return s;
  std::optional<WatchSpec> defaults = DefaultWatch(kind, c);
  if (!defaults) {
    std::string names;
    for (auto name : kProfileNames) names += (names.empty() ? "" : ", ") + std::string(name);
    return r.Error(t.get("profile")->source(), prefix + "profile",
                   "unknown profile '" + kind + "' (this version supports: " + names + ")");
  }
  *w = std::move(*defaults);
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

// The keys every watch has, whatever its profile.
Status LoadCommonWatchKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                           Config* c, WatchSpec* w) {
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
  if (Status s = LoadWatchProfile(r, t, prefix, *c, w); !s.ok()) return s;
  Collected problems;
  problems.Add(CheckWatchKeys(r, t, prefix, w->profile.kind()));
  problems.Add(LoadCommonWatchKeys(r, t, prefix, c, w));
  problems.Add(LoadProtocolKeys(r, t, prefix, c, w));
  // The profile's, thresholds' and retention's checks weigh values together: only once each
  // was read.
  if (problems.ok()) problems.Add(ValidateWatch(r, t, prefix, *w));
  return problems.status();
}

}  // namespace

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

}  // namespace txn_recovery::daemon
