#include "engine/writer.h"

#include <utility>

namespace txn_recovery {

Status Writer::Each(const Namespace& ns, std::vector<LabelledRequest> requests,
                    BulkResult* result) {
  if (!recording()) {
    std::vector<UpdateRequest> bulk;
    bulk.reserve(requests.size());
    for (LabelledRequest& r : requests) bulk.push_back(std::move(r.request));
    return store_->UpdateEach(ns, bulk, result);
  }
  *result = BulkResult{};
  for (const LabelledRequest& r : requests)
    record_->push_back({r.what, ns, r.request.filter, r.request.update, false});
  result->matched = result->modified = static_cast<std::int64_t>(requests.size());
  return Status::Ok();
}

Status Writer::One(const Namespace& ns, const LabelledRequest& request, WriteResult* result) {
  if (!recording())
    return store_->UpdateOne(ns, request.request.filter, request.request.update, result);
  record_->push_back({request.what, ns, request.request.filter, request.request.update, false});
  result->matched = result->modified = 1;
  return Status::Ok();
}

Status Writer::OneAndRead(const Namespace& ns, const LabelledRequest& request,
                          std::optional<Document>* after) {
  if (!recording())
    return store_->FindOneAndUpdate(ns, request.request.filter, request.request.update, after);
  record_->push_back({request.what, ns, request.request.filter, request.request.update, false});
  after->reset();
  return Status::Ok();
}

Status Writer::Many(const Namespace& ns, const std::string& what, const Filter& filter,
                    const Update* update, WriteResult* result) {
  if (!recording())
    return update ? store_->UpdateMany(ns, filter, *update, result)
                  : store_->DeleteMany(ns, filter, result);
  record_->push_back(
      {what, ns, filter, update ? std::optional<Update>(*update) : std::nullopt, true});
  *result = WriteResult{};
  return Status::Ok();
}

Status Writer::Insert(const Namespace& ns, const std::string& what,
                      const std::vector<Document>& docs) {
  if (!recording()) return store_->InsertMany(ns, docs);
  for (const Document& d : docs) {
    // Appended piecewise: GCC 12 at -O3 warns (-Wrestrict, a false positive) on
    // `" " + string` here, and a plain Release build must print no warning.
    std::string label = what;
    if (const Value* id = d.Get("_id")) {
      label += ' ';
      label += id->ToString();
    }
    Note(ns, std::move(label));
  }
  return Status::Ok();
}

void Writer::Note(const Namespace& ns, std::string what) {
  if (recording()) record_->push_back({std::move(what), ns, Filter(), std::nullopt, false});
}

}  // namespace txn_recovery
