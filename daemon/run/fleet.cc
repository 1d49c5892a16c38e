#include "daemon/run/fleet.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "daemon/base/revision.h"
#include "daemon/logging/logging.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;

namespace {

txn_recovery::MemberRecord Self(const std::string& owner) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return txn_recovery::MemberRecord{owner, host, MemberVersion(), {}, {}};
}

}  // namespace

Fleet::Fleet(const std::string& owner, Metrics* metrics)
    : metrics_(*metrics), member_(nullptr, Self(owner), {}, Events()) {}

void Fleet::Follow(const Config& config, txn_recovery::Store* store) {
  enabled_ = config.fleet.enabled;
  watches_ = config.watches;
  SetStore(store);
  member_.SetOptions(
      {config.fleet.members_collection, config.fleet.heartbeat, config.fleet.expiry});
}

void Fleet::Heartbeat() {
  if (enabled_) member_.Heartbeat(watches_);
}

std::optional<txn_recovery::Share> Fleet::ShareIn(const txn_recovery::WatchSpec& w) const {
  if (!enabled_) return std::nullopt;
  return member_.ShareOf(w);
}

void Fleet::Leave() {
  if (!enabled_ || !has_store_) return;
  member_.Leave();
}

void Fleet::LogOverdueTaken(const txn_recovery::WatchSpec& w, const txn_recovery::TxnReport& r) {
  std::string holder = "position " + std::to_string(*r.overdue_in_share_of);
  if (auto m = member_.SweeperAt(w, *r.overdue_in_share_of)) holder = m->id + " on " + m->host;
  LogFields f({{"watch", w.name}, IdField("txn_id", r.id)});
  spdlog::warn(
      "transaction overdue in the share of member {} (bucket {}): driven by this member; that "
      "member is live but is not driving its share",
      holder, txn_recovery::BucketOf(r.id));
}

txn_recovery::FleetEvents Fleet::Events() {
  txn_recovery::FleetEvents e;
  e.share = [this](const txn_recovery::WatchSpec& w, const txn_recovery::Share& share,
                   bool changed) {
    if (changed) {
      LogFields f({{"watch", w.name}});
      spdlog::info(
          "fleet of {}: {} live member(s) sweep it, this one at position {} holds {} of {} "
          "buckets",
          w.ns.ToString(), share.count, share.self, share.Buckets(), txn_recovery::kFleetBuckets);
    }
    metrics_.Set("txn_recoveryd_fleet_members", {{"watch", w.name}},
                 static_cast<double>(share.count));
    metrics_.Set("txn_recoveryd_fleet_share_buckets", {{"watch", w.name}},
                 static_cast<double>(share.Buckets()));
  };
  e.membership_failed = [](const txn_recovery::Namespace& members, const Status& s,
                           bool had_share) {
    LogFields f({{"database", members.database}});
    if (had_share)
      spdlog::warn("fleet membership in {} failed, sweeping every candidate: {}",
                   members.ToString(), s.ToString());
  };
  e.expired_removed = [](const std::string& database, std::int64_t removed) {
    LogFields f({{"database", database}});
    spdlog::info("fleet of {}: {} expired member record(s) removed", database, removed);
  };
  // A mixed fleet is a rolling upgrade: each member leaves alone what it cannot read, and
  // the lease keeps every transaction to one driver (docs/upgrading.md). Said, because a
  // member left behind holds its share of what only the newer ones can drive.
  e.newer_member = [](const std::string& database, const txn_recovery::MemberRecord& m) {
    LogFields f({{"database", database}});
    spdlog::warn(
        "fleet of {}: member {} on {} (version {}) writes format {}, newer than this "
        "daemon's {}: upgrade this host; meanwhile it leaves alone what that member "
        "writes",
        database, m.id, m.host, m.version, m.format, txn_recovery::RecoveryRecord::kFormat);
  };
  e.leave_failed = [](const std::string& database, const Status& s) {
    spdlog::warn("could not leave the fleet of {} (the record expires instead): {}", database,
                 s.ToString());
  };
  return e;
}

}  // namespace txn_recovery::daemon
