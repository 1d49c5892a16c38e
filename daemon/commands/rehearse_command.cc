#include "daemon/commands/rehearse_command.h"

#include <nlohmann/json.hpp>

#include <set>

#include "daemon/base/exit_codes.h"
#include "daemon/commands/sweep_command.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/tools/rehearse.h"

namespace txn_recovery::daemon {

std::vector<std::string> MissingActions(const txn_recovery::Document& status,
                                        const std::string& database,
                                        const std::vector<std::string>& needed) {
  const txn_recovery::Value* users = status.GetPath("authInfo.authenticatedUsers");
  if (users == nullptr || !users->as_array() || users->as_array()->empty()) return {};
  std::set<std::string> granted;
  if (const txn_recovery::Value* privileges =
          status.GetPath("authInfo.authenticatedUserPrivileges");
      privileges != nullptr && privileges->as_array())
    for (const txn_recovery::Value& p : *privileges->as_array()) {
      const txn_recovery::Document* d = p.as_document();
      if (d == nullptr) continue;
      const txn_recovery::Value* any = d->GetPath("resource.anyResource");
      const txn_recovery::Value* db = d->GetPath("resource.db");
      const txn_recovery::Value* coll = d->GetPath("resource.collection");
      // Every collection of the database: {db: D or "" (any), collection: "" (any)}.
      const bool covers = (any != nullptr && std::holds_alternative<bool>(any->storage()) &&
                           std::get<bool>(any->storage())) ||
                          (db != nullptr && db->is_string() &&
                           (*db->as_string() == database || db->as_string()->empty()) &&
                           coll != nullptr && coll->is_string() && coll->as_string()->empty());
      const txn_recovery::Value* actions = d->Get("actions");
      if (covers && actions != nullptr && actions->as_array())
        for (const txn_recovery::Value& a : *actions->as_array())
          if (a.is_string()) granted.insert(*a.as_string());
    }
  std::vector<std::string> missing;
  for (const std::string& a : needed)
    if (!granted.count(a)) missing.push_back(a);
  return missing;
}

namespace {

// The server as it reports itself: its version, and standalone, replica set or mongos.
nlohmann::json ServerFacts(txn_recovery::MongoStore* store) {
  txn_recovery::Document build, hello;
  nlohmann::json facts = nlohmann::json::object();
  if (store->RunReadCommand("admin", txn_recovery::Document{{"buildInfo", 1}}, &build).ok())
    if (const txn_recovery::Value* v = build.Get("version"); v && v->is_string())
      facts["version"] = *v->as_string();
  if (store->RunReadCommand("admin", txn_recovery::Document{{"isMaster", 1}}, &hello).ok()) {
    const txn_recovery::Value* set = hello.Get("setName");
    const txn_recovery::Value* msg = hello.Get("msg");
    facts["topology"] = set && set->is_string() ? "replica set " + *set->as_string()
                        : msg && msg->is_string() && *msg->as_string() == "isdbgrid"
                            ? std::string("sharded (mongos)")
                            : std::string("standalone");
  }
  return facts;
}

}  // namespace

namespace {

// The privileges first: nothing is created for a user who could not drop it again.
int CheckPrivileges(const Config& config, txn_recovery::MongoStore* store, std::ostream& err) {
  txn_recovery::Document status;
  if (txn_recovery::Status s = store->RunReadCommand(
          "admin", txn_recovery::Document{{"connectionStatus", 1}, {"showPrivileges", true}},
          &status);
      !s.ok() && (s.IsUnavailable() || s.IsUnauthenticated())) {
    err << "txn-recoveryd: rehearse: " << s.ToString() << "\n";
    return ExitForStatus(s);
  }
  const std::vector<std::string> needed = {"find", "insert", "update", "remove", "dropCollection"};
  for (const auto& w : config.watches)
    if (auto missing = MissingActions(status, w.ns.database, needed); !missing.empty()) {
      err << "txn-recoveryd: rehearse: the user may not '" << missing.front()
          << "' on the collections of database " << w.ns.database
          << " (the rehearsal's scratch collections are created, written and dropped there); "
             "grant it (the readWrite role on "
          << w.ns.database << " has them all), then rehearse again. Nothing was created.\n";
      return kExitPermission;
    }
  return kExitOk;
}

int WatchCode(const txn_recovery::Status& s, const txn_recovery::RehearsalReport& r) {
  if (!s.ok()) return s.IsAborted() ? kExitIncomplete : ExitForStatus(s);
  if (!r.unsupported.empty() || !r.left_behind.empty()) return kExitIncomplete;
  return r.Passed() ? kExitOk : kExitRehearsalFailed;
}

nlohmann::json WatchJson(const txn_recovery::WatchSpec& w, const txn_recovery::Status& s,
                         const txn_recovery::RehearsalReport& r) {
  nlohmann::json scenarios = nlohmann::json::array();
  for (const auto& sc : r.scenarios)
    scenarios.push_back({{"scenario", sc.name},
                         {"expected", sc.expected},
                         {"reached", sc.reached},
                         {"passed", sc.passed},
                         {"violations", sc.violations}});
  return {{"name", w.name},
          {"namespace", w.ns.ToString()},
          {"profile", std::string(w.profile.kind())},
          {"scratch_prefix", r.prefix},
          {"created", r.created},
          {"left_behind", r.left_behind},
          {"unsupported", r.unsupported},
          {"error", s.ok() ? "" : s.ToString()},
          {"scenarios", scenarios},
          {"passed", s.ok() && r.Passed()},
          {"seconds", r.millis / 1000.0}};
}

void PrintWatch(const txn_recovery::WatchSpec& w, const txn_recovery::Status& s,
                const txn_recovery::RehearsalReport& r, std::ostream& out) {
  out << "watch " << w.name << " (" << w.ns.ToString() << ", profile " << w.profile.kind()
      << "): scratch collections " << r.prefix << "*, " << r.scenarios.size() << " scenarios, "
      << r.millis / 1000.0 << " s\n";
  if (!r.unsupported.empty()) out << "  NOT REHEARSED: " << r.unsupported << "\n";
  for (const auto& sc : r.scenarios) {
    out << "  " << (sc.passed ? "PASS" : "FAIL") << "  " << sc.name << " -> " << sc.reached
        << (sc.passed || sc.reached == sc.expected ? "" : " (expected " + sc.expected + ")")
        << "\n";
    for (const auto& v : sc.violations) out << "          " << v << "\n";
  }
  if (!s.ok()) out << "  ERROR " << s.ToString() << "\n";
  for (const auto& c : r.left_behind)
    out << "  MAY BE LEFT BEHIND (its drop failed): " << w.ns.database << "." << c
        << " (drop it: db.getCollection(\"" << c << "\").drop())\n";
}

}  // namespace

int RunRehearse(const Config& config, txn_recovery::MongoStore* store, bool json,
                const std::atomic<bool>* stop, std::ostream& out, std::ostream& err) {
  if (int rc = CheckPrivileges(config, store, err); rc != kExitOk) return rc;
  const nlohmann::json server = ServerFacts(store);
  int code = kExitOk;
  nlohmann::json watches = nlohmann::json::array();
  if (!json)
    out << "server: " << server.value("version", std::string("version not reported")) << ", "
        << server.value("topology", std::string("topology not reported")) << "; write concern "
        << config.mongodb.write_concern << ", read concern " << config.mongodb.read_concern << "\n";
  for (const auto& w : config.watches) {
    if (stop != nullptr && stop->load()) {
      code = std::max(code, static_cast<int>(kExitIncomplete));
      break;
    }
    txn_recovery::RehearseOptions ro;
    ro.sweep = ConfiguredSweepOptions(config);
    ro.sweep.lease.owner = "rehearsal";
    ro.stop = stop;
    txn_recovery::RehearsalReport r;
    const txn_recovery::Status s =
        txn_recovery::Rehearse(store, txn_recovery::Clock::Real(), w, ro, &r);
    // A failed invariant outranks the rest: it is what the command is for.
    const int watch_code = WatchCode(s, r);
    if (watch_code == kExitRehearsalFailed || code != kExitRehearsalFailed)
      code = std::max(code, watch_code);
    if (json)
      watches.push_back(WatchJson(w, s, r));
    else
      PrintWatch(w, s, r, out);
  }
  if (json)
    out << nlohmann::json{{"server", server},
                          {"write_concern", config.mongodb.write_concern},
                          {"read_concern", config.mongodb.read_concern},
                          {"watches", watches},
                          {"exit_code", code}}
               .dump(2)
        << "\n";
  return code;
}

}  // namespace txn_recovery::daemon
