// The conformance trace of an execution (txn_recovery/engine/conformance_trace.h): each
// line names the daemon, the transaction and the step of model/recovery.pml it takes.
// Callers check on() first, so that nothing is formatted when the trace is off.
// Private to the engine.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/batch_item.h"

namespace txn_recovery {

class BatchTrace {
 public:
  // `owner`: this daemon's lease owner id; `paths`: where a finish's trace is read. Both
  // must outlive the trace.
  BatchTrace(const std::string& owner, const RecoveryPaths& paths) : owner_(owner), paths_(paths) {}

  static bool on();

  // One line for `it`: the daemon, the transaction, `event` and `rest`.
  void Line(const Item& it, std::string_view event, const std::string& rest) const;
  // A write the read made unnecessary (the marker already there, or already gone): the
  // model's same write matching nothing, or no write at all (scripts/conformance.py).
  void Unsent(const Item& it, std::string_view event, std::size_t step,
              const std::string& rest = {}) const;
  // What a read of participants found, one line per item: per step, its marker and the
  // finish's trace, as the model's bits (RD_MK, RD_FIN).
  void Read(std::string_view event, const std::vector<StepRef>& steps,
            const std::vector<Found>& found) const;
  // The model's read after an apply that matched nothing (`marker` false: the step can never
  // apply); not `sent`, the apply the engine left out because its read found the marker,
  // which is the model's apply matching nothing and then that read.
  void ApplyRead(const Item& it, const ParticipantStep* step, bool marker, bool sent) const;
  // The line of each write of a bulk sent: `refused` by index in `indices`, `matched` the
  // bulk's count (-1: the bulk failed as a whole), `live` by index into `writes`.
  void Bulk(const std::vector<Write>& writes, const std::vector<std::size_t>& indices,
            const std::vector<bool>& live, const std::set<std::size_t>& refused,
            std::int64_t matched) const;

 private:
  const std::string& owner_;
  const RecoveryPaths& paths_;
};

}  // namespace txn_recovery
