// Turning a hang into a test failure: the code under test runs in a child process, which is
// killed when it has not finished by the deadline. A thread cannot do this: a hung
// std::async task blocks its future's destructor, and a hung thread can be neither killed
// nor joined, so the test would hang until CTest's timeout instead of failing.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

namespace txn_recovery::testing {

// Runs `fn` in a forked child and waits for it at most `limit`. Fails, saying so, when the
// child has not finished by then (it is killed) or ended other than by returning. `fn` must
// not rely on gtest assertions (they happen in the child): check its effects afterwards.
inline ::testing::AssertionResult FinishesWithin(std::chrono::milliseconds limit,
                                                 const std::function<void()>& fn) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return ::testing::AssertionFailure() << "fork failed";
  if (pid == 0) {
    try {
      fn();
    } catch (...) {
      _exit(3);
    }
    _exit(0);
  }
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return ::testing::AssertionFailure()
             << "did not finish within " << limit.count() << " ms (killed)";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ::testing::AssertionSuccess();
  if (WIFSIGNALED(status))
    return ::testing::AssertionFailure() << "died of signal " << WTERMSIG(status);
  return ::testing::AssertionFailure()
         << "exited " << WEXITSTATUS(status) << (WEXITSTATUS(status) == 3 ? " (threw)" : "");
}

}  // namespace txn_recovery::testing
