#include "txn_recovery/base/clock.h"

#include <thread>

namespace txn_recovery {
namespace {

class RealClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point MonotonicNow() override {
    return std::chrono::steady_clock::now();
  }
  std::int64_t WallMillis() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  void SleepFor(std::chrono::milliseconds d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

Clock* Clock::Real() {
  static RealClock clock;  // trivially destructible in practice; lives for the program
  return &clock;
}

}  // namespace txn_recovery
