// MongoStore's collections and their indexes: list, create, drop.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "stores/mongo_impl.h"

namespace txn_recovery {
namespace {

using mongo::CollectionPtr;
using mongo::GetCollection;
using mongo::PooledClient;
using mongo::Reply;

// One index as listIndexes describes it, read as IndexSpec. `ordered_option`: what the
// server has said of IndexSpec::ordered so far.
IndexSpec IndexSpecOf(const bson_t* b, MongoStore::Impl::OrderedOption ordered_option) {
  IndexSpec spec;
  bson_iter_t it, key;
  if (bson_iter_init_find(&it, b, "name") && BSON_ITER_HOLDS_UTF8(&it))
    spec.name = bson_iter_utf8(&it, nullptr);
  if (bson_iter_init_find(&it, b, "key") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
      bson_iter_recurse(&it, &key)) {
    while (bson_iter_next(&key)) {
      // Text, hashed and other special indexes have a string here; they serve none of
      // the engine's queries, and 0 never matches a wanted direction.
      int dir = BSON_ITER_HOLDS_NUMBER(&key) ? (bson_iter_as_int64(&key) < 0 ? -1 : 1) : 0;
      spec.keys.emplace_back(bson_iter_key(&key), dir);
    }
  }
  // Created by CreateIndexes with only_where_present: {<first key>: {$exists: true}}.
  bson_iter_t partial, cond;
  if (bson_iter_init_find(&it, b, "partialFilterExpression") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
      bson_iter_recurse(&it, &partial) && !spec.keys.empty() &&
      bson_iter_find(&partial, spec.keys.front().first.c_str()) &&
      BSON_ITER_HOLDS_DOCUMENT(&partial) && bson_iter_recurse(&partial, &cond) &&
      bson_iter_find(&cond, "$exists"))
    spec.only_where_present = bson_iter_as_bool(&cond);
  // Listed by a server that orders compound keys only on request (DocumentDB); any other
  // compound index is ordered, unless this server is known to take the option.
  spec.ordered = ordered_option != MongoStore::Impl::OrderedOption::kTaken;
  if (bson_iter_init_find(&it, b, "enableOrderedIndex")) spec.ordered = bson_iter_as_bool(&it);
  return spec;
}

// The name of the collection listCollections describes in `b`; none for a view (it holds
// no documents of its own: nothing an application writes a transaction to) or a system
// collection.
std::optional<std::string> CollectionNameOf(const bson_t* b) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, b, "type") && BSON_ITER_HOLDS_UTF8(&it) &&
      std::string_view(bson_iter_utf8(&it, nullptr)) != "collection")
    return std::nullopt;
  if (!bson_iter_init_find(&it, b, "name") || !BSON_ITER_HOLDS_UTF8(&it)) return std::nullopt;
  std::string name = bson_iter_utf8(&it, nullptr);
  if (name.rfind("system.", 0) == 0) return std::nullopt;
  return name;
}

}  // namespace

Status MongoStore::ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) {
  indexes->clear();
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  mongo::CursorPtr cursor(mongoc_collection_find_indexes_with_opts(coll.get(), nullptr));
  const bson_t* b = nullptr;
  while (mongoc_cursor_next(cursor.get(), &b))
    indexes->push_back(IndexSpecOf(b, impl_->ordered_option.load()));
  bson_error_t error;
  if (mongoc_cursor_error(cursor.get(), &error)) {
    // NamespaceNotFound: no collection, hence no index (mongod 3.0+; the driver hides it on
    // some versions).
    if (error.code == 26) {
      indexes->clear();
      return Status::Ok();
    }
    return mongo::StatusFromBsonError(error, "listIndexes on " + ns.ToString());
  }
  return Status::Ok();
}

namespace {

// The createIndexes command for `indexes`; `ordered_option`: ask for the ordered compound key
// where a spec needs it.
Status CreateIndexesCommand(const Namespace& ns, const std::vector<IndexSpec>& indexes,
                            bool ordered_option, bool* asked, bson_t* cmd) {
  *asked = false;
  bson_append_utf8(cmd, "createIndexes", -1, ns.collection.c_str(), -1);
  bson_t list;
  bson_append_array_begin(cmd, "indexes", -1, &list);
  for (std::size_t i = 0; i < indexes.size(); ++i) {
    const IndexSpec& spec = indexes[i];
    if (spec.keys.empty()) return Status::InvalidArgument("an index needs at least one key");
    std::string name = spec.name;
    bson_t index, key;
    const std::string pos = std::to_string(i);
    bson_append_document_begin(&list, pos.c_str(), -1, &index);
    bson_append_document_begin(&index, "key", -1, &key);
    for (const auto& [path, dir] : spec.keys) {
      if (dir != 1 && dir != -1) return Status::InvalidArgument("bad index key " + spec.ToString());
      bson_append_int32(&key, path.c_str(), -1, dir);
      if (spec.name.empty()) name += (name.empty() ? "" : "_") + path + "_" + std::to_string(dir);
    }
    bson_append_document_end(&index, &key);
    bson_append_utf8(&index, "name", -1, name.c_str(), -1);
    if (spec.only_where_present) {
      bson_t partial, cond;
      bson_append_document_begin(&index, "partialFilterExpression", -1, &partial);
      bson_append_document_begin(&partial, spec.keys.front().first.c_str(), -1, &cond);
      bson_append_bool(&cond, "$exists", -1, true);
      bson_append_document_end(&partial, &cond);
      bson_append_document_end(&index, &partial);
    }
    if (ordered_option && spec.ordered && spec.keys.size() > 1) {
      bson_append_bool(&index, "enableOrderedIndex", -1, true);
      *asked = true;
    }
    bson_append_document_end(&list, &index);
  }
  bson_append_array_end(cmd, &list);
  return Status::Ok();
}

// A server that does not know an index option: mongod's InvalidIndexSpecificationOption, or
// an error that names it.
bool RefusesOrderedOption(const bson_error_t& error) {
  return error.code == 197 ||
         std::string_view(error.message).find("enableOrderedIndex") != std::string_view::npos;
}

}  // namespace

Status MongoStore::CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) {
  if (indexes.empty()) return Status::Ok();
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  mongo::DatabasePtr db(mongoc_client_get_database(client.get(), ns.database.c_str()));
  for (;;) {
    const bool offer = impl_->ordered_option.load() != Impl::OrderedOption::kRefused;
    auto cmd = mongo::NewBson();
    bool asked = false;
    if (Status s = CreateIndexesCommand(ns, indexes, offer, &asked, cmd.get()); !s.ok()) return s;
    Reply reply;
    bson_error_t error;
    if (mongoc_database_write_command_with_opts(db.get(), cmd.get(), nullptr, reply.get(),
                                                &error)) {
      if (asked) impl_->ordered_option = Impl::OrderedOption::kTaken;
      return Status::Ok();
    }
    if (!asked || !RefusesOrderedOption(error))
      return mongo::StatusFromBsonError(error, "createIndexes on " + ns.ToString());
    impl_->ordered_option = Impl::OrderedOption::kRefused;  // then without it, once
  }
}

Status MongoStore::ListCollections(const std::string& database, std::vector<std::string>* names) {
  names->clear();
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  mongo::DatabasePtr db(mongoc_client_get_database(client.get(), database.c_str()));
  mongo::CursorPtr cursor(mongoc_database_find_collections_with_opts(db.get(), nullptr));
  const bson_t* b = nullptr;
  while (mongoc_cursor_next(cursor.get(), &b))
    if (std::optional<std::string> name = CollectionNameOf(b)) names->push_back(std::move(*name));
  bson_error_t error;
  if (mongoc_cursor_error(cursor.get(), &error))
    return mongo::StatusFromBsonError(error, "listCollections on " + database);
  std::sort(names->begin(), names->end());
  return Status::Ok();
}

Status MongoStore::DropCollection(const Namespace& ns) {
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  bson_error_t error;
  // NamespaceNotFound (26): nothing to drop, as wanted.
  if (!mongoc_collection_drop_with_opts(coll.get(), nullptr, &error) && error.code != 26 &&
      std::string_view(error.message).find("ns not found") == std::string_view::npos)
    return mongo::StatusFromBsonError(error, "drop " + ns.ToString());
  return Status::Ok();
}

}  // namespace txn_recovery
