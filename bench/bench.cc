// txn-recovery-bench: how fast stuck transactions are cleared, against the two references
// that matter, on the same data:
//   sweep     `txn-recoveryd sweep` as an operator runs it (a separate process: its wall
//             time, its peak RSS from wait4, its round trips from its --json report);
//   baseline  the seeds' recovery procedure as a user writes it from seeds 002/004: find
//             one stale transaction, replay its steps one update at a time, repeat;
//   limit     the server's own limit: the same writes, no reads, no guards, no leases,
//             as unordered bulk writes (phase by phase so that every $push precedes its
//             $pull).
// and the idle cost: a sweep over terminal transactions only, whose reads must not grow
// with their number.
//
// The URI comes from TXN_RECOVERY_TEST_URI or TXN_RECOVERYD_MONGODB_URI (never argv).
// scripts/bench.sh starts the embedded server and runs the whole set.
//
// Workloads are profiles (BenchProfile below); `--profiles` picks the mix. Every profile
// seeds its own database with a deterministic plan (the same data for each of the three
// runs), and verifies the end state after each.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "txn_recovery/mongo_store.h"

extern char** environ;

namespace {

using namespace txn_recovery;
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

// ---- Profiles ---------------------------------------------------------------------------

struct RunResult {
  std::int64_t done = 0;  // transactions driven to a terminal state
  double seconds = 0;
  bool complete = true;  // false when the time budget ran out first
  std::int64_t round_trips = 0, documents_read = 0;
  long peak_rss_kb = 0;  // sweep only
};

class BenchProfile {
 public:
  virtual ~BenchProfile() = default;
  virtual std::string name() const = 0;
  // The [[watch]] tables recovering this profile's database.
  virtual std::string WatchToml(const std::string& database) const = 0;
  // Drops `database` and fills it with `n` stuck transactions of a realistic mix of states
  // (and whatever participants they name), all of them due for recovery at `now`.
  virtual void SeedStuck(Store* store, const std::string& database, std::int64_t n,
                         DateTime now) = 0;
  // Drops `database` and fills it with `n` terminal transactions past the late-write
  // window: an idle sweep has nothing to do there.
  virtual void SeedTerminal(Store* store, const std::string& database, std::int64_t n,
                            DateTime now) = 0;
  // The seeds' procedure, one transaction at a time, until nothing is stale or `deadline`.
  virtual RunResult Baseline(Store* store, const std::string& database, DateTime now,
                             Steady::time_point deadline) = 0;
  // The same writes as bulk writes without logic; returns how many transactions they cover.
  virtual RunResult Limit(Store* store, const std::string& database, std::int64_t n,
                          int threads) = 0;
  // Empty when every transaction is terminal and the participants agree; else the problem.
  virtual std::string Verify(Store* store, const std::string& database, std::int64_t n) = 0;
};

// Seeds 002/004: transfers between accounts, the application killed after each of its
// steps 1..7 in turn (initial; pending before/after the debit and after the credit;
// applied with both, one or no marker pulled). Pending ones are half stale (resume) and
// half expired (roll back); the others are past every threshold.
class TransferBench final : public BenchProfile {
 public:
  std::string name() const override { return "transfer"; }

  std::string WatchToml(const std::string& database) const override {
    return "[[watch]]\nname = \"" + database + "\"\ndatabase = \"" + database +
           "\"\nprofile = \"transfer\"\n";
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
  static std::string StateAfter(int steps) {
    return steps == 1 ? "initial" : steps <= 4 ? "pending" : "applied";
  }
  static Namespace Txns(const std::string& db) { return {db, "transactions"}; }
  static Namespace Accts(const std::string& db) { return {db, "accounts"}; }
  static constexpr std::int64_t kOpening = 1'000'000;

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
                   {"pendingTransactions", std::move(marks)}});
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
      chunk.push_back(Document{{"_id", p.id},
                               {"source", Account(p.from)},
                               {"destination", Account(p.to)},
                               {"value", p.amount},
                               {"state", StateAfter(p.steps)},
                               {"lastModified", DateTime{now.millis - p.age_ms}}});
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
      chunk.push_back(Document{{"_id", p.id},
                               {"source", Account(p.from)},
                               {"destination", Account(p.to)},
                               {"value", p.amount},
                               {"state", done ? "done" : "cancelled"},
                               {"lastModified", DateTime{now.millis - 3 * 60 * kMinute}}});
      if (chunk.size() == 10'000 || i + 1 == n) {
        Check(store->InsertMany(Txns(db), chunk), "insert transactions");
        chunk.clear();
      }
    }
    InsertAccounts(store, db, m, delta, {});
  }

  // Seed 002 §2.5/2.6 and seed 004, as a user would write them with this driver: the
  // threshold computed once, then for each kind of stale transaction, findOne it, replay
  // the steps in order, each one guarded as the seed guards it, and loop.
  RunResult Baseline(Store* store, const std::string& db, DateTime now,
                     Steady::time_point deadline) override {
    RunResult r;
    const Namespace txns = Txns(db), accts = Accts(db);
    const DateTime resume_threshold{now.millis - kMinute};
    const DateTime expire_threshold{now.millis - 30 * kMinute};
    WriteResult w;
    auto set_state = [&](const Value& id, const char* from, const char* to) {
      Check(store->UpdateOne(txns, Filter().Eq("_id", id).Eq("state", from),
                             Update().Set("state", to).CurrentDate("lastModified"), &w),
            "update state");
    };
    auto apply = [&](const Document& t, const char* who, bool debit) {
      const Value& id = *t.Get("_id");
      std::int32_t v = static_cast<std::int32_t>(*t.Get("value")->as_double());
      Check(store->UpdateOne(
                accts, Filter().Eq("_id", *t.Get(who)).Ne("pendingTransactions", id),
                Update().Inc("balance", debit ? -v : v).Push("pendingTransactions", id), &w),
            "apply");
    };
    auto undo = [&](const Document& t, const char* who, bool debit) {
      const Value& id = *t.Get("_id");
      std::int32_t v = static_cast<std::int32_t>(*t.Get("value")->as_double());
      Check(store->UpdateOne(
                accts, Filter().Eq("_id", *t.Get(who)).Eq("pendingTransactions", id),
                Update().Inc("balance", debit ? v : -v).Pull("pendingTransactions", id), &w),
            "undo");
    };
    auto pull = [&](const Document& t, const char* who) {
      const Value& id = *t.Get("_id");
      Check(store->UpdateOne(accts, Filter().Eq("_id", *t.Get(who)).Eq("pendingTransactions", id),
                             Update().Pull("pendingTransactions", id), &w),
            "pull");
    };
    struct Pass {
      const char* state;
      DateTime older_than;
      std::function<void(const Document&)> recover;
    };
    const std::vector<Pass> passes = {
        {"pending", expire_threshold,
         [&](const Document& t) {  // seed 002 §2.6.1: roll back an expired pending transfer
           set_state(*t.Get("_id"), "pending", "canceling");
           undo(t, "destination", false);
           undo(t, "source", true);
           set_state(*t.Get("_id"), "canceling", "cancelled");
         }},
        {"pending", resume_threshold,
         [&](const Document& t) {  // §2.5.1: redo the account updates, then finish
           apply(t, "source", true);
           apply(t, "destination", false);
           set_state(*t.Get("_id"), "pending", "applied");
           pull(t, "source");
           pull(t, "destination");
           set_state(*t.Get("_id"), "applied", "done");
         }},
        {"applied", resume_threshold,
         [&](const Document& t) {  // §2.5.2: remove the markers, then finish
           pull(t, "source");
           pull(t, "destination");
           set_state(*t.Get("_id"), "applied", "done");
         }},
        {"initial", expire_threshold,
         [&](const Document& t) { set_state(*t.Get("_id"), "initial", "cancelled"); }},
    };
    Store::WireStats before = Wire(store);
    auto t0 = Steady::now();
    for (const Pass& pass : passes) {
      while (true) {
        if (Steady::now() >= deadline) {
          r.complete = false;
          break;
        }
        std::optional<Document> t;
        Check(store->FindOne(
                  txns, Filter().Eq("state", pass.state).Lt("lastModified", pass.older_than), &t),
              "findOne");
        if (!t) break;
        pass.recover(*t);
        ++r.done;
      }
      if (!r.complete) break;
    }
    r.seconds = Seconds(Steady::now() - t0).count();
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
    auto state = [](const char* s) { return Update().Set("state", s).CurrentDate("lastModified"); };
    const std::vector<Phase> phases = {
        // 1: the first state change (pending -> canceling for expired ones), the missing
        //    applications of a resume.
        [&](const Plan& p, auto* t, auto* a) {
          if (p.rollback()) {
            t->push_back({txn(p), state("canceling")});
          } else if (p.steps >= 2 && p.steps <= 4) {
            if (p.steps < 3)
              a->push_back({acct(p.from),
                            Update().Inc("balance", -p.amount).Push("pendingTransactions", p.id)});
            if (p.steps < 4)
              a->push_back({acct(p.to),
                            Update().Inc("balance", p.amount).Push("pendingTransactions", p.id)});
          }
        },
        // 2: undo (rollback), mark applied (resume).
        [&](const Plan& p, auto* t, auto* a) {
          if (p.rollback()) {
            if (p.steps >= 4)
              a->push_back({acct(p.to),
                            Update().Inc("balance", -p.amount).Pull("pendingTransactions", p.id)});
            if (p.steps >= 3)
              a->push_back({acct(p.from),
                            Update().Inc("balance", p.amount).Pull("pendingTransactions", p.id)});
          } else if (p.steps >= 2 && p.steps <= 4) {
            t->push_back({txn(p), state("applied")});
          }
        },
        // 3: pull the markers (resume, finish).
        [&](const Plan& p, auto*, auto* a) {
          if (p.rollback() || p.steps == 1) return;
          if (p.steps < 6) a->push_back({acct(p.from), Update().Pull("pendingTransactions", p.id)});
          if (p.steps < 7) a->push_back({acct(p.to), Update().Pull("pendingTransactions", p.id)});
        },
        // 4: the terminal state.
        [&](const Plan& p, auto* t, auto*) {
          t->push_back({txn(p), state(p.steps == 1 || p.rollback() ? "cancelled" : "done")});
        },
    };
    RunResult r;
    Store::WireStats before = Wire(store);
    auto t0 = Steady::now();
    for (const Phase& phase : phases) {
      std::vector<std::thread> pool;
      std::vector<std::string> errors(static_cast<std::size_t>(threads));
      for (int th = 0; th < threads; ++th) {
        pool.emplace_back([&, th] {
          try {
            std::vector<UpdateRequest> t, a;
            BulkResult w;
            const std::int64_t chunk = 1000;
            for (std::int64_t start = th * chunk; start < n; start += chunk * threads) {
              for (std::int64_t i = start; i < std::min(n, start + chunk); ++i)
                phase(PlanOf(i, n), &t, &a);
              Check(store->UpdateEach(txns, t, &w), "bulk transactions");
              if (!w.refused.empty()) Check(w.refused.front().second, "bulk transactions");
              Check(store->UpdateEach(accts, a, &w), "bulk accounts");
              if (!w.refused.empty()) Check(w.refused.front().second, "bulk accounts");
              t.clear();
              a.clear();
            }
          } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(th)] = e.what();
          }
        });
      }
      for (auto& th : pool) th.join();
      for (const auto& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
    }
    r.seconds = Seconds(Steady::now() - t0).count();
    r.done = n;
    Store::WireStats after = Wire(store);
    r.round_trips = after.round_trips - before.round_trips;
    r.documents_read = after.documents_returned - before.documents_returned;
    return r;
  }

  std::string Verify(Store* store, const std::string& db, std::int64_t n) override {
    std::int64_t count = 0;
    Check(
        store->Count(Txns(db), Filter().Nin("state", {Value("done"), Value("cancelled")}), &count),
        "count");
    if (count) return std::to_string(count) + " transactions not terminal";
    Check(store->Count(Accts(db), Filter().Exists("pendingTransactions.0"), &count), "count");
    if (count) return std::to_string(count) + " accounts still carry markers";
    // Conservation, and atomicity in aggregate: the total is unchanged and the balances
    // are exactly the opening ones plus the transfers that ended done.
    const std::int64_t m = Accounts(n);
    std::vector<std::int64_t> expected(static_cast<std::size_t>(m), kOpening);
    std::unique_ptr<Cursor> c;
    Check(store->Find(Txns(db), Filter().Eq("state", "done"), {}, &c), "find done");
    Document d;
    for (bool has = true;;) {
      Check(c->Next(&d, &has), "next");
      if (!has) break;
      Plan p = PlanOf(static_cast<std::int64_t>(*d.Get("_id")->as_double()) - 1, n);
      expected[static_cast<std::size_t>(p.from)] -= p.amount;
      expected[static_cast<std::size_t>(p.to)] += p.amount;
    }
    Check(store->Find(Accts(db), Filter(), {}, &c), "find accounts");
    std::int64_t total = 0, wrong = 0;
    for (bool has = true;;) {
      Check(c->Next(&d, &has), "next");
      if (!has) break;
      std::int64_t k = std::stoll(d.Get("_id")->as_string()->substr(1));
      std::int64_t b = static_cast<std::int64_t>(*d.Get("balance")->as_double());
      total += b;
      if (b != expected[static_cast<std::size_t>(k)]) ++wrong;
    }
    if (total != kOpening * m)
      return "total balance " + std::to_string(total) + " != " + std::to_string(kOpening * m);
    if (wrong) return std::to_string(wrong) + " accounts disagree with the done transfers";
    return "";
  }
};

std::unique_ptr<BenchProfile> MakeProfile(const std::string& name) {
  if (name == "transfer") return std::make_unique<TransferBench>();
  // The operations (seed 000) and tagged-insert (seed 003) profiles plug in here.
  return nullptr;
}

// ---- The daemon as a child process ------------------------------------------------------

struct ChildRun {
  int exit_code = -1;
  double seconds = 0;
  long peak_rss_kb = 0;
  std::string out;
};

ChildRun RunDaemon(const std::string& binary, const std::vector<std::string>& args) {
  std::string out_path = "/tmp/txn-recovery-bench-" + std::to_string(getpid()) + ".out";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ChildRun r;
  pid_t pid = 0;
  auto t0 = Steady::now();
  int rc = posix_spawn(&pid, binary.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + binary);
  int status = 0;
  struct rusage ru {};
  if (wait4(pid, &status, 0, &ru) != pid) throw std::runtime_error("wait4 failed");
  r.seconds = Seconds(Steady::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.peak_rss_kb = ru.ru_maxrss;  // kilobytes on Linux: VmHWM of the child
  std::ifstream in(out_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.out = ss.str();
  std::remove(out_path.c_str());
  return r;
}

struct Options {
  std::string uri, daemon;
  std::vector<std::int64_t> ns, idle, dry;
  std::vector<std::string> profiles{"transfer"};
  double baseline_budget = 600;
  int workers = 4, batch_size = 500, limit_threads = 4;
  std::string database_prefix = "txnbench";
};

std::string WriteConfig(const Options& o, const std::vector<std::string>& watches) {
  std::string path = "/tmp/txn-recovery-bench-" + std::to_string(getpid()) + ".toml";
  std::ofstream f(path);
  f << "[mongodb]\nuri = \"" << o.uri << "\"\nsocket_timeout = \"10m\"\n"
    << "[sweep]\nworkers = " << o.workers << "\nbatch_size = " << o.batch_size
    << "\nmanage_indexes = true\n[log]\nlevel = \"warn\"\n";
  for (const auto& w : watches) f << w;
  return path;
}

RunResult Sweep(const Options& o, const std::string& config, bool dry_run = false) {
  std::vector<std::string> args = {"sweep", "--json", "--config", config};
  if (dry_run) args.push_back("--dry-run");
  ChildRun c = RunDaemon(o.daemon, args);
  if (c.exit_code != 0) throw std::runtime_error("sweep exited " + std::to_string(c.exit_code));
  // A dry run lists every planned transaction (a million lines at the largest size); only
  // the summary is read here, so the list is dropped while parsing.
  auto doc = nlohmann::json::parse(
      c.out, [](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        return !(event == nlohmann::json::parse_event_t::key && parsed == "transactions");
      });
  RunResult r;
  r.seconds = c.seconds;
  r.peak_rss_kb = c.peak_rss_kb;
  r.round_trips = doc["wire"]["round_trips"].get<std::int64_t>();
  r.documents_read = doc["wire"]["documents_read"].get<std::int64_t>();
  for (const auto& w : doc["watches"]) r.done += w["resolved"].get<std::int64_t>();
  return r;
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void Row(const std::string& label, std::int64_t n, const RunResult& r, const std::string& note) {
  double per = r.done ? 1.0 / static_cast<double>(r.done) : 0;
  std::printf("| %-8s | %9lld | %9lld | %8.1f | %9.0f | %8s | %7.2f | %7.2f | %s\n", label.c_str(),
              static_cast<long long>(n), static_cast<long long>(r.done), r.seconds,
              r.seconds > 0 ? static_cast<double>(r.done) / r.seconds : 0,
              r.peak_rss_kb ? Fmt("%.1f", static_cast<double>(r.peak_rss_kb) / 1024).c_str() : "-",
              static_cast<double>(r.round_trips) * per, static_cast<double>(r.documents_read) * per,
              note.c_str());
  std::fflush(stdout);
}

int Main(const Options& o) {
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
  for (const auto& p : profiles) watches.push_back(p->WatchToml(db_of(*p)));
  const std::string config = WriteConfig(o, watches);
  // Every profile gets n / profiles of the transactions.
  const std::int64_t share = static_cast<std::int64_t>(profiles.size());

  std::printf("profiles:");
  for (const auto& p : profiles) std::printf(" %s", p->name().c_str());
  std::printf("; sweep: %d workers, batch %d; limit: %d threads of 1000-write bulks\n\n", o.workers,
              o.batch_size, o.limit_threads);
  std::printf(
      "| run      |         N |      done |  seconds |      tx/s | RSS MiB  | RT/tx   | docs/tx | "
      "note\n");
  std::printf(
      "|----------|-----------|-----------|----------|-----------|----------|---------|---------|--"
      "---\n");
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
  auto verify = [&](std::int64_t n) {
    std::string problems;
    for (const auto& p : profiles) {
      std::string v = p->Verify(store.get(), db_of(*p), n / share);
      if (!v.empty()) problems += p->name() + ": " + v + "; ";
    }
    return problems.empty() ? std::string("verified") : "NOT VERIFIED: " + problems;
  };

  struct Summary {
    std::int64_t n;
    double sweep, baseline, limit;
    bool baseline_complete;
    long rss;
  };
  std::vector<Summary> summaries;
  for (std::int64_t n : o.ns) {
    Summary s{n, 0, 0, 0, true, 0};
    seed(n, false);
    RunResult sw = Sweep(o, config);
    Row("sweep", n, sw, verify(n));
    s.sweep = static_cast<double>(sw.done) / sw.seconds;
    s.rss = sw.peak_rss_kb;

    seed(n, false);
    auto deadline =
        Steady::now() + std::chrono::duration_cast<Steady::duration>(Seconds(o.baseline_budget));
    RunResult base;
    for (const auto& p : profiles) {
      RunResult r = p->Baseline(store.get(), db_of(*p), ServerNow(store.get()), deadline);
      base.done += r.done;
      base.seconds += r.seconds;
      base.round_trips += r.round_trips;
      base.documents_read += r.documents_read;
      base.complete = base.complete && r.complete;
    }
    Row("baseline", n, base,
        base.complete ? verify(n)
                      : "time budget of " + Fmt("%.0f", o.baseline_budget) + "s ran out");
    s.baseline = static_cast<double>(base.done) / base.seconds;
    s.baseline_complete = base.complete;

    seed(n, false);
    RunResult lim;
    for (const auto& p : profiles) {
      RunResult r = p->Limit(store.get(), db_of(*p), n / share, o.limit_threads);
      lim.done += r.done;
      lim.seconds += r.seconds;
      lim.round_trips += r.round_trips;
    }
    Row("limit", n, lim, verify(n));
    s.limit = static_cast<double>(lim.done) / lim.seconds;
    summaries.push_back(s);
  }
  for (std::int64_t n : o.idle) {
    seed(n, true);
    RunResult idle = Sweep(o, config);
    // An idle sweep resolves nothing: report its cost per sweep, not per transaction.
    std::printf(
        "| idle     | %9lld | %9s | %8.2f | %9s | %8.1f | %7lld | %7lld | per sweep, "
        "over terminal transactions only\n",
        static_cast<long long>(n), "-", idle.seconds, "-",
        static_cast<double>(idle.peak_rss_kb) / 1024, static_cast<long long>(idle.round_trips),
        static_cast<long long>(idle.documents_read));
    std::fflush(stdout);
  }
  for (std::int64_t n : o.dry) {
    // Reads and decides every stuck transaction through the same cursor, queue and
    // batches as a real sweep, and writes nothing: the memory a sweep of n needs to
    // stream them, measurable at sizes whose real sweep this server cannot finish.
    seed(n, false);
    RunResult dry = Sweep(o, config, /*dry_run=*/true);
    std::printf(
        "| dry-run  | %9lld | %9s | %8.1f | %9.0f | %8.1f | %7.3f | %7.2f | plans "
        "every one, writes nothing\n",
        static_cast<long long>(n), "-", dry.seconds, static_cast<double>(n) / dry.seconds,
        static_cast<double>(dry.peak_rss_kb) / 1024,
        static_cast<double>(dry.round_trips) / static_cast<double>(n),
        static_cast<double>(dry.documents_read) / static_cast<double>(n));
    std::fflush(stdout);
  }
  if (!summaries.empty()) {
    std::printf("\n|         N | sweep/baseline | sweep/limit | sweep peak RSS MiB |\n");
    std::printf("|-----------|----------------|-------------|--------------------|\n");
    for (const auto& s : summaries)
      std::printf("| %9lld | %13.1fx%s | %10.0f%% | %18.1f |\n", static_cast<long long>(s.n),
                  s.sweep / s.baseline, s.baseline_complete ? " " : "*", 100 * s.sweep / s.limit,
                  static_cast<double>(s.rss) / 1024);
    for (const auto& s : summaries)
      if (!s.baseline_complete) {
        std::printf(
            "(* the baseline ran out of its time budget: its rate is over the part it did)\n");
        break;
      }
  }
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

int main(int argc, char** argv) {
  CLI::App app{"txn-recovery-bench: sweep vs the seeds' loop vs the server's bulk-write limit"};
  Options o;
  std::string ns = "1000,10000", idle = "10000", profiles = "transfer";
  o.daemon = TXN_RECOVERYD_BINARY;
  app.add_option("--n", ns, "Stuck transactions per run, comma-separated");
  app.add_option("--idle", idle, "Terminal transactions for the idle sweeps (empty: none)");
  std::string dry;
  app.add_option("--dry-run-n", dry, "Stuck transactions for dry-run sweeps (memory)");
  app.add_option("--profiles", profiles, "Comma-separated mix of profiles (transfer)");
  app.add_option("--baseline-budget", o.baseline_budget, "Seconds the baseline may run per N");
  app.add_option("--workers", o.workers, "sweep.workers of the daemon");
  app.add_option("--batch-size", o.batch_size, "sweep.batch_size of the daemon");
  app.add_option("--limit-threads", o.limit_threads, "Threads issuing the limit's bulk writes");
  app.add_option("--daemon", o.daemon, "The txn-recoveryd binary");
  CLI11_PARSE(app, argc, argv);
  o.ns = ParseList(ns);
  o.idle = ParseList(idle);
  o.dry = ParseList(dry);
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
