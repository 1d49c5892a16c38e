#include "daemon/logging/logging.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
// Without this, sd-journal.h makes sd_journal_sendv a macro that adds CODE_FILE, CODE_LINE
// and CODE_FUNC of the call: this sink's own line for every message. The entries carry
// the location of the log call instead, when there is one.
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "daemon/base/ids.h"

namespace txn_recovery::daemon {
namespace {

thread_local LogFields::List t_fields;

int SyslogPriority(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::critical:
      return 2;
    case spdlog::level::err:
      return 3;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::info:
      return 6;
    default:
      return 7;
  }
}

std::string Timestamp(spdlog::log_clock::time_point tp) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(tp.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

std::string FieldsAsText() {
  std::string out;
  for (const auto& f : t_fields) {
    out += ' ';
    out += f.key;
    out += '=';
    out += f.text;
  }
  return out;
}

void WriteLine(FILE* f, const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), f);
  std::fflush(f);
}

class TextSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string line = Timestamp(msg.time);
    line += ' ';
    line.append(spdlog::level::to_string_view(msg.level).data(),
                spdlog::level::to_string_view(msg.level).size());
    line += ' ';
    line.append(msg.payload.data(), msg.payload.size());
    line += FieldsAsText();
    line += '\n';
    WriteLine(stderr, line);
  }
  void flush_() override { std::fflush(stderr); }
};

class JsonSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    nlohmann::json j;
    j["ts"] = Timestamp(msg.time);
    j["level"] = std::string(spdlog::level::to_string_view(msg.level).data());
    j["msg"] = std::string(msg.payload.data(), msg.payload.size());
    for (const auto& f : t_fields) {
      j[f.key] = f.text;
      if (!f.json.empty()) {
        nlohmann::json v = nlohmann::json::parse(f.json, nullptr, /*allow_exceptions=*/false);
        if (!v.is_discarded()) j[f.key] = std::move(v);
      }
    }
    // Replace invalid UTF-8 rather than throwing from a log call.
    WriteLine(stdout, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  void flush_() override { std::fflush(stdout); }
};

bool IsSocket(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// Native journal entries. sd_journal_sendv() returns 0 without sending anything when the
// journal socket does not exist (a container, a chroot), so the socket is looked for
// first: without it every message goes to the fallback stream instead, as
// "<PRIORITY>message fields", the prefix journald and syslog understand on a stream.
class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  JournalSink(const std::string& socket_path, FILE* fallback)
      : journal_(IsSocket(socket_path)), fallback_(fallback) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (journal_) {
      std::vector<std::string> entries = JournalEntry(msg);
      std::vector<iovec> iov;
      iov.reserve(entries.size());
      for (auto& e : entries) iov.push_back({e.data(), e.size()});
      if (sd_journal_sendv(iov.data(), static_cast<int>(iov.size())) >= 0) return;
    }
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, falsely) on "<" + string.
    std::string line = "<";
    line += std::to_string(SyslogPriority(msg.level));
    line += '>';
    line.append(msg.payload.data(), msg.payload.size());
    line += FieldsAsText();
    line += '\n';
    WriteLine(fallback_, line);
  }
  void flush_() override { std::fflush(fallback_); }

 private:
  const bool journal_;
  FILE* fallback_;
};

std::atomic<std::uint64_t> g_suppressed{0};

// Hides remembered credentials (RedactSecrets) in every message, then drops a warning or
// error identical to one logged less than `window` ago (same level,
// text and fields), so that an outage retried every 100 ms is one line a minute, not
// thousands. The next copy after the window says how many were dropped. Messages naming
// different transactions differ in their fields and are never merged.
class RateLimitedSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  RateLimitedSink(spdlog::sink_ptr inner, std::chrono::milliseconds window)
      : inner_(std::move(inner)), window_(window) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& original) override {
    // Every message of every format passes here: the last chance to hide a credential of
    // the configured URI that something quoted (uri_redaction.h).
    const std::string redacted = txn_recovery::RedactSecrets(
        std::string_view(original.payload.data(), original.payload.size()));
    spdlog::details::log_msg msg(original);
    msg.payload = redacted;
    if (msg.level < spdlog::level::warn || window_.count() <= 0) {
      inner_->log(msg);
      return;
    }
    std::string key = std::to_string(static_cast<int>(msg.level)) + '\x1f' +
                      std::string(msg.payload.data(), msg.payload.size()) + FieldsAsText();
    auto now = std::chrono::steady_clock::now();
    auto it = seen_.find(key);
    if (it != seen_.end() && now - it->second.last < window_) {
      ++it->second.suppressed;
      ++g_suppressed;
      return;
    }
    std::uint64_t dropped = it == seen_.end() ? 0 : it->second.suppressed;
    if (seen_.size() >= kMaxKeys) Prune(now);
    seen_[key] = Entry{now, 0};
    if (dropped == 0) {
      inner_->log(msg);
      return;
    }
    std::string text(msg.payload.data(), msg.payload.size());
    text += " (repeated " + std::to_string(dropped) + " more time" + (dropped == 1 ? "" : "s") +
            " since it was last logged)";
    spdlog::details::log_msg copy(msg);
    copy.payload = text;
    inner_->log(copy);
  }
  void flush_() override { inner_->flush(); }

 private:
  struct Entry {
    std::chrono::steady_clock::time_point last;
    std::uint64_t suppressed = 0;
  };
  static constexpr std::size_t kMaxKeys = 4096;

  void Prune(std::chrono::steady_clock::time_point now) {
    for (auto i = seen_.begin(); i != seen_.end();)
      i = now - i->second.last >= window_ ? seen_.erase(i) : std::next(i);
    if (seen_.size() >= kMaxKeys) seen_.clear();  // a flood of distinct messages
  }

  spdlog::sink_ptr inner_;
  std::chrono::milliseconds window_;
  std::unordered_map<std::string, Entry> seen_;
};

spdlog::level::level_enum ParseLevel(std::string_view level) {
  if (level == "trace") return spdlog::level::trace;
  if (level == "debug") return spdlog::level::debug;
  if (level == "warn") return spdlog::level::warn;
  if (level == "error") return spdlog::level::err;
  return spdlog::level::info;
}

}  // namespace

LogFields::LogFields(std::initializer_list<LogField> fields) : added_(fields.size()) {
  for (const auto& f : fields) t_fields.push_back(f);
}

LogFields::~LogFields() {
  t_fields.erase(t_fields.end() - static_cast<std::ptrdiff_t>(added_), t_fields.end());
}

const LogFields::List& LogFields::Current() {
  return t_fields;
}

void SetupLogging(LogFormat format, std::string_view level,
                  std::chrono::milliseconds repeat_window) {
  spdlog::sink_ptr sink;
  switch (format) {
    case LogFormat::kText:
      sink = std::make_shared<TextSink>();
      break;
    case LogFormat::kJson:
      sink = std::make_shared<JsonSink>();
      break;
    case LogFormat::kJournal:
      sink = MakeJournalSink();
      break;
  }
  sink = FilteredSink(sink, repeat_window);
  auto logger = std::make_shared<spdlog::logger>("txn-recoveryd", sink);
  logger->set_level(ParseLevel(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

LogField IdField(std::string_view key, const txn_recovery::Value& id) {
  if (id.is_string()) return LogField(key, *id.as_string());
  return LogField(key, IdText(id), IdJson(id).dump());
}

std::vector<std::string> JournalEntry(const spdlog::details::log_msg& msg) {
  std::vector<std::string> entries;
  entries.push_back("MESSAGE=" + std::string(msg.payload.data(), msg.payload.size()));
  entries.push_back("PRIORITY=" + std::to_string(SyslogPriority(msg.level)));
  entries.push_back("SYSLOG_IDENTIFIER=txn-recoveryd");
  if (!msg.source.empty()) {
    entries.push_back(std::string("CODE_FILE=") + msg.source.filename);
    entries.push_back("CODE_LINE=" + std::to_string(msg.source.line));
    if (msg.source.funcname != nullptr && *msg.source.funcname != '\0')
      entries.push_back(std::string("CODE_FUNC=") + msg.source.funcname);
  }
  for (const auto& f : t_fields) {
    std::string key;
    for (char c : f.key) key += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    entries.push_back(key + "=" + f.text);
  }
  return entries;
}

spdlog::sink_ptr MakeJournalSink(const std::string& socket_path, FILE* fallback) {
  return std::make_shared<JournalSink>(socket_path, fallback);
}

spdlog::sink_ptr FilteredSink(spdlog::sink_ptr format_sink,
                              std::chrono::milliseconds repeat_window) {
  return std::make_shared<RateLimitedSink>(std::move(format_sink), repeat_window);
}

std::uint64_t SuppressedLogMessages() {
  return g_suppressed.load();
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
    LogFields f({{"component", "mongoc"}, {"domain", std::string(domain)}});
    spdlog::log(l, "{}", message);
  };
}

}  // namespace txn_recovery::daemon
