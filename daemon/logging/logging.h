// Logging for the daemon: spdlog with one of three sinks, chosen by configuration:
//   text    — human-readable lines on stderr (an operator's terminal);
//   json    — one JSON object per line on stdout (containers, log shippers);
//   journal — native journald entries with structured fields (systemd), falling back to
//             "<N>"-prefixed lines on stderr where the journal socket is absent (a
//             container, a chroot). The location fields CODE_FILE/CODE_LINE/CODE_FUNC are
//             those of the log call when it gives one (SPDLOG_* macros), otherwise absent:
//             never the sink's own.
// Structured fields (the watch, the transaction _id) are attached with a LogFields scope
// on the logging thread and rendered by each sink in its own way. libmongoc's messages go
// through the same logger. Nothing logged may contain a password: URIs go through
// RedactUri before they reach a log call.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/common.h>

#include "daemon/configuration/config.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::daemon {

// Where journald listens for native entries.
inline constexpr const char* kJournalSocket = "/run/systemd/journal/socket";

// Installs the default logger. Call it before other threads log: replacing the logger
// while another thread logs is not safe (change the level of the running logger instead).
// Warnings and errors identical to one logged less than `repeat_window` ago are dropped
// and counted (0 = never drop).
void SetupLogging(LogFormat format, std::string_view level,
                  std::chrono::milliseconds repeat_window = std::chrono::seconds(60));

// The journal sink alone, for tests: entries go to the journal when `socket_path` exists,
// otherwise to `fallback` as "<PRIORITY>message fields" lines.
spdlog::sink_ptr MakeJournalSink(const std::string& socket_path = kJournalSocket,
                                 FILE* fallback = stderr);
// The fields of the native journal entry for one message (MESSAGE=, PRIORITY=, ...), for
// tests and the sink.
std::vector<std::string> JournalEntry(const spdlog::details::log_msg& msg);
// What stands between the logger and every format's sink (SetupLogging puts it there):
// remembered URI credentials replaced by "***" (txn_recovery::RedactSecrets), then the
// repeat window below. Exposed for tests, which put a capturing sink behind it.
spdlog::sink_ptr FilteredSink(spdlog::sink_ptr format_sink,
                              std::chrono::milliseconds repeat_window);

// How many log messages the repeat window has dropped since the process started.
std::uint64_t SuppressedLogMessages();

// One structured field: its value as text, and (for a value that is not a string, e.g. a
// numeric or ObjectId _id) as JSON text, which the JSON sink embeds as is.
struct LogField {
  LogField(std::string_view k, std::string v) : key(k), text(std::move(v)) {}
  LogField(std::string_view k, std::string v, std::string json_value)
      : key(k), text(std::move(v)), json(std::move(json_value)) {}
  std::string key;
  std::string text;  // text and journal sinks: as an operator searches for it
  std::string json;  // JSON sink: the value as JSON; empty = `text` as a JSON string
};

// A transaction's or document's _id as a field (ids.h): text for the text and journal
// sinks, the id itself as JSON for the JSON sink.
LogField IdField(std::string_view key, const txn_recovery::Value& id);

// Fields attached to every message logged by this thread while the object lives.
// Nestable. Field names are lower_snake_case; the journal sink upper-cases them.
class LogFields {
 public:
  LogFields(std::initializer_list<LogField> fields);
  ~LogFields();
  LogFields(const LogFields&) = delete;
  LogFields& operator=(const LogFields&) = delete;

  using List = std::vector<LogField>;
  static const List& Current();  // this thread's fields, outermost first

 private:
  std::size_t added_;
};

// The sink to hand to txn_recovery::MongoDriver: forwards driver messages to spdlog.
txn_recovery::DriverLogSink DriverLogToSpdlog();

}  // namespace txn_recovery::daemon
