// Conversions between the document model and BSON, and of the Filter/Update algebra to
// MongoDB query and update documents.
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>

#include "stores/mongo_handles.h"

namespace txn_recovery::mongo {
namespace {

int KeyLength(std::string_view key) {
  return static_cast<int>(key.size());
}

const char* BsonTypeName(bson_type_t t) {
  switch (t) {
    case BSON_TYPE_DECIMAL128:
      return "decimal128";
    case BSON_TYPE_BINARY:
      return "binData";
    case BSON_TYPE_REGEX:
      return "regex";
    case BSON_TYPE_TIMESTAMP:
      return "timestamp";
    case BSON_TYPE_CODE:
      return "javascript";
    case BSON_TYPE_CODEWSCOPE:
      return "javascriptWithScope";
    case BSON_TYPE_SYMBOL:
      return "symbol";
    case BSON_TYPE_UNDEFINED:
      return "undefined";
    case BSON_TYPE_DBPOINTER:
      return "dbPointer";
    case BSON_TYPE_MINKEY:
      return "minKey";
    case BSON_TYPE_MAXKEY:
      return "maxKey";
    default:
      return "unknown";
  }
}

}  // namespace

Status AppendValue(bson_t* out, std::string_view key, const Value& value) {
  const char* k = key.data();
  const int kl = KeyLength(key);
  bool ok = true;
  const auto& v = value.storage();
  if (std::holds_alternative<Null>(v)) {
    ok = bson_append_null(out, k, kl);
  } else if (auto* b = std::get_if<bool>(&v)) {
    ok = bson_append_bool(out, k, kl, *b);
  } else if (auto* i = std::get_if<std::int32_t>(&v)) {
    ok = bson_append_int32(out, k, kl, *i);
  } else if (auto* l = std::get_if<std::int64_t>(&v)) {
    ok = bson_append_int64(out, k, kl, *l);
  } else if (auto* d = std::get_if<double>(&v)) {
    ok = bson_append_double(out, k, kl, *d);
  } else if (auto* s = std::get_if<std::string>(&v)) {
    ok = bson_append_utf8(out, k, kl, s->data(), static_cast<int>(s->size()));
  } else if (auto* o = std::get_if<ObjectId>(&v)) {
    bson_oid_t oid;
    bson_oid_init_from_data(&oid, o->bytes.data());
    ok = bson_append_oid(out, k, kl, &oid);
  } else if (auto* t = std::get_if<DateTime>(&v)) {
    ok = bson_append_date_time(out, k, kl, t->millis);
  } else if (auto* a = std::get_if<Array>(&v)) {
    bson_t child;
    ok = bson_append_array_begin(out, k, kl, &child);
    for (std::size_t idx = 0; ok && idx < a->size(); ++idx) {
      const char* idx_key;
      char buf[16];
      std::size_t len =
          bson_uint32_to_string(static_cast<std::uint32_t>(idx), &idx_key, buf, sizeof buf);
      if (Status s = AppendValue(&child, std::string_view(idx_key, len), (*a)[idx]); !s.ok())
        return s;
    }
    ok = ok && bson_append_array_end(out, &child);
  } else if (auto* doc = std::get_if<Document>(&v)) {
    bson_t child;
    ok = bson_append_document_begin(out, k, kl, &child);
    for (const auto& [ck, cv] : *doc)
      if (Status s = AppendValue(&child, ck, cv); !s.ok()) return s;
    ok = ok && bson_append_document_end(out, &child);
  } else if (auto* other = std::get_if<OtherValue>(&v); other && !other->raw.empty()) {
    bson_t one;
    bson_iter_t it;
    ok = bson_init_static(&one, reinterpret_cast<const std::uint8_t*>(other->raw.data()),
                          other->raw.size()) &&
         bson_iter_init(&it, &one) && bson_iter_next(&it) && bson_append_iter(out, k, kl, &it);
  } else {
    return Status::InvalidArgument("cannot write a value of type " +
                                   std::string(value.type_name()) + " at " + std::string(key));
  }
  if (!ok) return Status::InvalidArgument("document too large at " + std::string(key));
  return Status::Ok();
}

Status ToBson(const Document& doc, bson_t* out) {
  for (const auto& [k, v] : doc)
    if (Status s = AppendValue(out, k, v); !s.ok()) return s;
  return Status::Ok();
}

namespace {

// Type names of the values the reader refuses to interpret. A profile that reads such a
// field reports "<field> has type <name>", and the transaction is quarantined.
constexpr const char* kTooDeep = "nested deeper than 100 levels";
constexpr const char* kDuplicated = "duplicated key";

// mongod refuses to store a document nested deeper than 100 levels, so deeper nesting can
// only come from a forged or broken reply; the bound also keeps the recursion below (and
// the recursive destructor, comparison and rendering of Value) to 100 frames, whatever the
// reply holds.
constexpr int kMaxDepth = 100;

Value ValueAt(bson_iter_t* it, int depth);

// The fields of the sub-document `it` points into. A key that appears more than once
// becomes one field holding OtherValue "duplicated key": which copy the server (or an
// application reading it) would use is not ours to guess.
Document DocumentAt(bson_iter_t* child, int depth) {
  Document::Fields fields;
  std::unordered_map<std::string_view, std::size_t> index;  // into fields; keys point there
  while (bson_iter_next(child)) {
    std::uint32_t len = bson_iter_key_len(child);
    std::string_view key(bson_iter_key(child), len);
    auto [at, inserted] = index.try_emplace(key, fields.size());
    if (!inserted) {
      fields[at->second].second = Value(OtherValue{kDuplicated, {}});
      continue;
    }
    fields.emplace_back(std::string(key), ValueAt(child, depth));
  }
  return Document::FromDistinctFields(std::move(fields));
}

// `depth` is the nesting level of the value: 1 for a field of the top-level document.
Value ValueAt(bson_iter_t* it, int depth) {
  switch (bson_iter_type(it)) {
    case BSON_TYPE_NULL:
      return Value(Null{});
    case BSON_TYPE_BOOL:
      return Value(bson_iter_bool(it));
    case BSON_TYPE_INT32:
      return Value(bson_iter_int32(it));
    case BSON_TYPE_INT64:
      return Value(bson_iter_int64(it));
    case BSON_TYPE_DOUBLE:
      return Value(bson_iter_double(it));
    case BSON_TYPE_UTF8: {
      std::uint32_t len = 0;
      const char* s = bson_iter_utf8(it, &len);
      return Value(std::string(s, len));
    }
    case BSON_TYPE_OID: {
      ObjectId o;
      std::memcpy(o.bytes.data(), bson_iter_oid(it)->bytes, 12);
      return Value(o);
    }
    case BSON_TYPE_DATE_TIME:
      return Value(DateTime{bson_iter_date_time(it)});
    case BSON_TYPE_ARRAY: {
      if (depth > kMaxDepth) return Value(OtherValue{kTooDeep, {}});
      Array a;
      bson_iter_t child;
      if (bson_iter_recurse(it, &child))
        while (bson_iter_next(&child)) a.push_back(ValueAt(&child, depth + 1));
      return Value(std::move(a));
    }
    case BSON_TYPE_DOCUMENT: {
      if (depth > kMaxDepth) return Value(OtherValue{kTooDeep, {}});
      bson_iter_t child;
      if (!bson_iter_recurse(it, &child)) return Value(Document{});
      return Value(DocumentAt(&child, depth + 1));
    }
    default: {
      // Kept byte for byte, so that it can be written back as it was (OtherValue::raw).
      OtherValue other{BsonTypeName(bson_iter_type(it)), {}};
      bson_t one;
      bson_init(&one);
      if (bson_append_iter(&one, "", 0, it))
        other.raw.assign(reinterpret_cast<const char*>(bson_get_data(&one)), one.len);
      bson_destroy(&one);
      return Value(std::move(other));
    }
  }
}

}  // namespace

Value ValueFromIter(bson_iter_t* it) {
  return ValueAt(it, 1);
}

Document FromBson(const bson_t* bson) {
  bson_iter_t it;
  if (!bson_iter_init(&it, bson)) return Document{};
  return DocumentAt(&it, 1);
}

namespace {

// {path: {$exists: true, $not: {$type: type}}}
void AppendPresentNotOfType(bson_t* out, const char* path, const char* type) {
  bson_t cond;
  bson_t not_doc;
  bson_append_document_begin(out, path, -1, &cond);
  bson_append_bool(&cond, "$exists", -1, true);
  bson_append_document_begin(&cond, "$not", -1, &not_doc);
  bson_append_utf8(&not_doc, "$type", -1, type, -1);
  bson_append_document_end(&cond, &not_doc);
  bson_append_document_end(out, &cond);
}

// The comparisons with the server's clock (kServerNowBefore, kBeforeServerNow): with
// `daemon_clock`, on that estimate instead.
Status AppendServerClockPredicate(bson_t* out, const Predicate& p, const DateTime* daemon_clock) {
  bson_t cond;
  if (daemon_clock != nullptr && p.op == Predicate::Op::kServerNowBefore) {
    const DateTime* deadline = p.value.as_datetime();
    if (deadline != nullptr && daemon_clock->millis < deadline->millis) return Status::Ok();
    // Past the deadline: a condition no document meets (every document has an _id).
    bson_append_document_begin(out, "_id", -1, &cond);
    bson_append_bool(&cond, "$exists", -1, false);
    bson_append_document_end(out, &cond);
    return Status::Ok();
  }
  if (daemon_clock != nullptr) {
    bson_t not_doc;
    bson_append_document_begin(out, p.path.c_str(), -1, &cond);
    bson_append_document_begin(&cond, "$not", -1, &not_doc);
    bson_append_date_time(&not_doc, "$gte", -1, daemon_clock->millis);
    bson_append_document_end(&cond, &not_doc);
    bson_append_document_end(out, &cond);
    return Status::Ok();
  }
  // {$expr: {$lt: [a, b]}}: evaluated by the server as it applies the write, on its
  // own clock ($$NOW), so the comparison and the write are one atomic step.
  bson_t args;
  bson_append_document_begin(out, "$expr", -1, &cond);
  bson_append_array_begin(&cond, "$lt", -1, &args);
  if (p.op == Predicate::Op::kServerNowBefore) {
    bson_append_utf8(&args, "0", -1, "$$NOW", -1);
    if (Status s = AppendValue(&args, "1", p.value); !s.ok()) return s;
  } else {
    const std::string field = "$" + p.path;
    bson_append_utf8(&args, "0", -1, field.c_str(), -1);
    bson_append_utf8(&args, "1", -1, "$$NOW", -1);
  }
  bson_append_array_end(&cond, &args);
  bson_append_document_end(out, &cond);
  return Status::Ok();
}

// The operator of a comparison with one value.
const char* OperatorOf(Predicate::Op op) {
  return op == Predicate::Op::kNe       ? "$ne"
         : op == Predicate::Op::kLt     ? "$lt"
         : op == Predicate::Op::kGt     ? "$gt"
         : op == Predicate::Op::kGte    ? "$gte"
         : op == Predicate::Op::kOfType ? "$type"
                                        : "$lte";
}

// {key: {op: value}}
Status AppendOperator(bson_t* out, const char* key, const char* op, const Value& value) {
  bson_t cond;
  bson_append_document_begin(out, key, -1, &cond);
  if (Status s = AppendValue(&cond, op, value); !s.ok()) return s;
  bson_append_document_end(out, &cond);
  return Status::Ok();
}

// {path: {$op: value}} (or {path: value} for equality, which also means "contains" on
// arrays, as the algebra requires).
Status AppendPredicate(bson_t* out, const Predicate& p, const DateTime* daemon_clock) {
  bson_t cond;
  const char* k = p.path.c_str();
  switch (p.op) {
    case Predicate::Op::kEq:
      return AppendValue(out, p.path, p.value);
    case Predicate::Op::kNe:
    case Predicate::Op::kLt:
    case Predicate::Op::kGt:
    case Predicate::Op::kGte:
    case Predicate::Op::kLte:
    case Predicate::Op::kOfType:
      return AppendOperator(out, k, OperatorOf(p.op), p.value);
    case Predicate::Op::kIn:
    case Predicate::Op::kNin:
      return AppendOperator(out, k, p.op == Predicate::Op::kIn ? "$in" : "$nin",
                            Value(Array(p.values)));
    case Predicate::Op::kExists:
    case Predicate::Op::kNotExists:
      bson_append_document_begin(out, k, -1, &cond);
      bson_append_bool(&cond, "$exists", -1, p.op == Predicate::Op::kExists);
      bson_append_document_end(out, &cond);
      return Status::Ok();
    case Predicate::Op::kNonEmptyArray: {
      // {"path.0": {$exists: true}}: an array with a first element (the index form also
      // lets the server use an index on the array).
      std::string first = p.path + ".0";
      bson_append_document_begin(out, first.c_str(), -1, &cond);
      bson_append_bool(&cond, "$exists", -1, true);
      bson_append_document_end(out, &cond);
      return Status::Ok();
    }
    case Predicate::Op::kPresentNotArray:
      AppendPresentNotOfType(out, k, "array");
      return Status::Ok();
    case Predicate::Op::kServerNowBefore:
    case Predicate::Op::kBeforeServerNow:
      return AppendServerClockPredicate(out, p, daemon_clock);
    case Predicate::Op::kNotDateTime:
    case Predicate::Op::kNotObjectId:
      AppendPresentNotOfType(out, k, p.op == Predicate::Op::kNotDateTime ? "date" : "objectId");
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown predicate");
}

}  // namespace

// {pred, ..., $or: [...]} when every predicate has its own path: servers find the
// document by index only when `_id` is a top-level key (mongo-java-server scans the
// collection for `{$and: [{_id: 1}]}`, making every update by _id cost a scan). Two
// predicates on the same path (e.g. a time range) would collide as duplicate keys of one
// document: then {$and: [{pred}, ..., {$or: [...]}]}, which means the same.
// The top-level key a predicate is written under.
static std::string_view KeyOf(const Predicate& p, const DateTime* daemon_clock) {
  if (daemon_clock != nullptr && p.op == Predicate::Op::kServerNowBefore) return "_id";
  if (daemon_clock == nullptr &&
      (p.op == Predicate::Op::kServerNowBefore || p.op == Predicate::Op::kBeforeServerNow))
    return "$expr";
  if (p.op == Predicate::Op::kNonEmptyArray) return {};  // "path.0": never collides
  return p.path;
}

// Whether no two predicates of `filter` are written under the same top-level key.
static bool KeysDistinct(const Filter& filter, const DateTime* daemon_clock) {
  for (std::size_t i = 0; i < filter.all().size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (!KeyOf(filter.all()[i], daemon_clock).empty() &&
          KeyOf(filter.all()[i], daemon_clock) == KeyOf(filter.all()[j], daemon_clock))
        return false;
  return true;
}

// {$or: [alternative, ...]}
static Status AppendAnyOf(bson_t* out, const std::vector<Filter>& any_of,
                          const DateTime* daemon_clock) {
  bson_t or_array;
  bson_append_array_begin(out, "$or", -1, &or_array);
  std::uint32_t j = 0;
  for (const auto& alt : any_of) {
    const char* key;
    char kb[16];
    bson_uint32_to_string(j++, &key, kb, sizeof kb);
    bson_t alt_doc;
    bson_append_document_begin(&or_array, key, -1, &alt_doc);
    if (Status s = FilterToBson(alt, &alt_doc, daemon_clock); !s.ok()) return s;
    bson_append_document_end(&or_array, &alt_doc);
  }
  bson_append_array_end(out, &or_array);
  return Status::Ok();
}

Status FilterToBson(const Filter& filter, bson_t* out, const DateTime* daemon_clock) {
  if (filter.all().empty() && filter.any_of().empty()) return Status::Ok();
  if (KeysDistinct(filter, daemon_clock)) {
    for (const auto& p : filter.all())
      if (Status s = AppendPredicate(out, p, daemon_clock); !s.ok()) return s;
    if (!filter.any_of().empty()) return AppendAnyOf(out, filter.any_of(), daemon_clock);
    return Status::Ok();
  }
  bson_t and_array;
  bson_append_array_begin(out, "$and", -1, &and_array);
  std::uint32_t idx = 0;
  auto next_key = [&](char* buf, std::size_t size) {
    const char* key;
    bson_uint32_to_string(idx++, &key, buf, size);
    return key;
  };
  char buf[16];
  for (const auto& p : filter.all()) {
    bson_t clause;
    bson_append_document_begin(&and_array, next_key(buf, sizeof buf), -1, &clause);
    if (Status s = AppendPredicate(&clause, p, daemon_clock); !s.ok()) return s;
    bson_append_document_end(&and_array, &clause);
  }
  if (!filter.any_of().empty()) {
    bson_t clause;
    bson_append_document_begin(&and_array, next_key(buf, sizeof buf), -1, &clause);
    if (Status s = AppendAnyOf(&clause, filter.any_of(), daemon_clock); !s.ok()) return s;
    bson_append_document_end(&and_array, &clause);
  }
  bson_append_array_end(out, &and_array);
  return Status::Ok();
}

Status UpdateToBson(const Update& update, bson_t* out) {
  // Group by operator, keeping first-seen order of operators and paths.
  std::vector<std::pair<const char*, std::vector<const UpdateOp*>>> groups;
  auto group_for = [&](const char* op) -> std::vector<const UpdateOp*>& {
    for (auto& g : groups)
      if (std::strcmp(g.first, op) == 0) return g.second;
    groups.emplace_back(op, std::vector<const UpdateOp*>{});
    return groups.back().second;
  };
  for (const auto& op : update.ops()) {
    const char* name = "$set";
    switch (op.kind) {
      case UpdateOp::Kind::kSet:
        name = "$set";
        break;
      case UpdateOp::Kind::kUnset:
        name = "$unset";
        break;
      case UpdateOp::Kind::kInc:
        name = "$inc";
        break;
      case UpdateOp::Kind::kPush:
        name = "$push";
        break;
      case UpdateOp::Kind::kPull:
        name = "$pull";
        break;
      case UpdateOp::Kind::kCurrentDate:
        name = "$currentDate";
        break;
    }
    group_for(name).push_back(&op);
  }
  for (const auto& [name, ops] : groups) {
    bson_t child;
    bson_append_document_begin(out, name, -1, &child);
    for (const UpdateOp* op : ops) {
      if (op->kind == UpdateOp::Kind::kUnset) {
        bson_append_utf8(&child, op->path.c_str(), -1, "", 0);
      } else if (op->kind == UpdateOp::Kind::kCurrentDate) {
        bson_t type_doc;
        bson_append_document_begin(&child, op->path.c_str(), -1, &type_doc);
        bson_append_utf8(&type_doc, "$type", -1, "date", -1);
        bson_append_document_end(&child, &type_doc);
      } else if (Status s = AppendValue(&child, op->path, op->value); !s.ok()) {
        return s;
      }
    }
    bson_append_document_end(out, &child);
  }
  return Status::Ok();
}

namespace {

// The limit a find is sent with. A read without one is sent with a limit no read reaches:
// DocumentDB answers a find without a limit or a sort from a cursor it resumes by heap
// position, and each getMore runs the query again and skips to that position, so a read of
// N documents in batches of B reads its index range N/B times (N²/B: a sweep of
// 300,000 stuck transactions spent 129.7 s of the server's time in getMore, 42.7 ms each). A
// find with a limit it holds as a PostgreSQL cursor instead, run once, each getMore
// reading on from where the last stopped. Other servers run a limit as a count.
// docs/compatibility.md, "a cursor's next batch".
std::int64_t LimitSent(const FindOptions& options) {
  return options.limit > 0 ? options.limit : std::numeric_limits<std::int32_t>::max();
}

// {hint: {<key>: <dir>, ...}} when the read names an index.
void AppendHint(bson_t* out, const std::vector<std::pair<std::string, int>>& hint) {
  if (hint.empty()) return;
  bson_t keys;
  bson_append_document_begin(out, "hint", -1, &keys);
  for (const auto& [path, dir] : hint) bson_append_int32(&keys, path.c_str(), -1, dir);
  bson_append_document_end(out, &keys);
}

}  // namespace

void AppendFindOptions(const FindOptions& options, bson_t* out) {
  if (options.sort_ascending_by) {
    bson_t sort;
    bson_append_document_begin(out, "sort", -1, &sort);
    bson_append_int32(&sort, options.sort_ascending_by->c_str(), -1, 1);
    bson_append_document_end(out, &sort);
  }
  bson_append_int64(out, "limit", -1, LimitSent(options));
  if (options.batch_size > 0) bson_append_int32(out, "batchSize", -1, options.batch_size);
  if (!options.projection.empty()) {
    bson_t projection;
    bson_append_document_begin(out, "projection", -1, &projection);
    for (const std::string& path : options.projection)
      bson_append_int32(&projection, path.c_str(), -1, 1);
    bson_append_document_end(out, &projection);
  }
  AppendHint(out, options.hint);
}

}  // namespace txn_recovery::mongo
