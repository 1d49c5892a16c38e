#include "daemon/commands/sweep_command.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <sstream>
#include <vector>

#include "daemon/base/exit_codes.h"
#include "daemon/base/ids.h"
#include "daemon/commands/fleet_view.h"
#include "daemon/commands/index_check.h"
#include "daemon/logging/logging.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/base/duration.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/tools/retention.h"

namespace txn_recovery::daemon {

using txn_recovery::Action;
using txn_recovery::Outcome;
using txn_recovery::TxnReport;
using txn_recovery::TxnState;
using txn_recovery::WatchSummary;

namespace {

std::string StateText(const std::optional<TxnState>& s) {
  return s ? std::string(txn_recovery::TxnStateName(*s)) : std::string("?");
}

}  // namespace

std::string StateAfter(const TxnReport& r) {
  switch (r.result.outcome) {
    case Outcome::kResolved:
    // A dry run is the execution rehearsed, every state move taken as matched
    // (StateMachine::RehearseBatch): the state it reached is where the planned action would
    // take the transaction, a resume that would turn into a roll back included.
    case Outcome::kPlanned:
      return std::string(txn_recovery::TxnStateName(r.result.final_state));
    default:
      return StateText(r.state_before);
  }
}

void LogTransaction(const TxnReport& r) {
  if (r.result.outcome == Outcome::kFailed && r.result.status.IsUnavailable()) {
    // The database went away (or refused the login) under the sweep: every transaction in
    // hand fails alike, and is simply retried at the next sweep. One warning per watch and
    // action, identical from one transaction to the next so that the logger's repeat
    // window keeps an outage to a line a minute like every other warning; the transaction
    // and the driver's message at debug level.
    {
      LogFields f(
          {{"watch", r.watch}, {"action", std::string(txn_recovery::ActionName(r.result.action))}});
      spdlog::warn("transactions failing: {}; each is retried at the next sweep",
                   r.result.status.IsUnauthenticated() ? "authentication failed"
                   : r.result.status.IsPermissionDenied()
                       ? "permission denied (a privilege is missing)"
                       : "database unreachable");
    }
    LogFields f({{"watch", r.watch}, IdField("txn_id", r.id)});
    spdlog::debug("failed: {}", r.result.detail);
    return;
  }
  LogFields f({{"watch", r.watch},
               IdField("txn_id", r.id),
               {"action", std::string(txn_recovery::ActionName(r.result.action))}});
  switch (r.result.outcome) {
    case Outcome::kFailed:
      spdlog::warn("failed: {}", r.result.detail);
      break;
    case Outcome::kQuarantined:
      spdlog::warn("quarantined: {}", r.result.detail);
      break;
    case Outcome::kResolved:
      spdlog::info("resolved: {} -> {}{}{}", StateText(r.state_before),
                   txn_recovery::TxnStateName(r.result.final_state),
                   r.result.detail.empty() ? "" : ": ", r.result.detail);
      break;
    case Outcome::kBusy:
      spdlog::debug("busy: {}", r.result.detail);
      break;
    default:
      break;
  }
}

void LogOrphan(const std::string& watch, const txn_recovery::OrphanFinding& f) {
  LogFields fields({{"watch", watch},
                    IdField("txn_id", f.transaction),
                    {"participant", f.ns.ToString() + " " + IdText(f.participant)}});
  if (f.kind == txn_recovery::OrphanFinding::Kind::kLateWriteUndone)
    spdlog::info("orphan marker: {}: {}", txn_recovery::OrphanKindName(f.kind), f.detail);
  else
    spdlog::warn("orphan marker: {}: {}", txn_recovery::OrphanKindName(f.kind), f.detail);
}

namespace {

// What one watch's pass produced.
struct WatchRun {
  const txn_recovery::WatchSpec* watch = nullptr;
  WatchSummary summary;
  txn_recovery::Status status;
  // Some transaction failed because the database refused the daemon's credentials (exit
  // 77) or a privilege (exit 79): the deployment's to fix, reported as such.
  bool unauthenticated = false;
  bool permission_denied = false;
  // Some transaction failed because the database went away under it (a failover, a write
  // whose reply never came): an outage, reported as such (exit 69) and retried.
  bool unreachable = false;
  bool scanned = false;                      // the orphan scan ran
  std::optional<txn_recovery::Share> share;  // --share
  txn_recovery::OrphanSummary orphans;
  std::vector<txn_recovery::OrphanFinding> findings;
  txn_recovery::Status orphan_status;
};

// The JSON document is written as it goes, so that a dry run over a million stuck
// transactions lists them all without holding them: `{"version", "dry_run", "watches": [
// {"name", "namespace", "transactions": [...], <summary>}, ...], "exit_code", "wire"}`.
// Each transaction is one line; the rest is indented as nlohmann's dump(2) would.
class JsonReport {
 public:
  explicit JsonReport(std::ostream& out) : out_(out) {}

  void Begin(bool dry_run) {
    out_ << "{\n  \"version\": " << nlohmann::json(TXN_RECOVERYD_VERSION).dump()
         << ",\n  \"dry_run\": " << (dry_run ? "true" : "false") << ",\n  \"watches\": [";
  }
  void BeginWatch(const txn_recovery::WatchSpec& w, bool list) {
    out_ << (watches_++ ? "," : "") << "\n    {\n      \"name\": " << Dump(w.name)
         << ",\n      \"namespace\": " << Dump(w.ns.ToString()) << ",";
    listing_ = list;
    transactions_ = 0;
    if (list) out_ << "\n      \"transactions\": [";
  }
  void Transaction(const nlohmann::json& t) {
    out_ << (transactions_++ ? "," : "") << "\n        " << Dump(t);
  }
  // The watch's remaining members, from an object.
  void EndWatch(const nlohmann::json& rest) {
    if (listing_) out_ << (transactions_ ? "\n      " : "") << "],";
    std::string body = rest.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    // "{\n  a,\n  b\n}" -> the members, each line indented to the watch's depth.
    body = body.substr(2, body.size() - 4);
    std::string indented = "\n    ";
    for (char c : body) {
      indented += c;
      if (c == '\n') indented += "    ";
    }
    out_ << indented << "\n    }";
  }
  void End(const nlohmann::json& tail) {
    out_ << (watches_ ? "\n  " : "") << "]";
    for (const auto& [key, value] : tail.items()) {
      std::string v = value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
      std::string indented;
      for (char c : v) {
        indented += c;
        if (c == '\n') indented += "  ";
      }
      out_ << ",\n  " << Dump(key) << ": " << indented;
    }
    out_ << "\n}\n";
  }

 private:
  static std::string Dump(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::ostream& out_;
  int watches_ = 0;
  int transactions_ = 0;
  bool listing_ = false;
};

nlohmann::json TransactionJson(const TxnReport& r) {
  return {{"_id", IdJson(r.id)},
          {"before", StateText(r.state_before)},
          {"after", StateAfter(r)},
          {"action", std::string(txn_recovery::ActionName(r.result.action))},
          {"outcome", std::string(txn_recovery::OutcomeName(r.result.outcome))},
          {"detail", r.result.detail}};
}

void PrintTransaction(const TxnReport& r, const FleetView& fleet, std::ostream& out) {
  out << r.watch << "  _id=" << IdText(r.id) << "  " << StateText(r.state_before) << " -> "
      << StateAfter(r) << "  " << txn_recovery::ActionName(r.result.action) << "  "
      << txn_recovery::OutcomeName(r.result.outcome);
  if (!r.result.detail.empty()) out << "  (" << r.result.detail << ")";
  if (fleet.on) out << "  [fleet: " << FleetText(fleet, r.id) << "]";
  out << "\n";
}

// The configured options with the command line's: a dry run, a share.
txn_recovery::SweepOptions CommandSweepOptions(const Config& config,
                                               const SweepCommandOptions& command) {
  txn_recovery::SweepOptions options = ConfiguredSweepOptions(config);
  options.dry_run = command.dry_run;
  options.lease.owner = txn_recovery::MakeOwnerId();
  options.share = command.share;
  return options;
}

// Sweeps one watch; each transaction is logged and, when listed, printed as it comes.
// Listed: every one with -v; in a dry run every one, since what it would do is the point.
// `reach` is how the database answered before the first watch: when it did not, the watch
// reports that without waiting for the database again.
void SweepOne(txn_recovery::Sweeper& sweeper, const txn_recovery::WatchSpec& watch,
              const SweepCommandOptions& options, const txn_recovery::Status& reach,
              const Config& config, txn_recovery::Store* store, JsonReport* json, std::ostream& out,
              WatchRun* run) {
  const bool list = options.verbose || options.dry_run;
  // Each transaction listed with its bucket and the live member whose share holds it: this
  // one-shot sweep is no member and acts on all it lists, but the operator sees which
  // `run` would have driven it (and, when the fleet is stuck, which member is behind).
  const FleetView fleet = list && reach.ok() ? ReadFleetView(config, store, watch) : FleetView{};
  auto on_txn = [&](const TxnReport& r) {
    LogTransaction(r);
    if (r.result.status.IsUnauthenticated()) run->unauthenticated = true;
    if (r.result.status.IsPermissionDenied()) run->permission_denied = true;
    if (r.result.outcome == Outcome::kFailed && r.result.status.IsUnavailable())
      run->unreachable = true;
    if (!list) return;
    if (json != nullptr) {
      nlohmann::json j = TransactionJson(r);
      if (fleet.on) j["fleet"] = FleetJson(fleet, r.id);
      json->Transaction(j);
    } else {
      PrintTransaction(r, fleet, out);
    }
  };
  if (json != nullptr) json->BeginWatch(watch, list);
  spdlog::debug("sweeping watch {} ({})", watch.name, watch.ns.ToString());
  run->watch = &watch;
  run->status =
      reach.ok() ? txn_recovery::SweepAndRetain(&sweeper, watch, on_txn, &run->summary) : reach;
  if (!run->status.ok()) {
    LogFields f({{"watch", watch.name}});
    spdlog::error("sweep failed: {}", run->status.ToString());
  }
}

// The orphan scan of one watch, after its sweep has resolved what it could.
void ScanOne(const Config& config, txn_recovery::Store* store, const SweepCommandOptions& options,
             const txn_recovery::LeaseOptions& lease, WatchRun* run) {
  if (!options.orphans || run->summary.paused || run->status.IsUnavailable()) return;
  const auto& watch = *run->watch;
  txn_recovery::OrphanOptions orphan_options = OrphanOptionsFor(config, lease);
  orphan_options.dry_run = options.dry_run;
  run->scanned = true;
  run->orphan_status = txn_recovery::ScanOrphans(
      store, txn_recovery::Clock::Real(), watch, orphan_options,
      [&](const txn_recovery::OrphanFinding& f) {
        LogOrphan(watch.name, f);
        run->findings.push_back(f);
      },
      &run->orphans);
  if (!run->orphan_status.ok()) {
    LogFields f({{"watch", watch.name}});
    spdlog::error("orphan scan failed: {}", run->orphan_status.ToString());
  }
}

// What a watch's pass means for the exit code: the login refused (77), a privilege missing
// (79), the database unreachable (69), or something an operator must look at (1).
struct Verdict {
  bool unauthenticated = false;
  bool permission_denied = false;
  bool unreachable = false;
  bool incomplete = false;
};

void Judge(const WatchRun& run, bool dry_run, Verdict* v) {
  const auto& s = run.summary;
  if (!run.status.ok()) {
    v->incomplete = true;
    if (run.status.IsUnavailable()) v->unreachable = true;
    if (run.status.IsUnauthenticated()) v->unauthenticated = true;
    if (run.status.IsPermissionDenied()) v->permission_denied = true;
  }
  if (run.unauthenticated) v->unauthenticated = true;
  if (run.permission_denied) v->permission_denied = true;
  if (run.unreachable) v->unreachable = true;
  if (s.failed > 0 || s.quarantined_total > 0) v->incomplete = true;
  // A dry run that would quarantine something reports it as the real sweep would.
  if (dry_run && (s.quarantined > 0 || s.counts.count(Action::kQuarantine))) v->incomplete = true;
  if (!run.scanned) return;
  if (!run.orphan_status.ok()) {
    v->incomplete = true;
    if (run.orphan_status.IsUnavailable()) v->unreachable = true;
    if (run.orphan_status.IsUnauthenticated()) v->unauthenticated = true;
    if (run.orphan_status.IsPermissionDenied()) v->permission_denied = true;
  }
  const auto& o = run.orphans;
  // Anything reported but not undone needs an operator.
  if (o.missing_transactions + o.foreign_markers + o.crowded_participants + o.quarantined +
          o.failed >
      0)
    v->incomplete = true;
  if (dry_run && o.late_writes_undone > 0) v->incomplete = true;
}

nlohmann::json OrphansJson(const WatchRun& run) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : run.findings)
    list.push_back({{"kind", std::string(txn_recovery::OrphanKindName(f.kind))},
                    {"collection", f.ns.ToString()},
                    {"participant", IdJson(f.participant)},
                    {"transaction", IdJson(f.transaction)},
                    {"detail", f.detail}});
  const auto& o = run.orphans;
  return {{"status", run.orphan_status.ok() ? "ok" : run.orphan_status.ToString()},
          {"participants_scanned", o.participants_scanned},
          {"markers_checked", o.markers_checked},
          {"in_flight", o.in_flight},
          {"late_writes_undone", o.late_writes_undone},
          {"missing_transactions", o.missing_transactions},
          {"foreign_markers", o.foreign_markers},
          {"crowded_participants", o.crowded_participants},
          {"traces_removed", o.traces_removed},
          {"failed", o.failed},
          {"findings", list}};
}

// The watch's summary members of the JSON report (its name, namespace and transactions
// are written before).
nlohmann::json SummaryJson(const WatchRun& run) {
  const auto& s = run.summary;
  nlohmann::json actions = nlohmann::json::object();
  for (const auto& [action, outcomes] : s.counts) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [outcome, n] : outcomes)
      o[std::string(txn_recovery::OutcomeName(outcome))] = n;
    actions[std::string(txn_recovery::ActionName(action))] = o;
  }
  nlohmann::json w = {
      {"status", run.status.ok() ? "ok" : run.status.ToString()},
      {"paused", s.paused},
      {"examined", s.examined},
      {"resolved", s.resolved},
      {"busy", s.busy},
      {"failed", s.failed},
      {"quarantined", s.quarantined},
      {"quarantined_total", s.quarantined_total},
      {"late_writes_undone", s.late_writes_undone},
      {"first_sightings", s.first_sightings},
      {"finished_deleted", s.finished_deleted},
      {"finished_archived", s.finished_archived},
      {"pace_waited_seconds", std::chrono::duration<double>(s.pace_waited).count()},
      {"actions", actions},
  };
  if (run.share) w["outside_share"] = s.outside_share;
  if (run.scanned) w["orphans"] = OrphansJson(run);
  return w;
}

void PrintOrphans(const WatchRun& run, bool dry_run, std::ostream& out) {
  const auto& o = run.orphans;
  out << "  orphans: " << o.participants_scanned << " marked participants, " << o.markers_checked
      << " markers (" << o.in_flight << " in flight), "
      << (dry_run ? "late writes to undo " : "late writes undone ") << o.late_writes_undone
      << ", missing transactions " << o.missing_transactions << ", foreign markers "
      << o.foreign_markers << ", over the marker cap " << o.crowded_participants;
  if (!run.orphan_status.ok()) out << "; ERROR " << run.orphan_status.ToString();
  out << "\n";
  for (const auto& f : run.findings)
    out << "    " << txn_recovery::OrphanKindName(f.kind) << "  " << f.ns.ToString()
        << " _id=" << IdText(f.participant)
        << (f.transaction.is_null() ? "" : "  txn=" + IdText(f.transaction)) << "  " << f.detail
        << "\n";
}

void PrintSummary(const WatchRun& run, bool dry_run, std::ostream& out) {
  const auto& watch = *run.watch;
  const auto& s = run.summary;
  out << "watch " << watch.name << " (" << watch.ns.ToString() << ")"
      << (dry_run ? " [dry run]" : "") << ": ";
  if (s.paused) {
    out << "PAUSED: nothing done (txn-recoveryd resume turns the switch off)\n";
    return;
  }
  if (!run.status.ok()) out << "ERROR " << run.status.ToString() << "; ";
  out << "examined " << s.examined << ", resolved " << s.resolved << ", busy " << s.busy
      << ", failed " << s.failed << ", quarantined " << s.quarantined << " (" << s.quarantined_total
      << " in total)"
      << ", late writes undone " << s.late_writes_undone;
  if (s.first_sightings > 0)
    out << ", first sightings " << (dry_run ? "to stamp " : "stamped ") << s.first_sightings;
  if (watch.retention.enabled())
    out << ", finished removed " << s.finished_deleted + s.finished_archived << " ("
        << s.finished_archived << " archived)";
  if (run.share)
    out << ", left to the other shares " << s.outside_share << " (share " << run.share->self << "/"
        << run.share->count << ")";
  if (s.pace_waited.count() > 0)
    out << ", held back by sweep.pace " << txn_recovery::FormatDuration(s.pace_waited);
  out << "\n";
  for (const auto& [action, outcomes] : s.counts) {
    out << "  " << txn_recovery::ActionName(action) << ":";
    for (const auto& [outcome, n] : outcomes)
      out << " " << txn_recovery::OutcomeName(outcome) << "=" << n;
    out << "\n";
  }
  if (run.scanned) PrintOrphans(run, dry_run, out);
}

}  // namespace

std::string ParseShare(const std::string& text, txn_recovery::Share* share) {
  const std::size_t slash = text.find('/');
  auto number = [](const std::string& digits, std::uint32_t* n) {
    if (digits.empty() || digits.size() > 3 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return false;
    *n = static_cast<std::uint32_t>(std::stoul(digits));
    return true;
  };
  std::uint32_t k = 0, n = 0;
  if (slash == std::string::npos || !number(text.substr(0, slash), &k) ||
      !number(text.substr(slash + 1), &n))
    return "--share takes K/N, two whole numbers (e.g. 0/4), not \"" + text + "\"";
  if (n < 1 || n > txn_recovery::kFleetBuckets)
    return "--share " + text + ": N must be 1 to " + std::to_string(txn_recovery::kFleetBuckets);
  if (k >= n) return "--share " + text + ": K must be 0 to N-1 (" + std::to_string(n - 1) + ")";
  *share = txn_recovery::Share{k, n};
  return "";
}

txn_recovery::SweepOptions ConfiguredSweepOptions(const Config& config) {
  txn_recovery::SweepOptions options;
  options.workers = config.sweep.workers;
  options.batch_size = config.sweep.batch_size;
  options.bulk_size = config.sweep.bulk_size;
  options.lease = LeaseOptionsFor(config);
  options.max_failures = config.sweep.max_failures;
  if (config.sweep.pace > 0)
    options.pace = std::make_shared<txn_recovery::Pace>(txn_recovery::Clock::Real(),
                                                        static_cast<double>(config.sweep.pace));
  return options;
}

int RunSweep(const Config& config, txn_recovery::Store* store, const SweepCommandOptions& options,
             std::ostream& out) {
  txn_recovery::SweepOptions sweep_options = CommandSweepOptions(config, options);
  txn_recovery::Sweeper sweeper(store, txn_recovery::Clock::Real(), sweep_options);
  // One wait for a database that does not answer, not one for the index check and one for
  // each watch: every watch reports it, with its exit code. The index check is the first
  // thing that reaches the database, and returns Unavailable at once when it cannot (OK
  // otherwise, whatever it found).
  const txn_recovery::Status reach = PrepareIndexes(config, store, options.dry_run);

  std::optional<JsonReport> json;
  if (options.json) {
    json.emplace(out);
    json->Begin(options.dry_run);
  }
  Verdict verdict;
  for (const auto& watch : config.watches) {
    WatchRun run;
    run.share = options.share;
    SweepOne(sweeper, watch, options, reach, config, store, json ? &*json : nullptr, out, &run);
    ScanOne(config, store, options, sweep_options.lease, &run);
    Judge(run, options.dry_run, &verdict);
    if (options.figures != nullptr) {
      const auto& s = run.summary;
      options.figures->watches.push_back({watch.name, run.status.ok() && run.orphan_status.ok(),
                                          s.resolved, s.quarantined, s.failed, s.busy});
    }
    if (json) {
      json->EndWatch(SummaryJson(run));
    } else {
      PrintSummary(run, options.dry_run, out);
    }
  }

  const int code = verdict.unauthenticated     ? kExitAuthentication
                   : verdict.permission_denied ? kExitPermission
                   : verdict.unreachable       ? kExitUnavailable
                   : verdict.incomplete        ? kExitIncomplete
                                               : kExitOk;
  txn_recovery::Store::WireStats wire;
  const bool has_wire = store->GetWireStats(&wire);
  if (json) {
    nlohmann::json tail = {{"exit_code", code}};
    // What this process exchanged with the server (index checks included): what a sweep
    // costs the database, independent of how fast the server is.
    if (has_wire)
      tail["wire"] = {{"round_trips", wire.round_trips},
                      {"documents_read", wire.documents_returned}};
    json->End(tail);
  } else if (has_wire) {
    spdlog::info("{} round trips to the database, {} documents read", wire.round_trips,
                 wire.documents_returned);
  }
  return code;
}

}  // namespace txn_recovery::daemon
