// The fleet as the operator's commands show it (explain, inspect, a dry run): the live
// members that sweep a watch, read once, and for any _id its bucket and the member whose
// share holds it (docs/fleet.md). What a daemon's `run` does with the same records is
// membership.h; this only reads them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/configuration/config.h"
#include "txn_recovery/base/document.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::daemon {

struct FleetView {
  bool on = false;                                           // the configuration's fleet is enabled
  txn_recovery::Status status = txn_recovery::Status::Ok();  // listing the members failed
  std::vector<txn_recovery::MemberRecord> sweepers;  // the live members that sweep the watch
};

// The members of `w`'s fleet live now, by the server's clock. Reads nothing when the fleet
// is off.
FleetView ReadFleetView(const Config& config, txn_recovery::Store* store,
                        const txn_recovery::WatchSpec& w);

// One line, no newline: "bucket 17 of 256; held by ID (host H) of 3 live members sweeping
// this watch", or what stands in for the holder when there is none or the list failed.
std::string FleetText(const FleetView& v, const txn_recovery::Value& id);

// {bucket, members, held_by: {id, host} or null}; {bucket, error} when the list failed.
nlohmann::json FleetJson(const FleetView& v, const txn_recovery::Value& id);

}  // namespace txn_recovery::daemon
