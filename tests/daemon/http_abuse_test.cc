// `txn-recoveryd run` under hostile HTTP clients: clients that send a header line a second,
// a flood of idle connections, a reload that moves the listener and a SIGTERM while they
// are connected. The health endpoint must never be why the daemon is restarted or stops
// working: /livez answers within a second throughout, a stuck transaction is resolved by
// the next sweep, the daemon's descriptors stay bounded, and neither the reload nor the
// stop waits for a client.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "daemon/serving/http_server.h"
#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/test_env.h"

namespace txn_recovery::testing {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

// A connection to the daemon; `wait` = false returns at once with the handshake under way
// (a flood does not wait for the kernel's SYN retries when the accept queue overflows).
int Connect(int port, bool wait = true) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (wait ? 0 : SOCK_NONBLOCK), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 &&
      (wait || errno != EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

// The port of the last "health and metrics on" line of a log.
int LastHealthPort(const std::string& log) {
  static const std::regex kLine(R"(health and metrics on http://\S*:(\d+))");
  int port = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kLine); it != std::sregex_iterator();
       ++it)
    port = std::stoi((*it)[1]);
  return port;
}

int DescriptorsOf(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// The clients of the abuse, on their own threads until Stop.
class Abuse {
 public:
  // `slow` clients each sending "GET /metrics" and then a header line a second (a new one
  // whenever the daemon drops one), and up to `flood` idle connections kept open,
  // replaced as the daemon closes them.
  Abuse(int port, int slow, int flood) : port_(port) {
    for (int i = 0; i < slow; ++i) threads_.emplace_back([this] { SlowClient(); });
    threads_.emplace_back([this, flood] { Flood(flood); });
  }
  ~Abuse() { Stop(); }
  void Stop() {
    done_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  void MoveTo(int port) { port_ = port; }
  int flood_open() const { return flood_open_.load(); }
  std::int64_t connects() const { return connects_.load(); }

 private:
  void SlowClient() {
    while (!done_) {
      int fd = Connect(port_);
      if (fd < 0) {
        std::this_thread::sleep_for(100ms);
        continue;
      }
      std::string line = "GET /metrics HTTP/1.1\r\n";
      for (int n = 0; !done_; ++n) {
        if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) < 0) break;
        line = "X-Slow-" + std::to_string(n) + ": 1\r\n";
        for (int t = 0; t < 10 && !done_; ++t) std::this_thread::sleep_for(100ms);
      }
      close(fd);
    }
  }
  void Flood(int flood) {
    std::vector<int> open;
    while (!done_) {
      // Forget the connections the daemon closed, open new ones up to `flood`.
      std::vector<int> alive;
      for (int fd : open) {
        char b;
        ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN)) {
          close(fd);
        } else {
          alive.push_back(fd);
        }
      }
      open.swap(alive);
      // At most 20 new connections per 20 ms (1,000 a second, every one of them held until
      // the daemon drops it): a flood, within what a shared test machine should take.
      for (int opened = 0; !done_ && static_cast<int>(open.size()) < flood && opened < 20;
           ++opened) {
        int fd = Connect(port_, /*wait=*/false);
        if (fd < 0) break;
        open.push_back(fd);
        connects_++;
      }
      flood_open_ = static_cast<int>(open.size());
      std::this_thread::sleep_for(20ms);
    }
    for (int fd : open) close(fd);
  }

  std::atomic<int> port_;
  std::atomic<bool> done_{false};
  std::atomic<int> flood_open_{0};
  std::atomic<std::int64_t> connects_{0};
  std::vector<std::thread> threads_;
};

// How long GET /livez takes on a fresh connection; nullopt without a 200 answer.
std::optional<milliseconds> TimeLivez(int port) {
  auto t0 = SteadyClock::now();
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(2);
  auto res = c.Get("/livez");
  if (!res || res->status != 200) return std::nullopt;
  return std::chrono::duration_cast<milliseconds>(SteadyClock::now() - t0);
}

TXN_RECOVERY_DATABASE_SUITE(HttpAbuse);

TEST(HttpAbuse, SlowClientsAndAConnectionFloodNeverSilenceLivezNorStopTheSweeps) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  // The flood needs descriptors in this process; the daemon inherits the same limit, so
  // only its own bound can keep it from holding them all.
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  const int flood = static_cast<int>(std::min<rlim_t>(2000, rl.rlim_cur - 256));
  ASSERT_GE(flood, 500) << "too few descriptors for a flood here";

  Bank bank(backend->store(), backend->database());
  bank.Open(4);
  Snapshot before = bank.Take();
  constexpr auto kInterval = 2s;
  std::string config = WriteTestFile(
      ".toml", "[mongodb]\nuri = \"" + FindTestUri().uri_or_reason +
                   "\"\nserver_selection_timeout = \"2s\"\n"
                   "[daemon]\ninterval = \"2s\"\njitter = 0\ndrain_deadline = \"8s\"\n"
                   "[http]\nlisten = \"127.0.0.1:0\"\n"
                   "[[watch]]\nname = \"bank\"\ndatabase = \"" +
                   backend->database() + "\"\n");
  auto daemon =
      StartTxnRecoveryd({"run", "--config", config}, {{"TXN_RECOVERYD_LOG_FORMAT", "text"}});
  int port = HealthPort(*daemon);
  ASSERT_GT(port, 0) << daemon->Stderr();
  ASSERT_TRUE(TimeLivez(port));
  const int calm = DescriptorsOf(daemon->pid());

  Abuse abuse(port, /*slow=*/2, flood);
  ASSERT_TRUE(Eventually([&] { return abuse.connects() >= flood; }, 10s))
      << "the flood did not get going";

  // Throughout the abuse: /livez within a second, every time; descriptors bounded.
  milliseconds slowest_probe{0};
  int probes = 0;
  auto probe_for = [&](SteadyClock::duration how_long, int* worst_fds) {
    auto until = SteadyClock::now() + how_long;
    while (SteadyClock::now() < until) {
      std::optional<milliseconds> took = TimeLivez(port);
      ASSERT_TRUE(took) << "no answer from /livez during the abuse\n" << daemon->Stderr();
      EXPECT_LT(*took, 1s);
      slowest_probe = std::max(slowest_probe, *took);
      ++probes;
      *worst_fds = std::max(*worst_fds, DescriptorsOf(daemon->pid()));
      std::this_thread::sleep_for(200ms);
    }
  };
  int worst_fds = 0;
  probe_for(3s, &worst_fds);
  const int worst_before_reload = worst_fds;

  // A transaction stuck during the abuse: resolved by the next sweep, due within one
  // interval (plus the sweep's own time).
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  auto stuck_at = SteadyClock::now();
  EXPECT_TRUE(Eventually([&] { return bank.State(id) == "done"; }, kInterval + 2s))
      << daemon->Stderr();
  EXPECT_LE(SteadyClock::now() - stuck_at, kInterval + 2s);
  probe_for(2s, &worst_fds);

  // With the flood at thousands, the daemon holds its calm descriptors plus at most the
  // health endpoint's connection limit (and the few connections its client pool may have
  // opened since: 4 workers + 2).
  const int limit = txn_recovery::daemon::HttpLimits{}.max_connections;
  EXPECT_LE(worst_fds, calm + limit + 6)
      << "the daemon's descriptors grew with the flood (" << abuse.connects()
      << " connections so far, " << abuse.flood_open() << " open on the client side)";

  // A reload that moves the listener while slow clients hang on the old one: the old
  // listener closes without waiting for them, and the sweep loop goes on at once.
  {
    std::ifstream in(config);
    std::stringstream text;
    text << in.rdbuf();
    std::string t = text.str();
    const std::string old_listen = "listen = \"127.0.0.1:0\"";
    t.replace(t.find(old_listen), old_listen.size(),
              "listen = \"127.0.0.1:" + std::to_string(FreePort()) + "\"");
    std::ofstream(config) << t;
  }
  daemon->Signal(SIGHUP);
  auto reload_at = SteadyClock::now();
  ASSERT_TRUE(Eventually(
      [&] { return daemon->Stderr().find("configuration reloaded") != std::string::npos; }, 10s))
      << daemon->Stderr();
  EXPECT_LT(SteadyClock::now() - reload_at, 3s) << "the reload waited for the slow clients";
  int moved = LastHealthPort(daemon->Stderr());
  ASSERT_GT(moved, 0);
  ASSERT_NE(moved, port);
  port = moved;
  abuse.MoveTo(moved);
  Value after_reload = bank.Transfer("A2", "A3", 10, 3);
  bank.Age(after_reload, std::chrono::minutes(5));
  EXPECT_TRUE(Eventually([&] { return bank.State(after_reload) == "done"; }, kInterval + 2s))
      << daemon->Stderr();
  worst_fds = 0;
  probe_for(2s, &worst_fds);
  EXPECT_LE(worst_fds, calm + limit + 6)
      << "after the reload: the old listener's connections are gone";

  daemon->Signal(SIGTERM);
  auto stop_at = SteadyClock::now();
  std::optional<int> rc = daemon->Wait(15s);
  std::cout << "[ figures  ] " << abuse.connects() << " flood connections, " << probes
            << " probes of /livez, slowest " << slowest_probe.count() << " ms; daemon descriptors "
            << calm << " calm, at most " << worst_before_reload << " during the flood; stopped in "
            << std::chrono::duration_cast<milliseconds>(SteadyClock::now() - stop_at).count()
            << " ms\n";
  EXPECT_EQ(rc, 0) << daemon->Stderr();
  EXPECT_LT(SteadyClock::now() - stop_at, 3s)
      << "an idle daemon stops at once, whoever is connected (the drain deadline is 8s)";
  abuse.Stop();
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
}

// The largest client pool the configuration allows (sweep.workers = 256, plus the
// scheduler's two clients) on a seven-member replica set, with two monitoring connections
// per member, the health endpoint's connection limit, and a margin for the daemon's own
// descriptors: what LimitNOFILE= must cover, or a large pool runs out of descriptors and
// reports the database down while it is up.
TEST(HttpAbuse, TheUnitsDescriptorLimitCoversTheLargestPoolAndTheHttpLimit) {
  const int needed =
      (256 + 2) * 7 + 2 * 7 + txn_recovery::daemon::HttpLimits{}.max_connections + 32;
  for (const char* unit : {"txn-recoveryd.service", "txn-recoveryd-sweep.service"}) {
    std::ifstream in(std::string(TXN_RECOVERY_SOURCE_DIR) + "/systemd/" + unit);
    ASSERT_TRUE(in) << unit;
    int limit = 0;
    for (std::string line; std::getline(in, line);)
      if (line.rfind("LimitNOFILE=", 0) == 0) limit = std::stoi(line.substr(12));
    EXPECT_GE(limit, needed) << unit << ": LimitNOFILE= (the default soft limit is 1024)";
  }
}

}  // namespace
}  // namespace txn_recovery::testing
