#include "txn_recovery/stores/memory_store.h"

#include <algorithm>

namespace txn_recovery {
namespace {

// Snapshots the result set at Find time: simpler than MongoDB's cursors and within the
// contract (a document changed while the cursor is open may be seen in either version).
class VectorCursor final : public Cursor {
 public:
  explicit VectorCursor(std::vector<Document> docs) : docs_(std::move(docs)) {}
  Status Next(Document* doc, bool* has_doc) override {
    *has_doc = next_ < docs_.size();
    if (*has_doc) *doc = std::move(docs_[next_++]);
    return Status::Ok();
  }

 private:
  std::vector<Document> docs_;
  std::size_t next_ = 0;
};

}  // namespace

std::vector<Document>& MemoryStore::Collection(const Namespace& ns) {
  return collections_[ns.ToString()];
}

Status MemoryStore::ServerTime(DateTime* now) {
  *now = DateTime{clock_->WallMillis()};
  return Status::Ok();
}

Status MemoryStore::Find(const Namespace& ns, const Filter& filter, const FindOptions& options,
                         std::unique_ptr<Cursor>* cursor) {
  std::vector<Document> out;
  {
    std::lock_guard lock(mu_);
    const DateTime now{clock_->WallMillis()};
    for (const Document& d : Collection(ns))
      if (filter.Matches(d, now)) out.push_back(d);
  }
  if (options.sort_ascending_by) {
    const std::string& path = *options.sort_ascending_by;
    std::stable_sort(out.begin(), out.end(), [&](const Document& a, const Document& b) {
      const Value* x = a.GetPath(path);
      const Value* y = b.GetPath(path);
      if (x == nullptr || y == nullptr) return x == nullptr && y != nullptr;
      if (x->is_datetime() && y->is_datetime())
        return x->as_datetime()->millis < y->as_datetime()->millis;
      auto c = CompareNumbers(*x, *y);
      if (c) return *c < 0;
      return x->ToString() < y->ToString();
    });
  }
  if (options.limit > 0 && out.size() > static_cast<std::size_t>(options.limit))
    out.resize(static_cast<std::size_t>(options.limit));
  if (!options.projection.empty()) {
    for (Document& d : out) {
      Document kept;
      if (const Value* id = d.Get("_id")) kept.Set("_id", *id);
      for (const std::string& path : options.projection)
        if (const Value* v = d.GetPath(path)) kept.SetPath(path, *v);
      d = std::move(kept);
    }
  }
  *cursor = std::make_unique<VectorCursor>(std::move(out));
  return Status::Ok();
}

Status MemoryStore::UpdateOne(const Namespace& ns, const Filter& filter, const Update& update,
                              WriteResult* result) {
  std::lock_guard lock(mu_);
  *result = {};
  DateTime now{clock_->WallMillis()};
  for (Document& d : Collection(ns)) {
    if (!filter.Matches(d, now)) continue;
    Document copy = d;  // all-or-nothing, as a single-document write in MongoDB
    if (Status s = update.ApplyTo(&copy, now); !s.ok()) return s;
    result->matched = 1;
    result->modified = (copy == d) ? 0 : 1;
    d = std::move(copy);
    return Status::Ok();
  }
  return Status::Ok();
}

Status MemoryStore::UpdateMany(const Namespace& ns, const Filter& filter, const Update& update,
                               WriteResult* result) {
  std::lock_guard lock(mu_);
  *result = {};
  DateTime now{clock_->WallMillis()};
  for (Document& d : Collection(ns)) {
    if (!filter.Matches(d, now)) continue;
    Document copy = d;
    if (Status s = update.ApplyTo(&copy, now); !s.ok()) return s;
    ++result->matched;
    if (!(copy == d)) ++result->modified;
    d = std::move(copy);
  }
  return Status::Ok();
}

Status MemoryStore::FindOneAndUpdate(const Namespace& ns, const Filter& filter,
                                     const Update& update, std::optional<Document>* after) {
  std::lock_guard lock(mu_);
  after->reset();
  DateTime now{clock_->WallMillis()};
  for (Document& d : Collection(ns)) {
    if (!filter.Matches(d, now)) continue;
    Document copy = d;
    if (Status s = update.ApplyTo(&copy, now); !s.ok()) return s;
    d = std::move(copy);
    *after = d;
    return Status::Ok();
  }
  return Status::Ok();
}

Status MemoryStore::DeleteMany(const Namespace& ns, const Filter& filter, WriteResult* result) {
  std::lock_guard lock(mu_);
  auto& coll = Collection(ns);
  const DateTime now{clock_->WallMillis()};
  auto removed = std::erase_if(coll, [&](const Document& d) { return filter.Matches(d, now); });
  result->matched = result->modified = static_cast<std::int64_t>(removed);
  return Status::Ok();
}

Status MemoryStore::InsertMany(const Namespace& ns, const std::vector<Document>& docs) {
  std::lock_guard lock(mu_);
  auto& coll = Collection(ns);
  for (const Document& d : docs) {
    const Value* id = d.Get("_id");
    if (id == nullptr) return Status::InvalidArgument("document without _id");
    for (const Document& existing : coll)
      if (*existing.Get("_id") == *id)
        return Status::ServerError("duplicate key _id " + id->ToString());
  }
  coll.insert(coll.end(), docs.begin(), docs.end());
  return Status::Ok();
}

std::vector<Document> MemoryStore::Dump(const Namespace& ns) const {
  std::lock_guard lock(mu_);
  auto it = collections_.find(ns.ToString());
  return it == collections_.end() ? std::vector<Document>{} : it->second;
}

}  // namespace txn_recovery

namespace txn_recovery {

Status MemoryStore::ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) {
  std::lock_guard lock(mu_);
  indexes->clear();
  const std::string key = ns.ToString();
  if (!collections_.count(key) && !indexes_.count(key)) return Status::Ok();
  indexes->push_back(IndexSpec{{{"_id", 1}}, "_id_"});
  if (auto it = indexes_.find(key); it != indexes_.end())
    indexes->insert(indexes->end(), it->second.begin(), it->second.end());
  return Status::Ok();
}

Status MemoryStore::CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) {
  std::lock_guard lock(mu_);
  std::vector<IndexSpec>& have = indexes_[ns.ToString()];
  Collection(ns);
  for (IndexSpec spec : indexes) {
    if (spec.keys.empty()) return Status::InvalidArgument("an index needs at least one key");
    for (const auto& [path, dir] : spec.keys)
      if (path.empty() || (dir != 1 && dir != -1))
        return Status::InvalidArgument("bad index key " + spec.ToString());
    if (spec.name.empty())
      for (const auto& [path, dir] : spec.keys)
        spec.name += (spec.name.empty() ? "" : "_") + path + "_" + std::to_string(dir);
    bool exists = false;
    for (const IndexSpec& h : have) {
      if (h.name != spec.name) continue;
      if (h.keys != spec.keys)
        return Status::ServerError("an index named " + spec.name + " exists with other keys");
      exists = true;
    }
    if (!exists) have.push_back(std::move(spec));
  }
  return Status::Ok();
}

Status MemoryStore::ListCollections(const std::string& database, std::vector<std::string>* names) {
  std::lock_guard<std::mutex> lock(mu_);
  names->clear();
  const std::string prefix = database + ".";
  auto add = [&](const std::string& ns, bool present) {
    if (!present || ns.rfind(prefix, 0) != 0) return;
    std::string name = ns.substr(prefix.size());
    if (name.rfind("system.", 0) != 0 &&
        std::find(names->begin(), names->end(), name) == names->end())
      names->push_back(std::move(name));
  };
  for (const auto& [ns, docs] : collections_) add(ns, !docs.empty());
  for (const auto& [ns, specs] : indexes_) add(ns, !specs.empty());
  std::sort(names->begin(), names->end());
  return Status::Ok();
}

Status MemoryStore::DropCollection(const Namespace& ns) {
  std::lock_guard<std::mutex> lock(mu_);
  collections_.erase(ns.ToString());
  indexes_.erase(ns.ToString());
  return Status::Ok();
}

}  // namespace txn_recovery
