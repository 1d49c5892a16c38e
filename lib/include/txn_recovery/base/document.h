// A small, self-contained document model: the subset of BSON the recovery engine reads
// and writes. The core never sees libbson; the MongoDB store converts at its boundary,
// and the in-memory store works on these values directly.
//
// Types that the engine does not understand (Decimal128, binary, regex, timestamps, ...)
// are kept as Value::Other with their BSON type name, so that a document holding them can
// be reported precisely ("amount has type decimal128") instead of being misread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace txn_recovery {

struct ObjectId {
  std::array<std::uint8_t, 12> bytes{};
  // The creation time embedded in the first four bytes, in milliseconds since the epoch.
  std::int64_t CreationMillis() const noexcept;
  // The smallest ObjectId created in the second holding `millis` (the remaining eight bytes
  // zero): `_id < AtTime(t)` selects the ObjectIds created before that second.
  static ObjectId AtTime(std::int64_t millis) noexcept;
  std::string Hex() const;
  static std::optional<ObjectId> FromHex(std::string_view hex);
  friend bool operator==(const ObjectId&, const ObjectId&) = default;
  friend auto operator<=>(const ObjectId&, const ObjectId&) = default;
};

struct DateTime {
  std::int64_t millis = 0;  // since the Unix epoch, as BSON stores it
  friend bool operator==(const DateTime&, const DateTime&) = default;
  friend auto operator<=>(const DateTime&, const DateTime&) = default;
};

// A value of a BSON type this model does not interpret. Compares equal to nothing.
struct OtherValue {
  std::string type_name;
  // The value's exact BSON encoding (as the only element, keyed "", of a document), when
  // it was read from the server: kept so that the value can be written back as it was —
  // above all in a filter, so that a transaction whose _id is a regex, a Decimal128 or
  // binary data can still be addressed (quarantined). Empty for a value the reader made up
  // ("duplicated key", "nested deeper than 100 levels"), which cannot be written.
  std::string raw;
  // Equal only when both carry the same encoding: a value never compares equal to what
  // the reader made up.
  friend bool operator==(const OtherValue& a, const OtherValue& b) {
    return !a.raw.empty() && a.raw == b.raw;
  }
};

struct Null {
  friend bool operator==(const Null&, const Null&) = default;
};

class Value;
using Array = std::vector<Value>;

// An ordered document (field order is preserved, as in BSON).
class Document {
 public:
  Document() = default;
  Document(std::initializer_list<std::pair<std::string, Value>> fields);

  // Looks up a top-level field; null if absent.
  const Value* Get(std::string_view key) const noexcept;
  Value* GetMutable(std::string_view key) noexcept;
  // Looks up a dotted path ("recovery.owner"), descending through sub-documents only.
  const Value* GetPath(std::string_view path) const noexcept;
  // Sets a top-level field, replacing it in place or appending it.
  void Set(std::string_view key, Value value);
  // Sets a dotted path, creating intermediate documents. Fails (returns false) if a
  // component on the way exists and is not a document.
  bool SetPath(std::string_view path, Value value);
  // Removes a dotted path; returns whether something was removed.
  bool UnsetPath(std::string_view path);

  // Defined after Value: clang instantiates the pair for an inline body here, when
  // Value is still incomplete.
  using Fields = std::vector<std::pair<std::string, Value>>;
  // Takes fields whose keys the caller has made distinct (linear time, where Set for each
  // field would be quadratic: the BSON reader builds documents of any width this way).
  static Document FromDistinctFields(Fields fields);
  bool empty() const noexcept;
  std::size_t size() const noexcept;
  Fields::const_iterator begin() const noexcept;
  Fields::const_iterator end() const noexcept;

  friend bool operator==(const Document& a, const Document& b);

 private:
  Fields fields_;
};

class Value {
 public:
  using Storage = std::variant<Null, bool, std::int32_t, std::int64_t, double, std::string,
                               ObjectId, DateTime, Array, Document, OtherValue>;

  Value() = default;
  Value(Null) {}
  Value(bool b) : v_(b) {}
  Value(std::int32_t i) : v_(i) {}
  Value(std::int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(ObjectId o) : v_(o) {}
  Value(DateTime t) : v_(t) {}
  Value(Array a) : v_(std::move(a)) {}
  Value(Document d) : v_(std::move(d)) {}
  Value(OtherValue o) : v_(std::move(o)) {}

  const Storage& storage() const noexcept { return v_; }
  Storage& storage() noexcept { return v_; }

  bool is_null() const noexcept { return std::holds_alternative<Null>(v_); }
  bool is_number() const noexcept {
    return std::holds_alternative<std::int32_t>(v_) || std::holds_alternative<std::int64_t>(v_) ||
           std::holds_alternative<double>(v_);
  }
  bool is_string() const noexcept { return std::holds_alternative<std::string>(v_); }
  bool is_array() const noexcept { return std::holds_alternative<Array>(v_); }
  bool is_document() const noexcept { return std::holds_alternative<Document>(v_); }
  bool is_datetime() const noexcept { return std::holds_alternative<DateTime>(v_); }
  bool is_object_id() const noexcept { return std::holds_alternative<ObjectId>(v_); }

  const std::string* as_string() const noexcept { return std::get_if<std::string>(&v_); }
  const Array* as_array() const noexcept { return std::get_if<Array>(&v_); }
  Array* as_array() noexcept { return std::get_if<Array>(&v_); }
  const Document* as_document() const noexcept { return std::get_if<Document>(&v_); }
  Document* as_document() noexcept { return std::get_if<Document>(&v_); }
  const DateTime* as_datetime() const noexcept { return std::get_if<DateTime>(&v_); }
  const ObjectId* as_object_id() const noexcept { return std::get_if<ObjectId>(&v_); }
  // The numeric value as a double (for comparisons and reports); nullopt if not a number.
  std::optional<double> as_double() const noexcept;
  // The BSON type name ("int32", "string", "objectId", ...).
  std::string_view type_name() const noexcept;

  // Exact equality (MongoDB's: numbers compare by value across int32/int64/double).
  friend bool operator==(const Value& a, const Value& b);

  // A compact, JSON-like rendering for logs and reports (ObjectId("..."), ISODate(...)).
  std::string ToString() const;

 private:
  Storage v_;
};

// The negation of a numeric value, keeping its type (int32 stays int32 unless it is
// INT32_MIN, which becomes int64). nullopt for non-numbers.
std::optional<Value> NegateNumber(const Value& v);
// a + b following MongoDB's $inc type promotion (int32 + int32 overflowing -> int64,
// anything with a double -> double). nullopt for non-numbers.
std::optional<Value> AddNumbers(const Value& a, const Value& b);
// Numeric comparison: <0, 0, >0; nullopt if either is not a number.
std::optional<int> CompareNumbers(const Value& a, const Value& b);

inline bool Document::empty() const noexcept {
  return fields_.empty();
}
inline std::size_t Document::size() const noexcept {
  return fields_.size();
}
inline Document::Fields::const_iterator Document::begin() const noexcept {
  return fields_.begin();
}
inline Document::Fields::const_iterator Document::end() const noexcept {
  return fields_.end();
}

}  // namespace txn_recovery
