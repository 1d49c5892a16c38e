// txn-recovery-chaos: the scenario driver of issue 5. Real application workers (separate
// processes running the application's steps), one to three real `txn-recoveryd run` daemons, and
// a TCP proxy between all of them and the database; faults injected while they run
// (SIGKILL of workers and daemons, a worker stopped past the threshold, connections
// dropped, reset, stalled, the database cut off), and changes of the daemons' fleet
// (docs/fleet.md): members joining, leaving, killed and stopped past the fleet's expiry. Then
// quiescence, docs/chaos.md's invariant checker, and a summary table. Every random choice comes
// from --seed (printed), so a run can be replayed with the same choices; timing still varies from
// run to run.
//
// Failover mode (--failovers N --failover-state-dir DIR): against the replicated DocumentDB
// engine of DIR (scripts/testdb-start.sh --engine documentdb --replicated), the only fault
// is a failover of its database every --failover-every (scripts/testdb-failover.sh: the
// primary SIGKILLed, the standby promoted, the old primary rejoined), N times; the same
// invariants are checked at the end.
//
// Exit status: 0 when no invariant was violated, 1 otherwise, 2 when the run could not be
// set up.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chaos_app.h"
#include "daemon/configuration/config.h"
#include "support/scenario.h"
#include "support/server_probe.h"
#include "support/subprocess.h"
#include "support/test_env.h"
#include "support/wire/forwarder.h"
#include "tcp_proxy.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::chaos {
namespace {

// SIGINT/SIGTERM (ctest's timeout, ^C): stop, and let the destructors kill every child.
volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) {
  g_interrupted = 1;
}

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::Subprocess;

struct Options {
  std::string profile = "transfer";
  std::uint64_t seed = 0;
  bool seed_given = false;
  milliseconds duration{std::chrono::seconds(60)};
  milliseconds quiesce_timeout{std::chrono::seconds(120)};
  int workers = 3;
  int daemons = 0;  // 0: 1 to 3, chosen by the seed
  AppParams app;
  int step_delay_ms = 5;
  std::string uri;
  std::string daemon_binary = TXN_RECOVERYD_BINARY;
  std::string worker_binary = CHAOS_WORKER_BINARY;
  bool keep = false;
  bool verbose = false;
  // Failover mode: failovers instead of the other faults.
  int failovers = 0;
  std::string failover_state_dir;
  milliseconds failover_every{std::chrono::seconds(5)};
  std::string failover_script = TXN_RECOVERY_FAILOVER_SCRIPT;
};

int Usage(const char* why) {
  std::cerr << "txn-recovery-chaos: " << why
            << "\nusage: txn-recovery-chaos [--profile transfer] [--seed N] [--duration 60s]\n"
               "  [--workers 3] [--daemons 1-3] [--participants 16] [--hot 2]\n"
               "  [--step-delay-ms 5] [--quiesce-timeout 120s] [--uri URI] [--keep] [-v]\n"
               "  [--daemon-binary PATH] [--worker-binary PATH]\n"
               "  [--failovers N --failover-state-dir DIR [--failover-every 5s]]\n"
               "The database is --uri, else TXN_RECOVERY_TEST_URI, else the embedded test\n"
               "server the CTest fixture started (TXN_RECOVERY_TESTDB_URI_FILE).\n";
  return 2;
}

bool ParseArgs(int argc, char** argv, Options* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--keep") {
      o->keep = true;
      continue;
    }
    if (a == "-v" || a == "--verbose") {
      o->verbose = true;
      continue;
    }
    if (i + 1 >= argc) {
      *error = a + " needs a value";
      return false;
    }
    std::string v = argv[++i];
    try {
      if (a == "--profile") {
        o->profile = v;
      } else if (a == "--seed") {
        o->seed = std::stoull(v);
        o->seed_given = true;
      } else if (a == "--duration" || a == "--quiesce-timeout" || a == "--failover-every") {
        milliseconds d;
        if (Status s = txn_recovery::daemon::ParseDuration(v, &d); !s.ok()) {
          *error = a + ": " + s.message();
          return false;
        }
        (a == "--duration"          ? o->duration
         : a == "--quiesce-timeout" ? o->quiesce_timeout
                                    : o->failover_every) = d;
      } else if (a == "--failovers") {
        o->failovers = std::stoi(v);
      } else if (a == "--failover-state-dir") {
        o->failover_state_dir = v;
      } else if (a == "--workers") {
        o->workers = std::stoi(v);
      } else if (a == "--daemons") {
        o->daemons = std::stoi(v);
      } else if (a == "--participants") {
        o->app.participants = std::stoi(v);
      } else if (a == "--hot") {
        o->app.hot = std::stoi(v);
      } else if (a == "--step-delay-ms") {
        o->step_delay_ms = std::stoi(v);
      } else if (a == "--daemon-binary") {
        o->daemon_binary = v;
      } else if (a == "--worker-binary") {
        o->worker_binary = v;
      } else if (a == "--uri") {
        o->uri = v;
      } else {
        *error = "unknown option " + a;
        return false;
      }
    } catch (const std::exception&) {
      *error = a + ": not a number: " + v;
      return false;
    }
  }
  if (o->workers < 1 || o->daemons < 0 || o->daemons > 3 || o->app.participants < 3 ||
      o->app.hot < 1 || o->app.hot > o->app.participants) {
    *error =
        "out of range: --workers >= 1, --daemons 1-3, --participants >= 3, 1 <= --hot <= "
        "--participants";
    return false;
  }
  if (o->failovers < 0 || (o->failovers > 0) != !o->failover_state_dir.empty()) {
    *error = "--failovers N (N >= 1) and --failover-state-dir DIR go together";
    return false;
  }
  return true;
}

enum class Fault {
  kWorkerKill,
  kWorkerStall,
  kDaemonKill,
  kDaemonStall,
  kDaemonsOutage,
  kConnDrop,
  kConnReset,
  kConnStall,
  kDatabaseCut,
  kMemberJoin,
  kMemberLeave,
  kMemberKill,
  kMemberStall,
};
constexpr Fault kAllFaults[] = {Fault::kWorkerKill,  Fault::kWorkerStall,   Fault::kDaemonKill,
                                Fault::kDaemonStall, Fault::kDaemonsOutage, Fault::kConnDrop,
                                Fault::kConnReset,   Fault::kConnStall,     Fault::kDatabaseCut,
                                Fault::kMemberJoin,  Fault::kMemberLeave,   Fault::kMemberKill,
                                Fault::kMemberStall};
const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kWorkerKill:
      return "worker SIGKILL (and restart)";
    case Fault::kWorkerStall:
      return "worker SIGSTOP past threshold, SIGCONT";
    case Fault::kDaemonKill:
      return "daemon SIGKILL (and restart)";
    case Fault::kDaemonStall:
      return "daemon SIGSTOP up to past its lease, SIGCONT";
    case Fault::kDaemonsOutage:
      return "every daemon SIGSTOPped past rollback_after";
    case Fault::kConnDrop:
      return "connections dropped (FIN)";
    case Fault::kConnReset:
      return "connections reset (RST)";
    case Fault::kConnStall:
      return "connections stalled";
    case Fault::kDatabaseCut:
      return "database cut off, then restored";
    case Fault::kMemberJoin:
      return "member joins (a daemon started)";
    case Fault::kMemberLeave:
      return "member leaves (SIGTERM, record deleted)";
    case Fault::kMemberKill:
      return "member SIGKILL, restarted past expiry";
    case Fault::kMemberStall:
      return "member SIGSTOP past expiry, SIGCONT";
  }
  return "?";
}

struct Worker {
  std::unique_ptr<Subprocess> proc;
  std::optional<Clock::time_point> resume_at;  // SIGSTOPped until then
};

struct Daemon {
  std::unique_ptr<Subprocess> proc;
  std::optional<Clock::time_point> restart_at;  // killed; restarted then
  std::optional<Clock::time_point> resume_at;   // SIGSTOPped until then
  std::optional<Clock::time_point> leaving;     // SIGTERMed then: it drains and leaves
  bool left = false;                            // left the fleet; a member joining may reuse it
  int incarnation = 0;
  int serial = 0;  // which daemon process this is, over the whole run (its log's name)
};

class Run {
 public:
  explicit Run(Options o) : o_(std::move(o)), rng_(o_.seed) {}

  int Go() {
    if (int rc = SetUp(); rc != 0) return rc;
    std::cout << "chaos: profile " << o_.profile << ", seed " << o_.seed << ", "
              << (o_.failovers ? std::to_string(o_.failovers) + " failovers"
                               : txn_recovery::daemon::FormatDuration(o_.duration) + " of faults")
              << ", " << o_.workers << " workers, " << daemons_.size() << " daemon(s), database "
              << database_ << std::endl;
    if (o_.failovers)
      RunFailovers();
    else
      RunFaults();
    if (g_interrupted) {
      std::cerr << "txn-recovery-chaos: interrupted; stopping every process" << std::endl;
      TearDown();
      return 2;
    }
    Quiesce();
    Check();
    PrintTable();
    TearDown();
    return violations_.empty() ? 0 : 1;
  }

 private:
  int SetUp() {
    if (o_.uri.empty()) {
      testing::TestUri t = testing::FindTestUri();
      if (!t.ok) {
        std::cerr << "txn-recovery-chaos: " << t.uri_or_reason << "\n";
        return 2;
      }
      o_.uri = t.uri_or_reason;
    }
    MongoOptions mo;
    mo.uri = o_.uri;
    mo.app_name = "chaos-driver";
    if (Status s = MongoStore::Open(mo, &store_); !s.ok() || !(s = store_->Ping()).ok()) {
      std::cerr << "txn-recovery-chaos: cannot reach " << RedactUri(o_.uri) << ": " << s.ToString()
                << "\n";
      return 2;
    }
    database_ = "chaos_" + std::to_string(o_.seed % 1000000) + "_" + std::to_string(getpid());
    app_ = MakeChaosApp(o_.profile, store_.get(), database_, 1);
    if (!app_) {
      std::cerr << "txn-recovery-chaos: unknown profile " << o_.profile << "\n";
      return 2;
    }
    try {
      app_->Setup(o_.app);
    } catch (const std::exception& e) {
      std::cerr << "txn-recovery-chaos: setup failed: " << e.what() << "\n";
      return 2;
    }

    auto server = testing::SplitMongoUri(o_.uri);
    if (!server || server->several_hosts) {
      std::cerr << "txn-recovery-chaos: the proxy needs a single-host mongodb:// URI\n";
      return 2;
    }
    std::string error;
    proxy_ = TcpProxy::Start(server->host, server->port, &error);
    if (!proxy_) {
      std::cerr << "txn-recovery-chaos: " << error << "\n";
      return 2;
    }
    // The proxy is the only server the processes may see, even if the server is a replica
    // set member that announces its own address (directConnection=true).
    proxied_uri_ = testing::ForwardedUri(*server, proxy_->port());

    dir_ =
        std::filesystem::temp_directory_path() / ("txn_recovery_chaos_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    config_path_ = (dir_ / "txn-recoveryd.toml").string();
    std::ofstream(config_path_) << DaemonConfig();

    int n = o_.daemons ? o_.daemons : std::uniform_int_distribution<int>(1, 3)(rng_);
    daemons_.resize(static_cast<std::size_t>(n));
    initial_daemons_ = n;
    for (auto& d : daemons_) StartDaemon(d);
    workers_.resize(static_cast<std::size_t>(o_.workers));
    for (auto& w : workers_) StartWorker(w);
    return 0;
  }

  // Thresholds of seconds instead of minutes, so that a run sees hundreds of recoveries;
  // the shortest lease the daemon accepts, so that a killed daemon's transactions are
  // taken over within the run; no pace bound (its own tests are tests/engine/pace_test.cc),
  // so that what a round drives fits its 90 s of quiescence on a loaded machine.
  std::string DaemonConfig() const {
    std::ostringstream c;
    c << "[mongodb]\nuri = \"" << proxied_uri_
      << "\"\nserver_selection_timeout = \"2s\"\nsocket_timeout = \"2s\"\n"
         "[sweep]\nworkers = 2\nbatch_size = 200\npace = 0\nlease = \""
      << txn_recovery::daemon::FormatDuration(kLease)
      << "\"\nmax_failures = 1000\n"
         "[daemon]\ninterval = \"700ms\"\njitter = 0.3\nbackoff_initial = \"100ms\"\n"
         "backoff_max = \"1s\"\ndrain_deadline = \"3s\"\n"
         // A short heartbeat and expiry, so that a member killed or stopped drops out of
         // the others' view, and one joining enters it, within a fault or two.
         "[fleet]\nheartbeat = \""
      << txn_recovery::daemon::FormatDuration(kFleetHeartbeat) << "\"\nexpiry = \""
      << txn_recovery::daemon::FormatDuration(kFleetExpiry)
      << "\"\n"
         "[log]\nlevel = \"info\"\n"
         "[[watch]]\nname = \"chaos\"\ndatabase = \""
      << database_ << "\"\ncollection = \"" << app_->transactions().collection << "\"\n"
      << app_->WatchKeys() << "resume_after = \""
      << txn_recovery::daemon::FormatDuration(kResumeAfter) << "\"\nrollback_after = \""
      << txn_recovery::daemon::FormatDuration(kRollbackAfter) << "\"\ninitial_timeout = \""
      << txn_recovery::daemon::FormatDuration(kInitialTimeout) << "\"\nlate_write_window = \""
      << txn_recovery::daemon::FormatDuration(kLateWriteWindow) << "\"\n";
    return c.str();
  }

  // What a daemon's log says it did (it logs each resolution at info level), read before
  // its process record, log included, is replaced. Each transaction a process resolved is
  // noted with the process: a transaction resolved by two processes was driven by two (a
  // late-write check looks at a finished transaction and may come from any of them).
  void Harvest(const Daemon& d) {
    if (!d.proc) return;
    std::istringstream log(d.proc->Stderr());
    for (std::string line; std::getline(log, line);) {
      if (line.find(" resolved: ") != std::string::npos) {
        if (line.find("action=check-late-writes") != std::string::npos) {
          late_writes_undone_++;
        } else if (auto at = line.find(" txn_id="); at != std::string::npos) {
          // Fields in order: watch, txn_id, action (sweep_command.cc, LogTransaction).
          at += std::strlen(" txn_id=");
          resolved_by_[line.substr(at, line.find(" action=", at) - at)].insert(d.serial);
        }
      }
      if (line.find(" failed: ") != std::string::npos) daemon_failures_++;
      // "fleet of DB.COLL: N live member(s) sweep it, ...": a member's view changed, which
      // is what the membership faults are for.
      if (auto at = line.find(" live member(s) sweep it"); at != std::string::npos) {
        ++view_changes_;
        const std::size_t n = line.rfind(' ', at - 1);
        if (n != std::string::npos)
          largest_view_ = std::max(largest_view_, std::atoi(line.c_str() + n + 1));
      }
    }
  }

  void StartDaemon(Daemon& d) {
    Harvest(d);
    d.proc = std::make_unique<Subprocess>(
        std::vector<std::string>{o_.daemon_binary, "run", "--config", config_path_, "--log-format",
                                 "text"},
        std::map<std::string, std::string>{},
        std::vector<std::string>{"TXN_RECOVERYD_MONGODB_URI", "TXN_RECOVERYD_HTTP_LISTEN",
                                 "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM",
                                 "CREDENTIALS_DIRECTORY", "TXN_RECOVERYD_LOG_FORMAT"});
    d.restart_at.reset();
    d.resume_at.reset();
    d.leaving.reset();
    d.left = false;
    d.incarnation++;
    d.serial = ++daemon_spawns_;
  }

  // The daemons that are members now: running, neither leaving nor left nor waiting for a
  // restart (`unstopped`: nor SIGSTOPped).
  std::vector<std::size_t> Members(bool unstopped = false) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < daemons_.size(); ++i) {
      const Daemon& d = daemons_[i];
      if (!d.left && !d.leaving && !d.restart_at && !(unstopped && d.resume_at)) out.push_back(i);
    }
    return out;
  }

  void StartWorker(Worker& w) {
    ++worker_spawns_;
    // A million ids per worker process: int32 ids (as the applications write them) for 2000 spawns.
    std::int64_t first_id = worker_spawns_ * 1'000'000 + 1;
    // The URI may carry a password (DocumentDB's): through the environment, never argv,
    // where every user of the host can read it.
    w.proc = std::make_unique<Subprocess>(
        std::vector<std::string>{
            o_.worker_binary, "--database", database_, "--profile", o_.profile, "--participants",
            std::to_string(o_.app.participants), "--hot", std::to_string(o_.app.hot), "--seed",
            std::to_string(o_.seed * 7919 + worker_spawns_), "--first-id", std::to_string(first_id),
            "--step-delay-ms", std::to_string(o_.step_delay_ms)},
        std::map<std::string, std::string>{{"TXN_RECOVERY_CHAOS_WORKER_URI", proxied_uri_}});
    w.resume_at.reset();
  }

  // The worker's last report: how many steps of its transaction in hand were done.
  std::string LastStep(const Subprocess& p) {
    std::string out = p.Stdout();
    auto nl = out.rfind('\n', out.size() >= 2 ? out.size() - 2 : 0);
    std::string last = out.substr(nl == std::string::npos ? 0 : nl + 1);
    std::istringstream in(last);
    std::string word, id;
    int n = -1;
    in >> word;
    if (word == "step" && (in >> id >> n)) {
      if (n >= app_->step_count()) return "between two transactions";
      return "after step " + std::to_string(n) + " (" + app_->StepName(n) + ")";
    }
    if (word == "gave-up") return "after giving up on a transaction";
    return "before its first step";
  }

  template <typename T>
  T Pick(T lo, T hi) {
    if constexpr (std::is_integral_v<T>) {
      return std::uniform_int_distribution<T>(lo, hi)(rng_);
    } else {
      return std::uniform_real_distribution<T>(lo, hi)(rng_);
    }
  }
  milliseconds PickMs(milliseconds lo, milliseconds hi) {
    return milliseconds(Pick<std::int64_t>(lo.count(), hi.count()));
  }

  // Restarts what a fault stopped once its time has come; notes any daemon that died by
  // itself (a crash is a violation whatever the invariants say).
  void Tend() {
    auto now = Clock::now();
    for (auto& w : workers_) {
      if (w.resume_at && now >= *w.resume_at) {
        w.proc->Signal(SIGCONT);
        w.resume_at.reset();
      }
      if (!w.resume_at && !w.proc->Running()) {
        auto rc = w.proc->Wait(milliseconds(0));
        violations_.push_back("a worker exited by itself (status " +
                              std::to_string(rc.value_or(-1)) + "): " + Tail(w.proc->Stderr()));
        StartWorker(w);
      }
    }
    for (std::size_t i = 0; i < daemons_.size(); ++i) {
      Daemon& d = daemons_[i];
      if (d.left) continue;
      if (d.leaving) {
        // Leaving: it must drain and exit 0 (drain_deadline is 3s) and delete its record.
        if (!d.proc->Running()) {
          auto rc = d.proc->Wait(milliseconds(0));
          if (rc.value_or(-1) != 0)
            violations_.push_back("daemon " + std::to_string(i) +
                                  " leaving did not exit 0 (status " +
                                  std::to_string(rc.value_or(-1)) + "): " + Tail(d.proc->Stderr()));
          d.leaving.reset();
          d.left = true;
        } else if (now - *d.leaving > std::chrono::seconds(15)) {
          violations_.push_back("daemon " + std::to_string(i) +
                                " still running 15s after SIGTERM: " + Tail(d.proc->Stderr()));
          d.proc->Signal(SIGKILL);
          d.proc->Wait(std::chrono::seconds(5));
          d.leaving.reset();
          d.left = true;
        }
        continue;
      }
      if (d.restart_at) {
        if (now >= *d.restart_at) StartDaemon(d);
        continue;
      }
      if (d.resume_at && now >= *d.resume_at) {
        d.proc->Signal(SIGCONT);
        d.resume_at.reset();
      }
      if (!d.proc->Running()) {
        auto rc = d.proc->Wait(milliseconds(0));
        violations_.push_back("daemon " + std::to_string(i) + " exited by itself (status " +
                              std::to_string(rc.value_or(-1)) + "): " + Tail(d.proc->Stderr()));
        StartDaemon(d);
      }
    }
    if (proxy_stalled_until_ && now >= *proxy_stalled_until_) {
      proxy_->Unstall();
      proxy_stalled_until_.reset();
    }
    if (cut_until_ && now >= *cut_until_) {
      proxy_->Refuse(false);
      cut_until_.reset();
    }
  }

  static std::string Tail(const std::string& s) {
    return s.size() > 600 ? "..." + s.substr(s.size() - 600) : s;
  }

  void Inject(Fault f) {
    switch (f) {
      case Fault::kWorkerKill: {
        Worker& w = workers_[Pick<std::size_t>(0, workers_.size() - 1)];
        w.proc->Signal(SIGKILL);
        w.proc->Wait(std::chrono::seconds(5));
        kills_by_step_[LastStep(*w.proc)]++;
        StartWorker(w);
        break;
      }
      case Fault::kWorkerStall: {
        Worker& w = workers_[Pick<std::size_t>(0, workers_.size() - 1)];
        if (w.resume_at) return Inject(Fault::kWorkerKill);  // already stopped: kill it
        w.proc->Signal(SIGSTOP);
        // Past resume_after at least, past rollback_after sometimes: the daemon acts on
        // the transaction in hand, then the application wakes up and carries on with it.
        w.resume_at = Clock::now() + PickMs(kResumeAfter + milliseconds(500),
                                            kRollbackAfter + std::chrono::seconds(3));
        break;
      }
      case Fault::kDaemonKill:
      case Fault::kMemberKill: {
        auto members = Members();
        if (members.empty()) return Inject(Fault::kConnDrop);
        Daemon& d = daemons_[members[Pick<std::size_t>(0, members.size() - 1)]];
        d.proc->Signal(SIGKILL);
        d.proc->Wait(std::chrono::seconds(5));
        d.resume_at.reset();
        // Restarted (a new member, with a new id) before its record expires, or only once
        // it has: then the others see it gone and take its buckets meanwhile.
        d.restart_at =
            Clock::now() + (f == Fault::kDaemonKill ? PickMs(milliseconds(0), milliseconds(2000))
                                                    : PickMs(kFleetExpiry + milliseconds(500),
                                                             kFleetExpiry + milliseconds(3000)));
        break;
      }
      case Fault::kMemberStall: {
        // Past the fleet's expiry, within its lease: the others drop it from their view
        // and take its buckets; it wakes with live leases and a view of the fleet that is
        // stale, and carries on (docs/fleet.md, "Why stale views stay safe").
        auto members = Members(/*unstopped=*/true);
        if (members.empty()) return Inject(Fault::kConnReset);
        Daemon& d = daemons_[members[Pick<std::size_t>(0, members.size() - 1)]];
        d.proc->Signal(SIGSTOP);
        d.resume_at = Clock::now() +
                      PickMs(kFleetExpiry + milliseconds(500), kFleetExpiry + milliseconds(4000));
        break;
      }
      case Fault::kMemberJoin: {
        std::size_t present = 0;
        for (const auto& d : daemons_) present += d.left ? 0 : 1;
        if (present >= kMaxDaemons) return Inject(Fault::kMemberLeave);
        auto slot =
            std::find_if(daemons_.begin(), daemons_.end(), [](const Daemon& d) { return d.left; });
        if (slot == daemons_.end()) slot = daemons_.emplace(daemons_.end());
        StartDaemon(*slot);
        ++joined_;
        break;
      }
      case Fault::kMemberLeave: {
        // A clean stop: it drains, deletes its member record, exits 0 (Tend checks). At
        // least one member stays.
        auto members = Members(/*unstopped=*/true);
        if (members.size() < 2) return Inject(Fault::kConnDrop);
        Daemon& d = daemons_[members[Pick<std::size_t>(0, members.size() - 1)]];
        d.proc->Signal(SIGTERM);
        d.leaving = Clock::now();
        break;
      }
      case Fault::kDaemonStall: {
        auto members = Members(/*unstopped=*/true);
        if (members.empty()) return Inject(Fault::kConnReset);
        Daemon& d = daemons_[members[Pick<std::size_t>(0, members.size() - 1)]];
        d.proc->Signal(SIGSTOP);
        // Sometimes past its lease: it must not write when it wakes (another daemon may
        // have taken over), and what it had sent before is repeatable.
        d.resume_at = Clock::now() + PickMs(milliseconds(500), kLease + milliseconds(5000));
        break;
      }
      case Fault::kDaemonsOutage: {
        // No daemon acts for longer than rollback_after: what the workers leave pending
        // meanwhile is rolled back rather than resumed.
        auto until = Clock::now() + PickMs(kRollbackAfter + milliseconds(1000),
                                           kRollbackAfter + milliseconds(4000));
        for (auto& d : daemons_) {
          if (d.restart_at || d.leaving || d.left) continue;
          if (!d.resume_at) d.proc->Signal(SIGSTOP);
          d.resume_at = std::max(until, d.resume_at.value_or(until));
        }
        break;
      }
      case Fault::kConnDrop:
        connections_hit_[f] += proxy_->Drop(Pick(0.3, 1.0), rng_());
        break;
      case Fault::kConnReset:
        connections_hit_[f] += proxy_->Reset(Pick(0.3, 1.0), rng_());
        break;
      case Fault::kConnStall:
        if (proxy_stalled_until_ || cut_until_) return Inject(Fault::kConnReset);
        connections_hit_[f] += proxy_->Stall(Pick(0.3, 1.0), rng_());
        // Up to past the processes' socket timeout (2s): some operations time out, others
        // just wait.
        proxy_stalled_until_ = Clock::now() + PickMs(milliseconds(200), milliseconds(3500));
        break;
      case Fault::kDatabaseCut:
        if (proxy_stalled_until_ || cut_until_) return Inject(Fault::kConnDrop);
        proxy_->Refuse(true);
        connections_hit_[f] += proxy_->Drop();
        cut_until_ = Clock::now() + PickMs(milliseconds(300), milliseconds(4000));
        break;
    }
    faults_[f]++;
  }

  void RunFaults() {
    start_ = Clock::now();
    auto end = start_ + o_.duration;
    auto next = start_ + PickMs(milliseconds(300), milliseconds(1200));
    while (Clock::now() < end && !g_interrupted) {
      Tend();
      if (Clock::now() >= next) {
        // Drawn from a shuffled bag of every kind: each kind comes up once in every round
        // of thirteen, so even a short run sees them all.
        if (bag_.empty()) {
          bag_.assign(std::begin(kAllFaults), std::end(kAllFaults));
          std::shuffle(bag_.begin(), bag_.end(), rng_);
        }
        Fault f = bag_.back();
        bag_.pop_back();
        if (o_.verbose) std::cout << "  t+" << Elapsed() << "s " << FaultName(f) << std::endl;
        Inject(f);
        next = Clock::now() + PickMs(milliseconds(200), milliseconds(1500));
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
  }

  // Waits `d`, tending the processes.
  void Pause(milliseconds d) {
    auto until = Clock::now() + d;
    while (Clock::now() < until && !g_interrupted) {
      Tend();
      std::this_thread::sleep_for(milliseconds(20));
    }
  }

  // Failover mode: the workers and daemons run through --failovers failovers of the
  // database, one every --failover-every after the previous one ended. A failover that
  // fails ends the round (a violation: the database was not given back).
  void RunFailovers() {
    start_ = Clock::now();
    for (int i = 0; i < o_.failovers && !g_interrupted; ++i) {
      Pause(o_.failover_every);
      Subprocess p({o_.failover_script, "--state-dir", o_.failover_state_dir});
      auto deadline = Clock::now() + std::chrono::minutes(5);
      while (p.Running() && Clock::now() < deadline && !g_interrupted) {
        Tend();
        std::this_thread::sleep_for(milliseconds(50));
      }
      std::optional<int> rc = p.Wait(milliseconds(0));
      if (!rc || *rc != 0) {
        violations_.push_back("failover " + std::to_string(i + 1) + " did not complete (status " +
                              (rc ? std::to_string(*rc) : "still running after 5 min") +
                              "): " + Tail(p.Stderr()));
        return;
      }
      std::string line = p.Stdout();
      while (!line.empty() && line.back() == '\n') line.pop_back();
      std::cout << "  t+" << Elapsed() << "s " << line << std::endl;
      std::smatch m;
      if (std::regex_search(line, m, std::regex(R"(unavailable (\d+\.\d+) s)")))
        unavailable_s_.push_back(std::stod(m[1]));
    }
    Pause(o_.failover_every);  // the workers and daemons after the last failover, then quiescence
  }

  std::string Elapsed() const {
    std::ostringstream os;
    os << std::fixed << std::setprecision(1)
       << std::chrono::duration<double>(Clock::now() - start_).count();
    return os.str();
  }

  // Faults stop; every process gets the network back; workers finish the transaction in
  // hand and exit; the daemons sweep until nothing is in flight.
  void Quiesce() {
    proxy_->Unstall();
    proxy_->Refuse(false);
    proxy_stalled_until_.reset();
    cut_until_.reset();
    for (auto& w : workers_) {
      if (w.resume_at) w.proc->Signal(SIGCONT);
      w.resume_at.reset();
      w.proc->Signal(SIGTERM);
    }
    for (auto& w : workers_) {
      if (!w.proc->Wait(std::chrono::seconds(15))) {
        w.proc->Signal(SIGKILL);
        w.proc->Wait(std::chrono::seconds(5));
      }
    }
    workers_.clear();
    // A member still leaving finishes leaving; one that left stays gone.
    for (auto until = Clock::now() + std::chrono::seconds(16);
         Clock::now() < until &&
         std::any_of(daemons_.begin(), daemons_.end(), [](const Daemon& d) { return d.leaving; });)
      Pause(milliseconds(100));
    for (auto& d : daemons_) {
      if (d.left) continue;
      if (d.restart_at) StartDaemon(d);
      if (d.resume_at) d.proc->Signal(SIGCONT);
      d.resume_at.reset();
    }
    auto quiesce_start = Clock::now();
    int calm = 0;
    while (Clock::now() - quiesce_start < o_.quiesce_timeout && !g_interrupted) {
      Tend();
      std::int64_t in_flight = -1;
      try {
        in_flight = app_->InFlight();
      } catch (const std::exception&) {
      }
      // Twice in a row, a sweep interval apart: nothing is between two steps of a daemon.
      calm = in_flight == 0 ? calm + 1 : 0;
      if (calm >= 2) break;
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    quiesce_seconds_ = std::chrono::duration<double>(Clock::now() - quiesce_start).count();
    if (calm < 2)
      violations_.push_back("nothing stuck: still in flight after " +
                            txn_recovery::daemon::FormatDuration(o_.quiesce_timeout) +
                            " of quiescence: " + std::to_string(app_->InFlight()));
    for (std::size_t i = 0; i < daemons_.size(); ++i) {
      Daemon& d = daemons_[i];
      if (d.left) {  // stopped when it left, and checked then
        Harvest(d);
        continue;
      }
      d.proc->Signal(SIGTERM);
      auto rc = d.proc->Wait(std::chrono::seconds(15));
      Harvest(d);
      if (!rc || *rc != 0)
        violations_.push_back("daemon " + std::to_string(i) + " did not stop cleanly (status " +
                              (rc ? std::to_string(*rc) : "still running") +
                              "): " + Tail(d.proc->Stderr()));
    }
  }

  void Check() {
    for (auto& v : app_->Violations()) violations_.push_back(v);
    // No transaction driven by two: each resolved by one daemon process at most.
    for (const auto& [txn, serials] : resolved_by_) {
      if (serials.size() < 2) continue;
      if (++resolved_by_two_ > 5) continue;  // the first few named
      std::string who;
      for (int s : serials) who += (who.empty() ? "" : ", ") + std::to_string(s);
      violations_.push_back("driven by two: transaction " + txn + " resolved by daemon processes " +
                            who + " (their logs)");
    }
    // How each transaction ended and who ended it, from the lease sub-document.
    const Profile& p = app_->profile();
    for (const Document& t : testing::AllDocs(store_.get(), app_->transactions())) {
      ++transactions_;
      const Value* st = t.GetPath(p.state_field);
      auto state = st && st->is_string() ? p.states.Parse(*st->as_string()) : std::nullopt;
      std::string state_name = state ? std::string(TxnStateName(*state)) : "unreadable";
      by_state_[state_name]++;
      if (t.GetPath("recovery.quarantine")) {
        // Every document the workers write fits the profile: setting one aside means the
        // daemon gave up on a transaction it should have recovered.
        quarantined_++;
        violations_.push_back("nothing stuck: well-formed transaction " + t.Get("_id")->ToString() +
                              " was quarantined: " + t.GetPath("recovery.quarantine")->ToString());
        continue;
      }
      const Value* action = t.GetPath("recovery.resolvedAction");
      const Value* outcome = t.GetPath("recovery.outcome");
      std::string key = action && action->is_string()
                            ? *action->as_string() + " -> " +
                                  (outcome && outcome->is_string() ? *outcome->as_string() : "?")
                            : "none: finished by the application (" + state_name + ")";
      recoveries_[key]++;
    }
    // A round in which the workers made no transaction at all proves nothing (against a
    // server the daemon could not work with, every invariant held over an empty bank).
    if (transactions_ == 0)
      violations_.push_back("the workers made no transaction: nothing was checked");
  }

  void PrintTable() {
    std::vector<std::pair<std::string, std::string>> rows;
    auto row = [&](std::string k, auto v) {
      std::ostringstream os;
      os << v;
      rows.emplace_back(std::move(k), os.str());
    };
    row("transactions", transactions_);
    for (const auto& [s, n] : by_state_) row("  " + s, n);
    row("  quarantined", quarantined_);
    if (o_.failovers) {
      row("failovers (" + o_.failover_state_dir + ")", unavailable_s_.size());
      std::vector<double> u = unavailable_s_;
      std::sort(u.begin(), u.end());
      std::ostringstream os;
      os << std::fixed << std::setprecision(2);
      if (!u.empty()) os << u.front() << " / " << u[u.size() / 2] << " / " << u.back() << " s";
      row("  unavailable min / median / max", os.str());
    }
    std::int64_t total_faults = 0;
    for (const auto& [f, n] : faults_) total_faults += n;
    row("faults injected", total_faults);
    for (Fault f : kAllFaults) {
      std::string v = std::to_string(faults_[f]);
      if (connections_hit_.count(f))
        v += " (" + std::to_string(connections_hit_[f]) + " connections)";
      row(std::string("  ") + FaultName(f), v);
      if (f == Fault::kWorkerKill)
        for (const auto& [where, n] : kills_by_step_) row("    " + where, n);
    }
    row("recoveries (resolvedAction -> outcome)", "");
    for (const auto& [k, n] : recoveries_) row("  " + k, n);
    row("daemon processes started (members joined)",
        std::to_string(daemon_spawns_) + " (" + std::to_string(joined_) + ")");
    row("fleet views changed (daemon logs), largest",
        std::to_string(view_changes_) + ", " + std::to_string(largest_view_) + " members");
    row("transactions resolved (daemon logs)", resolved_by_.size());
    row("  of them by two daemons", resolved_by_two_);
    row("late writes undone (daemon logs)", late_writes_undone_);
    row("daemon attempts failed, retried", daemon_failures_);
    std::ostringstream q;
    q << std::fixed << std::setprecision(1) << quiesce_seconds_ << "s";
    row("quiescence", q.str());
    row("invariant violations", violations_.size());

    std::size_t w = 0;
    for (const auto& [k, v] : rows) w = std::max(w, k.size());
    std::string rule = "+" + std::string(w + 2, '-') + "+" + std::string(30, '-') + "+";
    std::cout << rule << "\n";
    std::cout << "| " << std::left << std::setw(static_cast<int>(w))
              << "seed " + std::to_string(o_.seed) + ", profile " + o_.profile << " | "
              << std::setw(28)
              << (o_.failovers ? std::to_string(o_.failovers) + " failovers"
                               : txn_recovery::daemon::FormatDuration(o_.duration)) +
                     ", " + std::to_string(initial_daemons_) + " daemon(s) at first"
              << " |\n"
              << rule << "\n";
    for (const auto& [k, v] : rows)
      std::cout << "| " << std::left << std::setw(static_cast<int>(w)) << k << " | " << std::right
                << std::setw(28) << v << " |\n";
    std::cout << rule << "\n";
    for (const auto& v : violations_) std::cout << "VIOLATION: " << v << "\n";
    std::cout << "replay: txn-recovery-chaos --profile " << o_.profile << " --seed " << o_.seed;
    if (o_.failovers)
      std::cout << " --failovers " << o_.failovers << " --failover-every "
                << txn_recovery::daemon::FormatDuration(o_.failover_every)
                << " --failover-state-dir " << o_.failover_state_dir;
    else
      std::cout << " --duration " << txn_recovery::daemon::FormatDuration(o_.duration);
    std::cout << " --workers " << o_.workers << " --daemons " << initial_daemons_ << std::endl;
  }

  void TearDown() {
    workers_.clear();
    daemons_.clear();
    proxy_.reset();
    if (!o_.keep && violations_.empty()) (void)DropDatabase(store_.get(), database_);
    if (!violations_.empty() || o_.keep)
      std::cout << "database " << database_ << " kept for inspection" << std::endl;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  static constexpr milliseconds kResumeAfter{2000};
  static constexpr milliseconds kRollbackAfter{6000};
  static constexpr milliseconds kInitialTimeout{3000};
  static constexpr milliseconds kLateWriteWindow{40000};
  static constexpr milliseconds kLease{15000};
  static constexpr milliseconds kFleetHeartbeat{500};
  static constexpr milliseconds kFleetExpiry{2000};
  static constexpr std::size_t kMaxDaemons = 4;  // members joining stop there

  Options o_;
  std::mt19937_64 rng_;
  std::unique_ptr<MongoStore> store_;
  std::string database_;
  std::unique_ptr<ChaosApp> app_;
  std::unique_ptr<TcpProxy> proxy_;
  std::string proxied_uri_;
  std::filesystem::path dir_;
  std::string config_path_;
  std::vector<Worker> workers_;
  std::vector<Daemon> daemons_;
  std::int64_t worker_spawns_ = 0;
  int daemon_spawns_ = 0, initial_daemons_ = 0, joined_ = 0;
  std::map<std::string, std::set<int>> resolved_by_;  // transaction -> the daemons (serial)
  std::int64_t resolved_by_two_ = 0;
  std::int64_t view_changes_ = 0;
  int largest_view_ = 0;
  std::optional<Clock::time_point> proxy_stalled_until_, cut_until_;
  Clock::time_point start_;

  std::vector<Fault> bag_;
  std::map<Fault, std::int64_t> faults_;
  std::map<Fault, std::int64_t> connections_hit_;
  std::map<std::string, std::int64_t> kills_by_step_;
  std::map<std::string, std::int64_t> by_state_;
  std::map<std::string, std::int64_t> recoveries_;
  std::int64_t transactions_ = 0;
  std::int64_t quarantined_ = 0;
  std::int64_t late_writes_undone_ = 0;
  std::int64_t daemon_failures_ = 0;
  double quiesce_seconds_ = 0;
  std::vector<double> unavailable_s_;  // of each failover, as its script measured it
  std::vector<std::string> violations_;
};

}  // namespace
}  // namespace txn_recovery::chaos

int main(int argc, char** argv) {
  using namespace txn_recovery::chaos;
  Options o;
  std::string error;
  if (!ParseArgs(argc, argv, &o, &error)) return Usage(error.c_str());
  if (!o.seed_given) o.seed = std::random_device{}() % 1000000000;
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, OnInterrupt);
  signal(SIGTERM, OnInterrupt);
  txn_recovery::MongoDriver driver;
  return Run(std::move(o)).Go();
}
