// The Store interface's defaults (each in terms of the interface's own primitives, for
// stores without a cheaper way) and what an index is.
#include "txn_recovery/stores/store.h"

#include <algorithm>
#include <string>
#include <utility>

namespace txn_recovery {

Status Store::FindOne(const Namespace& ns, const Filter& filter, std::optional<Document>* doc) {
  FindOptions options;
  options.limit = 1;
  std::unique_ptr<Cursor> cursor;
  if (Status s = Find(ns, filter, options, &cursor); !s.ok()) return s;
  Document d;
  bool has = false;
  if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
  *doc = has ? std::optional<Document>(std::move(d)) : std::nullopt;
  return Status::Ok();
}

Status Store::Count(const Namespace& ns, const Filter& filter, std::int64_t* count) {
  std::unique_ptr<Cursor> cursor;
  if (Status s = Find(ns, filter, FindOptions{}, &cursor); !s.ok()) return s;
  *count = 0;
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) return Status::Ok();
    ++*count;
  }
}

Status Store::UpdateEach(const Namespace& ns, const std::vector<UpdateRequest>& requests,
                         BulkResult* result) {
  *result = BulkResult{};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    WriteResult one;
    Status s = UpdateOne(ns, requests[i].filter, requests[i].update, &one);
    // Unreachable or stopped: the bulk as a whole failed. Anything else is this request's.
    if (s.IsUnavailable() || s.IsAborted()) return s;
    if (!s.ok()) {
      result->refused.emplace_back(i, std::move(s));
      continue;
    }
    result->matched += one.matched;
    result->modified += one.modified;
  }
  return Status::Ok();
}

Status Store::ListCollections(const std::string& database, std::vector<std::string>*) {
  return Status::InvalidArgument("this store cannot list the collections of " + database);
}

Status Store::Sample(const Namespace& ns, std::int64_t size, std::vector<Document>* docs) {
  docs->clear();
  FindOptions options;
  options.limit = size;
  std::unique_ptr<Cursor> cursor;
  if (Status s = Find(ns, Filter(), options, &cursor); !s.ok()) return s;
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) return Status::Ok();
    docs->push_back(std::move(d));
  }
}

Status Store::DropCollection(const Namespace& ns) {
  return Status::InvalidArgument("this store cannot drop " + ns.ToString());
}

std::string IndexSpec::ToString() const {
  std::string out = "{";
  for (std::size_t i = 0; i < keys.size(); ++i)
    out += (i ? ", " : "") + keys[i].first + ": " + std::to_string(keys[i].second);
  out += only_where_present ? "} where present" : "}";
  return out + (ordered ? " ordered" : "");
}

bool IndexSpec::ServedBy(const IndexSpec& existing) const {
  if (keys.empty() || existing.keys.size() < keys.size() ||
      (only_where_present && !existing.only_where_present) || (ordered && !existing.ordered) ||
      (hinted && existing.keys.size() != keys.size()))
    return false;
  return std::equal(keys.begin(), keys.end(), existing.keys.begin());
}

}  // namespace txn_recovery
