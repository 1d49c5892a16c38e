// Helpers for tests that run the txn-recoveryd binary (TXN_RECOVERYD_BINARY) as a child
// process: a configuration file for a test, the daemon started (or a command run to its end)
// with only that file in effect, its health endpoint found from its log and asked over
// plain HTTP. HealthPort and HttpGet are compiled once, in daemon_process.cc: inline here,
// their std::regex and cpp-httplib (with OpenSSL's headers) cost each of the 13 test files
// that include this header about a second of CPU (scripts/compile-cost.py).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/subprocess.h"

namespace txn_recovery::testing {

// A file path unique to the running test.
inline std::string TestFile(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "_" + info->name();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';  // parameterized: "Table/X/3"
  return ::testing::TempDir() + "txnrec_" + std::to_string(getpid()) + "_" + name + suffix;
}

inline std::string WriteTestFile(const std::string& suffix, const std::string& text) {
  std::string path = TestFile(suffix);
  std::ofstream(path) << text;
  return path;
}

// The environment variables that would otherwise override the file.
inline std::vector<std::string> DaemonEnvToUnset() {
  return {"TXN_RECOVERYD_MONGODB_URI",
          "TXN_RECOVERYD_HTTP_LISTEN",
          "NOTIFY_SOCKET",
          "WATCHDOG_USEC",
          "WATCHDOG_PID",
          "JOURNAL_STREAM",
          "CREDENTIALS_DIRECTORY",
          "TXN_RECOVERYD_LOG_FORMAT"};
}

// `txn-recoveryd ARGS...` with only `env` (and the file) in effect.
inline std::unique_ptr<Subprocess> StartTxnRecoveryd(
    std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), TXN_RECOVERYD_BINARY);
  return std::make_unique<Subprocess>(args, env, DaemonEnvToUnset());
}

// How a command ended and what it printed.
struct ProcessResult {
  int exit_code = -1;  // -signal when a signal ended it, -1 when it had not ended in time
  std::string out, err;
};

// Runs `txn-recoveryd ARGS...` as StartTxnRecoveryd starts it and waits for its end; after
// `timeout` it is killed.
inline ProcessResult RunTxnRecoveryd(std::vector<std::string> args,
                                     const std::map<std::string, std::string>& env = {},
                                     std::chrono::milliseconds timeout = std::chrono::minutes(2)) {
  std::unique_ptr<Subprocess> p = StartTxnRecoveryd(std::move(args), env);
  ProcessResult r;
  r.exit_code = p->Wait(timeout).value_or(-1);
  r.out = p->Stdout();
  r.err = p->Stderr();
  return r;
}

// The port of the daemon's health listener, from its "health and metrics on" log line; 0 if
// it did not say within `timeout`.
int HealthPort(Subprocess& daemon, std::chrono::milliseconds timeout = std::chrono::seconds(10));

// A TCP port on 127.0.0.1 that was free a moment ago (for a server a test starts itself).
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  (void)bind(fd, reinterpret_cast<sockaddr*>(&a), len);
  (void)getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

struct HttpAnswer {
  int status = 0;  // 0: no answer
  std::string body;
};

// GET http://127.0.0.1:<port><path> (cpp-httplib, in daemon_process.cc, so that the files
// including this header do not parse it).
HttpAnswer HttpGet(int port, const std::string& path);

}  // namespace txn_recovery::testing
