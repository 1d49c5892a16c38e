// txn-recovery-chaos-worker: the shape's application as a process of its own, for the chaos
// driver to kill, stop and cut off. It runs transactions of one profile one after the
// other until SIGTERM (then it finishes the one in hand), and reports each step on stdout
// ("step <id> <n>") so that the driver knows where a SIGKILL landed.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "chaos_app.h"
#include "txn_recovery/stores/mongo_store.h"

namespace {

volatile sig_atomic_t g_stop = 0;
void OnTerm(int) {
  g_stop = 1;
}

txn_recovery::Status RunOne(txn_recovery::chaos::ChaosApp& app, std::mt19937_64& rng,
                            const txn_recovery::chaos::AppParams& params, int step_delay_ms) {
  return app.RunOne(rng, params, [step_delay_ms](const txn_recovery::Value& id, int n) {
    // One write per line, unbuffered: the line is on disk before the next step starts.
    std::string line = "step " + id.ToString() + " " + std::to_string(n) + "\n";
    (void)!write(STDOUT_FILENO, line.data(), line.size());
    // A pause at each step boundary, so that most SIGKILLs land between two steps rather
    // than during a round trip (both happen).
    if (step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_delay_ms));
  });
}

int Usage() {
  std::cerr << "usage: TXN_RECOVERY_CHAOS_WORKER_URI=URI txn-recovery-chaos-worker --database DB\n"
               "  [--profile transfer]"
               "  [--participants N] [--hot N] [--seed N] [--first-id N] [--step-delay-ms N]\n";
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace txn_recovery;
  std::string uri, database, profile = "transfer";
  chaos::AppParams params;
  std::uint64_t seed = 1;
  std::int64_t first_id = 1;
  int step_delay_ms = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return Usage();
    std::string v = argv[++i];
    if (a == "--uri") {
      uri = v;
    } else if (a == "--database") {
      database = v;
    } else if (a == "--profile") {
      profile = v;
    } else if (a == "--participants") {
      params.participants = std::stoi(v);
    } else if (a == "--hot") {
      params.hot = std::stoi(v);
    } else if (a == "--seed") {
      seed = std::stoull(v);
    } else if (a == "--step-delay-ms") {
      step_delay_ms = std::stoi(v);
    } else if (a == "--first-id") {
      first_id = std::stoll(v);
    } else {
      return Usage();
    }
  }
  // From the environment: a URI may carry a password, and argv is readable by every user.
  if (const char* env = std::getenv("TXN_RECOVERY_CHAOS_WORKER_URI"); uri.empty() && env != nullptr)
    uri = env;
  if (uri.empty() || database.empty()) return Usage();
  signal(SIGTERM, OnTerm);
  // An application must not outlive a driver that was itself killed.
  prctl(PR_SET_PDEATHSIG, SIGKILL);

  MongoDriver driver;
  MongoOptions options;
  options.uri = uri;
  options.app_name = "chaos-worker";
  options.max_pool_size = 2;
  options.server_selection_timeout = std::chrono::milliseconds(2000);
  options.socket_timeout = std::chrono::milliseconds(2000);
  std::unique_ptr<MongoStore> store;
  if (Status s = MongoStore::Open(options, &store); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 78;
  }
  auto app = chaos::MakeChaosApp(profile, store.get(), database, first_id);
  if (!app) return Usage();
  std::mt19937_64 rng(seed);
  while (!g_stop) {
    Status s;
    try {
      s = RunOne(*app, rng, params, step_delay_ms);
    } catch (const std::exception& e) {
      // A simulator's helper read failed (the connection was cut): the application gives
      // up on the transaction in hand, as it would on any error.
      s = Status::Unavailable(e.what());
    }
    if (!s.ok()) {
      std::string line = "gave-up " + s.ToString() + "\n";
      (void)!write(STDOUT_FILENO, line.data(), line.size());
      // As an application would: wait a moment before the next transaction.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return 0;
}
