// The sender of an execution: every write of a batch is sent here, the only place the
// lease-deadline rule (LeaseOptions in state_machine.h) and the fence are applied. A write
// names what it goes under (engine/batch_item.h, `Under`): the sender stops a write under a
// lease whose local deadline has passed and fences every write under a lease or a claim.
// Private to the engine.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/batch_item.h"
#include "engine/batch_trace.h"
#include "engine/lease.h"
#include "engine/writer.h"

namespace txn_recovery {

class LeasedSender {
 public:
  // Sends through `writer` (a recording one rehearses: engine/writer.h). `keeper` and
  // `trace` must outlive the sender.
  LeasedSender(Writer writer, const LeaseKeeper& keeper, const BatchTrace& trace)
      : writer_(writer), keeper_(keeper), trace_(trace) {}

  bool rehearsing() const { return writer_.recording(); }
  // A rehearsal's line for a write left out, and why.
  void Note(const Namespace& ns, std::string what) { writer_.Note(ns, std::move(what)); }
  // Whether `it`'s lease may still be written under (false when it holds none).
  bool Live(const Item& it) const { return it.lease && keeper_.Live(*it.lease); }

  // Sends `writes`, one unordered bulk per collection. A write under a lease whose local
  // deadline has passed is not sent (its item fails, unless the write is best effort);
  // every other write under a lease carries the lease's fence, and so does a claim (the
  // lease it takes). A write the server refuses fails its item; a bulk that fails as a whole
  // fails every item with a write in it. Each write's request and label are moved into the
  // bulk (copying the filters and updates was a large share of the daemon's allocations):
  // afterwards read only its item, step, namespace and best_effort.
  Sent Send(std::vector<Write>& writes);

  // A write to every document of a tagged set for `it`, under `under`: UpdateMany with
  // `update`, or DeleteMany when it is null. The same rule as Send. Returns the documents
  // changed (or deleted); nullopt when nothing was written (the item failed).
  std::optional<std::int64_t> SendMany(Item* it, const Under& under, const std::string& what,
                                       const Namespace& ns, Filter filter, const Update* update);

  // A writer of lease-free writes for `why`, on the same store and, in a rehearsal, the same
  // record.
  LeaseFreeWriter Free(LeaseFree why) const;

 private:
  // Whether write `i` is stopped by its lease's deadline (traced and its item failed).
  bool Stopped(std::vector<Write>& writes, std::size_t i, std::vector<bool>* live);
  // The bulks to send: one per collection, or with the conformance trace on, one per write.
  std::vector<std::vector<std::size_t>> Bulks(std::vector<Write>& writes, std::vector<bool>* live);
  // Records in `sent` a bulk's outcome: each of `indices` accepted unless `refused` (by
  // index in `indices`), and its fate as the bulk's count `matched` says.
  static void Tally(const std::vector<std::size_t>& indices, const std::set<std::size_t>& refused,
                    std::int64_t matched, Sent* sent);

  Writer writer_;
  const LeaseKeeper& keeper_;
  const BatchTrace& trace_;
};

}  // namespace txn_recovery
