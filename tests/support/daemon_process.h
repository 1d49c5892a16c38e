// Helpers for tests that run the txn-recoveryd binary (TXN_RECOVERYD_BINARY) as a child
// process: a configuration file for a test, the daemon started with only that file in
// effect, its health endpoint found from its log and asked over plain HTTP.
#pragma once

#include <httplib.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
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
inline std::unique_ptr<Subprocess> StartTxnRecoveryd(std::vector<std::string> args,
                                                     std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), TXN_RECOVERYD_BINARY);
  return std::make_unique<Subprocess>(args, env, DaemonEnvToUnset());
}

// The port of the daemon's health listener, from its "health and metrics on" log line; 0 if
// it did not say within `timeout`.
inline int HealthPort(Subprocess& daemon,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  int port = 0;
  Eventually(
      [&] {
        std::smatch m;
        std::string err = daemon.Stderr() + daemon.Stdout();
        if (!std::regex_search(err, m, std::regex(R"(health and metrics on http://\S*:(\d+))")))
          return false;
        port = std::stoi(m[1]);
        return true;
      },
      timeout);
  return port;
}

struct HttpAnswer {
  int status = 0;  // 0: no answer
  std::string body;
};

inline HttpAnswer HttpGet(int port, const std::string& path, const httplib::Headers& headers = {}) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto r = c.Get(path.c_str(), headers);
  if (!r) return {};
  return {r->status, r->body};
}

}  // namespace txn_recovery::testing
