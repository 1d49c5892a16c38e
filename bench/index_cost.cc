#include "index_cost.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>

#include "support/server_probe.h"
#include "txn_recovery/base/clock.h"
#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/tools/indexes.h"
#include "txn_recovery/tools/orphans.h"

namespace txn_recovery::bench {
namespace {

using Steady = std::chrono::steady_clock;

void Must(const Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(what + ": " + s.ToString());
}

struct Round {
  double seconds = 0;
  std::optional<double> server_cpu;
  std::optional<double> scan_seconds;  // the accounts' rounds only
  std::optional<double> scan_server_cpu;
};

// The server's CPU seconds between two readings, when both were taken.
std::optional<double> Spent(std::optional<double> from, std::optional<double> to) {
  if (!from.has_value() || !to.has_value()) return std::nullopt;
  return to.value() - from.value();
}

// One round: the participants rebuilt with `indexes`, then the application's writes, then
// one orphan scan of `watch` (whose participants they are).
Round RunRound(MongoStore* store, const WatchSpec& watch, const Namespace& accounts,
               const std::string& marker, const std::vector<IndexSpec>& indexes,
               const IndexCostOptions& o, const ProcessTreeCpu& server) {
  Must(DropDatabase(store, accounts.database), "drop " + accounts.database);
  std::vector<Document> docs;
  for (std::int64_t a = 0; a < o.accounts; ++a) {
    docs.push_back(Document{{"_id", a}, {"balance", std::int64_t{1'000'000}}, {marker, Array{}}});
    if (docs.size() == 1000 || a + 1 == o.accounts) {
      Must(store->InsertMany(accounts, docs), "insert the accounts");
      docs.clear();
    }
  }
  if (!indexes.empty()) Must(store->CreateIndexes(accounts, indexes), "create the indexes");
  const std::optional<double> cpu0 = server.Seconds();  // nullopt without a server to watch
  const auto t0 = Steady::now();
  std::int64_t txn = 1;
  for (std::int64_t done = 0; done < o.writes;) {
    // A bulk of debits, each pushing its transaction's marker where it is not yet (the
    // manual's guard), then the bulk of the pulls of those markers: half the writes each.
    std::vector<UpdateRequest> push, pull;
    for (std::int32_t k = 0; k < o.bulk / 2 && done < o.writes; ++k, ++txn, done += 2) {
      const Value account{(txn * 7919) % o.accounts};
      const Value t{txn};
      push.push_back({Filter().Eq("_id", account).Ne(marker, t),
                      Update().Inc("balance", std::int64_t{-1}).Push(marker, t)});
      pull.push_back({Filter().Eq("_id", account).Eq(marker, t), Update().Pull(marker, t)});
    }
    BulkResult r;
    Must(store->UpdateEach(accounts, push, &r), "the debits");
    Must(store->UpdateEach(accounts, pull, &r), "the pulls");
  }
  Round round;
  round.seconds = std::chrono::duration<double>(Steady::now() - t0).count();
  const std::optional<double> cpu1 = server.Seconds();
  round.server_cpu = Spent(cpu0, cpu1);

  const auto s0 = Steady::now();
  OrphanSummary summary;
  Must(ScanOrphans(store, Clock::Real(), watch, OrphanOptions{}, nullptr, &summary),
       "the orphan scan");
  round.scan_seconds = std::chrono::duration<double>(Steady::now() - s0).count();
  round.scan_server_cpu = Spent(cpu1, server.Seconds());
  if (summary.markers_checked != 0)
    throw std::runtime_error("the orphan scan found markers the writes should have pulled");
  return round;
}

// One round of the application's own transaction writes: the transactions collection
// rebuilt with `indexes`, then per transaction the manual's insert (initial) and its three
// moves (pending, applied, done), each setting the time with $currentDate, in bulks.
Round RunTransactionsRound(MongoStore* store, const WatchSpec& watch,
                           const std::vector<IndexSpec>& indexes, const IndexCostOptions& o,
                           const ProcessTreeCpu& server) {
  const Profile& p = watch.profile;
  Must(DropDatabase(store, watch.ns.database), "drop " + watch.ns.database);
  if (!indexes.empty()) Must(store->CreateIndexes(watch.ns, indexes), "create the indexes");
  const std::optional<double> cpu0 = server.Seconds();
  const auto t0 = Steady::now();
  const TxnState moves[][2] = {{TxnState::kInitial, TxnState::kPending},
                               {TxnState::kPending, TxnState::kApplied},
                               {TxnState::kApplied, TxnState::kDone}};
  const std::int64_t txns = o.writes / 4;
  const DateTime now{Clock::Real()->WallMillis()};
  for (std::int64_t from = 0; from < txns; from += o.bulk) {
    const std::int64_t to = std::min(txns, from + o.bulk);
    std::vector<Document> docs;
    for (std::int64_t t = from; t < to; ++t)
      docs.push_back(Document{{"_id", t},
                              {"source", "A"},
                              {"destination", "B"},
                              {"value", std::int64_t{100}},
                              {p.state_field, p.states.Written(TxnState::kInitial)},
                              {p.time_field, now}});
    Must(store->InsertMany(watch.ns, docs), "insert the transactions");
    for (const auto& move : moves) {
      std::vector<UpdateRequest> updates;
      for (std::int64_t t = from; t < to; ++t)
        updates.push_back(
            {Filter().Eq("_id", t).Eq(p.state_field, p.states.Written(move[0])),
             Update().Set(p.state_field, p.states.Written(move[1])).CurrentDate(p.time_field)});
      BulkResult r;
      Must(store->UpdateEach(watch.ns, updates, &r), "move the transactions");
    }
  }
  Round round;
  round.seconds = std::chrono::duration<double>(Steady::now() - t0).count();
  round.server_cpu = Spent(cpu0, server.Seconds());
  return round;
}

using Variants = std::vector<std::pair<std::string, std::vector<IndexSpec>>>;

// Runs `round` for every variant, `o.rounds` times interleaved, and keeps the median round of
// each as its row; overheads are against variant `baseline`'s median.
std::vector<IndexCostRow> Measure(const std::string& collection, const Variants& variants,
                                  std::int64_t writes, const IndexCostOptions& o,
                                  const std::function<Round(const std::vector<IndexSpec>&)>& round,
                                  std::size_t baseline = 0) {
  std::vector<std::vector<Round>> rounds(variants.size());
  for (int r = 0; r < o.rounds; ++r)
    for (std::size_t v = 0; v < variants.size(); ++v)
      rounds[v].push_back(round(variants[v].second));
  std::vector<IndexCostRow> rows;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    auto& rs = rounds[v];
    std::sort(rs.begin(), rs.end(),
              [](const Round& a, const Round& b) { return a.seconds < b.seconds; });
    const Round& median = rs[rs.size() / 2];
    IndexCostRow row;
    row.collection = collection;
    row.variant = variants[v].first;
    for (const IndexSpec& spec : variants[v].second)
      row.indexes += (row.indexes.empty() ? "" : ", ") + spec.ToString();
    row.writes = writes;
    row.seconds = median.seconds;
    row.server_cpu = median.server_cpu;
    row.orphan_scan_seconds = median.scan_seconds;
    row.orphan_scan_server_cpu = median.scan_server_cpu;
    row.overhead = row.seconds / rounds[baseline][rounds[baseline].size() / 2].seconds - 1;
    rows.push_back(row);
  }
  return rows;
}

// The indexes `w` asks for on `ns`; with `timeless`, also those it asks for only once a
// transaction lacks a time (RequiredIndex::only_with_timeless).
std::vector<IndexSpec> On(const Namespace& ns, const WatchSpec& w, bool timeless = true) {
  std::vector<IndexSpec> out;
  for (const RequiredIndex& r : RequiredIndexes(w))
    if (r.ns == ns && (timeless || !r.only_with_timeless)) out.push_back(r.spec);
  return out;
}

}  // namespace

std::vector<IndexCostRow> MeasureIndexCost(MongoStore* store, const WatchSpec& watch,
                                           const IndexCostOptions& o,
                                           const ProcessTreeCpu& server) {
  const TransferProfile* transfer = watch.profile.transfer();
  if (transfer == nullptr) throw std::runtime_error("the index cost is measured on a transfer");
  const Namespace accounts{watch.ns.database, transfer->participants_collection};
  // The accounts: every index the daemon may ask for there, and those it asks for by default.
  WatchSpec with_scan_indexes = watch;
  with_scan_indexes.orphan_scan_indexes = true;
  WatchSpec by_default = watch;
  by_default.orphan_scan_indexes = false;
  const std::vector<IndexSpec> possible = On(accounts, with_scan_indexes);
  Variants variants = {
      {On(accounts, by_default).empty() ? "none (the daemon's default)" : "none", {}}};
  for (const IndexSpec& spec : possible) variants.push_back({"only " + spec.ToString(), {spec}});
  if (possible.size() > 1) variants.push_back({"all (orphan_scan_indexes = true)", possible});
  std::vector<IndexCostRow> rows =
      Measure(accounts.collection, variants, o.writes, o, [&](const std::vector<IndexSpec>& ix) {
        return RunRound(store, with_scan_indexes, accounts, transfer->marker_field, ix, o, server);
      });

  // The transactions: none, each index alone, and all of them, which every watch needs (the
  // sweep's reads are bounded by them: docs/state-machine.md, "What a sweep reads"), but
  // for those needed only once a transaction lacks a time, which these writes never do.
  // The baseline is the index the MongoDB manual's own recovery query needs
  // ({state: "pending", lastModified: {$lt: T}}), which an application that follows the
  // manual makes itself, plain: what the daemon's indexes cost beyond it is theirs.
  const std::vector<IndexSpec> possible_txn = On(watch.ns, by_default);
  const std::vector<IndexSpec> needed = On(watch.ns, by_default, /*timeless=*/false);
  const IndexSpec manual{{{watch.profile.state_field, 1}, {watch.profile.time_field, 1}}, ""};
  variants = {{"none", {}}, {"the manual's own (the baseline)", {manual}}};
  for (const IndexSpec& spec : possible_txn)
    variants.push_back({"only " + spec.ToString(), {spec}});
  variants.push_back({"all needed (the daemon's default, every transaction with a time)", needed});
  // What the default was while the quarantine was counted by an index on its mark (before
  // the daemon's own records, quarantine_records.h): the comparison, in the same run.
  std::vector<IndexSpec> earlier = needed;
  earlier.push_back(IndexSpec{{{RecoveryPaths(watch.lease_field).Quarantine(), 1}}, "", true});
  variants.push_back(
      {"all needed and the quarantine's partial index (the earlier default)", earlier});
  if (possible_txn.size() > needed.size())
    variants.push_back(
        {"all, with the first sightings' (transactions without a time)", possible_txn});
  const std::int64_t txn_writes = o.writes / 4 * 4;
  for (IndexCostRow& row : Measure(
           watch.ns.collection, variants, txn_writes, o,
           [&](const std::vector<IndexSpec>& ix) {
             return RunTransactionsRound(store, watch, ix, o, server);
           },
           /*baseline=*/1))
    rows.push_back(std::move(row));
  Must(DropDatabase(store, accounts.database), "drop " + accounts.database);
  return rows;
}

}  // namespace txn_recovery::bench
