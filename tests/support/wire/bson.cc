#include "support/wire/bson.h"

#include <cstring>

#include "support/wire/little_endian.h"

namespace txn_recovery::testing {

namespace {

// The size of an element's value starting at `at`, or nullopt if it runs past the end.
std::optional<std::size_t> ValueSize(std::uint8_t type, std::string_view d, std::size_t at) {
  auto remaining = d.size() - at;
  auto fixed = [&](std::size_t n) -> std::optional<std::size_t> {
    return n <= remaining ? std::optional<std::size_t>(n) : std::nullopt;
  };
  auto length_prefixed = [&](std::size_t extra) -> std::optional<std::size_t> {
    if (remaining < 4) return std::nullopt;
    std::int32_t n = GetInt32(d, at);
    if (n < 0) return std::nullopt;
    return fixed(4 + static_cast<std::size_t>(n) + extra);
  };
  auto cstring = [&](std::size_t from) -> std::optional<std::size_t> {
    std::size_t end = d.find('\0', from);
    if (end == std::string_view::npos) return std::nullopt;
    return end + 1 - at;
  };
  switch (type) {
    case 0x01:  // double
    case 0x09:  // datetime
    case 0x11:  // timestamp
    case 0x12:  // int64
      return fixed(8);
    case 0x02:  // string
    case 0x0D:  // javascript
    case 0x0E:  // symbol
      return length_prefixed(0);
    case 0x03:    // document
    case 0x04:    // array
    case 0x0F: {  // code with scope
      if (remaining < 4) return std::nullopt;
      std::int32_t n = GetInt32(d, at);
      if (n < 5) return std::nullopt;
      return fixed(static_cast<std::size_t>(n));
    }
    case 0x05:  // binary: length, subtype, bytes
      return length_prefixed(1);
    case 0x06:  // undefined
    case 0x0A:  // null
    case 0x7F:  // maxKey
    case 0xFF:  // minKey
      return fixed(0);
    case 0x07:  // objectId
      return fixed(12);
    case 0x08:  // bool
      return fixed(1);
    case 0x0B: {  // regex: two cstrings
      auto first = cstring(at);
      if (!first) return std::nullopt;
      auto second = cstring(at + *first);
      if (!second) return std::nullopt;
      return *first + *second;
    }
    case 0x0C: {  // dbPointer: string, 12 bytes
      auto s = length_prefixed(0);
      if (!s) return std::nullopt;
      return fixed(*s + 12);
    }
    case 0x10:  // int32
      return fixed(4);
    case 0x13:  // decimal128
      return fixed(16);
    default:
      return std::nullopt;
  }
}

}  // namespace

BsonWriter& BsonWriter::Element(std::uint8_t type, std::string_view key, std::string_view value) {
  elements_.push_back(static_cast<char>(type));
  elements_.append(key);
  elements_.push_back('\0');
  elements_.append(value);
  return *this;
}
BsonWriter& BsonWriter::Int32(std::string_view key, std::int32_t v) {
  std::string b;
  PutInt32(&b, v);
  return Element(kBsonInt32, key, b);
}
BsonWriter& BsonWriter::Int64(std::string_view key, std::int64_t v) {
  std::string b;
  PutInt64(&b, v);
  return Element(kBsonInt64, key, b);
}
BsonWriter& BsonWriter::Double(std::string_view key, double v) {
  std::int64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  std::string b;
  PutInt64(&b, bits);
  return Element(kBsonDouble, key, b);
}
BsonWriter& BsonWriter::String(std::string_view key, std::string_view v) {
  std::string b;
  PutInt32(&b, static_cast<std::int32_t>(v.size() + 1));
  b.append(v);
  b.push_back('\0');
  return Element(kBsonString, key, b);
}
BsonWriter& BsonWriter::Bool(std::string_view key, bool v) {
  return Element(kBsonBool, key, std::string(1, v ? '\1' : '\0'));
}
BsonWriter& BsonWriter::Null(std::string_view key) {
  return Element(kBsonNull, key, "");
}
BsonWriter& BsonWriter::DateTime(std::string_view key, std::int64_t millis) {
  std::string b;
  PutInt64(&b, millis);
  return Element(kBsonDateTime, key, b);
}
BsonWriter& BsonWriter::Document(std::string_view key, std::string_view document) {
  return Element(kBsonDocument, key, document);
}
BsonWriter& BsonWriter::Array(std::string_view key, std::string_view document) {
  return Element(kBsonArray, key, document);
}
std::string BsonWriter::Finish() const {
  std::string out;
  PutInt32(&out, static_cast<std::int32_t>(4 + elements_.size() + 1));
  out.append(elements_);
  out.push_back('\0');
  return out;
}

std::optional<std::vector<BsonElement>> ReadElements(std::string_view d) {
  if (d.size() < 5 || GetInt32(d, 0) != static_cast<std::int32_t>(d.size()) || d.back() != '\0')
    return std::nullopt;
  std::vector<BsonElement> out;
  std::size_t at = 4;
  const std::size_t end = d.size() - 1;
  while (at < end) {
    BsonElement e;
    e.type = static_cast<std::uint8_t>(d[at++]);
    std::size_t key_end = d.find('\0', at);
    if (key_end == std::string_view::npos || key_end >= end) return std::nullopt;
    e.key = std::string(d.substr(at, key_end - at));
    at = key_end + 1;
    std::optional<std::size_t> size = ValueSize(e.type, d.substr(0, end), at);
    if (!size) return std::nullopt;
    e.value = std::string(d.substr(at, *size));
    at += *size;
    out.push_back(std::move(e));
  }
  if (at != end) return std::nullopt;
  return out;
}

std::string WriteElements(const std::vector<BsonElement>& elements) {
  BsonWriter w;
  for (const auto& e : elements) w.Element(e.type, e.key, e.value);
  return w.Finish();
}

std::optional<BsonElement> FindElement(std::string_view document, std::string_view key) {
  auto elements = ReadElements(document);
  if (!elements) return std::nullopt;
  for (auto& e : *elements)
    if (e.key == key) return std::move(e);
  return std::nullopt;
}

std::optional<std::string> StringField(std::string_view document, std::string_view key) {
  auto e = FindElement(document, key);
  if (!e || e->type != kBsonString || e->value.size() < 5) return std::nullopt;
  return e->value.substr(4, e->value.size() - 5);
}

std::string NestedDocument(int depth) {
  // Written in one pass: {a: X} is X's length plus 8 (length, type, "a\0", terminator), so
  // the level with j levels inside it is 5 + 8j bytes long.
  std::string doc;
  doc.reserve(static_cast<std::size_t>(depth) * 8 + 5);
  for (int j = depth; j >= 1; --j) {
    PutInt32(&doc, 5 + 8 * j);
    doc.append(
        "\x03"
        "a",
        2);
    doc.push_back('\0');
  }
  PutInt32(&doc, 5);
  doc.push_back('\0');
  doc.append(static_cast<std::size_t>(depth), '\0');
  return doc;
}

bool EditCursorBatch(std::string* reply_body, const std::function<bool(std::string* doc)>& edit) {
  auto top = ReadElements(*reply_body);
  if (!top) return false;
  bool changed = false;
  for (auto& cursor : *top) {
    if (cursor.key != "cursor" || cursor.type != kBsonDocument) continue;
    auto fields = ReadElements(cursor.value);
    if (!fields) return false;
    for (auto& batch : *fields) {
      if ((batch.key != "firstBatch" && batch.key != "nextBatch") || batch.type != kBsonArray)
        continue;
      auto docs = ReadElements(batch.value);
      if (!docs) return false;
      bool batch_changed = false;
      for (auto& d : *docs)
        if (d.type == kBsonDocument && edit(&d.value)) batch_changed = true;
      if (batch_changed) {
        batch.value = WriteElements(*docs);
        changed = true;
      }
    }
    if (changed) cursor.value = WriteElements(*fields);
  }
  if (changed) *reply_body = WriteElements(*top);
  return changed;
}

bool HasId(std::string_view document, std::int64_t id) {
  auto e = FindElement(document, "_id");
  if (!e) return false;
  if (e->type == kBsonInt32 && e->value.size() == 4) return GetInt32(e->value, 0) == id;
  if (e->type == kBsonInt64 && e->value.size() == 8) return GetInt64(e->value, 0) == id;
  return false;
}

bool HasId(std::string_view document, std::string_view id) {
  auto s = StringField(document, "_id");
  return s && *s == id;
}

std::optional<std::int64_t> IntegerField(std::string_view document, std::string_view key) {
  auto e = FindElement(document, key);
  if (!e) return std::nullopt;
  if (e->type == kBsonInt32 && e->value.size() == 4) return GetInt32(e->value, 0);
  if (e->type == kBsonInt64 && e->value.size() == 8) return GetInt64(e->value, 0);
  if (e->type == kBsonDouble && e->value.size() == 8) {
    std::int64_t bits = GetInt64(e->value, 0);
    double d = 0;
    std::memcpy(&d, &bits, sizeof d);
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace txn_recovery::testing
