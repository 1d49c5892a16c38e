// The vocabulary of a database request: which collection (Namespace), which documents
// (Filter, a conjunction of Predicates with at most one disjunction) and what change (Update,
// a list of UpdateOps: $set, $unset, $inc, $push, $pull, $currentDate), with MongoDB's
// semantics. A deliberately small algebra: every Store (store.h) implements exactly this,
// so nothing richer is available to the engine, which keeps the in-memory store honest.
//
// It is in the base layer, not with the Store interface, because the layers below the
// engine speak it too: a profile (shapes) names its participants' documents and changes in
// it, and the exact-increment guard (base) is a Filter.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "txn_recovery/base/document.h"
#include "txn_recovery/base/status.h"

namespace txn_recovery {

struct Namespace {
  std::string database;
  std::string collection;
  std::string ToString() const { return database + "." + collection; }
  friend bool operator==(const Namespace&, const Namespace&) = default;
};

struct Predicate {
  enum class Op {
    kEq,               // path == value (on an array path: the array contains value)
    kNe,               // negation of kEq (on an array path: the array does not contain value)
    kIn,               // path equals one of values
    kNin,              // path equals none of values (also true when the path is absent)
    kLt,               // path < value (same type family only: numbers, dates, strings)
    kGt,               // path > value (same type family only)
    kGte,              // path >= value (same type family only)
    kLte,              // path <= value (same type family only)
    kExists,           // path is present
    kNotExists,        // path is absent
    kNotDateTime,      // path is present and is not a date
    kNotObjectId,      // path is present and is not an ObjectId
    kNonEmptyArray,    // path is an array with at least one element
    kPresentNotArray,  // path is present and is not an array
    kOfType,           // path holds a value of the BSON type named by value, a string of
                       // MongoDB's $type aliases ("number": any number); on an array path,
                       // an element of that type
    // Compared with the server's clock at the moment the server applies the write
    // (MongoDB: $expr with $$NOW), so that the comparison is atomic with the write:
    kServerNowBefore,  // the server's now < value (a date); path unused
    kBeforeServerNow,  // path < the server's now (a date; an absent path counts as before)
  };
  Op op;
  std::string path;
  Value value;
  std::vector<Value> values;  // for kIn / kNin
};

class Filter {
 public:
  Filter& Eq(std::string path, Value v);
  Filter& Ne(std::string path, Value v);
  Filter& In(std::string path, std::vector<Value> vs);
  Filter& Nin(std::string path, std::vector<Value> vs);
  Filter& Lt(std::string path, Value v);
  Filter& Gt(std::string path, Value v);
  Filter& Gte(std::string path, Value v);
  Filter& Lte(std::string path, Value v);
  Filter& Exists(std::string path);
  Filter& NotExists(std::string path);
  Filter& NotDateTime(std::string path);
  Filter& NotObjectId(std::string path);
  Filter& NonEmptyArray(std::string path);
  Filter& PresentNotArray(std::string path);
  Filter& OfType(std::string path, std::string type_alias);
  // Only while the server's clock reads before `deadline` when it applies the write: a
  // request that reaches the server late (a stalled daemon) matches nothing.
  Filter& ServerNowBefore(DateTime deadline);
  // Only where the date at `path` has passed on the server's clock (or is absent).
  Filter& BeforeServerNow(std::string path);
  // The filter also requires that at least one of `alternatives` matches ($or). At most
  // one disjunction per filter; alternatives may carry their own.
  Filter& AnyOf(std::vector<Filter> alternatives);

  // Adds every condition of `other` (its disjunction too, if this filter has none).
  Filter& And(const Filter& other);

  const std::vector<Predicate>& all() const noexcept { return all_; }
  const std::vector<Filter>& any_of() const noexcept { return any_of_; }

  // True if `doc` satisfies the filter when the server's clock reads `server_now`. Used by
  // the in-memory store and by tests. Without `server_now`, a predicate on the server's
  // clock never matches.
  bool Matches(const Document& doc, std::optional<DateTime> server_now = std::nullopt) const;
  // Whether some predicate compares with the server's clock.
  bool UsesServerClock() const;
  std::string ToString() const;

 private:
  std::vector<Predicate> all_;
  std::vector<Filter> any_of_;
};

struct UpdateOp {
  enum class Kind { kSet, kUnset, kInc, kPush, kPull, kCurrentDate };
  Kind kind;
  std::string path;
  Value value;  // unused for kUnset and kCurrentDate
};

class Update {
 public:
  Update& Set(std::string path, Value v);
  Update& Unset(std::string path);
  Update& Inc(std::string path, Value amount);
  Update& Push(std::string path, Value v);
  Update& Pull(std::string path, Value v);  // removes every element equal to v
  Update& CurrentDate(std::string path);    // the server's current time

  const std::vector<UpdateOp>& ops() const noexcept { return ops_; }
  bool empty() const noexcept { return ops_.empty(); }
  // Applies the update to `doc` with `now` as the current date. Returns an error (and
  // leaves `doc` unspecified) where MongoDB would refuse the update, e.g. $inc on a
  // string or $push onto a non-array.
  Status ApplyTo(Document* doc, DateTime now) const;
  std::string ToString() const;

 private:
  std::vector<UpdateOp> ops_;
};

}  // namespace txn_recovery
