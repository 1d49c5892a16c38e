#include "watch_config.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "daemon/configuration/config.h"

namespace txn_recovery::testing {

std::vector<WatchSpec> WatchesFromToml(const std::string& watches_toml,
                                       const std::string& database) {
  static std::atomic<int> n{0};
  std::string path =
      "/tmp/txn_recovery_watch_" + std::to_string(getpid()) + "_" + std::to_string(n++) + ".toml";
  std::ofstream(path) << "[mongodb]\nuri = \"mongodb://unused.invalid\"\n" << watches_toml;
  txn_recovery::daemon::Config config;
  Status s = txn_recovery::daemon::LoadConfig(
      path, [](const std::string&) { return std::optional<std::string>(); }, &config);
  std::remove(path.c_str());
  if (!s.ok()) throw std::runtime_error("configuration refused: " + s.message());
  for (auto& w : config.watches) w.ns.database = database;
  return config.watches;
}

WatchSpec WatchFromToml(const std::string& watch_toml, const std::string& database) {
  auto watches = WatchesFromToml(watch_toml, database);
  if (watches.size() != 1) throw std::runtime_error("expected exactly one [[watch]]");
  return watches.front();
}

}  // namespace txn_recovery::testing
