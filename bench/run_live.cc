// The application's own writes while a backlog drains (--live-traffic): an application
// writing the MongoDB manual's transfers at a steady rate, each write timed, first alone,
// then while `txn-recoveryd sweep` drains a backlog of --live-backlog stuck transfers with
// each bound of --live-paces (sweep.pace; 0: unbounded). What the bound is for: the
// application's p99 write latency beside a draining backlog, against its value alone.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"

namespace txn_recovery::bench {
namespace {

constexpr std::int64_t kLiveAccounts = 10'000;
constexpr std::int64_t kLiveOpening = 1'000'000;

// What the application measured over a window: every write's latency, and the transfers
// it completed.
struct Window {
  std::vector<double> ms;
  std::int64_t transfers = 0;
  double seconds = 0;
  double Percentile(double q) const {
    if (ms.empty()) return 0;
    std::vector<double> sorted = ms;
    const auto k = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1));
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
    return sorted[k];
  }
};

// An application writing the manual's transfers (insert initial; pending; debit and credit,
// each with its marker; applied; the two markers pulled; done), `rate` per second in all,
// open loop: transfer k starts at t0 + k / rate on whichever of `threads` is free, whether
// or not the previous ones have ended (a transfer that starts late is counted as late).
// In a database of its own on the same server, so that its checks do not mix with the
// backlog's.
class Application {
 public:
  Application(MongoStore* store, std::string db, double rate, int threads)
      : store_(store), db_(std::move(db)), rate_(rate), threads_(threads) {}
  // Joins its threads; an error of theirs is Stop's to report.
  ~Application() { Join(); }
  Application(const Application&) = delete;
  Application& operator=(const Application&) = delete;

  void Open() {
    Check(DropDatabase(store_, db_), "drop " + db_);
    std::vector<Document> chunk;
    for (std::int64_t k = 0; k < kLiveAccounts; ++k) {
      chunk.push_back(Document{
          {"_id", Account(k)}, {"balance", kLiveOpening}, {"pendingTransactions", Array{}}});
      if (chunk.size() == 5'000) {
        Check(store_->InsertMany(Accounts(), chunk), "insert the application's accounts");
        chunk.clear();
      }
    }
    // The manual's recovery query's index, which an application that follows it has.
    Check(store_->CreateIndexes(
              Txns(), {IndexSpec{{{"state", 1}, {"lastModified", 1}}, "state_1_lastModified_1"}}),
          "the application's index");
  }

  void Start() {
    t0_ = Steady::now();
    for (int i = 0; i < threads_; ++i) pool_.emplace_back([this] { Loop(); });
  }
  // The samples from now on only.
  void Restart() {
    std::lock_guard lock(mu_);
    window_ = Window{};
    window_start_ = Steady::now();
    late_ = 0;
  }
  Window Take() {
    std::lock_guard lock(mu_);
    Window w = std::move(window_);
    w.seconds = Seconds(Steady::now() - window_start_).count();
    window_ = Window{};
    window_start_ = Steady::now();
    return w;
  }
  std::int64_t late() const { return late_.load(); }
  void Stop() {
    Join();
    if (!error_.empty()) throw std::runtime_error("the application: " + error_);
  }
  // Every transfer done, no marker left, the total unchanged.
  std::string Verify() {
    std::int64_t not_done = 0, total = 0, marked = 0;
    std::unique_ptr<Cursor> c;
    Document d;
    bool has = false;
    Check(store_->Find(Txns(), Filter().Ne("state", "done"), FindOptions{}, &c), "read");
    for (Check(c->Next(&d, &has), "read"); has; Check(c->Next(&d, &has), "read")) ++not_done;
    Check(store_->Find(Accounts(), Filter(), FindOptions{}, &c), "read");
    for (Check(c->Next(&d, &has), "read"); has; Check(c->Next(&d, &has), "read")) {
      total += static_cast<std::int64_t>(*d.Get("balance")->as_double());
      const Value* m = d.Get("pendingTransactions");
      if (m && m->is_array() && !m->as_array()->empty()) ++marked;
    }
    if (not_done) return std::to_string(not_done) + " of the application's transfers not done";
    if (marked) return std::to_string(marked) + " of the application's accounts carry markers";
    if (total != kLiveOpening * kLiveAccounts) return "the application's total changed";
    return "";
  }

 private:
  void Join() noexcept {
    stop_ = true;
    for (std::thread& t : pool_)
      if (t.joinable()) t.join();
    pool_.clear();
  }
  static std::string Account(std::int64_t k) {
    std::string name = std::to_string(k);
    name.insert(name.begin(), 'L');  // GCC 12's -Wrestrict misreads "L" + std::to_string(k)
    return name;
  }
  Namespace Txns() const { return {db_, "transactions"}; }
  Namespace Accounts() const { return {db_, "accounts"}; }

  void Loop() {
    try {
      std::vector<double> mine;
      std::int64_t done = 0;
      while (!stop_) {
        const std::int64_t k = next_++;
        const auto due = t0_ + std::chrono::duration_cast<Steady::duration>(
                                   Seconds(static_cast<double>(k) / rate_));
        const auto now = Steady::now();
        if (now < due)
          std::this_thread::sleep_until(due);
        else if (now - due > std::chrono::milliseconds(100))
          ++late_;
        if (stop_) break;
        Transfer(k, &mine);
        ++done;
        if (mine.size() >= 64) {
          std::lock_guard lock(mu_);
          window_.ms.insert(window_.ms.end(), mine.begin(), mine.end());
          window_.transfers += done;
          mine.clear();
          done = 0;
        }
      }
      std::lock_guard lock(mu_);
      window_.ms.insert(window_.ms.end(), mine.begin(), mine.end());
      window_.transfers += done;
    } catch (const std::exception& e) {
      std::lock_guard lock(mu_);
      error_ = e.what();
      stop_ = true;
    }
  }

  void Timed(std::vector<double>* ms, const std::function<Status()>& write,
             const char* what) const {
    const auto t = Steady::now();
    Check(write(), what);
    ms->push_back(std::chrono::duration<double, std::milli>(Steady::now() - t).count());
  }

  void Transfer(std::int64_t k, std::vector<double>* ms) {
    const Value id{k + 1};
    const std::uint64_t h = static_cast<std::uint64_t>(k) * 0x9E3779B97F4A7C15ULL;
    const std::int64_t from = static_cast<std::int64_t>((h >> 8) % kLiveAccounts);
    const std::int64_t to =
        (from + 1 + static_cast<std::int64_t>((h >> 32) % (kLiveAccounts - 1))) % kLiveAccounts;
    const std::int32_t amount = 1 + static_cast<std::int32_t>((h >> 50) % 100);
    const Value src(Account(from)), dst(Account(to));
    WriteResult r;
    auto move = [&](const char* from_state, const char* to_state) {
      Timed(
          ms,
          [&] {
            return store_->UpdateOne(Txns(), Filter().Eq("_id", id).Eq("state", from_state),
                                     Update().Set("state", to_state).CurrentDate("lastModified"),
                                     &r);
          },
          "a move of the state");
    };
    Timed(
        ms,
        [&] {
          return store_->InsertMany(Txns(), {Document{{"_id", id},
                                                      {"source", src},
                                                      {"destination", dst},
                                                      {"value", amount},
                                                      {"state", "initial"},
                                                      {"lastModified", Now()}}});
        },
        "the insert");
    move("initial", "pending");
    for (const std::pair<Value, std::int32_t>& leg :
         {std::pair{src, -amount}, std::pair{dst, amount}}) {
      const Value& account = leg.first;
      const std::int32_t by = leg.second;
      Timed(
          ms,
          [&] {
            return store_->UpdateOne(
                Accounts(), Filter().Eq("_id", account).Ne("pendingTransactions", id),
                Update().Inc("balance", by).Push("pendingTransactions", id), &r);
          },
          "a debit or credit");
    }
    move("pending", "applied");
    for (const Value& account : {src, dst})
      Timed(
          ms,
          [&] {
            return store_->UpdateOne(Accounts(),
                                     Filter().Eq("_id", account).Eq("pendingTransactions", id),
                                     Update().Pull("pendingTransactions", id), &r);
          },
          "a pull");
    move("applied", "done");
  }

  // The server's time, as the application stamps its insert (the local clock: the server is
  // on this machine).
  static DateTime Now() {
    return DateTime{std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count()};
  }

  MongoStore* store_;
  std::string db_;
  double rate_;
  int threads_;
  std::vector<std::thread> pool_;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> next_{0};
  std::atomic<std::int64_t> late_{0};
  Steady::time_point t0_{};
  std::mutex mu_;
  Window window_;
  Steady::time_point window_start_{};
  std::string error_;
};

}  // namespace

void Session::RunLive() {
  const std::int64_t n = o.live_backlog;
  Table t("The application's writes (the manual's transfer, " + Fmt("%.0f", o.live_rate) +
              " a second, " + std::to_string(o.live_threads) +
              " threads, each write timed) while a backlog of " + Int(n) +
              " stuck transfers drains, by the bound sweep.pace",
          {"daemon", "drain s", "drained tx/s", "of the bound", "app transfers/s", "app p50 ms",
           "app p99 ms", "p99 vs alone", "app late", "check"});
  double alone_p99 = 0;
  auto row = [&](const std::string& daemon, std::optional<double> drain_seconds,
                 std::optional<std::int64_t> pace, const Window& w, std::int64_t late,
                 const std::string& check) {
    const double p50 = w.Percentile(0.50), p99 = w.Percentile(0.99);
    if (!drain_seconds) alone_p99 = p99;
    const double drained = drain_seconds ? static_cast<double>(n) / *drain_seconds : 0;
    t.Print({daemon, drain_seconds ? Fmt("%.1f", *drain_seconds) : "-",
             drain_seconds ? Fmt("%.0f", drained) : "-",
             pace && *pace > 0 ? Fmt("%.0f %%", 100 * drained / static_cast<double>(*pace)) : "-",
             Fmt("%.1f", static_cast<double>(w.transfers) / w.seconds), Fmt("%.2f", p50),
             Fmt("%.2f", p99), alone_p99 > 0 ? Fmt("%+.0f %%", 100 * (p99 / alone_p99 - 1)) : "-",
             Int(late), check});
    report.Add({{"run", "live-traffic"},
                {"daemon", daemon},
                {"backlog", n},
                {"pace", pace ? nlohmann::json(*pace) : nlohmann::json(nullptr)},
                {"drain_seconds", Json(drain_seconds)},
                {"app_rate", o.live_rate},
                {"app_transfers", w.transfers},
                {"app_seconds", w.seconds},
                {"app_writes", w.ms.size()},
                {"app_p50_ms", p50},
                {"app_p99_ms", p99},
                {"app_late", late},
                {"check", check}});
  };

  const std::string app_db = o.database_prefix + "_live";
  // The application alone, beside the backlog seeded but not swept (the same data on the
  // server as in the runs with a daemon).
  seed(n, false);
  CreateIndexes(store.get(), config, uri);
  {
    Application app(store.get(), app_db, o.live_rate, o.live_threads);
    app.Open();
    app.Start();
    std::this_thread::sleep_for(std::chrono::seconds(3));  // its first writes warm it up
    app.Restart();
    std::this_thread::sleep_for(
        std::chrono::duration_cast<Steady::duration>(Seconds(o.live_alone)));
    const Window w = app.Take();
    const std::int64_t late = app.late();
    app.Stop();
    const std::string problem = app.Verify();
    row("none", std::nullopt, std::nullopt, w, late, problem.empty() ? "verified" : problem);
  }
  for (std::int64_t pace : o.live_paces) {
    seed(n, false);
    CreateIndexes(store.get(), config, uri);
    const std::string paced = ConfigWithPace(pace);
    Application app(store.get(), app_db, o.live_rate, o.live_threads);
    app.Open();
    app.Start();
    std::this_thread::sleep_for(std::chrono::seconds(3));
    app.Restart();
    const RunResult r = SweepUntilClean(o, paced, uri, server, store.get(), /*sum=*/true);
    const Window w = app.Take();
    const std::int64_t late = app.late();
    app.Stop();
    std::remove(paced.c_str());
    nlohmann::json j;
    std::string check = verify(n, &j) + Failures(r, &j);
    if (const std::string problem = app.Verify(); !problem.empty()) check += "; " + problem;
    row(pace > 0 ? "sweep, pace " + Int(pace) : "sweep, unbounded", r.seconds, pace, w, late,
        check);
  }
  (void)DropDatabase(store.get(), app_db);
}

}  // namespace txn_recovery::bench
