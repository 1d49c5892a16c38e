// The one rule for a document a cursor returns twice: a scan may return a document again
// when it is updated meanwhile (DocumentDB does so readily, while the daemon drives the
// ones read before; MongoDB when a document moves). The first reading is the one acted on
// and counted; a later one is dropped. Across chunks the guards would make a second reading
// harmless (its claim finds the transaction moved on or leased); within one chunk or one
// batch the two readings would be driven in the same bulks, and a share's id pass would
// fetch and count it twice.
#pragma once

#include <set>
#include <string>

#include "txn_recovery/base/document.h"

namespace txn_recovery {

class SeenIds {
 public:
  // True the first time `id` is offered to this set. Ids are compared by their exact
  // encoding: two readings of one document carry the same.
  bool First(const Value& id) { return seen_.insert(id.ToString()).second; }
  // `id` (by its ToString) may be offered again as a first reading.
  void Forget(const std::string& id) { seen_.erase(id); }

 private:
  std::set<std::string> seen_;
};

}  // namespace txn_recovery
