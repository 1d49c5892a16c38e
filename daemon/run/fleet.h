// `run`'s membership of the fleet (docs/fleet.md): txn_recovery::FleetMember does the work;
// this says what it learned (logs and metrics), and does nothing when the fleet is off.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "daemon/configuration/config.h"
#include "daemon/serving/metrics.h"
#include "txn_recovery/engine/fleet_member.h"

namespace txn_recovery::daemon {

class Fleet {
 public:
  // `owner`: this instance's id (its leases' owner).
  Fleet(const std::string& owner, Metrics* metrics);

  // The configuration in force (the fleet's options, the watches it covers) and the store
  // to reach it through.
  void Follow(const Config& config, txn_recovery::Store* store);
  void SetStore(txn_recovery::Store* store) {
    member_.SetStore(store);
    has_store_ = store != nullptr;
  }
  bool enabled() const { return enabled_; }

  void Heartbeat();
  bool HeartbeatDue() const { return member_.HeartbeatDue(); }
  // The share of watch `w`; nullopt (everything) when the fleet is off or the last
  // heartbeat in its database failed.
  std::optional<txn_recovery::Share> ShareIn(const txn_recovery::WatchSpec& w) const;
  // SweepOptions::refresh_share of `w`.
  txn_recovery::Share Refresh(const txn_recovery::WatchSpec& w) {
    return member_.Refresh(watches_, w);
  }
  void NoteSweep(const txn_recovery::WatchSpec& w, bool clean, std::int64_t resolved) {
    member_.NoteSweep(w, clean, resolved);
  }
  txn_recovery::Status ClaimOrphanScan(const txn_recovery::WatchSpec& w,
                                       std::chrono::milliseconds period, bool* claimed) {
    return member_.ClaimOrphanScan(w, period, claimed);
  }
  // Deletes this instance's records at a clean stop, so that the others take its share now.
  void Leave();
  // An overdue transaction of another member's share, taken by this one: said with the
  // member whose share holds it, since it means that member is not driving it.
  void LogOverdueTaken(const txn_recovery::WatchSpec& w, const txn_recovery::TxnReport& r);

 private:
  txn_recovery::FleetEvents Events();

  Metrics& metrics_;
  bool enabled_ = false;
  bool has_store_ = false;
  std::vector<txn_recovery::WatchSpec> watches_;
  txn_recovery::FleetMember member_;
};

}  // namespace txn_recovery::daemon
