#include "daemon/commands/transaction_commands.h"

#include <nlohmann/json.hpp>

#include <iostream>

#include "daemon/base/exit_codes.h"
#include "daemon/base/ids.h"
#include "daemon/commands/fleet_view.h"
#include "daemon/commands/sweep_command.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/engine/one_transaction.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;
using txn_recovery::Value;
using txn_recovery::WatchSpec;

namespace {

// The watch and the _id the operator means: the candidates of the text typed, looked up in
// every configured watch (--watch has narrowed the list already). Found exactly once, or
// the exit code and the message on stderr.
struct Located {
  const WatchSpec* watch = nullptr;
  Value id;
};

int Locate(const Config& config, txn_recovery::Store* store, const std::string& text,
           Located* where) {
  std::string problem;
  const std::vector<Value> candidates = IdCandidates(text, &problem);
  if (candidates.empty()) {
    std::cerr << "txn-recoveryd: " << problem << "\n";
    return kExitUsage;
  }
  std::vector<Located> found;
  for (const WatchSpec& w : config.watches) {
    for (const Value& id : candidates) {
      std::optional<txn_recovery::Document> doc;
      if (Status s = store->FindOne(w.ns, txn_recovery::Filter().Eq("_id", id), &doc); !s.ok()) {
        std::cerr << "txn-recoveryd: watch " << w.name << ": " << s.ToString() << "\n";
        return ExitForStatus(s);
      }
      if (doc) found.push_back({&w, id});
    }
  }
  if (found.empty()) {
    std::cerr << "txn-recoveryd: no transaction with _id " << text << " in "
              << (config.watches.size() == 1 ? "watch " + config.watches.front().name
                                             : "any of the watches")
              << "\n";
    return kExitIncomplete;
  }
  if (found.size() > 1) {
    std::cerr << "txn-recoveryd: _id " << text << " names several transactions:";
    for (const auto& f : found)
      std::cerr << " " << IdJson(f.id).dump() << " in watch " << f.watch->name << ";";
    std::cerr << " name one with --watch NAME and the _id as JSON (\"abc\", 42, "
                 "{\"$oid\": \"...\"})\n";
    return kExitUsage;
  }
  *where = found.front();
  return kExitOk;
}

txn_recovery::LeaseOptions LeaseFor(const Config& config) {
  txn_recovery::LeaseOptions lease = LeaseOptionsFor(config);
  lease.owner = txn_recovery::MakeOwnerId();
  return lease;
}

nlohmann::json WritesJson(const std::vector<txn_recovery::PlannedWrite>& writes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : writes) {
    nlohmann::json j = {{"what", w.what}, {"namespace", w.ns.ToString()}};
    if (!w.filter.all().empty() || !w.filter.any_of().empty()) {
      j["filter"] = w.filter.ToString();
      j["update"] = w.update ? w.update->ToString() : "(delete)";
      j["many"] = w.many;
    }
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json RecordJson(const txn_recovery::Explanation& e) {
  nlohmann::json j = nlohmann::json::object();
  if (e.record.lease)
    j["lease"] = {{"owner", e.record.lease->owner},
                  {"expires", IdJson(Value(e.record.lease->expires))}};
  if (e.quarantine) j["quarantine"] = {{"reason", e.quarantine->reason}};
  if (e.record.failures > 0) j["failures"] = e.record.failures;
  if (e.record.last_error) j["last_error"] = *e.record.last_error;
  if (e.record.outcome) j["outcome"] = *e.record.outcome;
  return j;
}

void PrintFleet(const FleetView& v, const Value& id, std::ostream& out) {
  if (!v.on) return;
  out << "  fleet: " << FleetText(v, id);
  if (v.status.ok() && !v.sweepers.empty()) out << "; a share is not permission: the claim decides";
  out << "\n";
}

void PrintExplanation(const WatchSpec& w, const Value& id, const txn_recovery::Explanation& e,
                      const FleetView& fleet, std::ostream& out) {
  using txn_recovery::ActionName;
  out << "watch " << w.name << " (" << w.ns.ToString() << ")  _id=" << IdText(id)
      << (e.paused ? "  [watch PAUSED]" : "") << "\n";
  if (!e.fits.ok()) {
    out << "  does not fit the profile: " << e.fits.message() << "\n"
        << "  a sweep would quarantine it\n";
  } else {
    out << "  state: " << txn_recovery::TxnStateName(e.txn.state) << " (written "
        << e.txn.state_as_read.ToString() << ")\n"
        << "  age: "
        << (e.age
                ? txn_recovery::FormatDuration(*e.age, txn_recovery::DurationPrecision::kSeconds) +
                      " on the server's clock, from "
                : std::string("none yet: "))
        << e.age_source << "\n"
        << "  decision: " << e.decision << "\n"
        << "  a sweep now would: " << ActionName(e.action)
        << (e.owned ? "" : " (but the watch's owner filter leaves it to another application)")
        << "\n"
        << "  retry would: " << ActionName(e.retry_action) << "\n";
  }
  if (e.record.lease)
    out << "  lease: held by " << e.record.lease->owner << " until "
        << Value(e.record.lease->expires).ToString() << "\n";
  if (e.quarantine) out << "  quarantined: " << e.quarantine->reason << "\n";
  if (e.record.failures > 0)
    out << "  failures in a row: " << e.record.failures
        << (e.record.last_error ? " (last: " + *e.record.last_error + ")" : "") << "\n";
  PrintFleet(fleet, id, out);
  if (e.writes.empty()) return;
  out << "  the writes it would send, in order:\n";
  int n = 0;
  for (const auto& wr : e.writes) {
    out << "    " << ++n << ". " << wr.what << "  [" << wr.ns.ToString() << "]\n";
    if (wr.filter.all().empty() && wr.filter.any_of().empty()) continue;
    out << "       " << (wr.many ? "every document matching " : "filter ") << wr.filter.ToString()
        << "\n"
        << "       " << (wr.update ? "update " + wr.update->ToString() : "delete") << "\n";
  }
}

}  // namespace

int RunExplain(const Config& config, txn_recovery::Store* store, const TransactionCommand& c,
               std::ostream& out) {
  Located where;
  if (int rc = Locate(config, store, c.id, &where); rc != kExitOk) return rc;
  txn_recovery::Explanation e;
  if (Status s = txn_recovery::Explain(store, txn_recovery::Clock::Real(), *where.watch, where.id,
                                       LeaseFor(config), &e);
      !s.ok()) {
    std::cerr << "txn-recoveryd: " << s.ToString() << "\n";
    return ExitForStatus(s);
  }
  const FleetView fleet = ReadFleetView(config, store, *where.watch);
  if (!c.json) {
    PrintExplanation(*where.watch, where.id, e, fleet, out);
    return kExitOk;
  }
  nlohmann::json j = {{"watch", where.watch->name},
                      {"namespace", where.watch->ns.ToString()},
                      {"_id", IdJson(where.id)},
                      {"paused", e.paused},
                      {"fits", e.fits.ok()},
                      {"decision", e.decision},
                      {"action", std::string(txn_recovery::ActionName(e.action))},
                      {"retry_action", std::string(txn_recovery::ActionName(e.retry_action))},
                      {"owned", e.owned},
                      {"record", RecordJson(e)},
                      {"writes", WritesJson(e.writes)}};
  if (!e.fits.ok()) j["problem"] = e.fits.message();
  if (fleet.on) j["fleet"] = FleetJson(fleet, where.id);
  if (e.fits.ok()) {
    j["state"] = std::string(txn_recovery::TxnStateName(e.txn.state));
    j["state_as_written"] = IdJson(e.txn.state_as_read);
    j["age_seconds"] =
        e.age ? nlohmann::json(static_cast<double>(e.age->count()) / 1000) : nlohmann::json();
    j["age_source"] = e.age_source;
  }
  out << j.dump(2) << "\n";
  return kExitOk;
}

int RunRetry(const Config& config, txn_recovery::Store* store, const TransactionCommand& c,
             std::ostream& out) {
  Located where;
  if (int rc = Locate(config, store, c.id, &where); rc != kExitOk) return rc;
  txn_recovery::RetryResult r;
  if (Status s = txn_recovery::Retry(store, txn_recovery::Clock::Real(), *where.watch, where.id,
                                     LeaseFor(config), &r);
      !s.ok()) {
    std::cerr << "txn-recoveryd: " << s.ToString() << "\n";
    return ExitForStatus(s);
  }
  using txn_recovery::Outcome;
  const Outcome o = r.result.outcome;
  const bool ok = r.refused.empty() && (o == Outcome::kResolved || o == Outcome::kUntouched);
  const int code = ok                                                         ? kExitOk
                   : r.result.status.IsUnauthenticated()                      ? kExitAuthentication
                   : r.result.status.IsPermissionDenied()                     ? kExitPermission
                   : o == Outcome::kFailed && r.result.status.IsUnavailable() ? kExitUnavailable
                                                                              : kExitIncomplete;
  const std::string detail = !r.refused.empty() ? r.refused : r.result.detail;
  if (c.json) {
    out << nlohmann::json{{"watch", where.watch->name},
                          {"_id", IdJson(where.id)},
                          {"action", std::string(txn_recovery::ActionName(r.action))},
                          {"outcome", r.refused.empty() ? std::string(txn_recovery::OutcomeName(o))
                                                        : std::string("refused")},
                          {"after", std::string(txn_recovery::TxnStateName(r.result.final_state))},
                          {"detail", detail},
                          {"exit_code", code}}
               .dump(2)
        << "\n";
  } else {
    out << "watch " << where.watch->name << "  _id=" << IdText(where.id) << "  "
        << txn_recovery::ActionName(r.action) << "  "
        << (r.refused.empty() ? txn_recovery::OutcomeName(o) : "refused");
    if (r.refused.empty() && o != Outcome::kQuarantined)
      out << "  -> " << txn_recovery::TxnStateName(r.result.final_state);
    if (!detail.empty()) out << "  (" << detail << ")";
    out << "\n";
  }
  return code;
}

int RunRelease(const Config& config, txn_recovery::Store* store, const TransactionCommand& c,
               std::ostream& out) {
  Located where;
  if (int rc = Locate(config, store, c.id, &where); rc != kExitOk) return rc;
  bool released = false;
  if (Status s = txn_recovery::ReleaseQuarantine(store, *where.watch, where.id, &released);
      !s.ok()) {
    std::cerr << "txn-recoveryd: " << s.ToString() << "\n";
    return ExitForStatus(s);
  }
  const int code = released ? kExitOk : kExitIncomplete;
  if (c.json) {
    out << nlohmann::json{{"watch", where.watch->name},
                          {"_id", IdJson(where.id)},
                          {"released", released},
                          {"exit_code", code}}
               .dump(2)
        << "\n";
  } else {
    out << "watch " << where.watch->name << "  _id=" << IdText(where.id) << "  "
        << (released ? "released: the next sweep considers it again"
                     : "not quarantined: nothing to release")
        << "\n";
  }
  return code;
}

}  // namespace txn_recovery::daemon
