// The one writer: every write the engine and the operator's tools make to a document goes
// through a Writer, built beforehand by engine/requests.h. A recording Writer sends nothing:
// it appends each write, as it would have been sent, to a record and reports it matched, so
// that a dry run and `explain` are the engine itself rehearsing, not a second walk of the
// program that could drift from what runs.
//
// A Writer sends only through one of two holders, its friends: the execution's LeasedSender
// (engine/leased_sender.h), which applies the lease-deadline rule and the fence to every
// write of an action, and a LeaseFreeWriter (engine/lease.h), which names, from a closed
// list, why its writes need no lease. Code holding neither cannot write: the methods that
// send are private.
#pragma once

#include <string>
#include <vector>

#include "txn_recovery/engine/state_machine.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

// A request with what it is for, in an operator's words ("apply: debit 100 from \"A\"").
struct LabelledRequest {
  std::string what;
  UpdateRequest request;
};

// Not thread-safe when recording (the record is a plain vector); a sending Writer holds
// nothing but the store, which must outlive it.
class Writer {
 public:
  // Sends to `store`.
  explicit Writer(Store* store) : store_(store) {}
  // Sends nothing; appends every write to `*record`, which must outlive the writer.
  Writer(Store* store, std::vector<PlannedWrite>* record) : store_(store), record_(record) {}

  bool recording() const { return record_ != nullptr; }

  // A line in the record that sends nothing ("(nothing: already applied) debit 100 …"), so
  // that a rehearsal says why a write is absent. Nothing when sending.
  void Note(const Namespace& ns, std::string what);

 private:
  friend class LeasedSender;
  friend class LeaseFreeWriter;

  // One unordered bulk of single-document updates (Store::UpdateEach). Recording: each
  // matched and modified. Taken by value: a caller that has no further use for its requests
  // moves them in, and they are sent without a copy.
  Status Each(const Namespace& ns, std::vector<LabelledRequest> requests, BulkResult* result);
  // One single-document update. Recording: matched and modified.
  Status One(const Namespace& ns, const LabelledRequest& request, WriteResult* result);
  // One single-document update returning the document after it (FindOneAndUpdate).
  // Recording: `after` is left empty.
  Status OneAndRead(const Namespace& ns, const LabelledRequest& request,
                    std::optional<Document>* after);
  // Every document `filter` matches: updated (UpdateMany), or deleted (DeleteMany) when
  // `update` is null. Recording: nothing matched (how many would is not known without a
  // count, which a rehearsal does not make).
  Status Many(const Namespace& ns, const std::string& what, const Filter& filter,
              const Update* update, WriteResult* result);
  // Inserts `docs` (InsertMany). Recording: a line per document, without filter.
  Status Insert(const Namespace& ns, const std::string& what, const std::vector<Document>& docs);

  Store* store_;
  std::vector<PlannedWrite>* record_ = nullptr;
};

}  // namespace txn_recovery
