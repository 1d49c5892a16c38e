// The workloads of the bench (bench.h: BenchProfile): each seeds its own database with a
// deterministic plan, recovers it as the application itself would (the baseline), writes the
// same end state as bulk writes (the limit) and verifies the end state after each run.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "bench.h"
#include "txn_recovery/shapes/profile.h"

namespace txn_recovery::bench {

namespace {

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
  // `per_account`: how many of the stuck transfers name each account (a merchant's or a
  // settlement account takes part in many); 0: the bench's usual mix, an account per four
  // transfers (each account in about eight).
  TransferBench(std::string kind, std::int64_t per_account)
      : per_account_(per_account),
        kind_(std::move(kind)),
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
  std::int64_t Accounts(std::int64_t n) const {
    if (per_account_ > 0) return std::max<std::int64_t>(2, 2 * n / per_account_);
    return std::max<std::int64_t>(100, n / 4);
  }
  Plan PlanOf(std::int64_t i, std::int64_t n) const {
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
  std::int64_t per_account_;
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
    Check(DropDatabase(static_cast<MongoStore*>(store), database), "drop " + database);
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

}  // namespace

std::unique_ptr<BenchProfile> MakeProfile(const std::string& name, std::int64_t per_account) {
  if (name == "transfer" || name == "operations")
    return std::make_unique<TransferBench>(name, per_account);
  // The tagged-insert profile plugs in here.
  return nullptr;
}

Namespace TransferTxns(const std::string& db) {
  return TransferBench::Txns(db);
}

}  // namespace txn_recovery::bench
