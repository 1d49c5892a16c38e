// Raw BSON for the wire toolkit and the tests that forge replies: builds and takes apart
// documents without the driver (the test support links no libmongoc; duplicated keys and
// absurd nesting are exactly what a driver's builder would refuse to produce). Plain
// functions on bytes: no state, safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace txn_recovery::testing {

enum BsonType : std::uint8_t {
  kBsonDouble = 0x01,
  kBsonString = 0x02,
  kBsonDocument = 0x03,
  kBsonArray = 0x04,
  kBsonBool = 0x08,
  kBsonDateTime = 0x09,
  kBsonNull = 0x0A,
  kBsonInt32 = 0x10,
  kBsonInt64 = 0x12,
};

// Builds one document, field by field, in order; nothing stops a key from repeating.
class BsonWriter {
 public:
  BsonWriter& Int32(std::string_view key, std::int32_t v);
  BsonWriter& Int64(std::string_view key, std::int64_t v);
  BsonWriter& Double(std::string_view key, double v);
  BsonWriter& String(std::string_view key, std::string_view v);
  BsonWriter& Bool(std::string_view key, bool v);
  BsonWriter& Null(std::string_view key);
  BsonWriter& DateTime(std::string_view key, std::int64_t millis);
  BsonWriter& Document(std::string_view key, std::string_view document);  // raw document bytes
  BsonWriter& Array(std::string_view key, std::string_view document);     // keys "0", "1", ...
  // Any element: its type byte and the raw bytes of its value.
  BsonWriter& Element(std::uint8_t type, std::string_view key, std::string_view value);
  std::string Finish() const;  // the document: length, elements, terminating zero

 private:
  std::string elements_;
};

struct BsonElement {
  std::uint8_t type = 0;
  std::string key;
  std::string value;  // the raw bytes of the value (for documents and arrays, the document)
};

// The elements of `document` in order; nullopt if it is not well-formed BSON.
std::optional<std::vector<BsonElement>> ReadElements(std::string_view document);
// The document made of `elements` (the inverse of ReadElements).
std::string WriteElements(const std::vector<BsonElement>& elements);
// The value of the first element named `key`, if any.
std::optional<BsonElement> FindElement(std::string_view document, std::string_view key);
// The string held by `key`, or nullopt.
std::optional<std::string> StringField(std::string_view document, std::string_view key);
// A document nested `depth` levels deep ({a: {a: ... {}}}), as raw bytes.
std::string NestedDocument(int depth);
// Calls `edit` on every document of a cursor reply's batch (cursor.firstBatch of find and
// aggregate, cursor.nextBatch of getMore); `edit` returns whether it changed the document.
// Returns whether any was changed (and `reply_body` rewritten).
bool EditCursorBatch(std::string* reply_body, const std::function<bool(std::string* doc)>& edit);
// Whether `document`'s _id is the integer `id` (int32 or int64) or the string `id`.
bool HasId(std::string_view document, std::int64_t id);
bool HasId(std::string_view document, std::string_view id);
// The integer held by `key` (int32, int64, or a double cut to an integer, as the server
// may send counts in any of them); nullopt when absent or of another type.
std::optional<std::int64_t> IntegerField(std::string_view document, std::string_view key);

}  // namespace txn_recovery::testing
