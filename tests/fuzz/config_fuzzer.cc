// Fuzz target: the configuration loader on any text. It must return a Status for
// anything, and every error must name the file it read (then the line and the key), as
// the operator relies on. A configuration it accepts must describe itself.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "daemon/configuration/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path =
      "/tmp/txn_recoveryd_config_fuzz_" + std::to_string(getpid()) + ".toml";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  txn_recovery::daemon::Config config;
  txn_recovery::Status s = txn_recovery::daemon::LoadConfig(
      path, [](const std::string&) { return std::optional<std::string>(); }, &config);
  if (s.ok()) {
    (void)txn_recovery::daemon::DescribeConfig(config);
  } else if (s.message().rfind(path, 0) != 0) {
    std::fprintf(stderr, "error does not name the file: %s\n", s.message().c_str());
    std::abort();
  }
  return 0;
}
