// Pace: a bound on how many transactions per second a daemon drives, so that a backlog
// drained after an outage leaves the server to the application's own writes (the cleanup
// rate limits of other background workers on a shared database: MongoDB's flow control,
// TiKV's GC rate limit). The sweeper takes from it before it reads each chunk of
// candidates (SweepOptions::pace), so that a transaction waits before it is read and not
// between its read and its claim; what is waited is counted for the metrics, so that an
// operator sees why a backlog drains slowly.
//
// A fleet shares one bound: each member's bulk of n transactions costs n times the number of
// members its share is one of (Share::count), so that k members each drive 1/k of it
// without talking to each other; a member that sees the fleet change sees it at its next
// share. A daemon sweeping alone (count 1) drives the whole bound.
//
// Thread-safe: the workers of every sweep of a daemon take from one Pace.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "txn_recovery/base/clock.h"

namespace txn_recovery {

class Pace {
 public:
  // `clock` must outlive the pace. `per_second` <= 0: unbounded (a maintenance window).
  explicit Pace(Clock* clock, double per_second = 0);

  // Takes effect for the next Take (a reloaded configuration).
  void SetRate(double per_second);
  double rate() const;

  // Blocks until `n` more transactions, each costing `cost` units of the bound, may be
  // driven: the slots are handed out one after the other at the bound's rate, so that the
  // workers together keep to it. No allowance builds up while nothing is driven: a sweep
  // after an idle hour starts at the bound, not above it. Returns false, early, once `stop`
  // is set (may be null): the caller stops instead of driving. Unbounded: returns at once.
  bool Take(std::int64_t n, std::uint32_t cost, const std::atomic<bool>* stop);

  // Time spent waiting in Take, by every caller together, since construction.
  std::chrono::milliseconds waited() const { return std::chrono::milliseconds(waited_ms_.load()); }

 private:
  Clock* clock_;
  mutable std::mutex mu_;
  double per_second_ = 0;
  std::chrono::steady_clock::time_point next_{};  // when the next slot is free
  std::atomic<std::int64_t> waited_ms_{0};
};

}  // namespace txn_recovery
