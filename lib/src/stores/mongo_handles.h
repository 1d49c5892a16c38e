// The only header that includes libmongoc. Owns every C handle with a move-only
// unique_ptr and a noexcept deleter, converts between our document model and bson_t, and
// turns bson_error_t into Status in exactly one place.
#pragma once

#include <mongoc/mongoc.h>

#include <memory>
#include <optional>
#include <string_view>

#include "txn_recovery/base/document.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::mongo {

template <typename T, void (*Destroy)(T*)>
struct Deleter {
  void operator()(T* p) const noexcept {
    if (p != nullptr) Destroy(p);
  }
};

using UriPtr = std::unique_ptr<mongoc_uri_t, Deleter<mongoc_uri_t, mongoc_uri_destroy>>;
using PoolPtr = std::unique_ptr<mongoc_client_pool_t,
                                Deleter<mongoc_client_pool_t, mongoc_client_pool_destroy>>;
using CollectionPtr =
    std::unique_ptr<mongoc_collection_t, Deleter<mongoc_collection_t, mongoc_collection_destroy>>;
using DatabasePtr =
    std::unique_ptr<mongoc_database_t, Deleter<mongoc_database_t, mongoc_database_destroy>>;
using CursorPtr = std::unique_ptr<mongoc_cursor_t, Deleter<mongoc_cursor_t, mongoc_cursor_destroy>>;
using BulkPtr = std::unique_ptr<mongoc_bulk_operation_t,
                                Deleter<mongoc_bulk_operation_t, mongoc_bulk_operation_destroy>>;
using WriteConcernPtr =
    std::unique_ptr<mongoc_write_concern_t,
                    Deleter<mongoc_write_concern_t, mongoc_write_concern_destroy>>;
using ReadConcernPtr = std::unique_ptr<mongoc_read_concern_t,
                                       Deleter<mongoc_read_concern_t, mongoc_read_concern_destroy>>;
using FindAndModifyOptsPtr =
    std::unique_ptr<mongoc_find_and_modify_opts_t,
                    Deleter<mongoc_find_and_modify_opts_t, mongoc_find_and_modify_opts_destroy>>;

// A bson_t on the heap, destroyed with bson_destroy. Hand-written rather than a
// unique_ptr<bson_t>: bson_t carries an alignment attribute that template arguments drop.
class BsonPtr {
 public:
  BsonPtr() noexcept = default;
  explicit BsonPtr(bson_t* b) noexcept : b_(b) {}
  ~BsonPtr() {
    if (b_ != nullptr) bson_destroy(b_);
  }
  BsonPtr(BsonPtr&& o) noexcept : b_(o.b_) { o.b_ = nullptr; }
  BsonPtr& operator=(BsonPtr&& o) noexcept {
    if (this != &o) {
      if (b_ != nullptr) bson_destroy(b_);
      b_ = o.b_;
      o.b_ = nullptr;
    }
    return *this;
  }
  BsonPtr(const BsonPtr&) = delete;
  BsonPtr& operator=(const BsonPtr&) = delete;
  bson_t* get() const noexcept { return b_; }

 private:
  bson_t* b_ = nullptr;
};
inline BsonPtr NewBson() {
  return BsonPtr(bson_new());
}

// A bson_t reply that the driver initializes (even on error) and we must destroy.
class Reply {
 public:
  Reply() noexcept { bson_init(&b_); }
  ~Reply() { bson_destroy(&b_); }
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
  bson_t* get() noexcept { return &b_; }

 private:
  bson_t b_;
};

// A client checked out of a pool for the lifetime of this object. Move-only.
class PooledClient {
 public:
  PooledClient() noexcept = default;
  PooledClient(mongoc_client_pool_t* pool) noexcept
      : pool_(pool), client_(mongoc_client_pool_pop(pool)) {}
  ~PooledClient() { Release(); }
  PooledClient(PooledClient&& o) noexcept : pool_(o.pool_), client_(o.client_) {
    o.pool_ = nullptr;
    o.client_ = nullptr;
  }
  PooledClient& operator=(PooledClient&& o) noexcept {
    if (this != &o) {
      Release();
      pool_ = o.pool_;
      client_ = o.client_;
      o.pool_ = nullptr;
      o.client_ = nullptr;
    }
    return *this;
  }
  PooledClient(const PooledClient&) = delete;
  PooledClient& operator=(const PooledClient&) = delete;
  mongoc_client_t* get() const noexcept { return client_; }

 private:
  void Release() noexcept {
    if (pool_ != nullptr && client_ != nullptr) mongoc_client_pool_push(pool_, client_);
    pool_ = nullptr;
    client_ = nullptr;
  }
  mongoc_client_pool_t* pool_ = nullptr;
  mongoc_client_t* client_ = nullptr;
};

// How the driver's log messages from the current thread are treated (uri_redaction.cc).
enum class DriverLogMode {
  kNormal,      // passed on (through RedactSecrets)
  kMaskQuoted,  // a URI is being parsed: its quoted values may be secrets (MaskQuotedValues)
  kDrop,        // a URI is being parsed only to be displayed; its warnings were logged already
};
DriverLogMode CurrentDriverLogMode();
// RAII scopes setting the mode for the current thread.
class ParsingUriScope {
 public:
  ParsingUriScope();
  ~ParsingUriScope();
  ParsingUriScope(const ParsingUriScope&) = delete;
  ParsingUriScope& operator=(const ParsingUriScope&) = delete;
};
class QuietDriverLog {
 public:
  QuietDriverLog();
  ~QuietDriverLog();
  QuietDriverLog(const QuietDriverLog&) = delete;
  QuietDriverLog& operator=(const QuietDriverLog&) = delete;
};
// Adds the credentials `uri` carries to the ones RedactSecrets hides.
void RememberSecretsOf(const mongoc_uri_t* uri);

// The one translation from the driver's errors to ours. `what` names the operation.
// Unreachable servers, network failures and "not primary" style answers are Unavailable
// (retrying later may succeed); a refused login is Unauthenticated (says "authentication
// failed"); every other error is ServerError. The message goes through RedactSecrets.
Status StatusFromBsonError(const bson_error_t& error, std::string_view what);

// Document model <-> BSON.
Status AppendValue(bson_t* out, std::string_view key, const Value& value);
Status ToBson(const Document& doc, bson_t* out);
// The reader is bounded: a document or array nested deeper than 100 levels (mongod's own
// limit for stored documents) becomes OtherValue "nested deeper than 100 levels", and a key
// that appears twice in one (sub-)document becomes one field holding OtherValue
// "duplicated key", so that a profile reading such a field reports it as the wrong type.
Value ValueFromIter(bson_iter_t* iter);
Document FromBson(const bson_t* bson);

// Filter and Update algebra -> query / update documents. With `daemon_clock` (a server
// that refuses `$$NOW` in filters), each comparison with the server's clock is made against
// that estimate instead: "server now < deadline" is decided here (dropped when true, a
// condition no document meets when false), and "path before server now" becomes
// {path: {$not: {$gte: estimate}}} (absent and non-date values count as before, as they do
// for $lt against $$NOW).
Status FilterToBson(const Filter& filter, bson_t* out, const DateTime* daemon_clock = nullptr);
Status UpdateToBson(const Update& update, bson_t* out);

// A find's options as MongoStore::Find sends them: the sort, the limit (one no read reaches
// when the read sets none), the batch size when set, the projection, the hint.
void AppendFindOptions(const FindOptions& options, bson_t* out);

}  // namespace txn_recovery::mongo
