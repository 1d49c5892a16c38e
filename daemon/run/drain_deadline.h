// How long the drain may take: after the first stop signal, the transactions in hand get
// daemon.drain_deadline, then the process exits anyway (everything it leaves is safe to
// repeat; its leases simply expire).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace txn_recovery::daemon {

class DrainDeadline {
 public:
  explicit DrainDeadline(std::chrono::milliseconds deadline) : deadline_ms_(deadline.count()) {}
  // A stop signal that arrived while `run` failed at start (a bad configuration) has
  // started the deadline's thread: it must end before its std::thread is destroyed.
  ~DrainDeadline() { Finish(); }
  DrainDeadline(const DrainDeadline&) = delete;
  DrainDeadline& operator=(const DrainDeadline&) = delete;

  // The configuration's, published for the signal thread.
  void Set(std::chrono::milliseconds deadline) { deadline_ms_ = deadline.count(); }
  std::chrono::milliseconds deadline() const {
    return std::chrono::milliseconds(deadline_ms_.load());
  }

  // The drain begins: exits the process if Finish has not come within the deadline. A
  // no-op once finished.
  void Start();
  // The loop is done: the deadline no longer applies. Idempotent.
  void Finish();

 private:
  std::atomic<std::int64_t> deadline_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace txn_recovery::daemon
