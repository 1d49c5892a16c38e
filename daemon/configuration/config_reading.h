// Reading the configuration file's values as the schema types and bounds them, for the
// loaders of the file's sections (config.cc) and of its watches (config_watch.cc). Internal
// to daemon/configuration: the rest of the daemon reads a loaded Config.
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/configuration/config.h"
#include "daemon/configuration/config_schema.h"
#include "txn_recovery/base/status.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;

// "unknown key (did you mean 'interval'? every key is explained in EXAMPLE)".
std::string UnknownKey(std::string_view what, std::string_view key,
                       const std::vector<std::string>& known);

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

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
// C++20 deduces this from the aggregate; clang before 17 (clang-tidy 14) needs it spelled.
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// Reads `spec` from `t` into `field` with the checks of its type and the schema's bounds.
Status ReadKey(const Reader& r, const toml::table& t, const std::string& prefix,
               const KeySpec& spec, FieldRef field);
// A string key, one of the schema's choices when it has some.
Status ReadString(const Reader& r, const toml::table& t, const std::string& prefix,
                  const KeySpec& spec, std::string* out);

// Which keys of a section ReadKeys reads.
enum class Keys { kAll, kOfEveryProfile, kOfSomeProfiles };

// Every key of `section` the schema reads (those the section's loader reads itself left to
// it), from `t` into `config` and `watch`.
Status ReadKeys(const Reader& r, const toml::table& t, const std::string& prefix,
                std::string_view section, Keys which, Config* config,
                txn_recovery::WatchSpec* watch);

// Every [[watch]] of `root` into config->watches (config_watch.cc); [sweep] read before.
Status LoadWatches(const Reader& r, const toml::table& root, Config* config);

// TXN_RECOVERYD_<SECTION>_<KEY> for every key the schema lets the environment set, merged
// into the file's tables, to be validated like the file's own values with errors naming the
// variable (config_environment.cc).
Status OverlayEnvironment(const EnvLookup& env, toml::table* root);

}  // namespace txn_recovery::daemon
