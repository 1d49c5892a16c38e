#include "rehearse_command.h"

#include <nlohmann/json.hpp>

#include "exit_codes.h"
#include "sweep_command.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/tools/rehearse.h"

namespace txn_recoveryd {

int RunRehearse(const Config& config, txn_recovery::Store* store, bool json,
                const std::atomic<bool>* stop, std::ostream& out) {
  int code = kExitOk;
  nlohmann::json watches = nlohmann::json::array();
  for (const auto& w : config.watches) {
    txn_recovery::RehearseOptions ro;
    ro.sweep = SweepOptionsFor(config);
    ro.sweep.lease.owner = "rehearsal";
    ro.stop = stop;
    txn_recovery::RehearsalReport r;
    const txn_recovery::Status s =
        txn_recovery::Rehearse(store, txn_recovery::Clock::Real(), w, ro, &r);
    int watch_code = kExitOk;
    if (!s.ok())
      watch_code = s.IsAborted() ? kExitIncomplete : ExitForStatus(s);
    else if (!r.unsupported.empty() || !r.left_behind.empty())
      watch_code = kExitIncomplete;
    else if (!r.Passed())
      watch_code = kExitRehearsalFailed;
    // A failed invariant outranks the rest: it is what the command is for.
    if (watch_code == kExitRehearsalFailed || code != kExitRehearsalFailed)
      code = std::max(code, watch_code);
    if (json) {
      nlohmann::json scenarios = nlohmann::json::array();
      for (const auto& sc : r.scenarios)
        scenarios.push_back({{"scenario", sc.name},
                             {"expected", sc.expected},
                             {"reached", sc.reached},
                             {"passed", sc.passed},
                             {"violations", sc.violations}});
      watches.push_back({{"name", w.name},
                         {"namespace", w.ns.ToString()},
                         {"profile", std::string(w.profile.kind())},
                         {"scratch_prefix", r.prefix},
                         {"created", r.created},
                         {"left_behind", r.left_behind},
                         {"unsupported", r.unsupported},
                         {"error", s.ok() ? "" : s.ToString()},
                         {"scenarios", scenarios},
                         {"passed", s.ok() && r.Passed()},
                         {"seconds", r.millis / 1000.0}});
      continue;
    }
    out << "watch " << w.name << " (" << w.ns.ToString() << ", profile " << w.profile.kind()
        << "): scratch collections " << r.prefix << "*, " << r.scenarios.size() << " scenarios, "
        << r.millis / 1000.0 << " s\n";
    if (!r.unsupported.empty()) out << "  NOT REHEARSED: " << r.unsupported << "\n";
    for (const auto& sc : r.scenarios) {
      out << "  " << (sc.passed ? "PASS" : "FAIL") << "  " << sc.name << " -> " << sc.reached
          << (sc.reached == sc.expected ? "" : " (expected " + sc.expected + ")") << "\n";
      for (const auto& v : sc.violations) out << "          " << v << "\n";
    }
    if (!s.ok()) out << "  ERROR " << s.ToString() << "\n";
    for (const auto& c : r.left_behind)
      out << "  MAY BE LEFT BEHIND (its drop failed): " << w.ns.database << "." << c
          << " (drop it: db.getCollection(\"" << c << "\").drop())\n";
  }
  if (json)
    out << nlohmann::json{{"write_concern", config.mongodb.write_concern},
                          {"read_concern", config.mongodb.read_concern},
                          {"watches", watches},
                          {"exit_code", code}}
               .dump(2)
        << "\n";
  return code;
}

}  // namespace txn_recoveryd
