// Fuzz target: the configuration loader's environment overlay (TXN_RECOVERYD_* variables
// over a valid file). Whatever the variables hold, LoadConfig returns a Status and never
// throws or crashes (a daemon reloading on SIGHUP must not die of a stray byte in its
// environment), and every error names the variable it comes from.
//
// Input: a sequence of records, each one byte choosing a variable (modulo the number of
// variables the configuration reads), one byte of length, then that many bytes of value
// (cut at the first NUL, as the environment itself would).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "daemon/configuration/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = [] {
    std::string p = "/tmp/txn_recoveryd_env_fuzz_" + std::to_string(getpid()) + ".toml";
    std::ofstream(p) << "[mongodb]\nuri = \"mongodb://127.0.0.1:27017\"\n"
                        "[[watch]]\nname = \"bank\"\ndatabase = \"bank\"\n";
    return p;
  }();
  static const std::vector<std::string> names = txn_recovery::daemon::EnvironmentVariables();

  std::map<std::string, std::string> env;
  for (std::size_t i = 0; i + 2 <= size;) {
    const std::string& name = names[data[i] % names.size()];
    std::size_t len = std::min<std::size_t>(data[i + 1], size - i - 2);
    std::string value(reinterpret_cast<const char*>(data + i + 2), len);
    env[name] = value.substr(0, value.find('\0'));
    i += 2 + len;
  }
  txn_recovery::daemon::Config config;
  txn_recovery::Status s;
  try {
    s = txn_recovery::daemon::LoadConfig(
        path,
        [&env](const std::string& name) -> std::optional<std::string> {
          auto it = env.find(name);
          if (it == env.end()) return std::nullopt;
          return it->second;
        },
        &config);
  } catch (...) {
    std::fprintf(stderr, "LoadConfig threw\n");
    std::abort();
  }
  if (s.ok()) {
    (void)txn_recovery::daemon::DescribeConfig(config);
    return 0;
  }
  // An error caused by a variable names it (or the file, for a value the file's own key
  // check reports with the variable as its source).
  bool named =
      s.message().find("TXN_RECOVERYD_") != std::string::npos || s.message().rfind(path, 0) == 0;
  if (!named) {
    std::fprintf(stderr, "error names neither the variable nor the file: %s\n",
                 s.message().c_str());
    std::abort();
  }
  return 0;
}
