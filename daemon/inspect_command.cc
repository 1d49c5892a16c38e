#include "inspect_command.h"

#include <nlohmann/json.hpp>

#include "exit_codes.h"
#include "index_check.h"
#include "txn_recovery/clock.h"
#include "txn_recovery/indexes.h"
#include "txn_recovery/sweeper.h"

namespace txn_recoveryd {

using txn_recovery::Status;

namespace {

int ExitFor(const Status& s) {
  if (s.IsUnauthenticated()) return kExitAuthentication;
  return s.IsUnavailable() ? kExitUnavailable : kExitIncomplete;
}

}  // namespace

int RunInspect(const Config& config, txn_recovery::Store* store, bool json, std::ostream& out) {
  txn_recovery::Sweeper sweeper(store, txn_recovery::Clock::Real(), {});
  nlohmann::json watches = nlohmann::json::array();
  int code = kExitOk;
  for (const auto& w : config.watches) {
    bool paused = false;
    txn_recovery::StuckReport report;
    Status s = txn_recovery::Sweeper::IsPaused(store, w, &paused);
    if (s.ok()) s = sweeper.Inspect(w, &report);
    nlohmann::json quarantined = nlohmann::json::array();
    if (s.ok()) {
      std::unique_ptr<txn_recovery::Cursor> cursor;
      s = store->Find(w.ns, txn_recovery::Filter().Exists(w.lease_field + ".quarantine"), {},
                      &cursor);
      txn_recovery::Document d;
      for (bool has = true; s.ok();) {
        s = cursor->Next(&d, &has);
        if (!s.ok() || !has) break;
        const auto* reason = d.GetPath(w.lease_field + ".quarantine.reason");
        const auto* state = d.GetPath(w.profile.state_field);
        quarantined.push_back(
            {{"_id", d.Get("_id")->ToString()},
             {"state",
              state ? (state->is_string() ? *state->as_string() : state->ToString()) : "<missing>"},
             {"reason", reason && reason->is_string() ? *reason->as_string() : "?"}});
      }
    }
    // Inspect never creates indexes (it only reads); it shows what is missing.
    nlohmann::json missing = nlohmann::json::array();
    std::vector<txn_recovery::IndexCheck> checks;
    if (s.ok()) s = txn_recovery::EnsureIndexes(store, w, /*create=*/false, &checks);
    for (const auto& c : checks)
      if (!c.present)
        missing.push_back({{"namespace", c.index.ns.ToString()},
                           {"keys", c.index.spec.ToString()},
                           {"needed_by", c.index.why}});
    if (!s.ok()) code = std::max(code, ExitFor(s));
    nlohmann::json stuck = nlohmann::json::object();
    for (const auto& [state, n] : report.stuck)
      stuck[std::string(txn_recovery::TxnStateName(state))] = n;
    nlohmann::json jw = {
        {"name", w.name},
        {"namespace", w.ns.ToString()},
        {"status", s.ok() ? "ok" : s.ToString()},
        {"paused", paused},
        {"stuck", stuck},
        {"oldest_stuck_age_seconds",
         report.oldest_age ? nlohmann::json(report.oldest_age->count() / 1000.0) : nullptr},
        {"quarantined", quarantined},
        {"missing_indexes", missing},
    };
    if (json) {
      watches.push_back(std::move(jw));
      continue;
    }
    out << "watch " << w.name << " (" << w.ns.ToString() << ")" << (paused ? " [PAUSED]" : "");
    if (!s.ok()) {
      out << ": ERROR " << s.ToString() << "\n";
      continue;
    }
    out << "\n  stuck (older than " << FormatDuration(w.thresholds.resume_after) << "):";
    if (report.stuck.empty()) out << " none";
    for (const auto& [state, n] : report.stuck)
      out << " " << txn_recovery::TxnStateName(state) << "=" << n;
    if (report.oldest_age) out << "; oldest " << report.oldest_age->count() / 1000 << "s";
    out << "\n  indexes: "
        << (missing.empty() ? std::string("all present")
                            : std::to_string(missing.size()) + " missing")
        << "\n";
    for (const auto& c : checks)
      if (!c.present) out << "    " << DescribeMissing(c) << "\n";
    out << "  quarantined: " << quarantined.size() << "\n";
    for (const auto& q : quarantined)
      out << "    _id=" << q["_id"].get<std::string>() << "  " << q["state"].get<std::string>()
          << "  " << q["reason"].get<std::string>() << "\n";
  }
  if (json) out << nlohmann::json{{"watches", watches}, {"exit_code", code}}.dump(2) << "\n";
  return code;
}

int RunPause(const Config& config, txn_recovery::Store* store, bool paused, std::ostream& out) {
  int code = kExitOk;
  std::string by = txn_recovery::MakeOwnerId();
  for (const auto& w : config.watches) {
    Status s = txn_recovery::Sweeper::SetPaused(store, w, paused, by);
    out << "watch " << w.name << ": "
        << (s.ok() ? (paused ? "paused" : "resumed") : "ERROR " + s.ToString()) << "\n";
    if (!s.ok()) code = std::max(code, ExitFor(s));
  }
  return code;
}

}  // namespace txn_recoveryd
