#include "daemon/configuration/config_reading.h"

#include <optional>
#include <variant>

#include "daemon/base/suggest.h"

namespace txn_recovery::daemon {

using txn_recovery::WatchSpec;

namespace {

// Where an installed system keeps the documented example of every key (the Debian package
// and the container image both carry it there), for the hints of configuration errors.
constexpr const char* kInstalledExample = "/usr/share/doc/txn-recoveryd/txn-recoveryd.toml";

}  // namespace

std::string UnknownKey(std::string_view what, std::string_view key,
                       const std::vector<std::string>& known) {
  std::string closest = Closest(key, known);
  return "unknown " + std::string(what) + " (" +
         (closest.empty() ? "" : "did you mean '" + closest + "'? ") +
         "every key is explained in " + kInstalledExample + ")";
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

}  // namespace

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

namespace {

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
                    (spec.why_min != nullptr ? " (" + spec.why_min() + ")" : "")));
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

}  // namespace

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

}  // namespace txn_recovery::daemon
