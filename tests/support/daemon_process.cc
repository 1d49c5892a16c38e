// The helpers of daemon_process.h that need <regex> and cpp-httplib.
#include "support/daemon_process.h"

#include <httplib.h>

#include <regex>

namespace txn_recovery::testing {

int HealthPort(Subprocess& daemon, std::chrono::milliseconds timeout) {
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

HttpAnswer HttpGet(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto r = c.Get(path);
  if (!r) return {};
  return {r->status, r->body};
}

}  // namespace txn_recovery::testing
