// A fleet of `txn-recoveryd run` daemons over the same stuck transactions (--fleet-run: the
// time until the last is resolved, each daemon's busy claims from its /metrics and what each
// resolved from its JSON log), and the take-over (--takeover: three daemons, one SIGKILLed
// once a third of the backlog is resolved, then one SIGSTOPped past the fleet's expiry and
// continued: how long its share waits, whether any transaction was resolved by two).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bench.h"
#include "daemon/configuration/config.h"
#include "support/exposition.h"
#include "support/subprocess.h"
#include "txn_recovery/base/recovery_record.h"
#include "txn_recovery/engine/membership.h"

namespace txn_recovery::bench {

namespace {

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
        << "\npace = " << o.pace << "\nmanage_indexes = true\n";
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
  std::map<std::string, double> Metrics() const { return FamilySums(HttpGet(port_, "/metrics")); }
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

// ---- Fleets: started together, awaited, measured, stopped ------------------------------

struct Fleet {
  std::vector<std::unique_ptr<RunDaemon>> daemons;
  std::vector<bool> gone;  // killed by the bench: neither waited for nor stopped
  double wall0 = 0;        // Unix seconds at the start (the logs' clock)
  Steady::time_point t0;
};

bool Drained(std::int64_t left) {
  return left == 0;
}

// "12/40/8": what each daemon resolved.
std::string PerDaemon(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::int64_t x : v) {
    if (!s.empty()) s += '/';
    s += Int(x);
  }
  return s;
}

// "every transaction resolved once" or what was not.
std::string Once(const Resolutions& r, std::int64_t n, nlohmann::json* row) {
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
}

class Fleets {
 public:
  explicit Fleets(Session& session) : s_(session) {}

  // What is left to do, summed over the profiles: the transactions not yet terminal.
  std::int64_t Unfinished() const {
    std::int64_t total = 0;
    for (const auto& p : s_.profiles) {
      std::int64_t left = 0;
      Check(s_.store->Count(p->Transactions(s_.db_of(*p)), p->Unfinished(), &left),
            "count unfinished");
      total += left;
    }
    return total;
  }

  // k daemons started at once, each with its own configuration file.
  Fleet Start(int k, const FleetSettings& fs) const {
    std::vector<std::string> keyed;
    for (const auto& p : s_.profiles) keyed.push_back(p->WatchToml(s_.db_of(*p), fs.watch_keys));
    Fleet f;
    f.wall0 = UnixNow();
    f.t0 = Steady::now();
    for (int i = 0; i < k; ++i) {
      f.daemons.push_back(std::make_unique<RunDaemon>(s_.o, s_.uri, fs, keyed, i));
      f.gone.push_back(false);
    }
    for (int i = 0; i < k; ++i) f.daemons[static_cast<std::size_t>(i)]->AwaitStart(i);
    return f;
  }

  // Polls the server until nothing is unfinished or `until` says stop (it gets what is
  // left), every `every`; false when --fleet-timeout passed first. A daemon that exits by
  // itself ends the run: it is a failure, not a figure.
  bool AwaitLeft(const Fleet& f, const std::function<bool(std::int64_t)>& until,
                 std::chrono::milliseconds every) const {
    const auto deadline =
        Steady::now() + std::chrono::duration_cast<Steady::duration>(Seconds(s_.o.fleet_timeout));
    for (;;) {
      for (std::size_t i = 0; i < f.daemons.size(); ++i)
        if (!f.gone[i] && !f.daemons[i]->proc().Running())
          throw std::runtime_error("daemon " + std::to_string(i) + " exited by itself: " +
                                   f.daemons[i]->proc().Stderr().substr(0, 2000));
      if (until(Unfinished())) return true;
      if (Steady::now() > deadline) return false;
      std::this_thread::sleep_for(every);
    }
  }

  // Each live daemon's counters once every sweep in progress when the backlog ended has
  // ended too: a sweep adds its busy claims when it finishes a watch, so the bench waits
  // for each daemon's sweeps_total to move by one sweep of every watch (up to a minute).
  std::vector<std::map<std::string, double>> SettledMetrics(const Fleet& f) const {
    std::vector<std::map<std::string, double>> m(f.daemons.size());
    std::vector<double> from(f.daemons.size(), -1);
    for (std::size_t i = 0; i < f.daemons.size(); ++i)
      if (!f.gone[i]) {
        m[i] = f.daemons[i]->Metrics();
        from[i] = Sweeps(m[i]);
      }
    const auto deadline = Steady::now() + std::chrono::minutes(1);
    for (std::size_t i = 0; i < f.daemons.size(); ++i) {
      if (f.gone[i]) continue;
      for (;;) {
        m[i] = f.daemons[i]->Metrics();
        const double now = Sweeps(m[i]);
        if ((from[i] >= 0 && now >= from[i] + static_cast<double>(s_.profiles.size())) ||
            Steady::now() > deadline)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
    return m;
  }

  // SIGTERM to each live daemon; each must exit 0 within 30 s (it drains, then leaves the
  // fleet). Their logs, read afterwards; the problems, as text.
  std::string Stop(const Fleet& f, std::vector<DaemonLog>* logs) {
    ++runs_;
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
      if (!s_.o.fleet_logs.empty())
        std::ofstream(s_.o.fleet_logs + "/run" + std::to_string(runs_) + "-daemon" +
                      std::to_string(i) + ".jsonl")
            << f.daemons[i]->proc().Stdout();
    }
    return problems;
  }

 private:
  static double Sweeps(const std::map<std::string, double>& m) {
    const auto it = m.find("txn_recoveryd_sweeps_total");
    return it != m.end() ? it->second : -1;
  }

  Session& s_;
  int runs_ = 0;  // names the kept logs
};

// ---- --fleet-run ----------------------------------------------------------------------------

// One row: k daemons over the same stuck transactions, from their start to the last
// resolution.
void FleetRunRow(Session& s, Fleets* fleets, const FleetSettings& fs, std::int64_t k, Table* t) {
  const Options& o = s.o;
  s.seed(o.fleet_n, false);
  CreateIndexes(s.store.get(), s.config, s.uri);
  ServerMeter meter(s.server);
  Fleet f = fleets->Start(static_cast<int>(k), fs);
  const bool done = fleets->AwaitLeft(f, Drained, std::chrono::milliseconds(250));
  const double poll_s = Seconds(Steady::now() - f.t0).count();
  const std::optional<double> server_cpu = meter.Elapsed();
  auto metrics = fleets->SettledMetrics(f);
  double cpu = 0;
  for (const auto& d : f.daemons) cpu += d->Cpu().value_or(0);
  std::vector<DaemonLog> logs;
  std::string problems = fleets->Stop(f, &logs);
  const Resolutions res(logs);
  const double drain_s = res.last > 0 ? res.last - f.wall0 : poll_s;
  std::int64_t busy = 0;
  std::vector<std::int64_t> resolved;
  for (auto& m : metrics) {
    busy += static_cast<std::int64_t>(m["txn_recoveryd_busy_total"]);
    resolved.push_back(static_cast<std::int64_t>(m["txn_recoveryd_resolved_total"]));
  }
  nlohmann::json j;
  std::string check = s.verify(o.fleet_n, &j) + Once(res, o.fleet_n, &j) + problems;
  if (!done) check = "NOT DRAINED in " + Fmt("%.0f", o.fleet_timeout) + " s; " + check;
  t->Print({Int(k), Int(o.fleet_n), Fmt("%.1f", drain_s), Int(busy),
            Per(static_cast<double>(busy), o.fleet_n, "%.3f"), PerDaemon(resolved),
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
  s.report.Add(std::move(j));
}

void FleetRuns(Session& s, Fleets* fleets) {
  const Options& o = s.o;
  FleetSettings fs;
  fs.interval = o.fleet_interval;
  Table t(
      "A fleet of `txn-recoveryd run` daemons started together over the same stuck "
      "transactions (" +
          fs.Describe() +
          "; indexes created before they start; drain: from their start to the last "
          "resolution)",
      {"daemons", "N", "drain s", "busy claims", "busy/tx", "resolved per daemon", "server CPU s",
       "daemons CPU s", "check"});
  // A warm-up sweep first, not shown, as for --fleet.
  s.seed(o.fleet_n, false);
  (void)SweepUntilClean(o, s.config, s.uri, s.server, s.store.get(), true);
  for (std::int64_t k : o.fleet_run) FleetRunRow(s, fleets, fs, k, &t);
}

// ---- --takeover -----------------------------------------------------------------------------

// What the victim held a second after the fault.
struct Left {
  std::unordered_set<std::string> share, leased;  // its share unleased; its leases
};

// One take-over, as it went.
struct TakeoverRun {
  std::string fault;  // "kill" or "stop"
  double stop_s = 0;  // how long a stop lasted
  std::int64_t left_at_fault = 0;
  std::size_t seen_members = 3;  // live members the server listed at the fault
  Left left;
  double wall_fault = 0, wall_cont = 0;  // Unix seconds of the fault, and of SIGCONT
  bool done = false;
  double all_s = 0;  // from the fault until nothing was unfinished
  // From the logs, seconds after the fault (-1: none timed): when the others first took one
  // of its share, and resolved the last of its share and of its leases; how many of what it
  // held it resolved itself, and how many no log names.
  double started_s = -1, share_s = -1, leased_s = -1;
  std::int64_t by_itself = 0, unlogged = 0;
};

class Takeover {
 public:
  Takeover(Session& session, Fleets* fleets) : s_(session), fleets_(fleets) {
    const Options& o = s_.o;
    std::chrono::milliseconds heartbeat, interval;
    Check(txn_recovery::daemon::ParseDuration(o.takeover_heartbeat, &heartbeat),
          "--takeover-heartbeat");
    Check(txn_recovery::daemon::ParseDuration(o.takeover_expiry, &expiry_), "--takeover-expiry");
    Check(txn_recovery::daemon::ParseDuration(o.takeover_interval, &interval),
          "--takeover-interval");
    Check(txn_recovery::daemon::ParseDuration(o.takeover_lease, &lease_), "--takeover-lease");
    fs_.interval = o.takeover_interval;
    fs_.heartbeat = o.takeover_heartbeat;
    fs_.expiry = o.takeover_expiry;
    fs_.lease = o.takeover_lease;
    // A transaction the victim had claimed is in `resuming`, its time stamped at the
    // claim: it is due again only resume_after later (and once its lease expired), so
    // resume_after is shortened too, or the default minute would be all one measures.
    fs_.watch_keys = "resume_after = \"" + o.takeover_resume_after + "\"\n";
    bound_ = std::chrono::duration<double>(expiry_ + interval).count();
    lease_bound_ = std::chrono::duration<double>(lease_ + interval).count();
  }

  void RunAll() {
    Table t(
        "Take-over: 3 `run` daemons, one SIGKILLed or SIGSTOPped once a third of the "
        "backlog is resolved (" +
            fs_.Describe() + ", resume_after " + s_.o.takeover_resume_after +
            "); times from the fault; its share: the buckets it held among the 3 "
            "members, less what it had leased",
        {"fault", "N", "resolved at fault", "its share left", "its share started s",
         "its share done s", "bound s", "its leased done s", "all done s", "by two", "check"});
    Run("kill", 0, &t);
    for (double stop_s : s_.o.takeover_stop) Run("stop", stop_s, &t);
  }

 private:
  // Runs one take-over: `fault` is "kill" or "stop", `stop_s` how long a stop lasts.
  void Run(const std::string& fault, double stop_s, Table* t) {
    TakeoverRun r;
    r.fault = fault;
    r.stop_s = stop_s;
    s_.seed(s_.o.fleet_n, false);
    CreateIndexes(s_.store.get(), s_.config, s_.uri);
    Fleet f = fleets_->Start(3, fs_);
    const std::int64_t third = s_.o.fleet_n - s_.o.fleet_n / 3;
    fleets_->AwaitLeft(
        f,
        [&](std::int64_t left) {
          r.left_at_fault = left;
          return left <= third;
        },
        std::chrono::milliseconds(100));
    const std::vector<std::vector<MemberRecord>> sweepers = Sweepers(&r.seen_members);
    RunDaemon& victim = *f.daemons[0];
    r.wall_fault = UnixNow();
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
    r.left = LeftOf(sweepers, victim.owner());
    const std::optional<Steady::time_point> drained_at = WhileStopped(&r, t_fault, &victim);
    r.done = drained_at || fleets_->AwaitLeft(f, Drained, std::chrono::milliseconds(250));
    r.all_s = Seconds(drained_at.value_or(Steady::now()) - t_fault).count();
    (void)fleets_->SettledMetrics(f);
    std::vector<DaemonLog> logs;
    const std::string problems = fleets_->Stop(f, &logs);
    const Resolutions res(logs);
    Time(logs, res, &r);
    nlohmann::json j;
    const std::string check = CheckText(r, res, logs, problems, &j);
    Report(r, res, check, t, std::move(j));
  }

  // The fleet as the server holds it now, by profile: the victim's share is the buckets it
  // holds among the live members (all three, unless one's record has lapsed). `seen`: the
  // fewest live members a profile's collection listed.
  std::vector<std::vector<MemberRecord>> Sweepers(std::size_t* seen) const {
    std::vector<std::vector<MemberRecord>> sweepers(s_.profiles.size());
    for (std::size_t i = 0; i < s_.profiles.size(); ++i) {
      DateTime now;
      const Namespace txns = s_.profiles[i]->Transactions(s_.db_of(*s_.profiles[i]));
      Check(LiveSweepers(s_.store.get(), {txns.database, kMembers}, txns.collection, expiry_,
                         &sweepers[i], &now),
            "live members");
      *seen = std::min(*seen, sweepers[i].size());
    }
    return sweepers;
  }

  // The unfinished transactions of the victim's share, those it leases apart.
  Left LeftOf(const std::vector<std::vector<MemberRecord>>& sweepers,
              const std::string& victim) const {
    const RecoveryPaths paths("recovery");  // the lease_field the bench's watches leave as it is
    Left left;
    for (std::size_t i = 0; i < s_.profiles.size(); ++i) {
      DateTime now = ServerNow(s_.store.get());
      FindOptions fo;
      fo.batch_size = s_.o.read_batch;
      fo.projection = {paths.Lease()};
      std::unique_ptr<Cursor> c;
      const Namespace txns = s_.profiles[i]->Transactions(s_.db_of(*s_.profiles[i]));
      Check(s_.store->Find(txns, s_.profiles[i]->Unfinished(), fo, &c), "find unfinished");
      Document d;
      for (bool has = true;;) {
        Check(c->Next(&d, &has), "read unfinished");
        if (!has) break;
        const Value* id = d.Get("_id");
        const MemberRecord* holder = id ? HolderOf(sweepers[i], *id) : nullptr;
        if (!holder || holder->id != victim) continue;
        const Value* owner = d.GetPath(paths.LeaseOwner());
        const Value* expires = d.GetPath(paths.LeaseExpires());
        const bool leased = owner && owner->is_string() && *owner->as_string() == victim &&
                            expires && expires->is_datetime() &&
                            expires->as_datetime()->millis > now.millis;
        (leased ? left.leased : left.share).insert(IdKey(*id));
      }
    }
    return left;
  }

  // For a stop: the poll that first finds nothing unfinished while it lasts (a stopped
  // daemon logs what it wrote before the stop only once continued, so its log's times say
  // when it woke, not when it wrote); then SIGCONT.
  std::optional<Steady::time_point> WhileStopped(TakeoverRun* r, Steady::time_point t_fault,
                                                 RunDaemon* victim) const {
    std::optional<Steady::time_point> drained_at;
    if (r->fault != "stop") return drained_at;
    const auto until = t_fault + std::chrono::duration_cast<Steady::duration>(Seconds(r->stop_s));
    for (; Steady::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(250)))
      if (!drained_at && fleets_->Unfinished() == 0) drained_at = Steady::now();
    victim->proc().Signal(SIGCONT);
    r->wall_cont = UnixNow();
    return drained_at;
  }

  // When the last of a set was resolved by the others, after the fault (their logs:
  // they were never stopped, so a line's time is its write's, within a bulk); how
  // many the victim resolved itself (its writes in flight at the fault, or once
  // continued: their time is unknown), and how many no log names (the killed
  // daemon's last writes, which its log did not keep).
  static void Time(const std::vector<DaemonLog>& logs, const Resolutions& res, TakeoverRun* r) {
    std::unordered_map<std::string, double> by_others;  // txn -> its first resolution
    for (std::size_t d = 1; d < logs.size(); ++d)
      for (const auto& x : logs[d].resolved)
        if (x.action != "check-late-writes") by_others.emplace(x.txn, x.at);
    auto last_of = [&](const std::unordered_set<std::string>& set) {
      double last = -1;  // none timed: every one resolved by itself, or none left
      for (const auto& id : set) {
        if (auto it = by_others.find(id); it != by_others.end())
          last = std::max(last, it->second - r->wall_fault);
        else if (res.by.count(id))
          ++r->by_itself;
        else
          ++r->unlogged;
      }
      return last;
    };
    r->share_s = last_of(r->left.share);
    r->leased_s = last_of(r->left.leased);
    // When the others first resolved one of its share: the take-over's start, which the
    // bound (fleet.expiry + one interval) is about; the rest of "done" is the time to
    // drive what it held.
    for (const auto& id : r->left.share)
      if (auto it = by_others.find(id); it != by_others.end())
        r->started_s = r->started_s < 0 ? it->second - r->wall_fault
                                        : std::min(r->started_s, it->second - r->wall_fault);
  }

  std::string CheckText(const TakeoverRun& r, const Resolutions& res,
                        const std::vector<DaemonLog>& logs, const std::string& problems,
                        nlohmann::json* j) const {
    const Options& o = s_.o;
    // A SIGKILLed daemon's last resolutions may be on the server and not in its log (it
    // logs a bulk's transactions once the bulk returns): those are named, not failed.
    std::string check = s_.verify(o.fleet_n, j);
    if (r.fault == "kill" && !res.twice && static_cast<std::int64_t>(res.by.size()) < o.fleet_n) {
      const std::int64_t missing = o.fleet_n - static_cast<std::int64_t>(res.by.size());
      check += "; each logged once; " + Int(missing) +
               " resolved in no log (the killed daemon's last bulks)";
      (*j)["resolved_in_logs"] = static_cast<std::int64_t>(res.by.size());
      (*j)["resolved_by_two"] = res.twice;
      (*j)["failed_attempts"] = res.failed;
    } else {
      check += Once(res, o.fleet_n, j);
    }
    check += problems;
    if (!r.done) check = "NOT DRAINED in " + Fmt("%.0f", o.fleet_timeout) + " s; " + check;
    if (r.seen_members != 3) check += "; " + std::to_string(r.seen_members) + " live members seen";
    if (r.unlogged) check += "; " + Int(r.unlogged) + " of what it held in no log";
    if (r.by_itself)
      check += "; " + Int(r.by_itself) + " of what it held (share or leases) resolved by itself";
    if (r.fault == "stop") check += AfterStop(r, res, logs[0], j);
    return check;
  }

  // What the stopped member did once continued: resolutions (its own share, or its
  // leases not yet taken over), and attempts that failed (a fenced write, a lost claim).
  static std::string AfterStop(const TakeoverRun& r, const Resolutions& res,
                               const DaemonLog& victim, nlohmann::json* j) {
    std::int64_t after = 0, by_others_while = 0;
    std::int64_t failed_after = 0;
    // Half a second of slack: its lines carry milliseconds, truncated, and it may log
    // before the bench reads the clock after SIGCONT; a stop lasts seconds.
    const double woke = r.wall_cont - 0.5;
    for (const auto& x : victim.resolved)
      if (x.at >= woke && x.action != "check-late-writes") ++after;
    for (double at : victim.failed) failed_after += at >= woke ? 1 : 0;
    for (const auto& id : r.left.share) {
      auto it = res.at.find(id);
      if (it != res.at.end() && it->second < r.wall_cont) ++by_others_while;
    }
    (*j)["failed_by_it_after_sigcont"] = failed_after;
    (*j)["resolved_by_it_after_sigcont"] = after;
    (*j)["its_share_resolved_by_others_while_stopped"] = by_others_while;
    (*j)["stop_seconds"] = r.stop_s;
    return "; while stopped the others resolved " + Int(by_others_while) + " of its " +
           Int(static_cast<std::int64_t>(r.left.share.size())) + "; continued, it resolved " +
           Int(after) + " and failed " + Int(failed_after) + " attempt(s)";
  }

  static nlohmann::json SecondsOrNull(double s) {
    return s >= 0 ? nlohmann::json(s) : nlohmann::json();
  }

  void Report(const TakeoverRun& r, const Resolutions& res, const std::string& check, Table* t,
              nlohmann::json j) const {
    const Options& o = s_.o;
    const std::string what =
        r.fault == "kill" ? "SIGKILL" : "SIGSTOP " + Fmt("%.0f", r.stop_s) + " s";
    t->Print({what, Int(o.fleet_n), Int(o.fleet_n - r.left_at_fault),
              Int(static_cast<std::int64_t>(r.left.share.size())) + " + " +
                  Int(static_cast<std::int64_t>(r.left.leased.size())) + " leased",
              r.started_s >= 0 ? Fmt("%.1f", r.started_s) : "-",
              r.share_s >= 0 ? Fmt("%.1f", r.share_s) : "-", Fmt("%.1f", bound_),
              r.leased_s >= 0 ? Fmt("%.1f", r.leased_s) : "-", Fmt("%.1f", r.all_s), Int(res.twice),
              check});
    j["run"] = r.fault == "kill" ? "takeover-kill" : "takeover-stop";
    j["n"] = o.fleet_n;
    j["settings"] = fs_.Describe() + ", resume_after " + o.takeover_resume_after;
    j["resolved_at_fault"] = o.fleet_n - r.left_at_fault;
    j["live_members_seen"] = r.seen_members;
    j["its_share_left"] = r.left.share.size();
    j["its_leased_left"] = r.left.leased.size();
    j["its_share_started_seconds"] = SecondsOrNull(r.started_s);
    j["its_share_started_within_bound"] = r.started_s >= 0 && r.started_s <= bound_;
    j["its_share_done_seconds"] = SecondsOrNull(r.share_s);
    j["bound_seconds"] = bound_;
    j["its_share_within_bound"] = r.share_s <= bound_;
    j["its_leased_done_seconds"] = SecondsOrNull(r.leased_s);
    j["lease_bound_seconds"] = lease_bound_;
    j["all_done_seconds"] = r.all_s;
    j["unlogged"] = r.unlogged;
    j["its_share_resolved_by_itself"] = r.by_itself;
    s_.report.Add(std::move(j));
  }

  static constexpr const char* kMembers = "txn_recoveryd_members";

  Session& s_;
  Fleets* fleets_;
  FleetSettings fs_;
  std::chrono::milliseconds expiry_{}, lease_{};
  double bound_ = 0, lease_bound_ = 0;
};

}  // namespace

void Session::RunDaemons() {
  Fleets fleets(*this);
  if (!o.fleet_run.empty()) FleetRuns(*this, &fleets);
  if (o.takeover) Takeover(*this, &fleets).RunAll();
}

}  // namespace txn_recovery::bench
