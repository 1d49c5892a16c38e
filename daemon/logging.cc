#include "logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace txn_recoveryd {

void SetupLogging(int verbosity) {
  auto logger = spdlog::stderr_color_mt("txn-recoveryd");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  logger->set_level(verbosity >= 2   ? spdlog::level::debug
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

txn_recovery::DriverLogSink DriverLogToSpdlog() {
  return [](txn_recovery::DriverLogLevel level, std::string_view domain, std::string_view message) {
    using L = txn_recovery::DriverLogLevel;
    spdlog::level::level_enum l = spdlog::level::debug;
    switch (level) {
      case L::kError:
      case L::kCritical:
        l = spdlog::level::err;
        break;
      case L::kWarning:
        l = spdlog::level::warn;
        break;
      case L::kMessage:
      case L::kInfo:
        l = spdlog::level::debug;
        break;  // the driver is chatty at info
      case L::kDebug:
      case L::kTrace:
        l = spdlog::level::trace;
        break;
    }
    spdlog::log(l, "mongoc[{}]: {}", domain, message);
  };
}

}  // namespace txn_recoveryd
