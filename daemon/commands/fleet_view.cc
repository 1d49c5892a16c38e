#include "daemon/commands/fleet_view.h"

namespace txn_recovery::daemon {

FleetView ReadFleetView(const Config& config, txn_recovery::Store* store,
                        const txn_recovery::WatchSpec& w) {
  FleetView v;
  if (!config.fleet.enabled) return v;
  v.on = true;
  txn_recovery::DateTime now;
  v.status = txn_recovery::LiveSweepers(store, {w.ns.database, config.fleet.members_collection},
                                        w.ns.collection, config.fleet.expiry, &v.sweepers, &now);
  return v;
}

std::string FleetText(const FleetView& v, const txn_recovery::Value& id) {
  std::string text = "bucket " + std::to_string(txn_recovery::BucketOf(id)) + " of " +
                     std::to_string(txn_recovery::kFleetBuckets) + "; ";
  if (!v.status.ok()) return text + "the members could not be listed: " + v.status.ToString();
  const txn_recovery::MemberRecord* holder = txn_recovery::HolderOf(v.sweepers, id);
  if (holder == nullptr)
    return text +
           "no live member sweeps this watch (a run that starts, or a one-shot sweep, takes it)";
  return text + "held by " + holder->id + " (host " + holder->host + ") of " +
         std::to_string(v.sweepers.size()) + " live member" + (v.sweepers.size() == 1 ? "" : "s") +
         " sweeping this watch";
}

nlohmann::json FleetJson(const FleetView& v, const txn_recovery::Value& id) {
  const std::uint32_t bucket = txn_recovery::BucketOf(id);
  if (!v.status.ok()) return {{"bucket", bucket}, {"error", v.status.ToString()}};
  const txn_recovery::MemberRecord* holder = txn_recovery::HolderOf(v.sweepers, id);
  return {{"bucket", bucket},
          {"members", v.sweepers.size()},
          {"held_by",
           holder ? nlohmann::json{{"id", holder->id}, {"host", holder->host}} : nlohmann::json()}};
}

}  // namespace txn_recovery::daemon
