#include "daemon/configuration/config_environment.h"

#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "daemon/base/suggest.h"
#include "daemon/configuration/config_reading.h"
#include "daemon/configuration/config_schema.h"

namespace txn_recovery::daemon {

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
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

}  // namespace

Status ReadVariable(const EnvLookup& env, const std::string& name,
                    std::optional<std::string>* out) {
  *out = env(name);
  if (*out && (*out)->empty()) out->reset();
  if (*out) return CheckVariable(name, **out);
  return Status::Ok();
}

namespace {

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

}  // namespace

// The sections are taken in the order of their names, so that of two unreadable variables
// the same one is named as ever.
Status OverlayEnvironment(const EnvLookup& env, toml::table* root) {
  std::vector<const KeySpec*> keys;
  for (const auto& k : ConfigSchema())
    if (k.flags & kFromEnvironment) keys.push_back(&k);
  std::stable_sort(keys.begin(), keys.end(),
                   [](const KeySpec* a, const KeySpec* b) { return a->section < b->section; });
  for (const KeySpec* k : keys) {
    const std::string name = VariableName(*k);
    std::optional<std::string> v;
    if (Status s = ReadVariable(env, name, &v); !s.ok()) return s;
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

}  // namespace txn_recovery::daemon
