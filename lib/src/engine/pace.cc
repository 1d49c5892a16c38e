#include "txn_recovery/engine/pace.h"

#include <algorithm>

namespace txn_recovery {

namespace {
// A waiting worker looks at its stop flag this often: a SIGTERM is answered within it.
constexpr std::chrono::milliseconds kStopCheck{100};
}  // namespace

Pace::Pace(Clock* clock, double per_second) : clock_(clock), per_second_(per_second) {}

void Pace::SetRate(double per_second) {
  std::lock_guard lock(mu_);
  per_second_ = per_second;
}

double Pace::rate() const {
  std::lock_guard lock(mu_);
  return per_second_;
}

bool Pace::Take(std::int64_t n, std::uint32_t cost, const std::atomic<bool>* stop) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  using std::chrono::steady_clock;
  std::chrono::steady_clock::time_point start;
  {
    std::lock_guard lock(mu_);
    if (per_second_ <= 0 || n <= 0) return true;
    const auto now = clock_->MonotonicNow();
    // Slots left unused in the past are gone: the bound is a pace, not a budget.
    start = std::max(next_, now);
    const double seconds = static_cast<double>(n) * std::max<std::uint32_t>(cost, 1) / per_second_;
    next_ = start + duration_cast<steady_clock::duration>(std::chrono::duration<double>(seconds));
  }
  // The slot is this caller's from `start`; waiting for it holds no lock.
  for (;;) {
    if (stop != nullptr && stop->load()) return false;
    const auto now = clock_->MonotonicNow();
    if (now >= start) return true;
    const milliseconds left = duration_cast<milliseconds>(start - now) + milliseconds(1);
    const milliseconds slice = std::min(left, kStopCheck);
    clock_->SleepFor(slice);
    waited_ms_ += slice.count();
  }
}

}  // namespace txn_recovery
