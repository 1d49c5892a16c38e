#include "daemon/run/run_signals.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "daemon/base/exit_codes.h"
#include "daemon/configuration/config.h"

namespace txn_recovery::daemon {

namespace {

// SIGUSR2 only wakes the watcher when the daemon shuts it down.
sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGQUIT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR2);
  return set;
}

}  // namespace

void BlockRunSignals() {
  sigset_t set = HandledSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalWatcher::SignalWatcher(std::function<void(int)> on_signal)
    : on_signal_(std::move(on_signal)) {
  thread_ = std::thread([this] {
    sigset_t set = HandledSignals();
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (done_.load()) return;
      if (sig != SIGUSR2) on_signal_(sig);
    }
  });
}

SignalWatcher::~SignalWatcher() {
  done_ = true;
  pthread_kill(thread_.native_handle(), SIGUSR2);
  thread_.join();
}

void RunSignals::On(int sig) {
  if (sig == SIGHUP) {
    requests_.RequestReload();
    return;
  }
  const char* name = sig == SIGINT ? "SIGINT" : sig == SIGQUIT ? "SIGQUIT" : "SIGTERM";
  switch (stop_signals_.On(sig, StopSignals::Clock::now())) {
    case StopSignals::Decision::kIgnore:
      // The same request again (a process-group signal reaches us twice): keep draining.
      spdlog::info("{} again within a second of the first: still draining", name);
      return;
    case StopSignals::Decision::kExitNow:
      // The operator does not want to wait for the drain. Everything the daemon leaves is
      // safe to repeat; its leases expire.
      spdlog::warn("second {} during the drain: exiting now", name);
      spdlog::default_logger()->flush();
      std::_Exit(kExitOk);
    case StopSignals::Decision::kDrain:
      break;
  }
  requests_.RequestStop();
  spdlog::info("{} received: finishing the transactions in hand, then exiting (deadline {})", name,
               FormatDuration(drain_.deadline()));
  notifier_.Stopping();
  drain_.Start();
  requests_.Wake();
}

}  // namespace txn_recovery::daemon
