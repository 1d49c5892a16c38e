// Each wait of `run` is interval * (1 +/- daemon.jitter), so that hosts do not sweep, nor
// scan for orphans, in lockstep.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace txn_recovery::daemon {

class Jitter {
 public:
  Jitter() : rng_(std::random_device{}()) {}

  // `interval` spread by `jitter` (clamped to [0, 1]).
  std::chrono::milliseconds operator()(std::chrono::milliseconds interval, double jitter) {
    double j = std::clamp(jitter, 0.0, 1.0);
    std::uniform_real_distribution<double> dist(1.0 - j, 1.0 + j);
    return std::chrono::milliseconds(
        static_cast<std::int64_t>(static_cast<double>(interval.count()) * dist(rng_)));
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace txn_recovery::daemon
