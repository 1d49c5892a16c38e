// Clock: the only source of time for the core library (LevelDB's Env, narrowed to time).
//
// Two different times matter and must not be confused:
//  - the *database server's* wall clock, against which transaction ages are measured
//    (Store::ServerTime), so that a host with a skewed clock cannot expire live
//    transactions;
//  - this process's *monotonic* clock, used to measure how long our own lease has been
//    held and how much time has passed since we last asked the server for its time.
// Tests substitute ManualClock to make both deterministic.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace txn_recovery {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time; never goes backwards. Thread-safe.
  virtual std::chrono::steady_clock::time_point MonotonicNow() = 0;
  // This host's wall clock in milliseconds since the Unix epoch. Used only by stores that
  // have no server to ask (the in-memory store). Thread-safe.
  virtual std::int64_t WallMillis() = 0;
  // Blocks for `d` (or advances simulated time). Thread-safe.
  virtual void SleepFor(std::chrono::milliseconds d) = 0;

  // The process-wide real clock. Never null; lives for the whole program.
  static Clock* Real();
};

// A clock that moves only when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t wall_millis = 1'700'000'000'000) : wall_ms_(wall_millis) {}
  std::chrono::steady_clock::time_point MonotonicNow() override {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(mono_ms_.load()));
  }
  std::int64_t WallMillis() override { return wall_ms_.load(); }
  void SleepFor(std::chrono::milliseconds d) override { Advance(d); }
  void Advance(std::chrono::milliseconds d) {
    mono_ms_ += d.count();
    wall_ms_ += d.count();
  }

 private:
  std::atomic<std::int64_t> wall_ms_;
  std::atomic<std::int64_t> mono_ms_{1'000'000};
};

}  // namespace txn_recovery
