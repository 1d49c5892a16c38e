#include "txn_recovery/base/document.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

namespace txn_recovery {

std::int64_t ObjectId::CreationMillis() const noexcept {
  std::uint32_t secs = (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
                       (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
  return static_cast<std::int64_t>(secs) * 1000;
}

ObjectId ObjectId::AtTime(std::int64_t millis) noexcept {
  std::int64_t secs = millis / 1000;
  if (secs < 0) secs = 0;
  if (secs > 0xFFFFFFFFLL) secs = 0xFFFFFFFFLL;
  ObjectId oid;
  const auto s = static_cast<std::uint32_t>(secs);
  oid.bytes[0] = static_cast<std::uint8_t>(s >> 24);
  oid.bytes[1] = static_cast<std::uint8_t>(s >> 16);
  oid.bytes[2] = static_cast<std::uint8_t>(s >> 8);
  oid.bytes[3] = static_cast<std::uint8_t>(s);
  return oid;
}

std::string ObjectId::Hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(24);
  for (std::uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xF]);
  }
  return out;
}

std::optional<ObjectId> ObjectId::FromHex(std::string_view hex) {
  if (hex.size() != 24) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  ObjectId oid;
  for (std::size_t i = 0; i < 12; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    oid.bytes[i] = static_cast<std::uint8_t>((hi << 4) | lo);
  }
  return oid;
}

Document::Document(std::initializer_list<std::pair<std::string, Value>> fields) : fields_(fields) {}

Document Document::FromDistinctFields(Fields fields) {
  Document d;
  d.fields_ = std::move(fields);
  return d;
}

const Value* Document::Get(std::string_view key) const noexcept {
  for (const auto& [k, v] : fields_)
    if (k == key) return &v;
  return nullptr;
}

Value* Document::GetMutable(std::string_view key) noexcept {
  for (auto& [k, v] : fields_)
    if (k == key) return &v;
  return nullptr;
}

const Value* Document::GetPath(std::string_view path) const noexcept {
  const Document* doc = this;
  while (true) {
    auto dot = path.find('.');
    const Value* v = doc->Get(path.substr(0, dot));
    if (dot == std::string_view::npos || v == nullptr) return v;
    doc = v->as_document();
    if (doc == nullptr) return nullptr;
    path.remove_prefix(dot + 1);
  }
}

void Document::Set(std::string_view key, Value value) {
  if (Value* v = GetMutable(key)) {
    *v = std::move(value);
  } else {
    fields_.emplace_back(std::string(key), std::move(value));
  }
}

bool Document::SetPath(std::string_view path, Value value) {
  auto dot = path.find('.');
  if (dot == std::string_view::npos) {
    Set(path, std::move(value));
    return true;
  }
  std::string_view head = path.substr(0, dot);
  Value* child = GetMutable(head);
  if (child == nullptr) {
    Set(head, Document{});
    child = GetMutable(head);
  }
  Document* sub = child->as_document();
  if (sub == nullptr) return false;
  return sub->SetPath(path.substr(dot + 1), std::move(value));
}

bool Document::UnsetPath(std::string_view path) {
  auto dot = path.find('.');
  if (dot == std::string_view::npos) {
    for (auto it = fields_.begin(); it != fields_.end(); ++it) {
      if (it->first == path) {
        fields_.erase(it);
        return true;
      }
    }
    return false;
  }
  Value* child = GetMutable(path.substr(0, dot));
  Document* sub = child ? child->as_document() : nullptr;
  return sub != nullptr && sub->UnsetPath(path.substr(dot + 1));
}

bool operator==(const Document& a, const Document& b) {
  if (a.fields_.size() != b.fields_.size()) return false;
  for (std::size_t i = 0; i < a.fields_.size(); ++i) {
    if (a.fields_[i].first != b.fields_[i].first) return false;
    if (!(a.fields_[i].second == b.fields_[i].second)) return false;
  }
  return true;
}

std::optional<double> Value::as_double() const noexcept {
  if (auto* i = std::get_if<std::int32_t>(&v_)) return *i;
  if (auto* l = std::get_if<std::int64_t>(&v_)) return static_cast<double>(*l);
  if (auto* d = std::get_if<double>(&v_)) return *d;
  return std::nullopt;
}

std::string_view Value::type_name() const noexcept {
  switch (v_.index()) {
    case 0:
      return "null";
    case 1:
      return "bool";
    case 2:
      return "int32";
    case 3:
      return "int64";
    case 4:
      return "double";
    case 5:
      return "string";
    case 6:
      return "objectId";
    case 7:
      return "date";
    case 8:
      return "array";
    case 9:
      return "object";
    default:
      return std::get<OtherValue>(v_).type_name;
  }
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return CompareNumbers(a, b) == 0;
  if (a.v_.index() != b.v_.index()) return false;
  return a.v_ == b.v_;
}

namespace {

void AppendEscaped(std::string* out, const std::string& s) {
  out->push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

}  // namespace

std::string Value::ToString() const {
  struct Printer {
    std::string operator()(const Null&) const { return "null"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int32_t i) const { return std::to_string(i); }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", d);
      return buf;
    }
    std::string operator()(const std::string& s) const {
      std::string out;
      AppendEscaped(&out, s);
      return out;
    }
    std::string operator()(const ObjectId& o) const { return "ObjectId(\"" + o.Hex() + "\")"; }
    std::string operator()(const DateTime& t) const {
      return "Date(" + std::to_string(t.millis) + ")";
    }
    std::string operator()(const Array& a) const {
      std::string out = "[";
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) out += ", ";
        out += a[i].ToString();
      }
      return out + "]";
    }
    std::string operator()(const Document& d) const {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : d) {
        if (!first) out += ", ";
        first = false;
        AppendEscaped(&out, k);
        out += ": " + v.ToString();
      }
      return out + "}";
    }
    std::string operator()(const OtherValue& o) const { return "<" + o.type_name + ">"; }
  };
  return std::visit(Printer{}, v_);
}

std::optional<Value> NegateNumber(const Value& v) {
  if (auto* i = std::get_if<std::int32_t>(&v.storage())) {
    if (*i == std::numeric_limits<std::int32_t>::min()) return Value(-std::int64_t{*i});
    return Value(static_cast<std::int32_t>(-*i));
  }
  if (auto* l = std::get_if<std::int64_t>(&v.storage())) {
    if (*l == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
    return Value(-*l);
  }
  if (auto* d = std::get_if<double>(&v.storage())) return Value(-*d);
  return std::nullopt;
}

std::optional<Value> AddNumbers(const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) return std::nullopt;
  if (std::holds_alternative<double>(a.storage()) || std::holds_alternative<double>(b.storage()))
    return Value(*a.as_double() + *b.as_double());
  auto as_i64 = [](const Value& v) -> std::int64_t {
    if (auto* i = std::get_if<std::int32_t>(&v.storage())) return *i;
    return std::get<std::int64_t>(v.storage());
  };
  std::int64_t sum;
  if (__builtin_add_overflow(as_i64(a), as_i64(b), &sum)) return std::nullopt;
  bool both32 = std::holds_alternative<std::int32_t>(a.storage()) &&
                std::holds_alternative<std::int32_t>(b.storage());
  if (both32 && sum >= std::numeric_limits<std::int32_t>::min() &&
      sum <= std::numeric_limits<std::int32_t>::max())
    return Value(static_cast<std::int32_t>(sum));
  return Value(sum);
}

std::optional<int> CompareNumbers(const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) return std::nullopt;
  bool a_int = !std::holds_alternative<double>(a.storage());
  bool b_int = !std::holds_alternative<double>(b.storage());
  if (a_int && b_int) {
    auto as_i64 = [](const Value& v) -> std::int64_t {
      if (auto* i = std::get_if<std::int32_t>(&v.storage())) return *i;
      return std::get<std::int64_t>(v.storage());
    };
    std::int64_t x = as_i64(a), y = as_i64(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  double x = *a.as_double(), y = *b.as_double();
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y) ? 0 : -1;
  return x < y ? -1 : (x > y ? 1 : 0);
}

}  // namespace txn_recovery
