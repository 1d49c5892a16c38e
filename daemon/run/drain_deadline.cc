#include "daemon/run/drain_deadline.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "daemon/base/exit_codes.h"
#include "daemon/configuration/config.h"

namespace txn_recovery::daemon {

void DrainDeadline::Start() {
  std::chrono::milliseconds deadline = this->deadline();
  std::lock_guard<std::mutex> guard(mu_);
  if (finished_) return;  // the loop is already done; nothing to bound
  thread_ = std::thread([this, deadline] {
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_for(l, deadline, [this] { return finished_; })) return;
    spdlog::warn(
        "drain deadline of {} passed with work in hand: exiting anyway; every step left "
        "undone is safe to repeat and its lease expires",
        FormatDuration(deadline));
    spdlog::default_logger()->flush();
    std::_Exit(kExitOk);
  });
}

void DrainDeadline::Finish() {
  std::thread deadline;
  {
    std::lock_guard<std::mutex> l(mu_);
    finished_ = true;
    deadline = std::move(thread_);
    cv_.notify_all();
  }
  if (deadline.joinable()) deadline.join();
}

}  // namespace txn_recovery::daemon
