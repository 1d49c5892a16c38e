#include "txn_recovery/engine/fleet_member.h"

#include <utility>

#include "txn_recovery/base/recovery_record.h"

namespace txn_recovery {

using Steady = std::chrono::steady_clock;

FleetMember::FleetMember(Store* store, MemberRecord self, FleetMemberOptions options,
                         FleetEvents events)
    : store_(store),
      self_(std::move(self)),
      options_(std::move(options)),
      events_(std::move(events)) {}

bool FleetMember::HeartbeatDue() const {
  return !last_heartbeat_ || Steady::now() - *last_heartbeat_ >= options_.heartbeat;
}

void FleetMember::Heartbeat(const std::vector<WatchSpec>& watches) {
  last_heartbeat_ = Steady::now();
  std::map<std::string, std::vector<const WatchSpec*>> databases;
  for (const auto& w : watches) databases[w.ns.database].push_back(&w);
  for (auto it = databases_.begin(); it != databases_.end();) {
    if (databases.count(*it) > 0) {
      ++it;
      continue;
    }
    LeaveDatabase(*it);
    it = databases_.erase(it);
  }
  for (const auto& [database, in_database] : databases) {
    const Namespace ns = MembersOf(database);
    MemberRecord self = self_;
    self.watches.clear();
    // A watch this member cannot drive is not listed, so that the others take its buckets;
    // it still sweeps its own share of it.
    for (const auto* w : in_database)
      if (failing_.count(w->ns.ToString()) == 0) self.watches.push_back(w->ns.collection);
    std::vector<MemberRecord> live;
    DateTime now;
    std::int64_t removed = 0;
    Status s = txn_recovery::Heartbeat(store_, ns, self);
    if (s.ok()) databases_.insert(database);
    if (s.ok()) s = store_->ServerTime(&now);
    if (s.ok()) {
      heartbeat_server_time_ = now;
      heartbeat_server_time_at_ = Steady::now();
    }
    if (s.ok()) s = LiveMembers(store_, ns, options_.expiry, now, &live);
    if (s.ok()) s = RemoveExpired(store_, ns, options_.expiry, now, &removed);
    if (!s.ok()) {
      // Without a view of the fleet, everything: the claims keep it safe, at the cost of
      // racing the others for every transaction until the next heartbeat.
      bool had = false;
      for (const auto* w : in_database) had = shares_.erase(w->ns.ToString()) > 0 || had;
      if (events_.membership_failed) events_.membership_failed(ns, s, had);
      continue;
    }
    if (removed > 0 && events_.expired_removed) events_.expired_removed(database, removed);
    for (const auto& m : live)
      if (m.format > RecoveryRecord::kFormat && newer_members_.insert(m.id).second &&
          events_.newer_member)
        events_.newer_member(database, m);
    for (const auto* w : in_database) Adopt(*w, live);
  }
}

Share FleetMember::Refresh(const std::vector<WatchSpec>& watches, const WatchSpec& w) {
  if (HeartbeatDue()) {
    Heartbeat(watches);
  } else if (shares_.count(w.ns.ToString()) > 0) {
    // A read of a few records per batch. A failed read keeps the view it had: the next
    // heartbeat says whether membership itself failed.
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        Steady::now() - heartbeat_server_time_at_);
    const DateTime now{heartbeat_server_time_.millis + elapsed.count()};
    std::vector<MemberRecord> live;
    if (LiveMembers(store_, MembersOf(w.ns.database), options_.expiry, now, &live).ok())
      Adopt(w, live);
  }
  return ShareOf(w).value_or(Share{});
}

void FleetMember::Adopt(const WatchSpec& w, const std::vector<MemberRecord>& live) {
  const Share share = txn_recovery::ShareOf(live, self_.id, w.ns.collection);
  {
    std::lock_guard lock(view_mu_);
    sweepers_[w.ns.ToString()] = SweepersOf(live, w.ns.collection);
  }
  auto [it, added] = shares_.try_emplace(w.ns.ToString(), share);
  const bool changed = added || it->second != share;
  it->second = share;
  if (events_.share) events_.share(w, share, changed);
}

std::optional<Share> FleetMember::ShareOf(const WatchSpec& w) const {
  auto it = shares_.find(w.ns.ToString());
  if (it == shares_.end()) return std::nullopt;
  return it->second;
}

std::optional<MemberRecord> FleetMember::SweeperAt(const WatchSpec& w,
                                                   std::uint32_t position) const {
  std::lock_guard lock(view_mu_);
  auto it = sweepers_.find(w.ns.ToString());
  if (it == sweepers_.end() || position >= it->second.size()) return std::nullopt;
  return it->second[position];
}

void FleetMember::NoteSweep(const WatchSpec& w, bool clean, std::int64_t resolved) {
  const std::string key = w.ns.ToString();
  if (!clean)
    failing_.insert(key);
  else if (resolved > 0 || failing_.count(key) == 0)
    failing_.erase(key);
}

Status FleetMember::ClaimOrphanScan(const WatchSpec& w, std::chrono::milliseconds period,
                                    bool* mine) {
  *mine = true;
  if (!ShareOf(w)) return Status::Ok();  // no view of a fleet: as a lone daemon
  *mine = false;
  return txn_recovery::ClaimOrphanScan(store_, MembersOf(w.ns.database), w.ns.collection, self_.id,
                                       period, mine);
}

void FleetMember::Leave() {
  for (const auto& database : databases_) LeaveDatabase(database);
  databases_.clear();
  shares_.clear();
  std::lock_guard lock(view_mu_);
  sweepers_.clear();
}

void FleetMember::LeaveDatabase(const std::string& database) {
  if (Status s = txn_recovery::Leave(store_, MembersOf(database), self_.id);
      !s.ok() && events_.leave_failed)
    events_.leave_failed(database, s);
}

}  // namespace txn_recovery
