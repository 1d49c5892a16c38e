// txn-recovery-bench: how fast stuck transactions are cleared, against the two references
// that matter, on the same data, and what an idle sweep costs the server:
//   sweep     `txn-recoveryd sweep` as an operator runs it (a separate process: its wall
//             time, its CPU time and its own peak RSS (child_process.h), its round trips and
//             documents read from its --json report);
//   baseline  the applications' own step-by-step recovery loop, as a user writes it from
//             the MongoDB manual's two-phase-commit transfer: find one stale transaction,
//             replay its steps one update at a time, repeat;
//   limit     the server's own limit: the same writes, no reads, no guards, no leases,
//             as unordered bulk writes (phase by phase so that every $push precedes its
//             $pull);
//   writes    the update commands, their statements and the documents they matched per
//             recovered transfer
//             (the sweep's counted on the wire by a forwarder, the others' as they send them);
//   idle      sweeps over terminal transactions only, after a first sweep has built the
//             indexes: their wall time, the daemon's and the server's CPU time next to
//             their round trips and documents returned, and, on servers that answer
//             explain, the index keys and documents the server examined for the same sweep
//             run in-process through a QueryLog (query_log.h);
//   dry-run   a sweep that plans every stuck transaction and writes nothing (memory);
//   fleet     k sweeps started at once over the same stuck transactions, each of everything
//             or each of its `--share i/k` (docs/fleet.md): the claims that found a
//             transaction busy and the documents read per transaction resolved;
//   fleet-run k `txn-recoveryd run` daemons started at once, a fleet dividing the same
//             stuck transactions (docs/fleet.md): the time until the last is resolved, each
//             daemon's busy claims (its /metrics) and what each resolved (its JSON log);
//   takeover  three run daemons, one SIGKILLed once a third of the backlog is resolved: how
//             long its share waits for the others; then one SIGSTOPped past the fleet's
//             expiry and continued: whether any transaction was resolved by two of them.
// The server's CPU time is read from /proc for the processes named by the test server's
// state directory (--server-state-dir); the bench and the server share the machine.
//
// The URI comes from TXN_RECOVERY_TEST_URI or TXN_RECOVERYD_MONGODB_URI (never argv) and
// reaches the daemon through its environment (never its configuration file).
// scripts/bench.sh starts the embedded server and runs the whole set.
//
// Workloads are profiles (BenchProfile below); `--profiles` picks the mix. Every profile
// seeds its own database with a deterministic plan (the same data for each of the three
// runs), and verifies the end state after each, reading in batches and counting each _id
// once (a server may return a document twice within one cursor: DocumentDB does).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "child_process.h"
#include "config.h"
#include "index_check.h"
#include "index_cost.h"
#include "support/subprocess.h"
#include "sweep_command.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/stores/mongo_store.h"
#include "txn_recovery/stores/query_log.h"
#include "wire_counter.h"

namespace {

using namespace txn_recovery;
using bench::ProcessTreeCpu;
using Seconds = std::chrono::duration<double>;
using Steady = std::chrono::steady_clock;

void Check(const Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(what + ": " + s.ToString());
}

DateTime ServerNow(Store* store) {
  DateTime now;
  Check(store->ServerTime(&now), "server time");
  return now;
}

Store::WireStats Wire(Store* store) {
  Store::WireStats w;
  store->GetWireStats(&w);
  return w;
}

// splitmix64: a deterministic plan from the transaction's number alone, so that the data
// can be regenerated identically, and in pieces, for each run.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr std::int64_t kMinute = 60'000;

// ---- Reading ----------------------------------------------------------------------------

struct ReadCount {
  std::int64_t documents = 0;  // distinct _ids
  std::int64_t repeats = 0;    // documents the server returned again within the cursor
};

// Every document matching `filter`, `batch` per reply (a whole collection in one reply is
// more than a server sends: 150 MB at N = 1,000,000 on the embedded server), each _id
// once. A scan may return a document twice (DocumentDB does, even with no writer running,
// docs/compatibility.md): a repeat is counted, never used.
ReadCount ReadEach(Store* store, const Namespace& ns, const Filter& filter, std::int32_t batch,
                   const std::function<void(const Document&)>& each) {
  FindOptions options;
  options.batch_size = batch;
  std::unique_ptr<Cursor> c;
  Check(store->Find(ns, filter, options, &c), "find " + ns.collection);
  std::unordered_set<std::string> seen;
  ReadCount n;
  Document d;
  for (bool has = true;;) {
    Check(c->Next(&d, &has), "read " + ns.collection);
    if (!has) break;
    const Value* id = d.Get("_id");
    if (!seen.insert(id ? id->ToString() : std::string()).second) {
      ++n.repeats;
      continue;
    }
    ++n.documents;
    each(d);
  }
  return n;
}

// ---- Profiles ---------------------------------------------------------------------------

// Update commands sent and, by collection, the update statements in them and the documents
// those matched.
struct Writes {
  struct Of {
    std::int64_t statements = 0, matched = 0;
  };
  std::int64_t commands = 0;
  std::map<std::string, Of> by;

  void Add(const Writes& w) {
    commands += w.commands;
    for (const auto& [k, v] : w.by) {
      by[k].statements += v.statements;
      by[k].matched += v.matched;
    }
  }
  std::int64_t statements() const {
    std::int64_t t = 0;
    for (const auto& [k, v] : by) t += v.statements;
    return t;
  }
  std::int64_t matched() const {
    std::int64_t t = 0;
    for (const auto& [k, v] : by) t += v.matched;
    return t;
  }
};

struct RunResult {
  std::int64_t done = 0;  // transactions driven to a terminal state
  double seconds = 0;
  bool complete = true;  // false when the time budget ran out first
  std::int64_t round_trips = 0, documents_read = 0;
  double client_cpu = 0;  // the daemon's (sweeps) or the bench's own (baseline, limit)
  std::optional<double> server_cpu;
  long peak_rss_kb = -1;  // sweeps only: the daemon's own
  Writes writes;
  // Sweeps only: a sweep that did not end clean (exit code, the first watch's error), and
  // how many such sweeps were repeated before one did (SweepUntilClean).
  int exit_code = 0;
  std::string failure;
  int failed_sweeps = 0;
  // Transactions a sweep found leased by another (a failed sweep's claims, until their lease
  // expires) or could not drive, and the sweeps repeated for them after a clean one.
  std::int64_t left = 0;
  int follow_ups = 0;
};

struct Verified {
  std::string problem;  // empty when verified
  std::int64_t repeats = 0;
};

class BenchProfile {
 public:
  virtual ~BenchProfile() = default;
  virtual std::string name() const = 0;
  // The [[watch]] tables recovering this profile's database, each with the `extra` keys.
  virtual std::string WatchToml(const std::string& database, const std::string& extra) const = 0;
  // The transactions collection of `database`, and the filter of its transactions not yet
  // terminal (what a fleet of `run` daemons has left to do).
  virtual Namespace Transactions(const std::string& database) const = 0;
  virtual Filter Unfinished() const = 0;
  // Drops `database` and fills it with `n` stuck transactions of a realistic mix of states
  // (and whatever participants they name), all of them due for recovery at `now`.
  virtual void SeedStuck(Store* store, const std::string& database, std::int64_t n,
                         DateTime now) = 0;
  // Drops `database` and fills it with `n` terminal transactions past the late-write
  // window: an idle sweep has nothing to do there.
  virtual void SeedTerminal(Store* store, const std::string& database, std::int64_t n,
                            DateTime now) = 0;
  // The applications' own recovery loop, one transaction at a time, until nothing is stale
  // or `deadline`.
  virtual RunResult Baseline(Store* store, const std::string& database, DateTime now,
                             Steady::time_point deadline) = 0;
  // The same writes as bulk writes without logic; returns how many transactions they cover.
  virtual RunResult Limit(Store* store, const std::string& database, std::int64_t n,
                          int threads) = 0;
  // Whether every transaction is terminal and the participants agree, reading `batch`
  // documents per reply; and how many documents the server returned twice meanwhile.
  virtual Verified Verify(Store* store, const std::string& database, std::int64_t n,
                          std::int32_t batch) = 0;
};

// A transfer of money between two accounts, the application killed after each of its steps
// 1..7 in turn (initial; pending before/after the debit and after the credit; applied with
// both, one or no marker pulled). Pending ones are half stale (resume) and half expired
// (roll back); the others are past every threshold. Two applications write it:
//   - the MongoDB manual's transfer (`transfer`): {source, destination, value, state};
//   - mongoose operations (`operations`): {status, data: {operations: [the debit, the
//     credit]}}, each operation an `inc` of `balance` on one document of `accounts`, the
//     marker array `pendingTransaction`; its steps are the same seven (insert, pending,
//     apply the debit, apply the credit, applied, pull one marker, pull the other).
// The field names, the state spellings and the marker are the profile's own defaults, as
// the daemon reads them with a watch that names no key.
class TransferBench final : public BenchProfile {
 public:
  explicit TransferBench(std::string kind)
      : kind_(std::move(kind)),
        profile_(*Profile::Named(kind_)),
        operations_(kind_ == "operations") {
    state_ = profile_.state_field;
    time_ = profile_.time_field;
    marker_ =
        operations_ ? profile_.operations()->marker_field : std::string("pendingTransactions");
  }
  std::string name() const override { return kind_; }

  std::string WatchToml(const std::string& database, const std::string& extra) const override {
    return "[[watch]]\nname = \"" + database + "\"\ndatabase = \"" + database + "\"\nprofile = \"" +
           kind_ + "\"\n" + extra;
  }
  Namespace Transactions(const std::string& database) const override { return Txns(database); }
  Filter Unfinished() const override {
    std::vector<Value> terminal;
    for (TxnState st : {TxnState::kDone, TxnState::kCancelled})
      for (const std::string& spelling : Spellings(st)) terminal.emplace_back(spelling);
    return Filter().Nin(state_, terminal);
  }

  struct Plan {
    std::int32_t id;
    std::int64_t from, to;
    std::int32_t amount;
    int steps;  // application steps done before the crash, 1..7
    std::int64_t age_ms;
    bool rollback() const { return steps >= 2 && steps <= 4 && age_ms > 30 * kMinute; }
  };
  static std::int64_t Accounts(std::int64_t n) { return std::max<std::int64_t>(100, n / 4); }
  static Plan PlanOf(std::int64_t i, std::int64_t n) {
    std::uint64_t h = Mix(static_cast<std::uint64_t>(i));
    const std::int64_t m = Accounts(n);
    Plan p;
    p.id = static_cast<std::int32_t>(i + 1);
    p.from = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(m));
    p.to =
        (p.from + 1 + static_cast<std::int64_t>((h >> 20) % static_cast<std::uint64_t>(m - 1))) % m;
    p.amount = static_cast<std::int32_t>(1 + (h >> 40) % 100);
    p.steps = 1 + static_cast<int>(i % 7);
    const bool pending = p.steps >= 2 && p.steps <= 4;
    p.age_ms = (p.steps == 1 || (pending && (h >> 50) % 2)) ? 31 * kMinute : 2 * kMinute;
    return p;
  }
  static std::string Account(std::int64_t k) { return "A" + std::to_string(k); }
  const std::string& Written(TxnState st) const { return profile_.states.Written(st); }
  const std::vector<std::string>& Spellings(TxnState st) const {
    const StateAliases& a = profile_.states;
    switch (st) {
      case TxnState::kDone:
        return a.done;
      case TxnState::kCancelled:
        return a.cancelled.empty() ? a.done : a.cancelled;
      default:
        throw std::logic_error("no spellings asked for this state");
    }
  }
  const std::string& StateAfter(int steps) const {
    return Written(steps == 1   ? TxnState::kInitial
                   : steps <= 4 ? TxnState::kPending
                                : TxnState::kApplied);
  }
  // One transaction document in the application's shape.
  Document Transaction(const Plan& p, const std::string& state, DateTime modified) const {
    Document d{{"_id", p.id}};
    if (operations_) {
      auto op = [](std::int64_t k, std::int32_t amount) {
        return Value(Document{{"collection", "accounts"},
                              {"_id", Account(k)},
                              {"inc", Document{{"balance", amount}}}});
      };
      d.SetPath(profile_.operations()->operations_field,
                Array{op(p.from, -p.amount), op(p.to, p.amount)});
    } else {
      d.Set("source", Account(p.from));
      d.Set("destination", Account(p.to));
      d.Set("value", p.amount);
    }
    d.SetPath(state_, state);
    d.SetPath(time_, modified);
    return d;
  }
  // The account debited (`debit`) or credited by transaction `t`, and the amount, as the
  // application reads them back.
  Value Participant(const Document& t, bool debit) const {
    if (!operations_) return *t.Get(debit ? "source" : "destination");
    const Value& op =
        (*t.GetPath(profile_.operations()->operations_field)->as_array())[debit ? 0 : 1];
    return *op.as_document()->Get("_id");
  }
  std::int32_t Amount(const Document& t) const {
    if (!operations_) return static_cast<std::int32_t>(*t.Get("value")->as_double());
    const Value& op = (*t.GetPath(profile_.operations()->operations_field)->as_array())[1];
    return static_cast<std::int32_t>(
        *op.as_document()->Get("inc")->as_document()->Get("balance")->as_double());
  }
  static Namespace Txns(const std::string& db) { return {db, "transactions"}; }
  static Namespace Accts(const std::string& db) { return {db, "accounts"}; }
  static constexpr std::int64_t kOpening = 1'000'000;

 private:
  std::string kind_;
  Profile profile_;
  bool operations_;
  std::string state_, time_, marker_;

 public:
  static void Reset(Store* store, const std::string& database) {
    Check(static_cast<MongoStore*>(store)->DropDatabase(database), "drop " + database);
  }

  // Accounts in chunks: balance and markers as the crashed applications left them.
  void InsertAccounts(Store* store, const std::string& db, std::int64_t m,
                      const std::vector<std::int64_t>& delta,
                      const std::vector<std::vector<std::int32_t>>& markers) {
    std::vector<Document> chunk;
    for (std::int64_t k = 0; k < m; ++k) {
      Array marks;
      if (!markers.empty())
        for (std::int32_t id : markers[static_cast<std::size_t>(k)]) marks.push_back(Value(id));
      chunk.push_back(
          Document{{"_id", Account(k)},
                   {"balance", kOpening + (delta.empty() ? 0 : delta[static_cast<std::size_t>(k)])},
                   {marker_, std::move(marks)}});
      if (chunk.size() == 10'000 || k + 1 == m) {
        Check(store->InsertMany(Accts(db), chunk), "insert accounts");
        chunk.clear();
      }
    }
  }

  void SeedStuck(Store* store, const std::string& db, std::int64_t n, DateTime now) override {
    Reset(store, db);
    const std::int64_t m = Accounts(n);
    std::vector<std::int64_t> delta(static_cast<std::size_t>(m), 0);
    std::vector<std::vector<std::int32_t>> markers(static_cast<std::size_t>(m));
    std::vector<Document> chunk;
    for (std::int64_t i = 0; i < n; ++i) {
      Plan p = PlanOf(i, n);
      auto& from = markers[static_cast<std::size_t>(p.from)];
      auto& to = markers[static_cast<std::size_t>(p.to)];
      if (p.steps >= 3) delta[static_cast<std::size_t>(p.from)] -= p.amount;
      if (p.steps >= 4) delta[static_cast<std::size_t>(p.to)] += p.amount;
      if (p.steps >= 3 && p.steps < 6) from.push_back(p.id);
      if (p.steps >= 4 && p.steps < 7) to.push_back(p.id);
      chunk.push_back(Transaction(p, StateAfter(p.steps), DateTime{now.millis - p.age_ms}));
      if (chunk.size() == 10'000 || i + 1 == n) {
        Check(store->InsertMany(Txns(db), chunk), "insert transactions");
        chunk.clear();
      }
    }
    InsertAccounts(store, db, m, delta, markers);
  }

  void SeedTerminal(Store* store, const std::string& db, std::int64_t n, DateTime now) override {
    Reset(store, db);
    const std::int64_t m = Accounts(n);
    std::vector<std::int64_t> delta(static_cast<std::size_t>(m), 0);
    std::vector<Document> chunk;
    for (std::int64_t i = 0; i < n; ++i) {
      Plan p = PlanOf(i, n);
      const bool done = i % 4 != 0;
      if (done) {
        delta[static_cast<std::size_t>(p.from)] -= p.amount;
        delta[static_cast<std::size_t>(p.to)] += p.amount;
      }
      chunk.push_back(Transaction(p, Written(done ? TxnState::kDone : TxnState::kCancelled),
                                  DateTime{now.millis - 3 * 60 * kMinute}));
      if (chunk.size() == 10'000 || i + 1 == n) {
        Check(store->InsertMany(Txns(db), chunk), "insert transactions");
        chunk.clear();
      }
    }
    InsertAccounts(store, db, m, delta, {});
  }

  // The recovery procedure of the MongoDB manual's transfer (resume a stale pending or
  // applied one, roll back an expired one; mongoose operations recover alike, operation by
  // operation), as a user would write it with this driver: the
  // threshold computed once, then for each kind of stale transaction, findOne it, replay
  // the steps in order, each one guarded as the manual guards it, and loop.
  RunResult Baseline(Store* store, const std::string& db, DateTime now,
                     Steady::time_point deadline) override {
    RunResult r;
    const Namespace txns = Txns(db), accts = Accts(db);
    const DateTime resume_threshold{now.millis - kMinute};
    const DateTime expire_threshold{now.millis - 30 * kMinute};
    auto update_one = [&](const Namespace& ns, const Filter& f, const Update& u, const char* what) {
      WriteResult w;
      Check(store->UpdateOne(ns, f, u, &w), what);
      ++r.writes.commands;
      ++r.writes.by[ns.collection].statements;
      r.writes.by[ns.collection].matched += w.matched;
    };
    auto set_state = [&](const Value& id, TxnState from, TxnState to) {
      update_one(txns, Filter().Eq("_id", id).Eq(state_, Written(from)),
                 Update().Set(state_, Written(to)).CurrentDate(time_), "update state");
    };
    auto apply = [&](const Document& t, bool debit) {
      const Value& id = *t.Get("_id");
      const std::int32_t v = Amount(t);
      update_one(accts, Filter().Eq("_id", Participant(t, debit)).Ne(marker_, id),
                 Update().Inc("balance", debit ? -v : v).Push(marker_, id), "apply");
    };
    auto undo = [&](const Document& t, bool debit) {
      const Value& id = *t.Get("_id");
      const std::int32_t v = Amount(t);
      update_one(accts, Filter().Eq("_id", Participant(t, debit)).Eq(marker_, id),
                 Update().Inc("balance", debit ? v : -v).Pull(marker_, id), "undo");
    };
    auto pull = [&](const Document& t, bool debit) {
      const Value& id = *t.Get("_id");
      update_one(accts, Filter().Eq("_id", Participant(t, debit)).Eq(marker_, id),
                 Update().Pull(marker_, id), "pull");
    };
    using enum TxnState;
    struct Pass {
      TxnState state;
      DateTime older_than;
      std::function<void(const Document&)> recover;
    };
    const std::vector<Pass> passes = {
        {kPending, expire_threshold,
         [&](const Document& t) {  // roll back an expired pending transfer
           set_state(*t.Get("_id"), kPending, kCanceling);
           undo(t, false);
           undo(t, true);
           set_state(*t.Get("_id"), kCanceling, kCancelled);
         }},
        {kPending, resume_threshold,
         [&](const Document& t) {  // redo the account updates, then finish
           apply(t, true);
           apply(t, false);
           set_state(*t.Get("_id"), kPending, kApplied);
           pull(t, true);
           pull(t, false);
           set_state(*t.Get("_id"), kApplied, kDone);
         }},
        {kApplied, resume_threshold,
         [&](const Document& t) {  // remove the markers, then finish
           pull(t, true);
           pull(t, false);
           set_state(*t.Get("_id"), kApplied, kDone);
         }},
        {kInitial, expire_threshold,
         [&](const Document& t) { set_state(*t.Get("_id"), kInitial, kCancelled); }},
    };
    Store::WireStats before = Wire(store);
    const double cpu0 = bench::SelfCpuSeconds();
    auto t0 = Steady::now();
    for (const Pass& pass : passes) {
      while (true) {
        if (Steady::now() >= deadline) {
          r.complete = false;
          break;
        }
        std::optional<Document> t;
        Check(store->FindOne(
                  txns, Filter().Eq(state_, Written(pass.state)).Lt(time_, pass.older_than), &t),
              "findOne");
        if (!t) break;
        pass.recover(*t);
        ++r.done;
      }
      if (!r.complete) break;
    }
    r.seconds = Seconds(Steady::now() - t0).count();
    r.client_cpu = bench::SelfCpuSeconds() - cpu0;
    Store::WireStats after = Wire(store);
    r.round_trips = after.round_trips - before.round_trips;
    r.documents_read = after.documents_returned - before.documents_returned;
    return r;
  }

  // Every write the recovery of each transaction makes, as plain updates by _id: apply
  // what the crash left undone, mark applied, pull the markers, mark done; or mark
  // canceling, undo, mark cancelled. Phase by phase, each phase as unordered bulk writes
  // of 1,000 on `threads` threads.
  RunResult Limit(Store* store, const std::string& db, std::int64_t n, int threads) override {
    const Namespace txns = Txns(db), accts = Accts(db);
    using Phase = std::function<void(const Plan&, std::vector<UpdateRequest>* t,
                                     std::vector<UpdateRequest>* a)>;
    auto acct = [](std::int64_t k) { return Filter().Eq("_id", Account(k)); };
    auto txn = [](const Plan& p) { return Filter().Eq("_id", p.id); };
    auto state = [&](TxnState s) { return Update().Set(state_, Written(s)).CurrentDate(time_); };
    const std::vector<Phase> phases = {
        // 1: the first state change (pending -> canceling for expired ones), the missing
        //    applications of a resume.
        [&](const Plan& p, auto* t, auto* a) {
          if (p.rollback()) {
            t->push_back({txn(p), state(TxnState::kCanceling)});
          } else if (p.steps >= 2 && p.steps <= 4) {
            if (p.steps < 3)
              a->push_back({acct(p.from), Update().Inc("balance", -p.amount).Push(marker_, p.id)});
            if (p.steps < 4)
              a->push_back({acct(p.to), Update().Inc("balance", p.amount).Push(marker_, p.id)});
          }
        },
        // 2: undo (rollback), mark applied (resume).
        [&](const Plan& p, auto* t, auto* a) {
          if (p.rollback()) {
            if (p.steps >= 4)
              a->push_back({acct(p.to), Update().Inc("balance", -p.amount).Pull(marker_, p.id)});
            if (p.steps >= 3)
              a->push_back({acct(p.from), Update().Inc("balance", p.amount).Pull(marker_, p.id)});
          } else if (p.steps >= 2 && p.steps <= 4) {
            t->push_back({txn(p), state(TxnState::kApplied)});
          }
        },
        // 3: pull the markers (resume, finish).
        [&](const Plan& p, auto*, auto* a) {
          if (p.rollback() || p.steps == 1) return;
          if (p.steps < 6) a->push_back({acct(p.from), Update().Pull(marker_, p.id)});
          if (p.steps < 7) a->push_back({acct(p.to), Update().Pull(marker_, p.id)});
        },
        // 4: the terminal state.
        [&](const Plan& p, auto* t, auto*) {
          t->push_back({txn(p), state(p.steps == 1 || p.rollback() ? TxnState::kCancelled
                                                                   : TxnState::kDone)});
        },
    };
    RunResult r;
    std::mutex mu;  // guards r.writes
    Store::WireStats before = Wire(store);
    const double cpu0 = bench::SelfCpuSeconds();
    auto t0 = Steady::now();
    for (const Phase& phase : phases) {
      std::vector<std::thread> pool;
      std::vector<std::string> errors(static_cast<std::size_t>(threads));
      for (int th = 0; th < threads; ++th) {
        pool.emplace_back([&, th] {
          Writes mine;
          auto bulk = [&](const Namespace& ns, const std::vector<UpdateRequest>& requests) {
            if (requests.empty()) return;
            BulkResult w;
            Check(store->UpdateEach(ns, requests, &w), "bulk " + ns.collection);
            if (!w.refused.empty()) Check(w.refused.front().second, "bulk " + ns.collection);
            ++mine.commands;
            mine.by[ns.collection].statements += static_cast<std::int64_t>(requests.size());
            mine.by[ns.collection].matched += w.matched;
          };
          try {
            std::vector<UpdateRequest> t, a;
            const std::int64_t chunk = 1000;
            for (std::int64_t start = th * chunk; start < n; start += chunk * threads) {
              for (std::int64_t i = start; i < std::min(n, start + chunk); ++i)
                phase(PlanOf(i, n), &t, &a);
              bulk(txns, t);
              bulk(accts, a);
              t.clear();
              a.clear();
            }
          } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(th)] = e.what();
          }
          std::lock_guard lock(mu);
          r.writes.Add(mine);
        });
      }
      for (auto& th : pool) th.join();
      for (const auto& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
    }
    r.seconds = Seconds(Steady::now() - t0).count();
    r.client_cpu = bench::SelfCpuSeconds() - cpu0;
    r.done = n;
    Store::WireStats after = Wire(store);
    r.round_trips = after.round_trips - before.round_trips;
    r.documents_read = after.documents_returned - before.documents_returned;
    return r;
  }

  Verified Verify(Store* store, const std::string& db, std::int64_t n,
                  std::int32_t batch) override {
    // Conservation, and atomicity in aggregate: every transaction terminal, no marker left,
    // the total unchanged and the balances exactly the opening ones plus the transfers that
    // ended done. Each collection is read once, in batches, each _id counted once.
    Verified v;
    const std::int64_t m = Accounts(n);
    std::vector<std::int64_t> expected(static_cast<std::size_t>(m), kOpening);
    std::int64_t not_terminal = 0;
    ReadCount txns = ReadEach(store, Txns(db), Filter(), batch, [&](const Document& d) {
      const Value* st = d.GetPath(state_);
      const std::string state = st && st->is_string() ? *st->as_string() : "";
      auto is = [&](TxnState s) {
        const auto& names = Spellings(s);
        return std::find(names.begin(), names.end(), state) != names.end();
      };
      if (is(TxnState::kDone)) {
        Plan p = PlanOf(static_cast<std::int64_t>(*d.Get("_id")->as_double()) - 1, n);
        expected[static_cast<std::size_t>(p.from)] -= p.amount;
        expected[static_cast<std::size_t>(p.to)] += p.amount;
      } else if (!is(TxnState::kCancelled)) {
        ++not_terminal;
      }
    });
    std::int64_t total = 0, wrong = 0, marked = 0;
    ReadCount accts = ReadEach(store, Accts(db), Filter(), batch, [&](const Document& d) {
      std::int64_t k = std::stoll(d.Get("_id")->as_string()->substr(1));
      std::int64_t b = static_cast<std::int64_t>(*d.Get("balance")->as_double());
      total += b;
      if (b != expected[static_cast<std::size_t>(k)]) ++wrong;
      const Value* marks = d.Get(marker_);
      if (marks && marks->is_array() && !marks->as_array()->empty()) ++marked;
    });
    v.repeats = txns.repeats + accts.repeats;
    if (txns.documents != n)
      v.problem =
          std::to_string(txns.documents) + " transactions read, " + std::to_string(n) + " seeded";
    else if (accts.documents != m)
      v.problem =
          std::to_string(accts.documents) + " accounts read, " + std::to_string(m) + " seeded";
    else if (not_terminal)
      v.problem = std::to_string(not_terminal) + " transactions not terminal";
    else if (marked)
      v.problem = std::to_string(marked) + " accounts still carry markers";
    else if (total != kOpening * m)
      v.problem = "total balance " + std::to_string(total) + " != " + std::to_string(kOpening * m);
    else if (wrong)
      v.problem = std::to_string(wrong) + " accounts disagree with the done transfers";
    return v;
  }
};

std::unique_ptr<BenchProfile> MakeProfile(const std::string& name) {
  if (name == "transfer" || name == "operations") return std::make_unique<TransferBench>(name);
  // The tagged-insert profile plugs in here.
  return nullptr;
}

// ---- Measuring --------------------------------------------------------------------------

struct Options {
  std::string uri, daemon, server_state_dir, json_path;
  std::vector<std::int64_t> ns, idle, dry;
  std::vector<std::int64_t> fleet;  // sweeps at once (--fleet)
  std::int64_t fleet_n = 30'000;
  // A fleet of `run` daemons (--fleet-run: daemons at once; --takeover: one of three
  // killed, then stopped): their daemon.interval, and the take-over's short fleet timings.
  std::vector<std::int64_t> fleet_run;
  std::string fleet_interval = "1s";
  double fleet_timeout = 600;
  bool takeover = false;
  std::string takeover_heartbeat = "1s", takeover_expiry = "3s", takeover_interval = "1s",
              takeover_lease = "15s", takeover_resume_after = "5s";
  std::vector<double> takeover_stop{5, 20};
  std::string fleet_logs;                // a directory: every run daemon's JSON log is kept there
  std::string fleet_log_level = "info";  // "debug" adds each busy claim to their logs
  std::int64_t index_cost_writes = 0;    // --index-cost: the application's writes per round
  std::int64_t index_cost_accounts = 10'000;  // --index-cost-accounts: the accounts written
  std::int64_t writes_n = -1;                 // -1: the first of `ns`; 0: none
  std::vector<std::string> profiles{"transfer"};
  double baseline_budget = 600;
  int workers = 4, batch_size = 500, limit_threads = 4;
  int idle_sweeps = 3;
  int sweep_attempts = 10;
  std::int64_t warm_up = 10'000;  // --warm-up: stuck transactions of the unshown first round
  double idle_settle = 5;
  std::int32_t read_batch = 10'000;
  std::string database_prefix = "txnbench";
};

// The server's CPU time over a run, or nullopt when no server process is known.
class ServerMeter {
 public:
  explicit ServerMeter(const ProcessTreeCpu& tree) : tree_(tree), start_(tree.Seconds()) {}
  std::optional<double> Elapsed() const {
    std::optional<double> now = tree_.Seconds();
    if (!start_ || !now) return std::nullopt;
    return *now - *start_;
  }

 private:
  const ProcessTreeCpu& tree_;
  std::optional<double> start_;
};

std::string TempPath(const std::string& suffix) {
  return "/tmp/txn-recovery-bench-" + std::to_string(getpid()) + suffix;
}

// The daemon's configuration: everything but the URI, which it reads from its environment.
std::string WriteConfig(const Options& o, const std::vector<std::string>& watches) {
  std::string path = TempPath(".toml");
  std::ofstream f(path);
  f << "[mongodb]\nsocket_timeout = \"10m\"\n"
    << "[sweep]\nworkers = " << o.workers << "\nbatch_size = " << o.batch_size
    << "\nmanage_indexes = true\n[log]\nlevel = \"warn\"\n";
  for (const auto& w : watches) f << w;
  return path;
}

// One `txn-recoveryd sweep --json` (with `extra` arguments) reaching the server whose URI
// is in TXN_RECOVERYD_MONGODB_URI; `tag` tells apart the output files of sweeps run at once.
RunResult SweepWith(const Options& o, const std::string& config, const ProcessTreeCpu& server,
                    const std::vector<std::string>& extra, const std::string& tag = "") {
  std::vector<std::string> args = {"sweep", "--json", "--config", config};
  args.insert(args.end(), extra.begin(), extra.end());
  const std::string out_path = TempPath(tag + ".out");
  ServerMeter meter(server);
  bench::ChildRun c = bench::RunChild(o.daemon, args, out_path);
  RunResult r;
  r.server_cpu = meter.Elapsed();
  std::string out;
  {
    std::ifstream in(out_path);
    std::stringstream ss;
    ss << in.rdbuf();
    out = ss.str();
  }
  std::remove(out_path.c_str());
  if (c.term_signal)
    throw std::runtime_error("sweep ended on signal " + std::to_string(c.term_signal));
  // A dry run lists every planned transaction (a million lines at the largest size); only
  // the summary is read here, so the list is dropped while parsing. A sweep that failed
  // (exit 1: the server went away mid-sweep, say) still writes its report.
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(
        out, [](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          return !(event == nlohmann::json::parse_event_t::key && parsed == "transactions");
        });
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("sweep exited " + std::to_string(c.exit_code) +
                             " without a readable report");
  }
  r.exit_code = c.exit_code;
  for (const auto& w : doc["watches"])
    if (w.contains("status") && w["status"] != "ok" && r.failure.empty())
      r.failure = w["status"].get<std::string>();
  r.seconds = c.seconds;
  r.client_cpu = c.cpu_seconds;
  r.peak_rss_kb = c.peak_rss_kb;
  r.round_trips = doc["wire"]["round_trips"].get<std::int64_t>();
  r.documents_read = doc["wire"]["documents_read"].get<std::int64_t>();
  for (const auto& w : doc["watches"]) {
    r.done += w["resolved"].get<std::int64_t>();
    r.left += w["busy"].get<std::int64_t>() + w["failed"].get<std::int64_t>();
  }
  return r;
}

// One `txn-recoveryd sweep --json` reaching the server at `uri`.
RunResult Sweep(const Options& o, const std::string& config, const std::string& uri,
                const ProcessTreeCpu& server, bool dry_run = false) {
  setenv("TXN_RECOVERYD_MONGODB_URI", uri.c_str(), 1);
  return SweepWith(o, config, server,
                   dry_run ? std::vector<std::string>{"--dry-run"} : std::vector<std::string>{});
}

// `k` sweeps started at once over the same stuck transactions, each of everything (several
// hosts that do not divide the work) or each with its own `--share i/k`: the wall time
// until the last ends, and their work summed (`left`: the claims that found a transaction
// busy or failed).
RunResult SweepsAtOnce(const Options& o, const std::string& config, const std::string& uri,
                       const ProcessTreeCpu& server, int k, bool shared) {
  setenv("TXN_RECOVERYD_MONGODB_URI", uri.c_str(), 1);
  std::vector<RunResult> results(static_cast<std::size_t>(k));
  std::vector<std::string> errors(static_cast<std::size_t>(k));
  ServerMeter meter(server);
  const auto t0 = Steady::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < k; ++i)
    threads.emplace_back([&, i] {
      std::vector<std::string> extra;
      if (shared) extra = {"--share", std::to_string(i) + "/" + std::to_string(k)};
      try {
        results[static_cast<std::size_t>(i)] =
            SweepWith(o, config, server, extra, "-" + std::to_string(i));
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(i)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  RunResult total;
  total.seconds = Seconds(Steady::now() - t0).count();
  total.server_cpu = meter.Elapsed();
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!errors[i].empty())
      throw std::runtime_error("sweep " + std::to_string(i) + ": " + errors[i]);
    const RunResult& r = results[i];
    total.done += r.done;
    total.left += r.left;
    total.round_trips += r.round_trips;
    total.documents_read += r.documents_read;
    total.client_cpu += r.client_cpu;
    total.peak_rss_kb = std::max(total.peak_rss_kb, r.peak_rss_kb);
    if (r.exit_code != 0 && total.failure.empty())
      total.failure = "exit " + std::to_string(r.exit_code) + ": " + r.failure;
  }
  return total;
}

// Waits up to three minutes for the server to answer again (after a restart): a count on
// `probe`, twice in a row a second apart. A ping is not enough: DocumentDB's gateway answers
// it while PostgreSQL is still in crash recovery.
void WaitForServer(MongoStore* store, const Namespace& probe) {
  const auto deadline = Steady::now() + std::chrono::minutes(3);
  for (int ok = 0; ok < 2;) {
    std::int64_t n = 0;
    ok = store->Count(probe, Filter(), &n).ok() ? ok + 1 : 0;
    if (Steady::now() > deadline) throw std::runtime_error("the server did not come back");
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// Sweeps until one ends clean, as `txn-recoveryd run` would: a sweep the server fails (a
// DocumentDB backend that crashes restarts every connection) exits 1 and the next goes on,
// up to --sweep-attempts (10). With `sum` (a recovery), it also sweeps again, every 10 s, as
// long as a sweep leaves transactions busy or failed (a failed sweep's claims stay leased
// until their lease expires, 60 s by default), and the figures are those of all the sweeps,
// from the first start to the last end: its work is what every sweep did. Without (an idle
// or dry-run sample), the clean sweep's alone. Either way the failed ones are counted.
RunResult SweepUntilClean(const Options& o, const std::string& config, const std::string& uri,
                          const ProcessTreeCpu& server, MongoStore* store, bool sum,
                          bool dry_run = false) {
  RunResult total;
  ServerMeter meter(server);
  const auto t0 = Steady::now();
  for (int attempt = 1;;) {
    RunResult r = Sweep(o, config, uri, server, dry_run);
    if (sum) {
      total.done += r.done;
      total.client_cpu += r.client_cpu;
      total.round_trips += r.round_trips;
      total.documents_read += r.documents_read;
      total.peak_rss_kb = std::max(total.peak_rss_kb, r.peak_rss_kb);
    }
    if (r.exit_code == 0 && !sum) {
      r.failed_sweeps = total.failed_sweeps;
      r.failure = total.failure;
      return r;
    }
    if (r.exit_code == 0 && r.left == 0) break;
    if (r.exit_code == 0) {
      if (++total.follow_ups > 30)
        throw std::runtime_error(std::to_string(r.left) + " transactions still left after " +
                                 std::to_string(total.follow_ups) + " sweeps");
      std::fprintf(stderr, "txn-recovery-bench: %lld transactions busy or failed; sweeping again\n",
                   static_cast<long long>(r.left));
      std::this_thread::sleep_for(std::chrono::seconds(10));
      continue;
    }
    ++total.failed_sweeps;
    total.failure = "exit " + std::to_string(r.exit_code) + ": " + r.failure;
    if (attempt++ >= o.sweep_attempts)
      throw std::runtime_error("sweep failed " + std::to_string(total.failed_sweeps) +
                               " times, the last with " + total.failure);
    std::fprintf(stderr, "txn-recovery-bench: a sweep failed (%s); sweeping again\n",
                 total.failure.c_str());
    WaitForServer(store, Namespace{o.database_prefix + "_probe", "probe"});
  }
  total.seconds = Seconds(Steady::now() - t0).count();
  total.server_cpu = meter.Elapsed();
  return total;
}

// The update commands and statements a sweep sends and the documents they matched, counted
// by a forwarder between the daemon and the server (wire_counter.h).
Writes Counted(bench::WireCounter* counter) {
  Writes w;
  for (const auto& [collection, k] : counter->Take()) {
    w.commands += k.commands;
    w.by[collection].statements += k.statements;
    w.by[collection].matched += k.matched;
  }
  return w;
}

// What one idle sweep's reads cost the server, summed over them: by the server's own account
// where it answers explain ("executionStats"), else by replaying each read alone and timing
// it (the embedded server), which at least names the read that costs.
struct ServerWork {
  bool explained = false;
  int reads = 0;
  int collection_scans = 0;
  std::int64_t keys_examined = 0, docs_examined = 0, returned = 0;
  std::int64_t blocks = -1;  // PostgreSQL's pages touched (DocumentDB), -1 where not said
  double replay_seconds = 0, slowest_seconds = 0;
  std::string costliest;  // the read that examined the most (or took longest), and its plan
  nlohmann::json each = nlohmann::json::array();  // every read with its figures and plan

  void Add(const ServerWork& w) {
    explained = w.explained;
    reads += w.reads;
    collection_scans += w.collection_scans;
    keys_examined += w.keys_examined;
    docs_examined += w.docs_examined;
    returned += w.returned;
    if (w.blocks >= 0) blocks = std::max<std::int64_t>(blocks, 0) + w.blocks;
    replay_seconds += w.replay_seconds;
    for (const auto& r : w.each) each.push_back(r);
    if (w.slowest_seconds >= slowest_seconds || costliest.empty()) {
      slowest_seconds = w.slowest_seconds;
      costliest = w.costliest;
    }
  }
};

// The bench's configuration file as the daemon reads it, the URI from the environment the
// daemons get (never the file).
txn_recoveryd::Config DaemonConfig(const std::string& config_path, const std::string& uri) {
  txn_recoveryd::Config config;
  Check(txn_recoveryd::LoadConfig(
            config_path,
            [&](const std::string& name) -> std::optional<std::string> {
              if (name == "TXN_RECOVERYD_MONGODB_URI") return uri;
              return std::nullopt;
            },
            &config),
        "the daemon's configuration");
  return config;
}

// The same sweep as `txn-recoveryd sweep --json` (the daemon's RunSweep on the daemon's
// configuration file), run in this process through a QueryLog, then every read it sent
// explained by the server, or replayed and timed where the server does not answer explain:
// the work each read costs, which neither round trips nor documents returned show. `probe`
// is a collection that exists.
ServerWork ExamineSweep(MongoStore* store, const std::string& config_path, const std::string& uri,
                        const Namespace& probe) {
  QueryPlan plan;
  ServerWork w;
  w.explained =
      store->Explain({ReadQuery::Kind::kFind, probe, Filter().Eq("_id", 1), {}}, &plan).ok();
  const txn_recoveryd::Config config = DaemonConfig(config_path, uri);
  QueryLog log(store);
  txn_recoveryd::SweepCommandOptions options;
  options.json = true;
  std::ostringstream report;
  if (int code = txn_recoveryd::RunSweep(config, &log, options, report); code != 0)
    throw std::runtime_error("the in-process sweep exited " + std::to_string(code));
  std::int64_t widest = -1;
  for (const ReadQuery& q : log.reads()) {
    ++w.reads;
    if (w.explained) {
      Check(store->Explain(q, &plan), "explain " + q.ToString());
      if (plan.collection_scan) ++w.collection_scans;
      w.keys_examined += plan.keys_examined;
      w.docs_examined += plan.docs_examined;
      w.returned += plan.returned;
      if (plan.blocks >= 0) w.blocks = std::max<std::int64_t>(w.blocks, 0) + plan.blocks;
      w.each.push_back({{"read", q.ToString()},
                        {"keys_examined", plan.keys_examined},
                        {"docs_examined", plan.docs_examined},
                        {"blocks", plan.blocks},
                        {"returned", plan.returned},
                        {"collection_scan", plan.collection_scan},
                        {"plan", plan.summary}});
      if (plan.keys_examined + plan.docs_examined > widest) {
        widest = plan.keys_examined + plan.docs_examined;
        w.costliest = q.ToString() + ": " + plan.summary;
      }
      continue;
    }
    const auto t0 = Steady::now();
    if (q.kind == ReadQuery::Kind::kCount) {
      std::int64_t n = 0;
      Check(store->Count(q.ns, q.filter, &n), "count " + q.ToString());
      w.returned += 1;
    } else {
      std::unique_ptr<Cursor> c;
      Check(store->Find(q.ns, q.filter, q.options, &c), "find " + q.ToString());
      Document d;
      for (bool has = true;;) {
        Check(c->Next(&d, &has), "read " + q.ToString());
        if (!has) break;
        ++w.returned;
      }
    }
    const double seconds = Seconds(Steady::now() - t0).count();
    w.each.push_back({{"read", q.ToString()}, {"seconds", seconds}});
    w.replay_seconds += seconds;
    if (seconds >= w.slowest_seconds) {
      w.slowest_seconds = seconds;
      w.costliest = q.ToString();
    }
  }
  return w;
}

// ---- Output -----------------------------------------------------------------------------

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string Int(std::int64_t v) {
  return std::to_string(v);
}
std::string Opt(const std::optional<double>& v, const char* f = "%.2f") {
  return v ? Fmt(f, *v) : "-";
}
std::string MiB(long kb) {
  return kb >= 0 ? Fmt("%.1f", static_cast<double>(kb) / 1024) : "-";
}
std::string Per(double v, std::int64_t n, const char* f = "%.2f") {
  return n > 0 ? Fmt(f, v / static_cast<double>(n)) : "-";
}

// A Markdown table printed row by row as the figures come; its header before the first.
class Table {
 public:
  Table(std::string title, std::vector<std::string> headers)
      : title_(std::move(title)), headers_(std::move(headers)) {}
  void Print(const std::vector<std::string>& cells) {
    if (!printed_) {
      std::printf("\n%s\n\n", title_.c_str());
      for (std::size_t i = 0; i < headers_.size(); ++i)
        widths_.push_back(std::max<std::size_t>(headers_[i].size(), i == 0 ? 8 : 9));
      Line(headers_);
      std::string rule = "|";  // numbers right-aligned (":"), the first and last column not
      for (std::size_t i = 0; i < widths_.size(); ++i)
        rule += i == 0                    ? std::string(widths_[i] + 2, '-') + "|"
                : i + 1 == widths_.size() ? std::string("---|")
                                          : std::string(widths_[i] + 1, '-') + ":|";
      std::printf("%s", rule.c_str());
      std::printf("\n");
      printed_ = true;
    }
    Line(cells);
    std::fflush(stdout);
  }

 private:
  void Line(const std::vector<std::string>& cells) {
    std::printf("|");
    for (std::size_t i = 0; i < cells.size() && i < widths_.size(); ++i) {
      const int w = static_cast<int>(widths_[i]);
      if (i + 1 == widths_.size())
        std::printf(" %s |", cells[i].c_str());
      else if (i == 0)
        std::printf(" %-*s |", w, cells[i].c_str());
      else
        std::printf(" %*s |", w, cells[i].c_str());
    }
    std::printf("\n");
  }
  std::string title_;
  std::vector<std::string> headers_;
  std::vector<std::size_t> widths_;
  bool printed_ = false;
};

// The --json report, rewritten after every row so that a run cut short keeps its figures.
class JsonReport {
 public:
  explicit JsonReport(std::string path) : path_(std::move(path)) {
    doc_["rows"] = nlohmann::json::array();
  }
  nlohmann::json& doc() { return doc_; }
  void Add(nlohmann::json row) {
    doc_["rows"].push_back(std::move(row));
    Save();
  }
  void Save() const {
    if (path_.empty()) return;
    std::ofstream(path_) << doc_.dump(2) << "\n";
  }

 private:
  std::string path_;
  nlohmann::json doc_;
};

nlohmann::json Json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

nlohmann::json Json(const RunResult& r) {
  nlohmann::json j = {{"done", r.done},
                      {"seconds", r.seconds},
                      {"complete", r.complete},
                      {"round_trips", r.round_trips},
                      {"documents_read", r.documents_read},
                      {"client_cpu_seconds", r.client_cpu},
                      {"server_cpu_seconds", Json(r.server_cpu)}};
  if (r.peak_rss_kb >= 0) j["peak_rss_kb"] = r.peak_rss_kb;
  return j;
}

nlohmann::json Json(const Writes& w) {
  nlohmann::json j = {
      {"update_commands", w.commands}, {"statements", w.statements()}, {"matched", w.matched()}};
  for (const auto& [k, v] : w.by)
    j["by_collection"][k] = {{"statements", v.statements}, {"matched", v.matched}};
  return j;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// "; 1 sweep failed (...) and the next went on", recorded in `row` too; empty if none did.
std::string Failures(const RunResult& r, nlohmann::json* row) {
  std::string text;
  if (r.failed_sweeps) {
    (*row)["failed_sweeps"] = r.failed_sweeps;
    (*row)["failure"] = r.failure;
    text += "; " + std::to_string(r.failed_sweeps) + " sweep(s) failed (last: " + r.failure +
            ") and the next went on";
  }
  if (r.follow_ups) {
    (*row)["follow_up_sweeps"] = r.follow_ups;
    text += "; " + std::to_string(r.follow_ups) +
            " more sweep(s), 10 s apart, for what the failed ones left leased";
  }
  return text;
}

// ---- A fleet of `run` daemons -----------------------------------------------------------
//
// --fleet-run and --takeover start real `txn-recoveryd run` daemons, as hosts of a fleet
// run them (docs/fleet.md), rather than one-shot sweeps: each has its own configuration
// file, serves /metrics on a port of its own (http.listen 127.0.0.1:0; the port is read
// from its start line) and logs JSON lines on stdout, one per transaction it resolves. The
// bench polls the server for what is left, scrapes each daemon's counters once the backlog
// is gone and reads each daemon's log afterwards: who resolved what, and when.

// One daemon's JSON log (log.format = "json"): its member id, its metrics port, and every
// transaction it resolved ("resolved: <before> -> <after>", with txn_id and action; logged
// once the bulk that resolved it returns, so a daemon stopped in between logs it late).
struct DaemonLog {
  std::string owner;  // "... started as <owner>: ..." (its lease owner and member id)
  int http_port = 0;  // "health and metrics on http://127.0.0.1:<port>"
  struct Resolution {
    std::string txn, action;
    double at = 0;  // the line's time stamp, Unix seconds (the daemon's host clock: ours)
  };
  std::vector<Resolution> resolved;
  std::vector<double> failed;  // "failed: ..." lines' times: attempts refused or fenced
  std::int64_t errors = 0;     // lines at level error
};

// A transaction's _id as one text whichever side it comes from (the log's JSON or the
// store's Value): the bench's ids are integers or strings.
std::string IdKey(const Value& id) {
  if (id.is_string()) return *id.as_string();
  if (auto d = id.as_double()) return std::to_string(static_cast<std::int64_t>(*d));
  return id.ToString();
}
std::string IdKey(const nlohmann::json& id) {
  if (id.is_string()) return id.get<std::string>();
  if (id.is_number()) return std::to_string(id.get<std::int64_t>());
  return id.dump();
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "2026-11-27T20:44:19.123Z" (the daemon's log time stamps) as Unix seconds; 0 if unreadable.
double ParseLogTime(const std::string& ts) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(ts.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + ms / 1000.0;
}

DaemonLog ParseDaemonLog(const std::string& text) {
  DaemonLog log;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("msg") || !j["msg"].is_string()) continue;
    const std::string msg = j["msg"].get<std::string>();
    if (j.value("level", "") == "error") ++log.errors;
    if (msg.rfind("resolved: ", 0) == 0 && j.contains("txn_id")) {
      log.resolved.push_back(
          {IdKey(j["txn_id"]), j.value("action", ""), ParseLogTime(j.value("ts", ""))});
    } else if (msg.rfind("failed: ", 0) == 0) {
      log.failed.push_back(ParseLogTime(j.value("ts", "")));
    } else if (auto at = msg.find(" started as "); at != std::string::npos && log.owner.empty()) {
      // The owner id is "<host>:<pid>:<random>": it holds colons, but no ": ".
      const std::size_t start = at + std::strlen(" started as ");
      log.owner = msg.substr(start, msg.find(": ", start) - start);
    } else if (auto h = msg.find("health and metrics on http://"); h != std::string::npos) {
      const std::string rest = msg.substr(h + std::strlen("health and metrics on http://"));
      const std::size_t colon = rest.rfind(':', rest.find(' '));
      if (colon != std::string::npos) log.http_port = std::atoi(rest.c_str() + colon + 1);
    }
  }
  return log;
}

// GET http://127.0.0.1:<port><path>, the body; empty when the daemon did not answer within
// two seconds. HTTP/1.0: the server closes the connection after the reply.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buf[16384];
      for (ssize_t got; (got = recv(fd, buf, sizeof buf, 0)) > 0;)
        reply.append(buf, static_cast<std::size_t>(got));
    }
  }
  close(fd);
  const std::size_t body = reply.find("\r\n\r\n");
  return reply.rfind("HTTP/1.", 0) == 0 && reply.find(" 200 ") != std::string::npos &&
                 body != std::string::npos
             ? reply.substr(body + 4)
             : "";
}

// The Prometheus text a daemon serves, each family summed over its labels
// (txn_recoveryd_busy_total over the watches, _resolved_total over watches and actions).
std::map<std::string, double> SumFamilies(const std::string& text) {
  std::map<std::string, double> sums;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t name_end = line.find_first_of("{ ");
    const std::size_t value_at = line.rfind(' ');
    if (name_end == std::string::npos || value_at == std::string::npos) continue;
    char* end = nullptr;
    const double v = std::strtod(line.c_str() + value_at + 1, &end);
    if (end == line.c_str() + value_at + 1) continue;
    sums[line.substr(0, name_end)] += v;
  }
  return sums;
}

// The indexes the daemon's queries need, created here by the daemon's own code
// (PrepareIndexes, on the bench's configuration) after the data is seeded and before a fleet
// starts, as a fleet finds them in production: on DocumentDB the first daemon to create
// them waited 10-12 s for 2,000 transfers, which a drain time must not include.
void CreateIndexes(Store* store, const std::string& config_path, const std::string& uri) {
  const txn_recoveryd::Config config = DaemonConfig(config_path, uri);
  Check(txn_recoveryd::PrepareIndexes(config, store, /*dry_run=*/false), "create the indexes");
}

// The keys of one fleet run's daemons (printed with its table, and in the JSON report).
struct FleetSettings {
  std::string interval = "1s", heartbeat, expiry, lease;  // empty: the daemon's default
  std::string watch_keys;                                 // appended to each [[watch]]

  std::string Describe() const {
    std::string d = "daemon.interval " + interval;
    d += ", fleet.heartbeat " + (heartbeat.empty() ? "= interval" : heartbeat);
    d += ", fleet.expiry " + (expiry.empty() ? "= 3 x heartbeat" : expiry);
    d += ", sweep.lease " + (lease.empty() ? "60s" : lease);
    return d;
  }
};

// One `txn-recoveryd run` of the fleet, started at construction with its own configuration
// file; the URI reaches it through its environment (never argv, never the file), and every
// other TXN_RECOVERYD_* variable of the bench's environment is removed, since those override
// the file.
class RunDaemon {
 public:
  RunDaemon(const Options& o, const std::string& uri, const FleetSettings& fs,
            const std::vector<std::string>& watches, int index)
      : config_(TempPath("-run" + std::to_string(index) + ".toml")) {
    {
      std::ofstream f(config_);
      f << "[mongodb]\nsocket_timeout = \"10m\"\n"
        << "[sweep]\nworkers = " << o.workers << "\nbatch_size = " << o.batch_size
        << "\nmanage_indexes = true\n";
      if (!fs.lease.empty()) f << "lease = \"" << fs.lease << "\"\n";
      f << "[daemon]\ninterval = \"" << fs.interval << "\"\n[fleet]\nenabled = true\n";
      if (!fs.heartbeat.empty()) f << "heartbeat = \"" << fs.heartbeat << "\"\n";
      if (!fs.expiry.empty()) f << "expiry = \"" << fs.expiry << "\"\n";
      f << "[http]\nlisten = \"127.0.0.1:0\"\n[log]\nlevel = \"" << o.fleet_log_level
        << "\"\nformat = \"json\"\n";
      for (const auto& w : watches) f << w;
    }
    std::vector<std::string> unset;
    for (char** e = environ; *e; ++e) {
      const std::string kv(*e);
      if (kv.rfind("TXN_RECOVERYD_", 0) == 0) unset.push_back(kv.substr(0, kv.find('=')));
    }
    for (const char* v : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM",
                          "CREDENTIALS_DIRECTORY"})
      unset.push_back(v);
    proc_ = std::make_unique<testing::Subprocess>(
        std::vector<std::string>{o.daemon, "run", "--config", config_},
        std::map<std::string, std::string>{{"TXN_RECOVERYD_MONGODB_URI", uri}}, unset);
  }
  ~RunDaemon() {
    proc_.reset();  // kills it if it still runs
    std::remove(config_.c_str());
  }
  RunDaemon(const RunDaemon&) = delete;
  RunDaemon& operator=(const RunDaemon&) = delete;

  testing::Subprocess& proc() { return *proc_; }
  DaemonLog Log() const { return ParseDaemonLog(proc_->Stdout()); }
  // Waits until its start line and its listener's are logged (its owner id and port).
  void AwaitStart(int index) {
    const auto deadline = Steady::now() + std::chrono::seconds(30);
    for (;;) {
      DaemonLog log = Log();
      if (!log.owner.empty() && log.http_port > 0) {
        owner_ = log.owner;
        port_ = log.http_port;
        return;
      }
      if (!proc_->Running() || Steady::now() > deadline)
        throw std::runtime_error("daemon " + std::to_string(index) + " did not start: " +
                                 proc_->Stderr().substr(0, 2000) + proc_->Stdout().substr(0, 2000));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  const std::string& owner() const { return owner_; }
  // Its counters, each family summed over its labels; empty when it did not answer.
  std::map<std::string, double> Metrics() const { return SumFamilies(HttpGet(port_, "/metrics")); }
  // Its CPU time so far (user + system), from /proc; nullopt once it has exited.
  std::optional<double> Cpu() const { return ProcessTreeCpu({proc_->pid()}).Seconds(); }

 private:
  std::string config_;
  std::unique_ptr<testing::Subprocess> proc_;
  std::string owner_;
  int port_ = 0;
};

// Who resolved what, from every daemon's log: a transaction resolved by two daemons was
// driven by two (a late-write check of a finished transaction is not a resolution of it,
// and may come from any daemon).
struct Resolutions {
  std::map<std::string, std::vector<int>> by;  // txn -> the daemons that resolved it
  std::map<std::string, double> at;            // txn -> its first resolution's time
  std::int64_t lines = 0, twice = 0, failed = 0, errors = 0;
  double last = 0;  // the last resolution's time
  std::vector<std::int64_t> per_daemon;
  std::string example;  // one transaction resolved twice, and by whom

  explicit Resolutions(const std::vector<DaemonLog>& logs) {
    for (std::size_t i = 0; i < logs.size(); ++i) {
      std::int64_t mine = 0;
      failed += static_cast<std::int64_t>(logs[i].failed.size());
      errors += logs[i].errors;
      for (const auto& r : logs[i].resolved) {
        if (r.action == "check-late-writes") continue;
        ++lines;
        ++mine;
        auto& who = by[r.txn];
        who.push_back(static_cast<int>(i));
        auto [it, fresh] = at.emplace(r.txn, r.at);
        if (!fresh) it->second = std::min(it->second, r.at);
        last = std::max(last, r.at);
      }
      per_daemon.push_back(mine);
    }
    for (const auto& [txn, who] : by)
      if (who.size() > 1) {
        ++twice;
        if (example.empty()) {
          example = "txn " + txn + " by daemons";
          for (int d : who) example += " " + std::to_string(d);
        }
      }
  }
};

// ---- The runs ---------------------------------------------------------------------------

int Main(const Options& o) {
  // The daemon's code run in this process (ExplainSweep) logs: to stderr, not into the tables.
  spdlog::set_default_logger(spdlog::stderr_color_mt("txn-recovery-bench"));
  spdlog::set_level(spdlog::level::warn);
  MongoDriver driver;
  MongoOptions mo;
  mo.uri = o.uri;
  mo.socket_timeout = std::chrono::minutes(10);
  mo.max_pool_size = o.limit_threads + 2;
  std::unique_ptr<MongoStore> store;
  Check(MongoStore::Open(mo, &store), "open");
  Check(store->Ping(), "ping");
  std::vector<std::unique_ptr<BenchProfile>> profiles;
  for (const auto& name : o.profiles) {
    auto p = MakeProfile(name);
    if (!p) throw std::runtime_error("unknown profile " + name);
    profiles.push_back(std::move(p));
  }
  auto db_of = [&](const BenchProfile& p) { return o.database_prefix + "_" + p.name(); };
  std::vector<std::string> watches;
  for (const auto& p : profiles) watches.push_back(p->WatchToml(db_of(*p), ""));
  const std::string config = WriteConfig(o, watches);
  // Every profile gets n / profiles of the transactions.
  const std::int64_t share = static_cast<std::int64_t>(profiles.size());
  const ProcessTreeCpu server = o.server_state_dir.empty()
                                    ? ProcessTreeCpu()
                                    : ProcessTreeCpu::FromStateDir(o.server_state_dir);
  if (!o.server_state_dir.empty() && !server.Seconds())
    throw std::runtime_error("no live server process named in " + o.server_state_dir);

  JsonReport report(o.json_path);
  const std::string server_text =
      server.empty()
          ? "not measured (no --server-state-dir)"
          : server.description() + " (" + std::to_string(server.Processes()) + " processes now)";
  std::printf("profiles:");
  for (const auto& p : profiles) std::printf(" %s", p->name().c_str());
  std::printf(
      "; sweep: %d workers, batch %d; limit: %d threads of 1000-write bulks\n"
      "server CPU: %s\nmachine: %u cores, load average %s at the start\n",
      o.workers, o.batch_size, o.limit_threads, server_text.c_str(),
      std::thread::hardware_concurrency(), LoadAverage().c_str());
  report.doc()["config"] = {{"profiles", o.profiles},
                            {"workers", o.workers},
                            {"batch_size", o.batch_size},
                            {"limit_threads", o.limit_threads},
                            {"baseline_budget_seconds", o.baseline_budget},
                            {"idle_sweeps", o.idle_sweeps},
                            {"read_batch", o.read_batch}};
  report.doc()["server"] = server_text;
  report.doc()["machine"] = {{"cores", std::thread::hardware_concurrency()},
                             {"load_average_start", LoadAverage()}};

  auto seed = [&](std::int64_t n, bool terminal) {
    auto t0 = Steady::now();
    for (const auto& p : profiles) {
      DateTime now = ServerNow(store.get());
      if (terminal) {
        p->SeedTerminal(store.get(), db_of(*p), n / share, now);
      } else {
        p->SeedStuck(store.get(), db_of(*p), n / share, now);
      }
    }
    std::fprintf(stderr, "seeded %lld %s transactions in %.1fs\n", static_cast<long long>(n),
                 terminal ? "terminal" : "stuck", Seconds(Steady::now() - t0).count());
  };
  auto verify = [&](std::int64_t n, nlohmann::json* row) {
    std::string problems;
    std::int64_t repeats = 0;
    for (const auto& p : profiles) {
      Verified v = p->Verify(store.get(), db_of(*p), n / share, o.read_batch);
      repeats += v.repeats;
      if (!v.problem.empty())
        problems += (problems.empty() ? "" : "; ") + p->name() + ": " + v.problem;
    }
    (*row)["verified"] = problems.empty();
    (*row)["repeats_read"] = repeats;
    if (!problems.empty()) (*row)["problem"] = problems;
    std::string text = problems.empty() ? "verified" : "NOT VERIFIED: " + problems;
    if (repeats)
      text += " (the server returned " + std::to_string(repeats) +
              " documents twice; each counted once)";
    return text;
  };
  const std::string uri = o.uri;

  Table recovery(
      "Recovery (per run; client CPU: the daemon's for sweep, the bench's own otherwise)",
      {"run", "N", "done", "wall s", "tx/s", "client CPU s", "server CPU s", "peak RSS MiB",
       "RT/tx", "docs/tx", "check"});
  auto recovery_row = [&](const std::string& run, std::int64_t n, const RunResult& r,
                          const std::string& check, nlohmann::json j) {
    recovery.Print({run, Int(n), Int(r.done), Fmt("%.1f", r.seconds),
                    r.seconds > 0 ? Fmt("%.0f", static_cast<double>(r.done) / r.seconds) : "-",
                    Fmt("%.1f", r.client_cpu), Opt(r.server_cpu, "%.1f"), MiB(r.peak_rss_kb),
                    Per(static_cast<double>(r.round_trips), r.done),
                    Per(static_cast<double>(r.documents_read), r.done), check});
    j.update(Json(r));
    j["run"] = run;
    j["n"] = n;
    j["writes"] = Json(r.writes);
    report.Add(std::move(j));
  };

  // The server's bulk-write limit over the same stuck transactions, with the daemon's indexes
  // on the collections (as they are wherever the daemon runs) or without them (the stock
  // collections: what the indexes cost the application is measured by --index-cost).
  auto limit = [&](std::int64_t n, bool indexed) {
    seed(n, false);
    if (indexed) CreateIndexes(store.get(), config, uri);
    RunResult sum;
    ServerMeter meter(server);
    for (const auto& p : profiles) {
      RunResult r = p->Limit(store.get(), db_of(*p), n / share, o.limit_threads);
      sum.done += r.done;
      sum.seconds += r.seconds;
      sum.client_cpu += r.client_cpu;
      sum.round_trips += r.round_trips;
      sum.documents_read += r.documents_read;
      sum.writes.Add(r.writes);
    }
    sum.server_cpu = meter.Elapsed();
    return sum;
  };
  // Every run below starts from collections that hold the daemon's indexes, built before the
  // clock starts (a deployed daemon finds them built), and from a warm server: a sweep and a
  // limit of --warm-up transactions first, not shown. The embedded server compiled its hot
  // paths during the first run measured, which made a sweep measured first 1.5 times as slow
  // as the same sweep repeated, while the limit, measured after it, ran warm.
  if (!o.ns.empty() && o.warm_up > 0) {
    seed(o.warm_up, false);
    CreateIndexes(store.get(), config, uri);
    (void)SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/true);
    (void)limit(o.warm_up, true);
    std::fprintf(stderr, "warmed up the server with a sweep and a limit of %lld\n",
                 static_cast<long long>(o.warm_up));
  }
  struct Summary {
    std::int64_t n;
    RunResult sweep, baseline, limit, limit_bare;
  };
  std::vector<Summary> summaries;
  for (std::int64_t n : o.ns) {
    Summary s{n, {}, {}, {}, {}};
    seed(n, false);
    CreateIndexes(store.get(), config, uri);
    s.sweep = SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/true);
    nlohmann::json j;
    std::string check = verify(n, &j) + Failures(s.sweep, &j);
    recovery_row("sweep", n, s.sweep, check, std::move(j));

    seed(n, false);
    CreateIndexes(store.get(), config, uri);
    auto deadline =
        Steady::now() + std::chrono::duration_cast<Steady::duration>(Seconds(o.baseline_budget));
    {
      ServerMeter meter(server);
      for (const auto& p : profiles) {
        RunResult r = p->Baseline(store.get(), db_of(*p), ServerNow(store.get()), deadline);
        s.baseline.done += r.done;
        s.baseline.seconds += r.seconds;
        s.baseline.client_cpu += r.client_cpu;
        s.baseline.round_trips += r.round_trips;
        s.baseline.documents_read += r.documents_read;
        s.baseline.complete = s.baseline.complete && r.complete;
        s.baseline.writes.Add(r.writes);
      }
      s.baseline.server_cpu = meter.Elapsed();
    }
    j = nlohmann::json::object();
    check = s.baseline.complete ? verify(n, &j)
                                : "time budget of " + Fmt("%.0f", o.baseline_budget) + " s ran out";
    recovery_row("baseline", n, s.baseline, check, std::move(j));

    s.limit = limit(n, true);
    j = nlohmann::json::object();
    check = verify(n, &j);
    recovery_row("limit", n, s.limit, check, std::move(j));
    s.limit_bare = limit(n, false);
    j = nlohmann::json::object();
    check = verify(n, &j);
    recovery_row("limit, _id only", n, s.limit_bare, check, std::move(j));
    summaries.push_back(s);
  }

  // Writes per recovered transfer: the sweep's through a counting forwarder (a run of its own, not
  // timed: forwarding costs time), the baseline's and the limit's as they sent them.
  const std::int64_t writes_n = o.writes_n >= 0 ? o.writes_n : (o.ns.empty() ? 0 : o.ns.front());
  Table writes_table(
      "Writes per recovered transaction (update and findAndModify commands, the statements in "
      "them, the documents they matched; the sweep's counted on the wire, in a run of its own)",
      {"run", "N", "update commands/tx", "statements/tx", "matched/tx",
       "by collection: statements / matched per tx"});
  auto writes_row = [&](const std::string& run, std::int64_t n, const RunResult& r) {
    std::string by;
    for (const auto& [k, v] : r.writes.by)
      by += (by.empty() ? "" : ", ") + k + " " + Per(static_cast<double>(v.statements), r.done) +
            " / " + Per(static_cast<double>(v.matched), r.done);
    writes_table.Print({run, Int(n), Per(static_cast<double>(r.writes.commands), r.done),
                        Per(static_cast<double>(r.writes.statements()), r.done),
                        Per(static_cast<double>(r.writes.matched()), r.done), by});
  };
  if (writes_n > 0) {
    bench::WireCounter counter(uri);
    seed(writes_n, false);
    RunResult r = SweepUntilClean(o, config, counter.Uri(), server, store.get(), /*sum=*/true);
    r.writes = Counted(&counter);
    nlohmann::json j;
    std::string check = verify(writes_n, &j);
    Failures(r, &j);
    if (check.rfind("verified", 0) != 0)
      throw std::runtime_error("the sweep through the wire counter: " + check);
    j.update(Json(r));
    j["run"] = "sweep-writes";
    j["n"] = writes_n;
    j["writes"] = Json(r.writes);
    report.Add(std::move(j));
    writes_row("sweep", writes_n, r);
  }
  for (const auto& s : summaries) {
    if (s.baseline.complete) writes_row("baseline", s.n, s.baseline);
    writes_row("limit", s.n, s.limit);
  }

  Table idle_table(
      "Idle sweeps over terminal transactions only (after a first sweep built the indexes)",
      {"idle", "N terminal", "wall s", "daemon CPU s", "server CPU s", "peak RSS MiB",
       "round trips", "docs returned", "keys examined", "docs examined", "note"});
  struct IdleFigures {
    std::int64_t n;
    RunResult median;
    ServerWork work;
  };
  std::vector<IdleFigures> idles;
  for (std::int64_t n : o.idle) {
    seed(n, true);
    // The first sweep creates the indexes (manage_indexes); some servers build them in the
    // background, so the server is left to settle, and its CPU at rest measured meanwhile.
    RunResult first = SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/false);
    std::optional<double> rest;
    {
      ServerMeter meter(server);
      auto t0 = Steady::now();
      std::this_thread::sleep_for(Seconds(o.idle_settle));
      if (auto cpu = meter.Elapsed()) rest = *cpu / Seconds(Steady::now() - t0).count();
    }
    std::int64_t indexes = 0;
    for (const auto& p : profiles) {
      std::vector<IndexSpec> specs;
      Check(store->ListIndexes(TransferBench::Txns(db_of(*p)), &specs), "list indexes");
      indexes += static_cast<std::int64_t>(specs.size());
    }
    std::vector<RunResult> runs;
    for (int i = 0; i < std::max(1, o.idle_sweeps); ++i)
      runs.push_back(SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/false));
    std::sort(runs.begin(), runs.end(),
              [](const RunResult& a, const RunResult& b) { return a.seconds < b.seconds; });
    const RunResult& m = runs[runs.size() / 2];
    std::string note = "median of " + std::to_string(runs.size()) + " (wall " +
                       Fmt("%.2f", runs.front().seconds) + "-" + Fmt("%.2f", runs.back().seconds) +
                       " s); first sweep " + Fmt("%.2f", first.seconds) + " s; " +
                       std::to_string(indexes) + " indexes on transactions";
    if (rest) note += "; server at rest " + Fmt("%.0f", 100 * *rest) + " % of a core";
    // The sweeps changed nothing: every transaction terminal, every balance as seeded.
    nlohmann::json j = Json(m);
    note += "; " + verify(n, &j);
    int failed = first.failed_sweeps;
    for (const auto& r : runs) failed += r.failed_sweeps;
    if (failed) {
      note += "; " + std::to_string(failed) + " sweep(s) failed and were repeated";
      j["failed_sweeps"] = failed;
    }
    // The server's account of the same sweep, where it gives one; else its reads timed.
    ServerWork work;
    for (const auto& p : profiles)
      work.Add(ExamineSweep(store.get(), config, uri, TransferBench::Txns(db_of(*p))));
    if (work.explained) {
      note += "; explain: " + std::to_string(work.reads) + " reads, " +
              std::to_string(work.collection_scans) + " collection scans";
      if (work.blocks >= 0) note += ", " + std::to_string(work.blocks) + " pages";
    } else {
      std::string slowest = work.costliest.substr(0, 100);
      if (slowest.size() < work.costliest.size()) slowest += "...";
      note += "; no explain: its " + std::to_string(work.reads) + " reads replayed alone take " +
              Fmt("%.2f", work.replay_seconds) + " s, the slowest " +
              Fmt("%.2f", work.slowest_seconds) + " s: " + slowest;
    }
    // And every command of one more such sweep timed on the wire, request to reply: what
    // the reads above leave out (index management, the server's clock, the pause switch).
    std::vector<std::pair<std::string, bench::WireCounter::Timing>> commands;
    {
      bench::WireCounter timer(uri);
      (void)SweepUntilClean(o, config, timer.Uri(), server, store.get(), /*sum=*/false);
      for (const auto& entry : timer.TakeTimings()) commands.push_back(entry);
    }
    std::sort(commands.begin(), commands.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    note += "; on the wire:";
    for (std::size_t i = 0; i < commands.size() && i < 3; ++i)
      note += (i ? ", " : " ") + commands[i].first + " " + Fmt("%.2f", commands[i].second.seconds) +
              " s";
    j["commands_on_the_wire"] = nlohmann::json::object();
    for (const auto& [name, t] : commands)
      j["commands_on_the_wire"][name] = {{"count", t.count}, {"seconds", t.seconds}};
    j["server_work"] = {{"explained", work.explained},
                        {"reads", work.reads},
                        {"returned", work.returned},
                        {"costliest_read", work.costliest},
                        {"each_read", work.each}};
    if (work.explained) {
      j["server_work"]["collection_scans"] = work.collection_scans;
      j["server_work"]["keys_examined"] = work.keys_examined;
      j["server_work"]["docs_examined"] = work.docs_examined;
      if (work.blocks >= 0) j["server_work"]["pages"] = work.blocks;
    } else {
      j["server_work"]["replay_seconds"] = work.replay_seconds;
      j["server_work"]["slowest_seconds"] = work.slowest_seconds;
    }
    idle_table.Print({"idle", Int(n), Fmt("%.2f", m.seconds), Fmt("%.2f", m.client_cpu),
                      Opt(m.server_cpu), MiB(m.peak_rss_kb), Int(m.round_trips),
                      Int(m.documents_read), work.explained ? Int(work.keys_examined) : "-",
                      work.explained ? Int(work.docs_examined) : "-", note});
    j["run"] = "idle";
    j["n"] = n;
    j["first_sweep_seconds"] = first.seconds;
    j["indexes_on_transactions"] = indexes;
    j["server_cpu_at_rest"] = Json(rest);
    j["sweeps"] = nlohmann::json::array();
    for (const auto& r : runs) j["sweeps"].push_back(Json(r));
    report.Add(std::move(j));
    idles.push_back({n, m, work});
  }

  Table dry_table(
      "Dry runs (plan every stuck transaction, write nothing: the memory of streaming N)",
      {"dry-run", "N", "wall s", "planned/s", "daemon CPU s", "server CPU s", "peak RSS MiB",
       "RT/tx", "docs/tx", "note"});
  for (std::int64_t n : o.dry) {
    seed(n, false);
    RunResult dry =
        SweepUntilClean(o, config, uri, server, store.get(), /*sum=*/false, /*dry_run=*/true);
    nlohmann::json failed;
    std::string failures = Failures(dry, &failed);
    failures = failures.empty() ? "-" : failures.substr(2);
    dry_table.Print({"dry-run", Int(n), Fmt("%.1f", dry.seconds),
                     Fmt("%.0f", static_cast<double>(n) / dry.seconds), Fmt("%.1f", dry.client_cpu),
                     Opt(dry.server_cpu, "%.1f"), MiB(dry.peak_rss_kb),
                     Per(static_cast<double>(dry.round_trips), n, "%.3f"),
                     Per(static_cast<double>(dry.documents_read), n), failures});
    nlohmann::json j = Json(dry);
    j["run"] = "dry-run";
    j["n"] = n;
    if (!failed.is_null()) j.update(failed);
    report.Add(std::move(j));
  }

  if (!summaries.empty()) {
    Table t(
        "Side by side (same run, same data; limit: the daemon's indexes present, "
        "_id only: none but _id)",
        {"N", "sweep/baseline", "sweep/limit", "sweep/limit _id only", "server CPU s: sweep",
         "baseline", "limit", "limit _id only", "sweep peak RSS MiB"});
    bool cut = false;
    for (const auto& s : summaries) {
      auto rate = [](const RunResult& r) { return static_cast<double>(r.done) / r.seconds; };
      cut = cut || !s.baseline.complete;
      t.Print({Int(s.n),
               Fmt("%.1fx", rate(s.sweep) / rate(s.baseline)) + (s.baseline.complete ? "" : "*"),
               Fmt("%.0f %%", 100 * rate(s.sweep) / rate(s.limit)),
               Fmt("%.0f %%", 100 * rate(s.sweep) / rate(s.limit_bare)),
               Opt(s.sweep.server_cpu, "%.1f"), Opt(s.baseline.server_cpu, "%.1f"),
               Opt(s.limit.server_cpu, "%.1f"), Opt(s.limit_bare.server_cpu, "%.1f"),
               MiB(s.sweep.peak_rss_kb)});
    }
    if (cut)
      std::printf(
          "(* the baseline ran out of its time budget: its rate is over the part it did)\n");
  }
  if (idles.size() >= 2) {
    const IdleFigures& lo = idles.front();
    const IdleFigures& hi = idles.back();
    auto ratio = [](double a, double b) { return b > 0 ? Fmt("%.1fx", a / b) : "-"; };
    Table t("Idle sweep cost, largest vs smallest N (target: within 1.5x)",
            {"N", "wall", "daemon CPU", "server CPU", "round trips", "docs returned",
             "keys examined", "docs examined", "pages"});
    auto examined = [&](auto field) {
      return hi.work.explained && lo.work.explained
                 ? ratio(static_cast<double>(hi.work.*field), static_cast<double>(lo.work.*field))
                 : std::string("-");
    };
    t.Print({Int(hi.n) + " vs " + Int(lo.n), ratio(hi.median.seconds, lo.median.seconds),
             ratio(hi.median.client_cpu, lo.median.client_cpu),
             hi.median.server_cpu && lo.median.server_cpu
                 ? ratio(*hi.median.server_cpu, *lo.median.server_cpu)
                 : "-",
             ratio(static_cast<double>(hi.median.round_trips),
                   static_cast<double>(lo.median.round_trips)),
             ratio(static_cast<double>(hi.median.documents_read),
                   static_cast<double>(lo.median.documents_read)),
             examined(&ServerWork::keys_examined), examined(&ServerWork::docs_examined),
             hi.work.blocks >= 0 && lo.work.blocks >= 0 ? examined(&ServerWork::blocks) : "-"});
  }
  if (!o.fleet.empty()) {
    Table t(
        "Sweeps at once over the same stuck transactions: each of everything, or each of "
        "its --share (one per host of a fleet)",
        {"sweeps", "N", "mode", "resolved", "busy claims", "wall s", "server CPU s", "RT/tx",
         "docs read/tx", "check"});
    // A first sweep, not shown, so that the first row does not pay for the server's warm-up
    // (the embedded server's JIT made it twice as slow as the same sweep repeated).
    // Whatever a busy claim or a failed sweep left is finished by more sweeps, as the next
    // rounds of a daemon would (after the server is back, when it went away: DocumentDB's
    // backend crash, footnote 1 of docs/benchmarks.md); a row shows the first round.
    auto finish = [&](const RunResult& r) {
      if (!r.failure.empty())
        WaitForServer(store.get(), Namespace{o.database_prefix + "_probe", "probe"});
      if (r.left > 0 || !r.failure.empty())
        (void)SweepUntilClean(o, config, uri, server, store.get(), true);
    };
    seed(o.fleet_n, false);
    finish(SweepsAtOnce(o, config, uri, server, 1, false));
    for (std::int64_t k : o.fleet) {
      for (bool shared : {false, true}) {
        if (k == 1 && shared) continue;  // one share of one is everything
        seed(o.fleet_n, false);
        RunResult r = SweepsAtOnce(o, config, uri, server, static_cast<int>(k), shared);
        finish(r);
        nlohmann::json j;
        const std::string check =
            verify(o.fleet_n, &j) + (r.failure.empty() ? "" : "; " + r.failure);
        t.Print({Int(k), Int(o.fleet_n), shared ? "shares" : "everything", Int(r.done), Int(r.left),
                 Fmt("%.1f", r.seconds), Opt(r.server_cpu, "%.1f"),
                 Per(static_cast<double>(r.round_trips), r.done),
                 Per(static_cast<double>(r.documents_read), r.done), check});
        j.update(Json(r));
        j["busy_claims"] = r.left;
        j["run"] = shared ? "fleet-shares" : "fleet-everything";
        j["sweeps"] = k;
        j["n"] = o.fleet_n;
        report.Add(std::move(j));
      }
    }
  }
  if (o.index_cost_writes > 0) {
    // The transfer watch as the daemon reads it, for the indexes it requires on the accounts.
    const txn_recoveryd::Config daemon_config = DaemonConfig(config, o.uri);
    const auto transfer =
        std::find_if(daemon_config.watches.begin(), daemon_config.watches.end(),
                     [](const WatchSpec& w) { return w.profile.transfer() != nullptr; });
    if (transfer == daemon_config.watches.end())
      throw std::runtime_error("--index-cost needs the transfer profile in --profiles");
    bench::IndexCostOptions io;
    io.writes = o.index_cost_writes;
    io.accounts = o.index_cost_accounts;
    Table t(
        "The application's own writes to its accounts (a guarded $inc and $push of its "
        "marker, then the $pull; unordered bulks of 500) with each index the daemon may "
        "ask for there, and without; then one orphan scan of the accounts",
        {"indexes", "writes", "wall s", "writes/s", "server CPU s", "overhead", "orphan scan s",
         "its server CPU s"});
    for (const bench::IndexCostRow& row :
         bench::MeasureIndexCost(store.get(), *transfer, io, server)) {
      t.Print({row.variant, Int(row.writes), Fmt("%.2f", row.seconds),
               Fmt("%.0f", static_cast<double>(row.writes) / row.seconds), Opt(row.server_cpu),
               Fmt("%+.1f %%", 100 * row.overhead), Fmt("%.3f", row.orphan_scan_seconds),
               Opt(row.orphan_scan_server_cpu)});
      nlohmann::json j = {{"run", "index-cost"},
                          {"variant", row.variant},
                          {"indexes", row.indexes},
                          {"accounts", io.accounts},
                          {"writes", row.writes},
                          {"seconds", row.seconds},
                          {"server_cpu", Json(row.server_cpu)},
                          {"overhead", row.overhead},
                          {"orphan_scan_seconds", row.orphan_scan_seconds},
                          {"orphan_scan_server_cpu", Json(row.orphan_scan_server_cpu)}};
      report.Add(std::move(j));
    }
  }
  if (!o.fleet_run.empty() || o.takeover) {
    // What is left to do, summed over the profiles: the transactions not yet terminal.
    auto unfinished = [&] {
      std::int64_t total = 0;
      for (const auto& p : profiles) {
        std::int64_t left = 0;
        Check(store->Count(p->Transactions(db_of(*p)), p->Unfinished(), &left), "count unfinished");
        total += left;
      }
      return total;
    };
    struct Fleet {
      std::vector<std::unique_ptr<RunDaemon>> daemons;
      std::vector<bool> gone;  // killed by the bench: neither waited for nor stopped
      double wall0 = 0;        // Unix seconds at the start (the logs' clock)
      Steady::time_point t0;
    };
    // k daemons started at once, each with its own configuration file.
    auto start_fleet = [&](int k, const FleetSettings& fs) {
      std::vector<std::string> keyed;
      for (const auto& p : profiles) keyed.push_back(p->WatchToml(db_of(*p), fs.watch_keys));
      Fleet f;
      f.wall0 = UnixNow();
      f.t0 = Steady::now();
      for (int i = 0; i < k; ++i) {
        f.daemons.push_back(std::make_unique<RunDaemon>(o, uri, fs, keyed, i));
        f.gone.push_back(false);
      }
      for (int i = 0; i < k; ++i) f.daemons[static_cast<std::size_t>(i)]->AwaitStart(i);
      return f;
    };
    // Polls the server until nothing is unfinished or `until` says stop (it gets what is
    // left), every `every`; false when --fleet-timeout passed first. A daemon that exits by
    // itself ends the run: it is a failure, not a figure.
    auto await_left = [&](Fleet& f, const std::function<bool(std::int64_t)>& until,
                          std::chrono::milliseconds every) {
      const auto deadline =
          Steady::now() + std::chrono::duration_cast<Steady::duration>(Seconds(o.fleet_timeout));
      for (;;) {
        for (std::size_t i = 0; i < f.daemons.size(); ++i)
          if (!f.gone[i] && !f.daemons[i]->proc().Running())
            throw std::runtime_error("daemon " + std::to_string(i) + " exited by itself: " +
                                     f.daemons[i]->proc().Stderr().substr(0, 2000));
        if (until(unfinished())) return true;
        if (Steady::now() > deadline) return false;
        std::this_thread::sleep_for(every);
      }
    };
    auto drained = [](std::int64_t left) { return left == 0; };
    // Each live daemon's counters once every sweep in progress when the backlog ended has
    // ended too: a sweep adds its busy claims when it finishes a watch, so the bench waits
    // for each daemon's sweeps_total to move by one sweep of every watch (up to a minute).
    auto settled_metrics = [&](Fleet& f) {
      std::vector<std::map<std::string, double>> m(f.daemons.size());
      std::vector<double> from(f.daemons.size(), -1);
      for (std::size_t i = 0; i < f.daemons.size(); ++i)
        if (!f.gone[i]) {
          m[i] = f.daemons[i]->Metrics();
          from[i] =
              m[i].count("txn_recoveryd_sweeps_total") ? m[i]["txn_recoveryd_sweeps_total"] : -1;
        }
      const auto deadline = Steady::now() + std::chrono::minutes(1);
      for (std::size_t i = 0; i < f.daemons.size(); ++i) {
        if (f.gone[i]) continue;
        for (;;) {
          m[i] = f.daemons[i]->Metrics();
          const double now =
              m[i].count("txn_recoveryd_sweeps_total") ? m[i]["txn_recoveryd_sweeps_total"] : -1;
          if ((from[i] >= 0 && now >= from[i] + static_cast<double>(profiles.size())) ||
              Steady::now() > deadline)
            break;
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
      }
      return m;
    };
    // SIGTERM to each live daemon; each must exit 0 within 30 s (it drains, then leaves the
    // fleet). Their logs, read afterwards; the problems, as text.
    int fleet_runs = 0;  // names the kept logs
    auto stop_fleet = [&](Fleet& f, std::vector<DaemonLog>* logs) {
      ++fleet_runs;
      std::string problems;
      for (std::size_t i = 0; i < f.daemons.size(); ++i)
        if (!f.gone[i]) f.daemons[i]->proc().Signal(SIGTERM);
      for (std::size_t i = 0; i < f.daemons.size(); ++i) {
        if (!f.gone[i]) {
          std::optional<int> rc = f.daemons[i]->proc().Wait(std::chrono::seconds(30));
          if (!rc || *rc != 0)
            problems += "; daemon " + std::to_string(i) + " " +
                        (rc ? "exited " + std::to_string(*rc) : std::string("did not stop"));
        }
        logs->push_back(f.daemons[i]->Log());
        if (!o.fleet_logs.empty())
          std::ofstream(o.fleet_logs + "/run" + std::to_string(fleet_runs) + "-daemon" +
                        std::to_string(i) + ".jsonl")
              << f.daemons[i]->proc().Stdout();
      }
      return problems;
    };
    auto per_daemon = [](const std::vector<std::int64_t>& v) {
      std::string s;
      for (std::int64_t x : v) s += (s.empty() ? "" : "/") + Int(x);
      return s;
    };
    // "every transaction resolved once" or what was not.
    auto once = [&](const Resolutions& r, std::int64_t n, nlohmann::json* row) {
      (*row)["resolved_in_logs"] = static_cast<std::int64_t>(r.by.size());
      (*row)["resolved_by_two"] = r.twice;
      (*row)["failed_attempts"] = r.failed;
      std::string text;
      if (r.twice) text += "; " + Int(r.twice) + " RESOLVED BY TWO (" + r.example + ")";
      if (static_cast<std::int64_t>(r.by.size()) != n)
        text += "; " + Int(static_cast<std::int64_t>(r.by.size())) + " of " + Int(n) +
                " in the daemons' logs";
      if (text.empty()) text = "; each resolved once";
      if (r.errors) text += "; " + Int(r.errors) + " error lines";
      return text;
    };

    if (!o.fleet_run.empty()) {
      FleetSettings fs;
      fs.interval = o.fleet_interval;
      Table t(
          "A fleet of `txn-recoveryd run` daemons started together over the same stuck "
          "transactions (" +
              fs.Describe() +
              "; indexes created before they start; drain: from their start to the last "
              "resolution)",
          {"daemons", "N", "drain s", "busy claims", "busy/tx", "resolved per daemon",
           "server CPU s", "daemons CPU s", "check"});
      // A warm-up sweep first, not shown, as for --fleet.
      seed(o.fleet_n, false);
      (void)SweepUntilClean(o, config, uri, server, store.get(), true);
      for (std::int64_t k : o.fleet_run) {
        seed(o.fleet_n, false);
        CreateIndexes(store.get(), config, uri);
        ServerMeter meter(server);
        Fleet f = start_fleet(static_cast<int>(k), fs);
        const bool done = await_left(f, drained, std::chrono::milliseconds(250));
        const double poll_s = Seconds(Steady::now() - f.t0).count();
        const std::optional<double> server_cpu = meter.Elapsed();
        auto metrics = settled_metrics(f);
        double cpu = 0;
        for (const auto& d : f.daemons) cpu += d->Cpu().value_or(0);
        std::vector<DaemonLog> logs;
        std::string problems = stop_fleet(f, &logs);
        const Resolutions res(logs);
        const double drain_s = res.last > 0 ? res.last - f.wall0 : poll_s;
        std::int64_t busy = 0;
        std::vector<std::int64_t> resolved;
        for (auto& m : metrics) {
          busy += static_cast<std::int64_t>(m["txn_recoveryd_busy_total"]);
          resolved.push_back(static_cast<std::int64_t>(m["txn_recoveryd_resolved_total"]));
        }
        nlohmann::json j;
        std::string check = verify(o.fleet_n, &j) + once(res, o.fleet_n, &j) + problems;
        if (!done) check = "NOT DRAINED in " + Fmt("%.0f", o.fleet_timeout) + " s; " + check;
        t.Print({Int(k), Int(o.fleet_n), Fmt("%.1f", drain_s), Int(busy),
                 Per(static_cast<double>(busy), o.fleet_n, "%.3f"), per_daemon(resolved),
                 Opt(server_cpu, "%.1f"), Fmt("%.1f", cpu), check});
        j["run"] = "fleet-run";
        j["daemons"] = k;
        j["n"] = o.fleet_n;
        j["settings"] = fs.Describe();
        j["drained"] = done;
        j["drain_seconds"] = drain_s;
        j["poll_seconds"] = poll_s;
        j["busy_claims"] = busy;
        j["busy_per_transaction"] = static_cast<double>(busy) / static_cast<double>(o.fleet_n);
        j["resolved_per_daemon"] = resolved;
        j["resolved_per_daemon_logs"] = res.per_daemon;
        j["server_cpu_seconds"] = Json(server_cpu);
        j["daemons_cpu_seconds"] = cpu;
        if (!problems.empty()) j["problem_daemons"] = problems.substr(2);
        report.Add(std::move(j));
      }
    }

    if (o.takeover) {
      std::chrono::milliseconds heartbeat, expiry, interval, lease;
      Check(txn_recoveryd::ParseDuration(o.takeover_heartbeat, &heartbeat), "--takeover-heartbeat");
      Check(txn_recoveryd::ParseDuration(o.takeover_expiry, &expiry), "--takeover-expiry");
      Check(txn_recoveryd::ParseDuration(o.takeover_interval, &interval), "--takeover-interval");
      Check(txn_recoveryd::ParseDuration(o.takeover_lease, &lease), "--takeover-lease");
      FleetSettings fs;
      fs.interval = o.takeover_interval;
      fs.heartbeat = o.takeover_heartbeat;
      fs.expiry = o.takeover_expiry;
      fs.lease = o.takeover_lease;
      // A transaction the victim had claimed is in `resuming`, its time stamped at the
      // claim: it is due again only resume_after later (and once its lease expired), so
      // resume_after is shortened too, or the default minute would be all one measures.
      fs.watch_keys = "resume_after = \"" + o.takeover_resume_after + "\"\n";
      const double bound = std::chrono::duration<double>(expiry + interval).count();
      const double lease_bound = std::chrono::duration<double>(lease + interval).count();
      const std::string members = "txn_recoveryd_members";
      Table t(
          "Take-over: 3 `run` daemons, one SIGKILLed or SIGSTOPped once a third of the "
          "backlog is resolved (" +
              fs.Describe() + ", resume_after " + o.takeover_resume_after +
              "); times from the fault; its share: the buckets it held among the 3 "
              "members, less what it had leased",
          {"fault", "N", "resolved at fault", "its share left", "its share started s",
           "its share done s", "bound s", "its leased done s", "all done s", "by two", "check"});
      struct Left {
        std::unordered_set<std::string> share, leased;  // its share unleased; its leases
      };
      // Runs one take-over: `fault` is "kill" or "stop", `stop_s` how long a stop lasts.
      auto run = [&](const std::string& fault, double stop_s) {
        seed(o.fleet_n, false);
        CreateIndexes(store.get(), config, uri);
        Fleet f = start_fleet(3, fs);
        const std::int64_t third = o.fleet_n - o.fleet_n / 3;
        std::int64_t left_at_fault = 0;
        await_left(
            f,
            [&](std::int64_t left) {
              left_at_fault = left;
              return left <= third;
            },
            std::chrono::milliseconds(100));
        // The fleet as the server holds it now: the victim's share is the buckets it holds
        // among the live members (all three, unless one's record has lapsed).
        std::vector<std::vector<MemberRecord>> sweepers(profiles.size());
        std::size_t seen_members = 3;
        for (std::size_t i = 0; i < profiles.size(); ++i) {
          DateTime now;
          const Namespace txns = profiles[i]->Transactions(db_of(*profiles[i]));
          Check(LiveSweepers(store.get(), {txns.database, members}, txns.collection, expiry,
                             &sweepers[i], &now),
                "live members");
          seen_members = std::min(seen_members, sweepers[i].size());
        }
        RunDaemon& victim = *f.daemons[0];
        const double wall_fault = UnixNow();
        const Steady::time_point t_fault = Steady::now();
        victim.proc().Signal(fault == "kill" ? SIGKILL : SIGSTOP);
        if (fault == "kill") {
          (void)victim.proc().Wait(std::chrono::seconds(5));
          f.gone[0] = true;
        }
        // What is left of its share, read a second after the fault: its leased transactions
        // wait for the lease (and resume_after), the rest only for the others to see it
        // gone. Not at once: the claims it had sent before the fault still land (the
        // server reads what reached it before a SIGKILL closed the socket), and read
        // earlier they were taken for unleased ones (its share done at 15.8 s, the lease).
        std::this_thread::sleep_for(std::chrono::seconds(1));
        Left left;
        for (std::size_t i = 0; i < profiles.size(); ++i) {
          DateTime now = ServerNow(store.get());
          FindOptions fo;
          fo.batch_size = o.read_batch;
          fo.projection = {"recovery.lease"};
          std::unique_ptr<Cursor> c;
          const Namespace txns = profiles[i]->Transactions(db_of(*profiles[i]));
          Check(store->Find(txns, profiles[i]->Unfinished(), fo, &c), "find unfinished");
          Document d;
          for (bool has = true;;) {
            Check(c->Next(&d, &has), "read unfinished");
            if (!has) break;
            const Value* id = d.Get("_id");
            const MemberRecord* holder = id ? HolderOf(sweepers[i], *id) : nullptr;
            if (!holder || holder->id != victim.owner()) continue;
            const Value* owner = d.GetPath("recovery.lease.owner");
            const Value* expires = d.GetPath("recovery.lease.expires");
            const bool leased =
                owner && owner->is_string() && *owner->as_string() == victim.owner() && expires &&
                expires->is_datetime() && expires->as_datetime()->millis > now.millis;
            (leased ? left.leased : left.share).insert(IdKey(*id));
          }
        }
        // Everything, by the server: the poll that first finds nothing unfinished, during the
        // stop too (a stopped daemon logs what it wrote before the stop only once continued,
        // so its log's times say when it woke, not when it wrote).
        std::optional<Steady::time_point> drained_at;
        double wall_cont = 0;
        if (fault == "stop") {
          const auto until =
              t_fault + std::chrono::duration_cast<Steady::duration>(Seconds(stop_s));
          for (; Steady::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(250)))
            if (!drained_at && unfinished() == 0) drained_at = Steady::now();
          victim.proc().Signal(SIGCONT);
          wall_cont = UnixNow();
        }
        const bool done = drained_at || await_left(f, drained, std::chrono::milliseconds(250));
        const double all_s = Seconds(drained_at.value_or(Steady::now()) - t_fault).count();
        (void)settled_metrics(f);
        std::vector<DaemonLog> logs;
        std::string problems = stop_fleet(f, &logs);
        const Resolutions res(logs);
        // When the last of a set was resolved by the others, after the fault (their logs:
        // they were never stopped, so a line's time is its write's, within a bulk); how
        // many the victim resolved itself (its writes in flight at the fault, or once
        // continued: their time is unknown), and how many no log names (the killed
        // daemon's last writes, which its log did not keep).
        std::int64_t by_itself = 0, unlogged = 0;
        std::unordered_map<std::string, double> by_others;  // txn -> its first resolution
        for (std::size_t d = 1; d < logs.size(); ++d)
          for (const auto& r : logs[d].resolved)
            if (r.action != "check-late-writes") by_others.emplace(r.txn, r.at);
        auto last_of = [&](const std::unordered_set<std::string>& set) {
          double last = -1;  // none timed: every one resolved by itself, or none left
          for (const auto& id : set) {
            if (auto it = by_others.find(id); it != by_others.end())
              last = std::max(last, it->second - wall_fault);
            else if (res.by.count(id))
              ++by_itself;
            else
              ++unlogged;
          }
          return last;
        };
        const double share_s = last_of(left.share);
        const double leased_s = last_of(left.leased);
        // When the others first resolved one of its share: the take-over's start, which the
        // bound (fleet.expiry + one interval) is about; the rest of "done" is the time to
        // drive what it held.
        double started_s = -1;
        for (const auto& id : left.share)
          if (auto it = by_others.find(id); it != by_others.end())
            started_s = started_s < 0 ? it->second - wall_fault
                                      : std::min(started_s, it->second - wall_fault);
        nlohmann::json j;
        // A SIGKILLed daemon's last resolutions may be on the server and not in its log (it
        // logs a bulk's transactions once the bulk returns): those are named, not failed.
        std::string check = verify(o.fleet_n, &j);
        if (fault == "kill" && !res.twice && static_cast<std::int64_t>(res.by.size()) < o.fleet_n) {
          const std::int64_t missing = o.fleet_n - static_cast<std::int64_t>(res.by.size());
          check += "; each logged once; " + Int(missing) +
                   " resolved in no log (the killed daemon's last bulks)";
          j["resolved_in_logs"] = static_cast<std::int64_t>(res.by.size());
          j["resolved_by_two"] = res.twice;
          j["failed_attempts"] = res.failed;
        } else {
          check += once(res, o.fleet_n, &j);
        }
        check += problems;
        if (!done) check = "NOT DRAINED in " + Fmt("%.0f", o.fleet_timeout) + " s; " + check;
        if (seen_members != 3) check += "; " + std::to_string(seen_members) + " live members seen";
        if (unlogged) check += "; " + Int(unlogged) + " of what it held in no log";
        if (by_itself)
          check += "; " + Int(by_itself) + " of what it held (share or leases) resolved by itself";
        std::string what = fault == "kill" ? "SIGKILL" : "SIGSTOP " + Fmt("%.0f", stop_s) + " s";
        if (fault == "stop") {
          // What the stopped member did once continued: resolutions (its own share, or its
          // leases not yet taken over), and attempts that failed (a fenced write, a lost claim).
          std::int64_t after = 0, by_others_while = 0;
          std::int64_t failed_after = 0;
          // Half a second of slack: its lines carry milliseconds, truncated, and it may log
          // before the bench reads the clock after SIGCONT; a stop lasts seconds.
          const double woke = wall_cont - 0.5;
          for (const auto& r : logs[0].resolved)
            if (r.at >= woke && r.action != "check-late-writes") ++after;
          for (double at : logs[0].failed) failed_after += at >= woke ? 1 : 0;
          for (const auto& id : left.share) {
            auto it = res.at.find(id);
            if (it != res.at.end() && it->second < wall_cont) ++by_others_while;
          }
          check += "; while stopped the others resolved " + Int(by_others_while) + " of its " +
                   Int(static_cast<std::int64_t>(left.share.size())) + "; continued, it resolved " +
                   Int(after) + " and failed " + Int(failed_after) + " attempt(s)";
          j["failed_by_it_after_sigcont"] = failed_after;
          j["resolved_by_it_after_sigcont"] = after;
          j["its_share_resolved_by_others_while_stopped"] = by_others_while;
          j["stop_seconds"] = stop_s;
        }
        t.Print({what, Int(o.fleet_n), Int(o.fleet_n - left_at_fault),
                 Int(static_cast<std::int64_t>(left.share.size())) + " + " +
                     Int(static_cast<std::int64_t>(left.leased.size())) + " leased",
                 started_s >= 0 ? Fmt("%.1f", started_s) : "-",
                 share_s >= 0 ? Fmt("%.1f", share_s) : "-", Fmt("%.1f", bound),
                 leased_s >= 0 ? Fmt("%.1f", leased_s) : "-", Fmt("%.1f", all_s), Int(res.twice),
                 check});
        j["run"] = fault == "kill" ? "takeover-kill" : "takeover-stop";
        j["n"] = o.fleet_n;
        j["settings"] = fs.Describe() + ", resume_after " + o.takeover_resume_after;
        j["resolved_at_fault"] = o.fleet_n - left_at_fault;
        j["live_members_seen"] = seen_members;
        j["its_share_left"] = left.share.size();
        j["its_leased_left"] = left.leased.size();
        j["its_share_started_seconds"] =
            started_s >= 0 ? nlohmann::json(started_s) : nlohmann::json();
        j["its_share_started_within_bound"] = started_s >= 0 && started_s <= bound;
        j["its_share_done_seconds"] = share_s >= 0 ? nlohmann::json(share_s) : nlohmann::json();
        j["bound_seconds"] = bound;
        j["its_share_within_bound"] = share_s <= bound;
        j["its_leased_done_seconds"] = leased_s >= 0 ? nlohmann::json(leased_s) : nlohmann::json();
        j["lease_bound_seconds"] = lease_bound;
        j["all_done_seconds"] = all_s;
        j["unlogged"] = unlogged;
        j["its_share_resolved_by_itself"] = by_itself;
        report.Add(std::move(j));
      };
      run("kill", 0);
      for (double s : o.takeover_stop) run("stop", s);
    }
  }
  std::printf("\nload average at the end: %s\n", LoadAverage().c_str());
  report.doc()["machine"]["load_average_end"] = LoadAverage();
  report.Save();
  for (const auto& p : profiles) (void)store->DropDatabase(db_of(*p));
  std::remove(config.c_str());
  return 0;
}

std::vector<std::int64_t> ParseList(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(std::stoll(item));
  return out;
}

}  // namespace

// An exception out of main ends the tool with its message (std::terminate), as a
// benchmark tool may.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "txn-recovery-bench: the daemon's sweep vs the applications' own step-by-step recovery "
      "loop vs the server's bulk-write limit; idle sweeps; dry runs"};
  Options o;
  std::string ns = "1000,10000", idle = "10000", profiles = "transfer";
  o.daemon = TXN_RECOVERYD_BINARY;
  app.add_option("--n", ns, "Stuck transactions per recovery run, comma-separated");
  app.add_option("--idle", idle, "Terminal transactions for the idle sweeps (empty: none)");
  std::string dry;
  app.add_option("--dry-run-n", dry, "Stuck transactions for dry-run sweeps (memory)");
  app.add_option("--writes-n", o.writes_n,
                 "Stuck transactions for the sweep whose writes are counted through a wire "
                 "proxy (default: the first --n; 0: none)");
  app.add_option("--profiles", profiles,
                 "Comma-separated mix of profiles (transfer, operations: mongoose operations)");
  app.add_option("--baseline-budget", o.baseline_budget, "Seconds the baseline may run per N");
  app.add_option("--warm-up", o.warm_up,
                 "Stuck transactions of a sweep and a limit run first, not shown, so that no "
                 "measured run pays for the server's warm-up (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--workers", o.workers, "sweep.workers of the daemon");
  app.add_option("--batch-size", o.batch_size, "sweep.batch_size of the daemon");
  app.add_option("--limit-threads", o.limit_threads, "Threads issuing the limit's bulk writes");
  app.add_option("--idle-sweeps", o.idle_sweeps, "Measured idle sweeps per N (the median shown)")
      ->check(CLI::Range(1, 100));
  app.add_option("--sweep-attempts", o.sweep_attempts,
                 "Sweeps tried before a failing one stops the bench (the server went away); "
                 "failures are reported with the figures")
      ->check(CLI::Range(1, 100));
  app.add_option("--idle-settle", o.idle_settle,
                 "Seconds between the first idle sweep (which builds the indexes) and the "
                 "measured ones");
  app.add_option("--read-batch", o.read_batch, "Documents per reply when the bench verifies")
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--server-state-dir", o.server_state_dir,
                 "The test server's state directory (scripts/testdb-start.sh): its processes' "
                 "CPU time is measured");
  std::string fleet;
  app.add_option("--fleet", fleet,
                 "Sweeps run at once, comma-separated (e.g. 1,2,3): each count twice, every "
                 "sweep of everything, then each of its --share (empty: none)");
  app.add_option("--fleet-n", o.fleet_n,
                 "Stuck transactions for the --fleet, --fleet-run and --takeover runs");
  std::string fleet_run, takeover_stop = "5,20";
  app.add_option("--fleet-run", fleet_run,
                 "`txn-recoveryd run` daemons started at once, comma-separated (e.g. 1,2,3): "
                 "each count drains --fleet-n stuck transactions as a fleet (empty: none)");
  app.add_option("--fleet-interval", o.fleet_interval,
                 "daemon.interval of the --fleet-run daemons");
  app.add_option("--fleet-timeout", o.fleet_timeout,
                 "Seconds a fleet of run daemons may take to drain before the row fails");
  app.add_flag("--takeover", o.takeover,
               "3 run daemons on --fleet-n stuck transactions: one SIGKILLed once a third is "
               "resolved, then (a run each) one SIGSTOPped for each --takeover-stop");
  app.add_option("--fleet-logs", o.fleet_logs,
                 "A directory where each run daemon's JSON log is kept (runN-daemonI.jsonl)");
  app.add_option("--fleet-log-level", o.fleet_log_level,
                 "log.level of the run daemons (info; debug logs every busy claim, for a look "
                 "at --fleet-logs, and costs time)");
  app.add_option("--takeover-stop", takeover_stop,
                 "Seconds of each take-over SIGSTOP, comma-separated (empty: none)");
  app.add_option("--takeover-heartbeat", o.takeover_heartbeat, "fleet.heartbeat of the take-over");
  app.add_option("--takeover-expiry", o.takeover_expiry, "fleet.expiry of the take-over");
  app.add_option("--takeover-interval", o.takeover_interval, "daemon.interval of the take-over");
  app.add_option("--takeover-lease", o.takeover_lease, "sweep.lease of the take-over (>= 15s)");
  app.add_option("--takeover-resume-after", o.takeover_resume_after,
                 "resume_after of the take-over's watch");
  app.add_option("--index-cost", o.index_cost_writes,
                 "The application's writes to its accounts per round, with and without each "
                 "index the daemon may ask for there, and one orphan scan of them after each "
                 "round (0: not measured)");
  app.add_option("--index-cost-accounts", o.index_cost_accounts,
                 "The accounts of --index-cost (the orphan scan without indexes reads them all)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000'000}));
  app.add_option("--json", o.json_path, "Also write every figure to this JSON file");
  app.add_option("--daemon", o.daemon, "The txn-recoveryd binary");
  CLI11_PARSE(app, argc, argv);
  o.ns = ParseList(ns);
  o.idle = ParseList(idle);
  o.dry = ParseList(dry);
  o.fleet = ParseList(fleet);
  o.fleet_run = ParseList(fleet_run);
  o.takeover_stop.clear();
  for (std::int64_t v : ParseList(takeover_stop)) o.takeover_stop.push_back(static_cast<double>(v));
  o.profiles.clear();
  std::stringstream ps(profiles);
  for (std::string item; std::getline(ps, item, ',');)
    if (!item.empty()) o.profiles.push_back(item);
  for (const char* var : {"TXN_RECOVERY_TEST_URI", "TXN_RECOVERYD_MONGODB_URI"})
    if (const char* v = std::getenv(var); v && *v && o.uri.empty()) o.uri = v;
  if (o.uri.empty()) {
    std::cerr << "set TXN_RECOVERY_TEST_URI or TXN_RECOVERYD_MONGODB_URI\n";
    return 64;
  }
  try {
    return Main(o);
  } catch (const std::exception& e) {
    std::cerr << "txn-recovery-bench: " << e.what() << "\n";
    return 1;
  }
}
