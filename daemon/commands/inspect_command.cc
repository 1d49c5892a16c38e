#include "daemon/commands/inspect_command.h"

#include <nlohmann/json.hpp>

#include "daemon/base/exit_codes.h"
#include "daemon/base/ids.h"
#include "daemon/base/revision.h"
#include "daemon/commands/fleet_view.h"
#include "daemon/commands/index_check.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/engine/state_machine.h"
#include "txn_recovery/tools/indexes.h"
#include "txn_recovery/tools/inspect.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;

namespace {

// An _id of the JSON report as an operator types it (ids.h).
std::string JsonIdText(const nlohmann::json& id) {
  if (id.is_string()) return id.get<std::string>();
  if (id.is_object() && id.contains("$oid") && id["$oid"].is_string())
    return id["$oid"].get<std::string>();
  return id.dump();
}

// The live members of the fleet that sweep `w` (docs/fleet.md), each with the buckets its
// share holds by the list read now and what is stuck and overdue in it (`loads`, at the
// same positions); empty when the fleet is off.
nlohmann::json FleetMembers(const FleetView& fleet, const txn_recovery::WatchSpec& w,
                            txn_recovery::DateTime now,
                            const std::vector<txn_recovery::ShareLoad>& loads) {
  nlohmann::json members = nlohmann::json::array();
  for (std::size_t i = 0; i < fleet.sweepers.size(); ++i) {
    const auto& m = fleet.sweepers[i];
    const txn_recovery::ShareLoad load = i < loads.size() ? loads[i] : txn_recovery::ShareLoad{};
    members.push_back(
        {{"id", m.id},
         {"host", m.host},
         {"version", m.version},
         {"format", m.format},
         {"watches", m.watches},
         {"heartbeat_age_seconds", (now.millis - m.heartbeat.millis) / 1000.0},
         {"buckets", txn_recovery::ShareOf(fleet.sweepers, m.id, w.ns.collection).Buckets()},
         {"stuck", load.stuck},
         {"overdue", load.overdue},
         // Another build than this inspect's: a rolling upgrade under way, or a host left
         // behind.
         {"same_version", m.version == MemberVersion()}});
  }
  return members;
}

// The expired records of members that swept `w`: stopped (killed, or their host gone) and
// not removed yet, which happens only when a live member lists the fleet.
nlohmann::json ExpiredFleetMembers(const std::vector<txn_recovery::MemberRecord>& expired,
                                   const txn_recovery::WatchSpec& w, txn_recovery::DateTime now) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : txn_recovery::SweepersOf(expired, w.ns.collection))
    out.push_back({{"id", m.id},
                   {"host", m.host},
                   {"version", m.version},
                   {"heartbeat_age_seconds", (now.millis - m.heartbeat.millis) / 1000.0}});
  return out;
}

// What inspect found for one watch. `status` is the first failure; what was found
// before it is kept.
struct WatchFindings {
  Status status = Status::Ok();
  bool paused = false;
  txn_recovery::StuckReport report;
  nlohmann::json quarantined = nlohmann::json::array();
  std::vector<std::string> quarantined_fleet;  // each one's bucket and holder, as text
  nlohmann::json missing = nlohmann::json::array();
  // Absent and not needed yet (IndexCheck::needed): shown, so that an operator who expects
  // them knows why they are not there.
  nlohmann::json deferred = nlohmann::json::array();
  std::vector<txn_recovery::IndexCheck> checks;
  nlohmann::json members = nlohmann::json::array();
  nlohmann::json expired_members = nlohmann::json::array();
};

WatchFindings InspectWatch(const Config& config, const txn_recovery::WatchSpec& w,
                           txn_recovery::Store* store) {
  WatchFindings f;
  Status& s = f.status;
  s = txn_recovery::IsPaused(store, w, &f.paused);
  if (s.ok()) s = txn_recovery::Inspect(store, w, &f.report);
  // The fleet first: each quarantined transaction is listed with the member whose share
  // holds it.
  FleetView fleet;
  txn_recovery::DateTime now;
  if (s.ok()) {
    fleet = ReadFleetView(config, store, w);
    s = fleet.status;
  }
  std::vector<txn_recovery::ShareLoad> loads;
  std::vector<txn_recovery::MemberRecord> expired;
  if (s.ok() && fleet.on) s = store->ServerTime(&now);
  if (s.ok() && fleet.on)
    s = txn_recovery::LoadByShare(store, w, fleet.sweepers, now, config.fleet.overdue_after,
                                  &loads);
  if (s.ok() && fleet.on)
    s = txn_recovery::ExpiredMembers(store, {w.ns.database, config.fleet.members_collection},
                                     config.fleet.expiry, now, &expired);
  if (s.ok()) f.members = FleetMembers(fleet, w, now, loads);
  if (s.ok()) f.expired_members = ExpiredFleetMembers(expired, w, now);
  if (s.ok()) {
    s = txn_recovery::ListQuarantined(store, w, [&](const txn_recovery::QuarantinedTxn& q) {
      const auto* state = q.state ? &*q.state : nullptr;
      nlohmann::json entry = {
          {"_id", IdJson(q.id)},
          {"state",
           state ? (state->is_string() ? *state->as_string() : state->ToString()) : "<missing>"},
          {"reason", q.record.reason}};
      if (fleet.on) {
        entry["fleet"] = FleetJson(fleet, q.id);
        f.quarantined_fleet.push_back(FleetText(fleet, q.id));
      }
      f.quarantined.push_back(std::move(entry));
    });
  }
  // Inspect never creates indexes (it only reads); it shows what is missing.
  if (s.ok()) s = txn_recovery::EnsureIndexes(store, w, /*create=*/false, &f.checks);
  for (const auto& c : f.checks)
    if (!c.present)
      (c.needed ? f.missing : f.deferred)
          .push_back({{"namespace", c.index.ns.ToString()},
                      {"keys", c.index.spec.ToString()},
                      {"needed_by", c.index.why}});
  return f;
}

nlohmann::json WatchJson(const txn_recovery::WatchSpec& w, const WatchFindings& f) {
  const Status& s = f.status;
  const txn_recovery::StuckReport& report = f.report;
  nlohmann::json stuck = nlohmann::json::object();
  for (const auto& [state, n] : report.stuck)
    stuck[std::string(txn_recovery::TxnStateName(state))] = n;
  return {
      {"name", w.name},
      {"namespace", w.ns.ToString()},
      {"status", s.ok() ? "ok" : s.ToString()},
      {"paused", f.paused},
      {"stuck", stuck},
      {"oldest_stuck_age_seconds",
       report.oldest_age ? nlohmann::json(report.oldest_age->count() / 1000.0) : nullptr},
      {"oldest_stuck_age_from",
       report.oldest_age ? nlohmann::json(report.oldest_age_source) : nullptr},
      {"ages_from", txn_recovery::AgeSources(w)},
      {"not_yet_seen", report.not_yet_seen},
      {"quarantined", f.quarantined},
      {"missing_indexes", f.missing},
      {"indexes_not_needed_yet", f.deferred},
      {"fleet_members", f.members},
      {"fleet_expired_members", f.expired_members},
  };
}

// The fleet of a watch's database as `inspect` prints it: the live members, the one not
// driving its share, the expired records.
void PrintFleet(const Config& config, const WatchFindings& f, std::ostream& out) {
  out << "  fleet (" << config.fleet.members_collection << "): " << f.members.size()
      << " live member" << (f.members.size() == 1 ? "" : "s") << "\n";
  for (const auto& m : f.members)
    out << "    " << m["id"].get<std::string>() << "  host=" << m["host"].get<std::string>()
        << "  version=" << m["version"].get<std::string>()
        << (m["same_version"].get<bool>() ? "" : " [not this inspect's]")
        << "  format=" << m["format"].get<std::int64_t>() << "  heartbeat "
        << m["heartbeat_age_seconds"].get<double>() << "s ago  buckets "
        << m["buckets"].get<std::uint32_t>() << "  stuck " << m["stuck"].get<std::int64_t>()
        << " (overdue " << m["overdue"].get<std::int64_t>() << ")\n";
  // Live, yet what its share holds stays stuck: the overdue rule has the others take it
  // over; the operator should know which host is not doing its part.
  for (const auto& m : f.members)
    if (const auto overdue = m["overdue"].get<std::int64_t>(); overdue > 0)
      out << "  WARNING: member " << m["id"].get<std::string>() << " (host "
          << m["host"].get<std::string>() << ") is live but its share holds " << overdue
          << " transaction" << (overdue == 1 ? "" : "s") << " stuck past "
          << (overdue == 1 ? "its" : "their") << " threshold by more than fleet.overdue_after ("
          << FormatDuration(config.fleet.overdue_after)
          << "): it is not driving its share; the other members take them over "
             "(docs/fleet.md)\n";
  if (!f.expired_members.empty()) {
    out << "  expired member records: " << f.expired_members.size()
        << " (removed when a live member next lists the fleet)\n";
    for (const auto& m : f.expired_members)
      out << "    " << m["id"].get<std::string>() << "  host=" << m["host"].get<std::string>()
          << "  version=" << m["version"].get<std::string>() << "  heartbeat "
          << m["heartbeat_age_seconds"].get<double>() << "s ago\n";
  }
}

void PrintWatch(const Config& config, const txn_recovery::WatchSpec& w, const WatchFindings& f,
                std::ostream& out) {
  const Status& s = f.status;
  const txn_recovery::StuckReport& report = f.report;
  out << "watch " << w.name << " (" << w.ns.ToString() << ")" << (f.paused ? " [PAUSED]" : "");
  if (!s.ok()) {
    out << ": ERROR " << s.ToString() << "\n";
    return;
  }
  // Quarantined transactions are no longer "stuck" (the daemon has set them aside), so
  // "stuck: none" alone would read as all clear: the quarantine is said first.
  if (!f.quarantined.empty())
    out << "\n  ATTENTION: " << f.quarantined.size() << " quarantined transaction"
        << (f.quarantined.size() == 1 ? " waits" : "s wait")
        << " for an operator (listed below; explain ID, fix it, then release ID)";
  out << "\n  stuck (older than " << FormatDuration(w.thresholds.resume_after) << "):";
  if (report.stuck.empty()) out << " none";
  for (const auto& [state, n] : report.stuck)
    out << " " << txn_recovery::TxnStateName(state) << "=" << n;
  if (report.oldest_age)
    out << "; oldest " << report.oldest_age->count() / 1000 << "s (from "
        << report.oldest_age_source << ")";
  out << "\n  ages from: " << txn_recovery::AgeSources(w);
  if (report.not_yet_seen > 0)
    out << "\n  not yet seen: " << report.not_yet_seen
        << " without a time (the next sweep stamps their first sighting)";
  out << "\n  indexes: "
      << (f.missing.empty() ? std::string("all present")
                            : std::to_string(f.missing.size()) + " missing")
      << "\n";
  for (const auto& c : f.checks)
    if (!c.present && c.needed) out << "    " << DescribeMissing(c) << "\n";
  for (const auto& c : f.checks)
    if (!c.present && !c.needed)
      out << "    not needed yet: " << c.index.spec.ToString() << " on " << c.index.ns.ToString()
          << " (every transaction there has a time field)\n";
  if (config.fleet.enabled) PrintFleet(config, f, out);
  out << "  quarantined: " << f.quarantined.size() << "\n";
  for (std::size_t i = 0; i < f.quarantined.size(); ++i) {
    const auto& q = f.quarantined[i];
    out << "    _id=" << JsonIdText(q["_id"]) << "  " << q["state"].get<std::string>() << "  "
        << q["reason"].get<std::string>();
    if (i < f.quarantined_fleet.size()) out << "  [fleet: " << f.quarantined_fleet[i] << "]";
    out << "\n";
  }
}

}  // namespace

int RunInspect(const Config& config, txn_recovery::Store* store, bool json, std::ostream& out) {
  nlohmann::json watches = nlohmann::json::array();
  int code = kExitOk;
  for (const auto& w : config.watches) {
    const WatchFindings f = InspectWatch(config, w, store);
    if (!f.status.ok()) code = std::max(code, ExitForStatus(f.status));
    // A quarantined transaction waits for an operator: monitoring scripts read the exit
    // code, as they do the sweep's.
    if (!f.quarantined.empty()) code = std::max(code, kExitIncomplete);
    if (json)
      watches.push_back(WatchJson(w, f));
    else
      PrintWatch(config, w, f, out);
  }
  if (json) out << nlohmann::json{{"watches", watches}, {"exit_code", code}}.dump(2) << "\n";
  return code;
}

int RunProbe(const Config& config, txn_recovery::Store* store, std::int64_t limit,
             std::ostream& out) {
  int code = kExitOk;
  constexpr std::size_t kKeep = 20;
  for (const auto& w : config.watches) {
    txn_recovery::ProbeResult r;
    out << "\n# probe of watch " << w.name << " (" << w.ns.ToString() << "), up to " << limit
        << " documents:";
    if (Status s = txn_recovery::Probe(store, w, limit, kKeep, &r); !s.ok()) {
      out << " ERROR " << s.ToString() << "\n";
      code = std::max(code, ExitForStatus(s));
      continue;
    }
    out << " " << r.examined << " read, " << r.fit << " fit, " << r.misfit_total
        << " do not (a sweep would quarantine them); " << r.participants_checked
        << " participants of unfinished ones looked up, " << r.missing_participant_total
        << " missing, " << r.unmarked_participant_total << " without the marker field\n";
    for (const auto& f : r.misfits)
      out << "#   _id=" << IdText(f.id) << " does not fit: " << f.detail << "\n";
    for (const auto& f : r.missing_participants)
      out << "#   _id=" << IdText(f.id) << " " << f.detail << "\n";
    for (const auto& f : r.unmarked_participants)
      out << "#   _id=" << IdText(f.id) << " " << f.detail << "\n";
    if (r.misfit_total + r.missing_participant_total + r.unmarked_participant_total > 0)
      code = std::max(code, r.fit == 0 ? kExitConfig : kExitIncomplete);
  }
  return code;
}

int RunPause(const Config& config, txn_recovery::Store* store, bool paused, std::ostream& out) {
  int code = kExitOk;
  std::string by = txn_recovery::MakeOwnerId();
  for (const auto& w : config.watches) {
    Status s = txn_recovery::SetPaused(store, w, paused, by);
    out << "watch " << w.name << ": "
        << (s.ok() ? (paused ? "paused" : "resumed") : "ERROR " + s.ToString()) << "\n";
    if (!s.ok()) code = std::max(code, ExitForStatus(s));
  }
  return code;
}

}  // namespace txn_recovery::daemon
