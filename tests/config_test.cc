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
  EXPECT_EQ(w.profile.participants_collection, "accounts");
  EXPECT_EQ(w.profile.amount_field, "value");
  EXPECT_EQ(w.profile.marker_field, "pendingTransactions");
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

TEST_F(ConfigFile, EnvironmentOverridesTheFile) {
  Config c;
  ASSERT_TRUE(
      LoadConfig(Write(kMinimal), Env({{"TXN_RECOVERYD_MONGODB_URI", "mongodb://env:1"}}), &c)
          .ok());
  EXPECT_EQ(c.mongodb.uri, "mongodb://env:1");
  EXPECT_NE(c.mongodb.uri_source.find("TXN_RECOVERYD_MONGODB_URI"), std::string::npos);
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
        BadCase{"state_spelling_twice",
                "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
                "[watch.states]\ndone = [\"cancelled\"]\n",
                "used by two states"},
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
