// How `run` reads the signals that stop it. The first SIGTERM, SIGINT or SIGQUIT starts
// the drain (stop taking transactions, finish the step in hand, release the leases). A
// second one means "exit now", but a second SIGTERM only counts after a grace period:
// GNU timeout, container runtimes and `kill -TERM -PGID` signal the process and then its
// process group, so one request to stop arrives twice within a millisecond, and taking
// the copy for an impatient operator would skip the drain. SIGINT (Ctrl-C) and SIGQUIT
// (Ctrl-\) are a person at a terminal: the second one exits at once.
#pragma once

#include <chrono>
#include <optional>

namespace txn_recovery::daemon {

class StopSignals {
 public:
  enum class Decision {
    kDrain,    // the first stop signal
    kIgnore,   // a copy of the first, within the grace period
    kExitNow,  // the operator insists
  };
  using Clock = std::chrono::steady_clock;

  explicit StopSignals(std::chrono::milliseconds grace = std::chrono::seconds(1)) : grace_(grace) {}

  // `sig` is SIGTERM, SIGINT or SIGQUIT, received at `now`.
  Decision On(int sig, Clock::time_point now);

 private:
  std::chrono::milliseconds grace_;
  std::optional<Clock::time_point> first_;
};

}  // namespace txn_recovery::daemon
