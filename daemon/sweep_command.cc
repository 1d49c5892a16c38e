#include "sweep_command.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <vector>

#include "exit_codes.h"
#include "index_check.h"
#include "logging.h"
#include "txn_recovery/clock.h"
#include "txn_recovery/sweeper.h"

namespace txn_recoveryd {

using txn_recovery::Action;
using txn_recovery::Outcome;
using txn_recovery::TxnReport;
using txn_recovery::WatchSummary;

namespace {

std::string IdText(const txn_recovery::Value& id) {
  return id.ToString();
}

std::string StateText(const std::optional<txn_recovery::TxnState>& s) {
  return s ? std::string(txn_recovery::TxnStateName(*s)) : std::string("?");
}

struct Line {
  std::string watch, id, before, after, action, outcome, detail;
};

Line ToLine(const TxnReport& r) {
  Line l;
  l.watch = r.watch;
  l.id = IdText(r.id);
  l.before = StateText(r.state_before);
  l.after = r.result.outcome == Outcome::kResolved
                ? std::string(txn_recovery::TxnStateName(r.result.final_state))
                : l.before;
  l.action = txn_recovery::ActionName(r.result.action);
  l.outcome = txn_recovery::OutcomeName(r.result.outcome);
  l.detail = r.result.detail;
  return l;
}

}  // namespace

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
      spdlog::warn(
          "transactions failing: {}; each is retried at the next sweep",
          r.result.status.IsUnauthenticated() ? "authentication failed" : "database unreachable");
    }
    LogFields f({{"watch", r.watch}, {"txn_id", r.id.ToString()}});
    spdlog::debug("failed: {}", r.result.detail);
    return;
  }
  LogFields f({{"watch", r.watch},
               {"txn_id", r.id.ToString()},
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
                    {"txn_id", f.transaction.ToString()},
                    {"participant", f.ns.ToString() + " " + f.participant.ToString()}});
  if (f.kind == txn_recovery::OrphanFinding::Kind::kLateWriteUndone)
    spdlog::info("orphan marker: {}: {}", txn_recovery::OrphanKindName(f.kind), f.detail);
  else
    spdlog::warn("orphan marker: {}: {}", txn_recovery::OrphanKindName(f.kind), f.detail);
}

int RunSweep(const Config& config, txn_recovery::Store* store, const SweepCommandOptions& options,
             std::ostream& out) {
  txn_recovery::SweepOptions so;
  so.dry_run = options.dry_run;
  so.workers = config.sweep.workers;
  so.batch_size = config.sweep.batch_size;
  so.lease.owner = txn_recovery::MakeOwnerId();
  so.lease.duration = config.sweep.lease_duration;
  so.max_failures = config.sweep.max_failures;
  txn_recovery::Sweeper sweeper(store, txn_recovery::Clock::Real(), so);

  nlohmann::json json_watches = nlohmann::json::array();
  bool unreachable = false, unauthenticated = false, incomplete = false;
  // An unreachable database shows in the sweep itself, with its exit code.
  (void)PrepareIndexes(config, store, options.dry_run);

  for (const auto& watch : config.watches) {
    std::vector<Line> lines;
    auto on_txn = [&](const TxnReport& r) {
      Line l = ToLine(r);
      LogTransaction(r);
      if (!options.verbose) return;
      if (options.json) {
        lines.push_back(std::move(l));
      } else {
        out << l.watch << "  _id=" << l.id << "  " << l.before << " -> " << l.after << "  "
            << l.action << "  " << l.outcome;
        if (!l.detail.empty()) out << "  (" << l.detail << ")";
        out << "\n";
      }
    };
    WatchSummary summary;
    spdlog::debug("sweeping watch {} ({})", watch.name, watch.ns.ToString());
    txn_recovery::Status s = sweeper.SweepWatch(watch, on_txn, &summary);
    if (!s.ok()) {
      LogFields f({{"watch", watch.name}});
      spdlog::error("sweep failed: {}", s.ToString());
      if (s.IsUnavailable()) unreachable = true;
      if (s.IsUnauthenticated()) unauthenticated = true;
      incomplete = true;
    }
    if (summary.failed > 0 || summary.quarantined_total > 0 ||
        (options.dry_run && summary.quarantined > 0))
      incomplete = true;
    if (options.dry_run && summary.counts.count(Action::kQuarantine)) incomplete = true;

    // The orphan scan, after the sweep has resolved what it could.
    txn_recovery::OrphanSummary orphans;
    std::vector<txn_recovery::OrphanFinding> findings;
    txn_recovery::Status orphan_status;
    const bool scan = options.orphans && !summary.paused && !s.IsUnavailable();
    if (scan) {
      txn_recovery::OrphanOptions oo;
      oo.dry_run = options.dry_run;
      oo.lease = so.lease;
      oo.batch_size = config.sweep.batch_size;
      oo.marker_cap = config.sweep.marker_cap;
      orphan_status = txn_recovery::ScanOrphans(
          store, txn_recovery::Clock::Real(), watch, oo,
          [&](const txn_recovery::OrphanFinding& f) {
            LogOrphan(watch.name, f);
            findings.push_back(f);
          },
          &orphans);
      if (!orphan_status.ok()) {
        LogFields f({{"watch", watch.name}});
        spdlog::error("orphan scan failed: {}", orphan_status.ToString());
        if (orphan_status.IsUnavailable()) unreachable = true;
        if (orphan_status.IsUnauthenticated()) unauthenticated = true;
        incomplete = true;
      }
      // Anything reported but not undone needs an operator.
      if (orphans.missing_transactions + orphans.foreign_markers + orphans.crowded_participants +
              orphans.quarantined + orphans.failed >
          0)
        incomplete = true;
      if (options.dry_run && orphans.late_writes_undone > 0) incomplete = true;
    }

    if (options.json) {
      nlohmann::json actions = nlohmann::json::object();
      for (const auto& [action, outcomes] : summary.counts) {
        nlohmann::json o = nlohmann::json::object();
        for (const auto& [outcome, n] : outcomes)
          o[std::string(txn_recovery::OutcomeName(outcome))] = n;
        actions[std::string(txn_recovery::ActionName(action))] = o;
      }
      nlohmann::json w = {
          {"name", watch.name},
          {"namespace", watch.ns.ToString()},
          {"status", s.ok() ? "ok" : s.ToString()},
          {"paused", summary.paused},
          {"examined", summary.examined},
          {"resolved", summary.resolved},
          {"busy", summary.busy},
          {"failed", summary.failed},
          {"quarantined", summary.quarantined},
          {"quarantined_total", summary.quarantined_total},
          {"late_writes_undone", summary.late_writes_undone},
          {"finished_deleted", summary.finished_deleted},
          {"finished_archived", summary.finished_archived},
          {"actions", actions},
      };
      if (scan) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& f : findings)
          list.push_back({{"kind", std::string(txn_recovery::OrphanKindName(f.kind))},
                          {"collection", f.ns.ToString()},
                          {"participant", f.participant.ToString()},
                          {"transaction", f.transaction.ToString()},
                          {"detail", f.detail}});
        w["orphans"] = {{"status", orphan_status.ok() ? "ok" : orphan_status.ToString()},
                        {"participants_scanned", orphans.participants_scanned},
                        {"markers_checked", orphans.markers_checked},
                        {"in_flight", orphans.in_flight},
                        {"late_writes_undone", orphans.late_writes_undone},
                        {"missing_transactions", orphans.missing_transactions},
                        {"foreign_markers", orphans.foreign_markers},
                        {"crowded_participants", orphans.crowded_participants},
                        {"failed", orphans.failed},
                        {"findings", list}};
      }
      if (options.verbose) {
        nlohmann::json txns = nlohmann::json::array();
        for (const auto& l : lines)
          txns.push_back({{"_id", l.id},
                          {"before", l.before},
                          {"after", l.after},
                          {"action", l.action},
                          {"outcome", l.outcome},
                          {"detail", l.detail}});
        w["transactions"] = txns;
      }
      json_watches.push_back(std::move(w));
    } else {
      out << "watch " << watch.name << " (" << watch.ns.ToString() << ")"
          << (options.dry_run ? " [dry run]" : "") << ": ";
      if (summary.paused) {
        out << "PAUSED: nothing done (txn-recoveryd resume turns the switch off)\n";
        continue;
      }
      if (!s.ok()) out << "ERROR " << s.ToString() << "; ";
      out << "examined " << summary.examined << ", resolved " << summary.resolved << ", busy "
          << summary.busy << ", failed " << summary.failed << ", quarantined "
          << summary.quarantined << " (" << summary.quarantined_total << " in total)"
          << ", late writes undone " << summary.late_writes_undone;
      if (watch.retention.enabled())
        out << ", finished removed " << summary.finished_deleted + summary.finished_archived << " ("
            << summary.finished_archived << " archived)";
      out << "\n";
      for (const auto& [action, outcomes] : summary.counts) {
        out << "  " << txn_recovery::ActionName(action) << ":";
        for (const auto& [outcome, n] : outcomes)
          out << " " << txn_recovery::OutcomeName(outcome) << "=" << n;
        out << "\n";
      }
      if (scan) {
        out << "  orphans: " << orphans.participants_scanned << " marked participants, "
            << orphans.markers_checked << " markers (" << orphans.in_flight << " in flight), "
            << (options.dry_run ? "late writes to undo " : "late writes undone ")
            << orphans.late_writes_undone << ", missing transactions "
            << orphans.missing_transactions << ", foreign markers " << orphans.foreign_markers
            << ", over the marker cap " << orphans.crowded_participants;
        if (!orphan_status.ok()) out << "; ERROR " << orphan_status.ToString();
        out << "\n";
        for (const auto& f : findings)
          out << "    " << txn_recovery::OrphanKindName(f.kind) << "  " << f.ns.ToString()
              << " _id=" << f.participant.ToString()
              << (f.transaction.is_null() ? "" : "  txn=" + f.transaction.ToString()) << "  "
              << f.detail << "\n";
      }
    }
  }

  int code = unauthenticated ? kExitAuthentication
             : unreachable   ? kExitUnavailable
             : incomplete    ? kExitIncomplete
                             : kExitOk;
  txn_recovery::Store::WireStats wire;
  const bool has_wire = store->GetWireStats(&wire);
  if (options.json) {
    nlohmann::json doc = {{"version", TXN_RECOVERYD_VERSION},
                          {"dry_run", options.dry_run},
                          {"watches", json_watches},
                          {"exit_code", code}};
    // What this process exchanged with the server (index checks included): what a sweep
    // costs the database, independent of how fast the server is.
    if (has_wire)
      doc["wire"] = {{"round_trips", wire.round_trips},
                     {"documents_read", wire.documents_returned}};
    out << doc.dump(2) << "\n";
  } else if (has_wire) {
    spdlog::info("{} round trips to the database, {} documents read", wire.round_trips,
                 wire.documents_returned);
  }
  return code;
}

}  // namespace txn_recoveryd
