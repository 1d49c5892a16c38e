#include "support/query_log.h"

namespace txn_recovery {

std::string ReadQuery::ToString() const {
  std::string out =
      (kind == Kind::kCount ? "count on " : "find on ") + ns.ToString() + " " + filter.ToString();
  if (kind == Kind::kFind && options.sort_ascending_by)
    out += " sorted by " + *options.sort_ascending_by;
  if (kind == Kind::kFind && options.limit > 0) out += " limit " + std::to_string(options.limit);
  if (kind == Kind::kFind && !options.projection.empty()) {
    out += " returning _id";
    for (const std::string& p : options.projection) out += ", " + p;
  }
  return out;
}

std::vector<ReadQuery> QueryLog::reads() const {
  std::lock_guard lock(mu_);
  return reads_;
}

void QueryLog::Clear() {
  std::lock_guard lock(mu_);
  reads_.clear();
}

void QueryLog::Record(ReadQuery q) {
  std::lock_guard lock(mu_);
  reads_.push_back(std::move(q));
}

Status QueryLog::Find(const Namespace& ns, const Filter& filter, const FindOptions& options,
                      std::unique_ptr<Cursor>* cursor) {
  Record({ReadQuery::Kind::kFind, ns, filter, options});
  return inner_->Find(ns, filter, options, cursor);
}

Status QueryLog::FindOne(const Namespace& ns, const Filter& filter, std::optional<Document>* doc) {
  FindOptions one;
  one.limit = 1;
  Record({ReadQuery::Kind::kFind, ns, filter, one});
  return inner_->FindOne(ns, filter, doc);
}

Status QueryLog::Count(const Namespace& ns, const Filter& filter, std::int64_t* count) {
  Record({ReadQuery::Kind::kCount, ns, filter, {}});
  return inner_->Count(ns, filter, count);
}

}  // namespace txn_recovery
