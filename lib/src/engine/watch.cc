#include "txn_recovery/engine/watch.h"

#include "engine/lease.h"
#include "engine/requests.h"

namespace txn_recovery {

Status IsPaused(Store* store, const WatchSpec& watch, bool* paused) {
  std::optional<Document> doc;
  if (Status s = store->FindOne(watch.control_ns(), Filter().Eq("_id", "pause"), &doc); !s.ok())
    return s;
  const Value* v = doc ? doc->Get("paused") : nullptr;
  *paused = v != nullptr && *v == Value(true);
  return Status::Ok();
}

Status SetPaused(Store* store, const WatchSpec& watch, bool paused, const std::string& by) {
  const Namespace ns = watch.control_ns();
  std::optional<Document> existing;
  if (Status s = store->FindOne(ns, Filter().Eq("_id", "pause"), &existing); !s.ok()) return s;
  // There is no upsert in the Store algebra: create the document once (a concurrent
  // creator may win; its duplicate-key error is harmless), then update it.
  LeaseFreeWriter writer(store, LeaseFree::kOperator);
  if (!existing) (void)writer.Insert(ns, "create the pause switch", {requests::PauseSwitch()});
  WriteResult r;
  if (Status s = writer.One(ns, {"switch the pause", requests::SetPause(paused, by)}, &r); !s.ok())
    return s;
  if (r.matched == 0)
    return Status::ServerError("the pause switch of " + ns.ToString() + " could not be written");
  return Status::Ok();
}

}  // namespace txn_recovery
