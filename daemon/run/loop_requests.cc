#include "daemon/run/loop_requests.h"

#include <algorithm>

namespace txn_recovery::daemon {

using Steady = std::chrono::steady_clock;

void LoopRequests::RequestReload() {
  std::lock_guard<std::mutex> l(mu_);
  reload_requested_ = true;
  cv_.notify_all();
}

void LoopRequests::Wake() {
  std::lock_guard<std::mutex> l(mu_);
  cv_.notify_all();
}

bool LoopRequests::TakeReload() {
  bool reload = false;
  std::lock_guard<std::mutex> l(mu_);
  std::swap(reload, reload_requested_);
  return reload;
}

bool LoopRequests::reload_requested() {
  std::lock_guard<std::mutex> l(mu_);
  return reload_requested_;
}

void LoopRequests::Wait(std::chrono::milliseconds d, const std::function<void()>& tick) {
  auto until = Steady::now() + d;
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_.load() && !reload_requested_) {
    auto now = Steady::now();
    if (now >= until) break;
    // Wake at least once a second so the watchdog and /livez see a live loop.
    auto slice = std::min<Steady::duration>(until - now, std::chrono::seconds(1));
    cv_.wait_for(l, slice);
    l.unlock();
    tick();
    l.lock();
  }
}

}  // namespace txn_recovery::daemon
