// Bad configuration files (issue 5), one table: every error names the file, the line and
// the key ("FILE:LINE:COL: KEY: problem"), and every command that reads the file exits 78
// (EX_CONFIG) printing that message. config_test.cc checks each message's wording; this
// checks the shape over every section and key family.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <string>

#include "daemon/configuration/config.h"
#include "support/subprocess.h"

namespace txn_recovery::daemon {
namespace {

using txn_recovery::testing::Subprocess;

struct Case {
  const char* name;
  const char* text;
  int line;         // where the error is; 0: the key is absent, "FILE: KEY: problem"
  const char* key;  // the key it names
};

#define WATCH "[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"  // 3 lines

class BadConfigTable : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "txn_recoveryd_bad_" + GetParam().name + ".toml";
    std::ofstream(path_) << GetParam().text;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  // Whether `msg` reads "FILE:LINE:COL: KEY: problem" (or "FILE: KEY: problem" for a key
  // absent from the file).
  bool HasShape(const std::string& msg) const {
    std::string prefix = path_ + ":";
    if (GetParam().line) prefix += std::to_string(GetParam().line) + ":";
    if (msg.rfind(prefix, 0) != 0) return false;
    std::size_t i = prefix.size();
    if (GetParam().line) {
      std::size_t digits = i;
      while (i < msg.size() && std::isdigit(static_cast<unsigned char>(msg[i]))) ++i;
      if (i == digits || msg.compare(i, 1, ":") != 0) return false;
      ++i;
    }
    std::string rest = std::string(" ").append(GetParam().key) + ": ";
    return msg.compare(i, rest.size(), rest) == 0 && msg.size() > i + rest.size();
  }
  std::string path_;
};

TEST_P(BadConfigTable, TheLoaderNamesFileLineAndKey) {
  Config c;
  txn_recovery::Status s = LoadConfig(
      path_, [](const std::string&) { return std::optional<std::string>(); }, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(HasShape(s.message())) << s.message();
}

TEST_P(BadConfigTable, EveryCommandExits78WithThatMessage) {
  for (const char* command : {"check-config", "sweep", "inspect", "run"}) {
    SCOPED_TRACE(command);
    Subprocess p({TXN_RECOVERYD_BINARY, command, "--config", path_}, {},
                 {"TXN_RECOVERYD_MONGODB_URI", "TXN_RECOVERYD_LOG_FORMAT", "NOTIFY_SOCKET"});
    auto rc = p.Wait(std::chrono::seconds(20));
    ASSERT_TRUE(rc.has_value()) << "still running";
    EXPECT_EQ(*rc, 78) << p.Stderr();
    std::string err = p.Stderr();
    std::string where =
        GetParam().line ? std::string(":").append(std::to_string(GetParam().line)) + ":" : ": ";
    EXPECT_NE(err.find(path_ + where), std::string::npos) << err;
    EXPECT_NE(err.find(GetParam().key), std::string::npos) << err;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EverySection, BadConfigTable,
    ::testing::Values(
        Case{"syntax", "[mongodb\nuri = 1\n", 1, "(syntax)"},
        Case{"unknown_section", "[mongodb]\nuri = \"mongodb://h\"\n[mongo]\nx = 1\n" WATCH, 3,
             "mongo"},
        Case{"uri_a_number", "[mongodb]\nuri = 27017\n" WATCH, 2, "mongodb.uri"},
        // "0:PORT" would silently mean every address; no port at all is no address.
        Case{"listen_zero_host",
             "[mongodb]\nuri = \"mongodb://h\"\n[http]\nlisten = \"0:9464\"\n" WATCH, 4,
             "http.listen"},
        Case{"listen_no_port",
             "[mongodb]\nuri = \"mongodb://h\"\n[http]\nlisten = \"localhost\"\n" WATCH, 4,
             "http.listen"},
        Case{"selection_timeout",
             "[mongodb]\nuri = \"mongodb://h\"\nserver_selection_timeout = 5\n" WATCH, 3,
             "mongodb.server_selection_timeout"},
        Case{"workers_a_string",
             "[mongodb]\nuri = \"mongodb://h\"\n[sweep]\nworkers = \"four\"\n" WATCH, 4,
             "sweep.workers"},
        Case{"workers_zero", "[mongodb]\nuri = \"mongodb://h\"\n[sweep]\nworkers = 0\n" WATCH, 4,
             "sweep.workers"},
        Case{"batch_negative", "[mongodb]\nuri = \"mongodb://h\"\n[sweep]\nbatch_size = -5\n" WATCH,
             4, "sweep.batch_size"},
        Case{"max_failures_zero",
             "[mongodb]\nuri = \"mongodb://h\"\n[sweep]\nmax_failures = 0\n" WATCH, 4,
             "sweep.max_failures"},
        Case{"interval_no_unit",
             "[mongodb]\nuri = \"mongodb://h\"\n[daemon]\ninterval = \"10\"\n" WATCH, 4,
             "daemon.interval"},
        Case{"jitter_above_one", "[mongodb]\nuri = \"mongodb://h\"\n[daemon]\njitter = 1.5\n" WATCH,
             4, "daemon.jitter"},
        Case{"backoff_initial_above_max",
             "[mongodb]\nuri = \"mongodb://h\"\n[daemon]\nbackoff_initial = \"1m\"\n"
             "backoff_max = \"1s\"\n" WATCH,
             5, "daemon.backoff_max"},
        Case{"fleet_expiry_not_above_heartbeat",
             "[mongodb]\nuri = \"mongodb://h\"\n[fleet]\nheartbeat = \"10s\"\n"
             "expiry = \"10s\"\n" WATCH,
             5, "fleet.expiry"},
        Case{"fleet_overdue_before_expiry",
             "[mongodb]\nuri = \"mongodb://h\"\n[fleet]\nexpiry = \"1m\"\n"
             "overdue_after = \"30s\"\n" WATCH,
             5, "fleet.overdue_after"},
        Case{"fleet_members_in_the_transactions_collection",
             "[mongodb]\nuri = \"mongodb://h\"\n[fleet]\nmembers_collection = "
             "\"transactions\"\n" WATCH,
             4, "fleet.members_collection"},
        Case{"log_format", "[mongodb]\nuri = \"mongodb://h\"\n[log]\nformat = \"xml\"\n" WATCH, 4,
             "log.format"},
        Case{"log_level", "[mongodb]\nuri = \"mongodb://h\"\n[log]\nlevel = \"loud\"\n" WATCH, 4,
             "log.level"},
        Case{"watch_a_table", "[mongodb]\nuri = \"mongodb://h\"\n[watch]\nname = \"w\"\n", 3,
             "watch"},
        Case{"watch_without_name",
             "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\ndatabase = \"d\"\n", 3, "watch[0].name"},
        Case{"watch_without_database",
             "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\n", 3, "watch[0].database"},
        Case{"empty_collection", "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "collection = \"\"\n",
             6, "watch[0].collection"},
        Case{"profile_a_number", "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "profile = 1\n", 6,
             "watch[0].profile"},
        Case{"state_field_dollar",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "state_field = \"$s\"\n", 6,
             "watch[0].state_field"},
        Case{"time_field_is_state_field",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "time_field = \"state\"\n", 6,
             "watch[0].time_field"},
        Case{"marker_is_balance",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "marker_field = \"balance\"\n", 6,
             "watch[0].marker_field"},
        Case{"applications_a_string",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "applications = \"A1\"\n", 6,
             "watch[0].applications"},
        Case{"include_unowned_a_string",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "include_unowned = \"yes\"\n", 6,
             "watch[0].include_unowned"},
        Case{"late_write_window_garbage",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "late_write_window = \"forever\"\n", 6,
             "watch[0].late_write_window"},
        Case{"lease_field_empty", "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "lease_field = \"\"\n",
             6, "watch[0].lease_field"},
        Case{"unknown_state_key",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "[watch.states]\nfinished = [\"done\"]\n",
             7, "watch[0].states.finished"},
        Case{"state_list_a_string",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "[watch.states]\npending = \"pending\"\n",
             7, "watch[0].states.pending"},
        Case{"state_list_of_numbers",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "[watch.states]\npending = [1]\n", 7,
             "watch[0].states.pending"},
        Case{"state_list_empty",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "[watch.states]\napplied = []\n", 7,
             "watch[0].states.applied"},
        Case{"rollback_before_resume",
             "[mongodb]\nuri = \"mongodb://h\"\n" WATCH "rollback_after = \"30s\"\n", 6,
             "watch[0].rollback_after"},
        Case{"missing_uri", "[sweep]\nworkers = 2\n" WATCH, 0, "mongodb.uri"},
        Case{"uri_file_missing", "[mongodb]\nuri_file = \"/nonexistent/uri\"\n" WATCH, 2,
             "mongodb.uri_file"},
        Case{"no_watch", "[mongodb]\nuri = \"mongodb://h\"\n", 0, "watch"},
        Case{"lease_under_its_margin",
             "[mongodb]\nuri = \"mongodb://h\"\n[sweep]\nlease = \"10s\"\n" WATCH, 4,
             "sweep.lease"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace txn_recovery::daemon
