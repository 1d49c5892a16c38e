// Logging for the daemon: spdlog with one of three sinks, chosen by configuration:
//   text    — human-readable lines on stderr (an operator's terminal);
//   json    — one JSON object per line on stdout (containers, log shippers);
//   journal — native journald entries with structured fields (systemd), falling back to
//             "<N>"-prefixed lines on stderr where the journal socket is unavailable.
// Structured fields (the watch, the transaction _id) are attached with a LogFields scope
// on the logging thread and rendered by each sink in its own way. libmongoc's messages go
// through the same logger. Nothing logged may contain a password: URIs go through
// RedactUri before they reach a log call.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/common.h>

#include "config.h"
#include "txn_recovery/mongo_store.h"

namespace txn_recoveryd {

// Installs the default logger. Call it before other threads log: replacing the logger
// while another thread logs is not safe (change the level of the running logger instead).
// Warnings and errors identical to one logged less than `repeat_window` ago are dropped
// and counted (0 = never drop).
void SetupLogging(LogFormat format, std::string_view level,
                  std::chrono::milliseconds repeat_window = std::chrono::seconds(60));

// What stands between the logger and every format's sink (SetupLogging puts it there):
// remembered URI credentials replaced by "***" (txn_recovery::RedactSecrets), then the
// repeat window below. Exposed for tests, which put a capturing sink behind it.
spdlog::sink_ptr FilteredSink(spdlog::sink_ptr format_sink,
                              std::chrono::milliseconds repeat_window);

// How many log messages the repeat window has dropped since the process started.
std::uint64_t SuppressedLogMessages();

// Fields attached to every message logged by this thread while the object lives.
// Nestable. Field names are lower_snake_case; the journal sink upper-cases them.
class LogFields {
 public:
  LogFields(std::initializer_list<std::pair<std::string_view, std::string>> fields);
  ~LogFields();
  LogFields(const LogFields&) = delete;
  LogFields& operator=(const LogFields&) = delete;

  using List = std::vector<std::pair<std::string, std::string>>;
  static const List& Current();  // this thread's fields, outermost first

 private:
  std::size_t added_;
};

// The sink to hand to txn_recovery::MongoDriver: forwards driver messages to spdlog.
txn_recovery::DriverLogSink DriverLogToSpdlog();

}  // namespace txn_recoveryd
