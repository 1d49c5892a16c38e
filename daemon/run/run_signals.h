// The signals `run` handles: blocked in every thread and received by one thread with
// sigwait(), so that no async-signal-safety concern arises and the handling code may lock
// and log. SIGHUP asks for a reload; SIGTERM, SIGINT and SIGQUIT for the drain (StopSignals
// says what a second one means).
#pragma once

#include <atomic>
#include <functional>
#include <thread>

#include "daemon/run/drain_deadline.h"
#include "daemon/run/loop_requests.h"
#include "daemon/run/stop_signals.h"
#include "daemon/serving/notifier.h"

namespace txn_recovery::daemon {

// Blocks the handled signals in the calling thread; before any other thread exists, so that
// every thread inherits the mask and only the watcher receives them.
void BlockRunSignals();

// The thread that receives the handled signals and hands each to `on_signal`.
class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void(int)> on_signal);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  std::function<void(int)> on_signal_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// What a handled signal does to the running daemon. Called on the watcher's thread only.
class RunSignals {
 public:
  RunSignals(LoopRequests* requests, DrainDeadline* drain, Notifier* notifier)
      : requests_(*requests), drain_(*drain), notifier_(*notifier) {}

  void On(int sig);

 private:
  LoopRequests& requests_;
  DrainDeadline& drain_;
  Notifier& notifier_;
  StopSignals stop_signals_;
};

}  // namespace txn_recovery::daemon
