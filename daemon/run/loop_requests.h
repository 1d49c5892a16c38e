// What the signal thread asks of `run`'s sweep loop (a reload, the stop) and the loop's waits,
// which either request ends early.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace txn_recovery::daemon {

class LoopRequests {
 public:
  void RequestReload();
  // The drain: the loop and the sweeps in hand stop taking transactions from now on; the
  // loop's wait ends at Wake (the caller says why in between, before the loop goes on).
  void RequestStop() { stop_ = true; }
  void Wake();

  bool stopping() const { return stop_.load(); }
  // For SweepOptions::stop and OrphanOptions::stop.
  const std::atomic<bool>* stop_flag() const { return &stop_; }

  // Whether a reload was requested since the last TakeReload, and forgets it.
  bool TakeReload();
  bool reload_requested();

  // Sleeps up to `d`, waking early for a stop or reload request; calls `tick` at least once a
  // second meanwhile (the watchdog, /livez).
  void Wait(std::chrono::milliseconds d, const std::function<void()>& tick);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool reload_requested_ = false;  // guarded by mu_
  std::atomic<bool> stop_{false};
};

}  // namespace txn_recovery::daemon
