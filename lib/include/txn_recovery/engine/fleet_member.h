// One member of a fleet (docs/fleet.md), as `txn-recoveryd run` keeps it: its record in the
// members collection of each watched database, heartbeated on the server's clock; the live
// members read back and the expired records removed; its share of each watch recomputed
// from that list, and again between the batches of a sweep; the watches it cannot drive left
// out of its record, so that the others take their buckets; the orphan scan claimed once per
// period; its records deleted at a clean stop.
//
// What the member learns is reported through FleetEvents, so that the daemon logs and counts
// it and a test reads it; FleetMember itself neither logs nor sleeps. A share is efficiency,
// never permission: whatever the member believes, every transaction is still claimed.
//
// Thread-safety: every call from one thread (the daemon's sweep thread), except SweeperAt,
// which the sweeper's workers call while that thread refreshes the view. The Store must
// outlive the member (SetStore replaces it after a reload).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "txn_recovery/base/status.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

// members_collection's default is the daemon's [fleet] default. The daemon derives heartbeat
// (daemon.interval) and expiry (3 x heartbeat) when the file leaves them unset: its
// tests hold its defaults to these.
struct FleetMemberOptions {
  std::string members_collection = "txn_recoveryd_members";  // in each watch's database
  std::chrono::milliseconds heartbeat{std::chrono::seconds(10)};
  std::chrono::milliseconds expiry{std::chrono::seconds(30)};
};

// What the member reports, on the thread that called it. Each callback may be empty.
struct FleetEvents {
  // A view of `w`'s fleet adopted: this member's share and the members sweeping `w`;
  // `changed` when the share differs from the last one adopted (or is the first).
  std::function<void(const WatchSpec& w, const Share& share, bool changed)> share;
  // Heartbeating or listing the members of `members` failed: the watches of that database
  // are swept whole until the next heartbeat succeeds (the claims keep it safe). `had_share`
  // when some watch there had a share until now.
  std::function<void(const Namespace& members, const Status& s, bool had_share)> membership_failed;
  std::function<void(const std::string& database, std::int64_t removed)> expired_removed;
  // A live member that writes a newer RecoveryRecord format than this build (a rolling
  // upgrade under way); once per member.
  std::function<void(const std::string& database, const MemberRecord& m)> newer_member;
  std::function<void(const std::string& database, const Status& s)> leave_failed;
};

class FleetMember {
 public:
  // `self` is this member's identity: its id (the lease owner of its claims), host and
  // version; the watches of each record are filled in per database.
  FleetMember(Store* store, MemberRecord self, FleetMemberOptions options, FleetEvents events = {});
  FleetMember(const FleetMember&) = delete;
  FleetMember& operator=(const FleetMember&) = delete;

  void SetStore(Store* store) { store_ = store; }
  void SetOptions(FleetMemberOptions options) { options_ = std::move(options); }
  const std::string& id() const { return self_.id; }

  // Stamps this member's record in the database of every watch of `watches`, lists the live
  // members, removes the expired records and adopts a share of each watch. Leaves the
  // fleets of databases none of `watches` is in any longer (after a reload). A database
  // where any of that fails loses its shares: its watches are swept whole.
  void Heartbeat(const std::vector<WatchSpec>& watches);
  // Whether options.heartbeat has passed since the last Heartbeat (or there was none).
  bool HeartbeatDue() const;
  // Between the batches of a sweep of `w` (SweepOptions::refresh_share): Heartbeat when due,
  // else the members of `w`'s database listed again (the expiry placed on the server's
  // clock of the last heartbeat, without a round trip of its own; a failed list keeps the
  // view it had). The share to sweep by: everything without a view.
  Share Refresh(const std::vector<WatchSpec>& watches, const WatchSpec& w);
  // The share of `w` from the last view; nullopt (everything) without one.
  std::optional<Share> ShareOf(const WatchSpec& w) const;
  // The member at `position` of the members sweeping `w` in the last view, if any: whose
  // share an overdue transaction was in.
  std::optional<MemberRecord> SweeperAt(const WatchSpec& w, std::uint32_t position) const;

  // How the last sweep of `w` went. A sweep that failed, or some write of which was
  // refused for a privilege this member lacks, means it cannot drive its share: `w` leaves
  // its record at the next heartbeat. It is listed again once a clean sweep resolved
  // something (a clean sweep that only found the others driving its old buckets proves
  // nothing, and would make it flap).
  void NoteSweep(const WatchSpec& w, bool clean, std::int64_t resolved);

  // Whether this member runs the orphan scan of `w` now (ClaimOrphanScan for `period`);
  // true without a view of the fleet (a lone daemon scans every time it tries).
  Status ClaimOrphanScan(const WatchSpec& w, std::chrono::milliseconds period, bool* mine);

  // Deletes this member's records (a clean stop), so that the others take its share now
  // rather than after the expiry. A failed delete is reported; the record expires instead.
  void Leave();

 private:
  Namespace MembersOf(const std::string& database) const {
    return {database, options_.members_collection};
  }
  void LeaveDatabase(const std::string& database);
  void Adopt(const WatchSpec& w, const std::vector<MemberRecord>& live);

  Store* store_;
  MemberRecord self_;
  FleetMemberOptions options_;
  FleetEvents events_;
  std::map<std::string, Share> shares_;  // by watch namespace
  // The members that sweep each watch (by namespace) in the view its share came from.
  mutable std::mutex view_mu_;
  std::map<std::string, std::vector<MemberRecord>> sweepers_;  // guarded by view_mu_
  // The server's time at the last heartbeat and when it was read: later lists of the fleet
  // between batches place the expiry on the server's clock without a round trip.
  DateTime heartbeat_server_time_{};
  std::chrono::steady_clock::time_point heartbeat_server_time_at_{};
  std::optional<std::chrono::steady_clock::time_point> last_heartbeat_;
  std::set<std::string> databases_;      // databases this member has a record in
  std::set<std::string> newer_members_;  // reported once each
  std::set<std::string> failing_;        // watch namespaces it cannot drive: not listed
};

}  // namespace txn_recovery
