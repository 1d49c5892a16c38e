// A child process for tests: a program (the daemon as systemd or an operator runs it, a
// script) spawned with extra environment, or a function run in a forked copy of the test;
// its stdout/stderr captured to files, signalled, waited for with a deadline. The
// destructor kills a child that is still running, so a failing test never leaks a daemon
// or a hung function. Every test that runs a process runs it through this class.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace txn_recovery::testing {

class Subprocess {
 public:
  Subprocess(std::vector<std::string> argv,
             const std::map<std::string, std::string>& extra_env = {},
             const std::vector<std::string>& unset_env = {});
  // Runs `fn` in a forked child, which exits 0 when it returns and kThrew when it throws.
  // `fn` must not rely on gtest assertions (they would happen in the child).
  explicit Subprocess(const std::function<void()>& fn);
  static constexpr int kThrew = 3;
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // The exit code, or nullopt if it did not exit within `timeout` (or died of a signal:
  // then -signal).
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  bool Running();
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  // Forks with stdout/stderr going to the files; true in the child.
  bool Fork();

  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string out_path_, err_path_;
};

// A Unix datagram socket standing in for systemd's NOTIFY_SOCKET.
// Receives on its own thread from the moment it exists, as systemd does: a receiver that
// only read while a test waits would let the datagram queue fill up behind the test's back.
class FakeNotifySocket {
 public:
  FakeNotifySocket();
  ~FakeNotifySocket();
  const std::string& path() const { return path_; }
  // Waits until a message received so far contains `needle`, or `timeout` passes.
  bool WaitFor(const std::string& needle, std::chrono::milliseconds timeout);
  std::vector<std::string> messages() const;

 private:
  int fd_ = -1;
  std::string path_;
  mutable std::mutex mu_;
  std::vector<std::string> messages_;  // guarded by mu_
  std::atomic<bool> done_{false};
  std::thread reader_;
};

// Polls `pred` every 50 ms until it is true or `timeout` passes.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    struct timespec ts {
      0, 50'000'000
    };
    nanosleep(&ts, nullptr);
  }
  return pred();
}

}  // namespace txn_recovery::testing
