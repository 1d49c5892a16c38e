// Turning a hang into a test failure: the code under test runs in a child process, which is
// killed when it has not finished by the deadline. A thread cannot do this: a hung
// std::async task blocks its future's destructor, and a hung thread can be neither killed
// nor joined, so the test would hang until CTest's timeout instead of failing.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>

#include "support/subprocess.h"

namespace txn_recovery::testing {

// Runs `fn` in a forked child and waits for it at most `limit`. Fails, saying so, when the
// child has not finished by then (it is killed) or ended other than by returning. `fn` must
// not rely on gtest assertions (they happen in the child): check its effects afterwards.
inline ::testing::AssertionResult FinishesWithin(std::chrono::milliseconds limit,
                                                 const std::function<void()>& fn) {
  Subprocess child(fn);
  const std::optional<int> rc = child.Wait(limit);
  if (!rc)
    return ::testing::AssertionFailure()
           << "did not finish within " << limit.count() << " ms (killed)";
  if (*rc == 0) return ::testing::AssertionSuccess();
  if (*rc < 0) return ::testing::AssertionFailure() << "died of signal " << -*rc;
  return ::testing::AssertionFailure()
         << "exited " << *rc << (*rc == Subprocess::kThrew ? " (threw)" : "") << "\n"
         << child.Stderr();
}

}  // namespace txn_recovery::testing
