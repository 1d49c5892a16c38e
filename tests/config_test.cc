// Configuration loading: defaults, precedence, and errors that name file, line and key.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "config.h"

namespace txn_recoveryd {
namespace {

class ConfigFile : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name)
      if (c == '/') c = '_';
    path_ = ::testing::TempDir() + "txn_recoveryd_config_" + name + ".toml";
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { std::remove(path_.c_str()); }

  EnvLookup Env(std::map<std::string, std::string> vars = {}) {
    return [vars](const std::string& name) -> std::optional<std::string> {
      auto it = vars.find(name);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  }
  std::string path_;
};

constexpr const char* kMinimal = R"(
[mongodb]
uri = "mongodb://db.example:27017"
[[watch]]
name = "bank"
database = "bank"
)";

TEST_F(ConfigFile, MinimalFileGetsTheSeedDefaults) {
  Config c;
  ASSERT_TRUE(LoadConfig(Write(kMinimal), Env(), &c).ok());
  ASSERT_EQ(c.watches.size(), 1u);
  const auto& w = c.watches[0];
  EXPECT_EQ(w.ns.ToString(), "bank.transactions");
  ASSERT_NE(w.profile.transfer(), nullptr);
  EXPECT_EQ(w.profile.transfer()->participants_collection, "accounts");
  EXPECT_EQ(w.profile.transfer()->amount_field, "value");
  EXPECT_EQ(w.profile.transfer()->marker_field, "pendingTransactions");
  EXPECT_EQ(w.thresholds.resume_after, std::chrono::minutes(1));
  EXPECT_EQ(w.thresholds.rollback_after, std::chrono::minutes(30));
  EXPECT_EQ(c.mongodb.uri, "mongodb://db.example:27017");
}

TEST_F(ConfigFile, TheExampleConfigurationLoads) {
  Config c;
  txn_recovery::Status s =
      LoadConfig(std::string(TXN_RECOVERY_SOURCE_DIR) + "/config/txn-recoveryd.toml", Env(), &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.watches.at(0).name, "bank");
}

TEST_F(ConfigFile, TheSchemaBookWatchOfTheExampleIsSeed001) {
  Config c;
  ASSERT_TRUE(
      LoadConfig(std::string(TXN_RECOVERY_SOURCE_DIR) + "/config/txn-recoveryd.toml", Env(), &c)
          .ok());
  const txn_recovery::WatchSpec* w = nullptr;
  for (const auto& watch : c.watches)
    if (watch.name == "schema-book") w = &watch;
  ASSERT_NE(w, nullptr);
  const auto& p = w->profile;
  ASSERT_NE(p.transfer(), nullptr);
  EXPECT_EQ(p.transfer()->participant_key, "name");
  EXPECT_EQ(p.transfer()->amount_field, "amount");
  EXPECT_TRUE(p.transfer()->require_funds);
  EXPECT_EQ(p.missing_time, txn_recovery::MissingTime::kObjectIdTime);
  EXPECT_EQ(p.owner.applications, std::vector<std::string>{"A1"});
  EXPECT_TRUE(p.owner.include_unowned);
  EXPECT_EQ(p.states.Written(txn_recovery::TxnState::kApplied), "committed");
  EXPECT_EQ(p.states.Written(txn_recovery::TxnState::kCancelled), "canceled");
  EXPECT_EQ(p.states.Parse("cancel"), txn_recovery::TxnState::kCancelled);
}

TEST_F(ConfigFile, DescribeConfigShowsTheOwnerFilterAndMissingTime) {
  Config c;
  ASSERT_TRUE(LoadConfig(Write(std::string(kMinimal) +
                               "missing_time = \"object_id\"\napplications = [\"A1\", "
                               "\"A2\"]\n"),
                         Env(), &c)
                  .ok());
  std::string text = DescribeConfig(c);
  EXPECT_NE(text.find("missing_time = \"object_id\""), std::string::npos) << text;
  EXPECT_NE(text.find("applications = [\"A1\", \"A2\"]"), std::string::npos) << text;
  EXPECT_NE(text.find("profile = \"transfer\""), std::string::npos) << text;
}

TEST_F(ConfigFile, RetentionIsOffByDefaultAndReadPerWatchWithTheSweepsPacing) {
  Config c;
  ASSERT_TRUE(LoadConfig(Write(kMinimal), Env(), &c).ok());
  EXPECT_FALSE(c.watches.at(0).retention.enabled());
  EXPECT_NE(DescribeConfig(c).find("# retain_finished: off"), std::string::npos);

  ASSERT_TRUE(LoadConfig(Write(std::string("[sweep]\nretention_batch_size = 100\n"
                                           "retention_pause = \"1s\"\n") +
                               kMinimal +
                               "retain_finished = \"30d\"\n"
                               "archive_collection = \"transactions_archive\"\n"),
                         Env(), &c)
                  .ok());
  const auto& r = c.watches.at(0).retention;
  EXPECT_EQ(r.retain_finished, std::chrono::hours(24 * 30));
  EXPECT_EQ(r.archive_collection, "transactions_archive");
  EXPECT_EQ(r.batch_size, 100);
  EXPECT_EQ(r.pause_between_batches, std::chrono::seconds(1));
  EXPECT_EQ(r.max_batches, 20);
  std::string text = DescribeConfig(c);
  EXPECT_NE(text.find("retain_finished = \"30d\""), std::string::npos) << text;
  EXPECT_NE(text.find("retention_pause = \"1s\""), std::string::npos) << text;
}

TEST_F(ConfigFile, EnvironmentOverridesTheFile) {
  Config c;
  ASSERT_TRUE(
      LoadConfig(Write(kMinimal), Env({{"TXN_RECOVERYD_MONGODB_URI", "mongodb://env:1"}}), &c)
          .ok());
  EXPECT_EQ(c.mongodb.uri, "mongodb://env:1");
  EXPECT_NE(c.mongodb.uri_source.find("TXN_RECOVERYD_MONGODB_URI"), std::string::npos);
}

TEST_F(ConfigFile, EveryScalarKeyCanComeFromTheEnvironmentAndBeatsTheFile) {
  std::string path = Write(std::string(kMinimal) + "[daemon]\ninterval = \"10s\"\n");
  Config c;
  ASSERT_TRUE(LoadConfig(path,
                         Env({{"TXN_RECOVERYD_DAEMON_INTERVAL", "45s"},
                              {"TXN_RECOVERYD_DAEMON_JITTER", "0.5"},
                              {"TXN_RECOVERYD_SWEEP_WORKERS", "7"},
                              {"TXN_RECOVERYD_LOG_LEVEL", "debug"}}),
                         &c)
                  .ok());
  EXPECT_EQ(c.daemon.interval, std::chrono::seconds(45));
  EXPECT_DOUBLE_EQ(c.daemon.jitter, 0.5);
  EXPECT_EQ(c.sweep.workers, 7);
  EXPECT_EQ(c.log.level, "debug");

  txn_recovery::Status bad = LoadConfig(path, Env({{"TXN_RECOVERYD_SWEEP_WORKERS", "many"}}), &c);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("environment TXN_RECOVERYD_SWEEP_WORKERS:1:"), std::string::npos)
      << bad.message();
  EXPECT_NE(bad.message().find("sweep.workers"), std::string::npos) << bad.message();
}

TEST_F(ConfigFile, UriFileIsReadAndTrimmed) {
  std::string secret = ::testing::TempDir() + "txn_recoveryd_uri_secret";
  std::ofstream(secret) << "mongodb://u:p@h:1\n";
  Config c;
  ASSERT_TRUE(LoadConfig(Write("[mongodb]\nuri_file = \"" + secret +
                               "\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"),
                         Env(), &c)
                  .ok());
  EXPECT_EQ(c.mongodb.uri, "mongodb://u:p@h:1");
  std::remove(secret.c_str());
}

TEST_F(ConfigFile, AnEmptyListenVariableLeavesTheFilesListenerOn) {
  std::string path = Write(
      "[mongodb]\nuri = \"mongodb://h\"\n[http]\nlisten = \"127.0.0.1:9464\"\n"
      "[[watch]]\nname = \"w\"\ndatabase = \"d\"\n");
  Config c;
  ASSERT_TRUE(LoadConfig(path, Env({{"TXN_RECOVERYD_HTTP_LISTEN", ""}}), &c).ok());
  EXPECT_EQ(c.http.listen, "127.0.0.1:9464") << "an empty variable is no setting";
  ASSERT_TRUE(LoadConfig(path, Env({{"TXN_RECOVERYD_HTTP_LISTEN", ":9100"}}), &c).ok());
  EXPECT_EQ(c.http.listen, ":9100") << "node_exporter's form: every address";
  txn_recovery::Status bad = LoadConfig(path, Env({{"TXN_RECOVERYD_HTTP_LISTEN", "0:9100"}}), &c);
  ASSERT_TRUE(bad.IsInvalidArgument());
  EXPECT_NE(bad.message().find("TXN_RECOVERYD_HTTP_LISTEN"), std::string::npos) << bad.message();
}

TEST_F(ConfigFile, UriFileIsReadAsItsFirstLineOnly) {
  std::string secret = ::testing::TempDir() + "txn_recoveryd_uri_first_line";
  // A credential file that goes on: the next URI of a rotation, a note.
  std::ofstream(secret) << "mongodb://u:current@h:1 \r\nmongodb://u:next@h:1\n# rotated monthly\n";
  Config c;
  ASSERT_TRUE(LoadConfig(Write("[mongodb]\nuri_file = \"" + secret +
                               "\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"),
                         Env(), &c)
                  .ok());
  EXPECT_EQ(c.mongodb.uri, "mongodb://u:current@h:1");

  std::ofstream(secret) << "\nmongodb://u:p@h:1\n";
  txn_recovery::Status s = LoadConfig(Write("[mongodb]\nuri_file = \"" + secret +
                                            "\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"),
                                      Env(), &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mongodb.uri_file"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("first line is empty"), std::string::npos) << s.message();
  std::remove(secret.c_str());
}

struct BadCase {
  const char* name;
  const char* text;
  const char* expected;  // a fragment of the message: position and key
};

class BadConfig : public ConfigFile, public ::testing::WithParamInterface<BadCase> {};

TEST_P(BadConfig, IsRefusedWithFileLineAndKey) {
  Config c;
  std::string path = Write(GetParam().text);
  txn_recovery::Status s = LoadConfig(path, Env(), &c);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message().rfind(path, 0), 0u) << "message must start with the file: " << s.message();
  EXPECT_NE(s.message().find(GetParam().expected), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadConfig,
    ::testing::Values(
        BadCase{"bad_duration",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "resume_after = \"5x\"\n",
                ":6:16: watch[0].resume_after:"},
        BadCase{"unknown_key",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "rollbak_after = \"5m\"\n",
                ":6:1: watch[0].rollbak_after: unknown key"},
        BadCase{"syntax_error", "[mongodb\nuri = 1\n", ":1:"},
        BadCase{"missing_uri", "[[watch]]\nname = \"w\"\ndatabase = \"d\"\n", "mongodb.uri"},
        BadCase{"no_watch", "[mongodb]\nuri = \"mongodb://h\"\n", "no [[watch]]"},
        BadCase{"rollback_not_after_resume",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "resume_after = \"40m\"\n",
                "watch[0].rollback_after: must be longer than resume_after"},
        BadCase{"duplicate_watch",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "[[watch]]\nname = \"w\"\ndatabase = \"e\"\n",
                ":6:1: watch[1].name: duplicate"},
        BadCase{"wrong_type",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "require_funds = \"yes\"\n",
                ":6:17: watch[0].require_funds: must be true or false"},
        BadCase{"unknown_profile",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "profile = \"bitcoin\"\n",
                "watch[0].profile: unknown profile 'bitcoin'"},
        BadCase{"missing_time_guess",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "missing_time = \"guess\"\n",
                ":6:16: watch[0].missing_time: must be \"quarantine\" or \"object_id\""},
        BadCase{"empty_application",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "applications = [\"\"]\n",
                "watch[0].applications: must hold non-empty strings only"},
        BadCase{"state_spelling_twice",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "[watch.states]\ndone = [\"cancelled\"]\n",
                "used by two states"},
        BadCase{"archive_without_retention",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "archive_collection = \"old\"\n",
                ":6:22: watch[0].archive_collection: needs retain_finished"},
        BadCase{"archive_into_the_accounts",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "retain_finished = \"7d\"\narchive_collection = \"accounts\"\n",
                ":7:22: watch[0].archive_collection: 'accounts' is a collection this watch"},
        BadCase{"zero_retention",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "retain_finished = \"0s\"\n",
                ":6:19: watch[0].retain_finished: must be positive"},
        BadCase{"short_lease", "[mongodb]\nuri = \"mongodb://h\"\n[sweep]\nlease = \"5s\"\n",
                ":4:9: sweep.lease: must be at least 15s"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Duration, ParsesEveryUnitAndRefusesTheRest) {
  std::chrono::milliseconds d;
  ASSERT_TRUE(ParseDuration("250ms", &d).ok());
  EXPECT_EQ(d.count(), 250);
  ASSERT_TRUE(ParseDuration("2h", &d).ok());
  EXPECT_EQ(d, std::chrono::hours(2));
  for (const char* bad : {"", "5", "m", "-5m", "5 m", "1.5h", "99999999999999s"})
    EXPECT_FALSE(ParseDuration(bad, &d).ok()) << bad;
  EXPECT_EQ(FormatDuration(std::chrono::minutes(30)), "30m");
}

}  // namespace
}  // namespace txn_recoveryd
