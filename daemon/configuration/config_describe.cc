#include "daemon/configuration/config_describe.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <variant>

#include "daemon/configuration/config.h"
#include "daemon/configuration/config_reading.h"
#include "daemon/configuration/config_schema.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::daemon {

using txn_recovery::WatchSpec;

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

// Whether a field holds no value: an empty string or list, a zero duration (every duration
// the file sets is positive), or nothing (a key of another profile).
bool Unset(const FieldRef& field) {
  return std::visit(
      Overloaded{[](std::monostate) { return true; }, [](std::string* v) { return v->empty(); },
                 [](std::vector<std::string>* v) { return v->empty(); },
                 [](std::chrono::milliseconds* v) { return v->count() == 0; },
                 [](auto) { return false; }},
      field);
}

// The value of `k` (a key of [[watch]], [watch.states] or of a watch's steps) in `w` as the
// file spells it, or "" when the watch has no such key or leaves it unset. A state's list
// is spelt even when empty: a profile may do without the state.
std::string WatchValueText(const KeySpec& k, Config& c, WatchSpec& w) {
  const txn_recovery::Profile& p = w.profile;
  if (k.section == "watch" && k.key == "profile") return Quoted(std::string(p.kind()));
  if (k.section == "watch" && k.key == "missing_time")
    return Quoted(std::string(txn_recovery::MissingTimeName(p.missing_time)));
  // The steps profile keeps its marker_field with its steps (the schema's field has none).
  if (k.section == "watch" && k.key == "marker_field" && p.steps() != nullptr)
    return Quoted(p.steps()->marker_field);
  if (k.field == nullptr) return "";
  FieldRef field = k.field(c, w);
  if (k.section == "watch.states" && std::holds_alternative<std::vector<std::string>*>(field))
    return List(*std::get<std::vector<std::string>*>(field));
  return Unset(field) ? "" : ValueText(k, field);
}

// One key of a watch as check-config prints it ("\nkey = value"), or nothing: a key the
// profile does not have, one left unset, or one printed elsewhere.
std::string WatchKeyText(const KeySpec& k, Config& c, WatchSpec& w) {
  if (k.key == "retain_finished" && !w.retention.enabled())
    return "\n# retain_finished: off (finished transactions are kept)";
  // A steps watch's marker_field is printed with its steps (DescribeSteps).
  if (k.key == "marker_field" && w.profile.steps() != nullptr) return "";
  const std::string value = WatchValueText(k, c, w);
  if (value.empty()) return "";
  // Appended piece by piece: GCC 12 at -O3 takes `"\n" + std::string(key) + ...` for an
  // overlapping copy (-Wrestrict, a false positive).
  std::string line = "\n";
  line.append(k.key).append(" = ").append(value);
  return line;
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

std::string DefaultFor(const KeySpec& spec, std::string_view profile) {
  Config defaults;
  if (spec.section.rfind("watch", 0) != 0) {
    if (spec.field == nullptr) return "";
    WatchSpec no_watch;
    FieldRef field = spec.field(defaults, no_watch);
    return Unset(field) ? "" : ValueText(spec, field);
  }
  // The profile a watch that names none gets, whichever profile is asked about.
  if (spec.section == "watch" && spec.key == "profile") return Quoted(DefaultProfileName());
  std::optional<WatchSpec> w =
      DefaultWatch(profile.empty() ? DefaultProfileName() : std::string(profile), defaults);
  if (!w) return "";
  // A step's keys: those of a step that sets none of them.
  if (auto* steps = w->profile.steps()) steps->steps.emplace_back();
  return WatchValueText(spec, defaults, *w);
}

std::string DefaultText(const KeySpec& spec) {
  if (spec.profiles == 0) return DefaultFor(spec, "");
  std::string first;  // the value of the first profile the key belongs to
  bool have_first = false;
  std::vector<std::pair<std::string, std::string>> others;  // value, its profiles
  for (auto name : kProfileNames) {
    if (!(spec.profiles & ProfileBit(name))) continue;
    std::string value = DefaultFor(spec, name);
    if (!have_first) {
      first = std::move(value);
      have_first = true;
      continue;
    }
    if (value == first) continue;
    auto same = std::find_if(others.begin(), others.end(),
                             [&value](const auto& o) { return o.first == value; });
    if (same == others.end())
      others.emplace_back(std::move(value), std::string(name));
    else
      same->second.append(", ").append(name);
  }
  std::string text = first;
  for (const auto& [value, names] : others)
    text.append("; ").append(names).append(": ").append(value);
  return text;
}

}  // namespace txn_recovery::daemon
