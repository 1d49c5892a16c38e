// The daemon's log sinks as journald and log shippers read them: the journal chosen only
// when stderr really is the journal stream, a fallback where the journal socket is absent,
// the location fields of the log call (or none), and ids as themselves.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "daemon/base/ids.h"
#include "daemon/base/journal_stream.h"
#include "daemon/logging/logging.h"

namespace txn_recovery::daemon {
namespace {

using txn_recovery::Document;
using txn_recovery::ObjectId;
using txn_recovery::Value;

std::string DeviceInode(int fd) {
  struct stat st {};
  EXPECT_EQ(fstat(fd, &st), 0);
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

TEST(JournalStream, MatchesOnlyTheFileItNames) {
  std::FILE* journal = std::tmpfile();
  std::FILE* elsewhere = std::tmpfile();
  ASSERT_NE(journal, nullptr);
  ASSERT_NE(elsewhere, nullptr);
  const std::string stream = DeviceInode(fileno(journal));
  EXPECT_TRUE(StreamIsJournal(stream, fileno(journal)));
  // A child that inherited JOURNAL_STREAM but whose stderr was redirected elsewhere.
  EXPECT_FALSE(StreamIsJournal(stream, fileno(elsewhere)));
  for (const char* bad :
       {"", ":", "12", "12:", ":34", "a:b", "1:2:3", "-1:5", "99999999999999999999999:1"})
    EXPECT_FALSE(StreamIsJournal(bad, fileno(journal))) << bad;
  std::fclose(journal);
  std::fclose(elsewhere);
}

std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[512];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

TEST(JournalSink, WithoutAJournalSocketEveryMessageGoesToTheFallbackWithItsPriority) {
  std::FILE* fallback = std::tmpfile();
  ASSERT_NE(fallback, nullptr);
  spdlog::logger logger("t", MakeJournalSink("/nonexistent/journal/socket", fallback));
  logger.set_level(spdlog::level::debug);
  {
    LogFields f({{"watch", "bank"}, IdField("txn_id", Value("malformed-1"))});
    logger.info("quarantined: {}", "field 'value' is missing");
  }
  logger.warn("database unreachable");
  logger.error("sweep failed");
  EXPECT_EQ(Contents(fallback),
            "<6>quarantined: field 'value' is missing watch=bank txn_id=malformed-1\n"
            "<4>database unreachable\n"
            "<3>sweep failed\n");
  std::fclose(fallback);
}

spdlog::details::log_msg Message(spdlog::source_loc where, const char* text) {
  return spdlog::details::log_msg(where, "t", spdlog::level::warn, text);
}

bool Has(const std::vector<std::string>& entry, const std::string& field) {
  for (const auto& e : entry)
    if (e == field) return true;
  return false;
}

TEST(JournalEntry, CarriesTheLocationOfTheLogCallOrNoneNeverTheSinks) {
  std::vector<std::string> none = JournalEntry(Message({}, "no location"));
  EXPECT_TRUE(Has(none, "MESSAGE=no location"));
  EXPECT_TRUE(Has(none, "PRIORITY=4"));
  EXPECT_TRUE(Has(none, "SYSLOG_IDENTIFIER=txn-recoveryd"));
  for (const auto& e : none) EXPECT_NE(e.rfind("CODE_", 0), 0u) << e;

  std::vector<std::string> located =
      JournalEntry(Message({"daemon/scheduler.cc", 321, "SweepAll"}, "with one"));
  EXPECT_TRUE(Has(located, "CODE_FILE=daemon/scheduler.cc"));
  EXPECT_TRUE(Has(located, "CODE_LINE=321"));
  EXPECT_TRUE(Has(located, "CODE_FUNC=SweepAll"));

  LogFields f({{"watch", "bank"}, IdField("txn_id", Value(std::int32_t{42}))});
  std::vector<std::string> fields = JournalEntry(Message({}, "fields"));
  EXPECT_TRUE(Has(fields, "WATCH=bank"));
  EXPECT_TRUE(Has(fields, "TXN_ID=42")) << "journalctl TXN_ID=42 finds it";
}

TEST(Ids, AreJsonValuesOnceAndPlainTextForPeople) {
  auto oid = ObjectId::FromHex("54fd7392742abeef6186a68e");
  ASSERT_TRUE(oid);
  EXPECT_EQ(IdJson(Value("malformed-1")).dump(), "\"malformed-1\"");
  EXPECT_EQ(IdJson(Value(std::int32_t{7})).dump(), "7");
  EXPECT_EQ(IdJson(Value(std::int64_t{1} << 40)).dump(), "1099511627776");
  EXPECT_EQ(IdJson(Value(*oid)).dump(), "{\"$oid\":\"54fd7392742abeef6186a68e\"}");
  EXPECT_EQ(IdJson(Value(Document{{"a", 1}})).dump(), "{\"a\":1}");
  EXPECT_EQ(IdText(Value("malformed-1")), "malformed-1");
  EXPECT_EQ(IdText(Value(std::int32_t{7})), "7");
  EXPECT_EQ(IdText(Value(*oid)), "54fd7392742abeef6186a68e");

  LogField text = IdField("txn_id", Value("a\"b"));
  EXPECT_EQ(text.text, "a\"b");
  EXPECT_TRUE(text.json.empty()) << "a string id is a JSON string, escaped by the sink";
  LogField number = IdField("txn_id", Value(std::int32_t{7}));
  EXPECT_EQ(number.text, "7");
  EXPECT_EQ(number.json, "7");
}

}  // namespace
}  // namespace txn_recovery::daemon
