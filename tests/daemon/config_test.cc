// Configuration loading: defaults, precedence, and errors that name file, line and key.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>

#include "daemon/commands/sweep_command.h"
#include "daemon/configuration/config.h"
#include "daemon/configuration/config_schema.h"

namespace txn_recovery::daemon {
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

  EnvLookup Env(const std::map<std::string, std::string>& vars = {}) {
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

TEST_F(ConfigFile, MinimalFileGetsTheProfileDefaults) {
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
  EXPECT_EQ(c.mongodb.write_concern, "majority") << "durable across a failover by default";
  EXPECT_EQ(c.mongodb.read_concern, "majority");
  EXPECT_EQ(MongoOptionsFor(c).write_concern, "majority");
}

TEST_F(ConfigFile, WriteConcernIsMajorityOrANumberOfMembers) {
  Config c;
  ASSERT_TRUE(LoadConfig(Write(std::string("[mongodb]\nuri = \"mongodb://h\"\nwrite_concern = 2\n"
                                           "write_concern_timeout = \"30s\"\nread_concern = "
                                           "\"local\"\n") +
                               "[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"),
                         Env(), &c)
                  .ok());
  EXPECT_EQ(c.mongodb.write_concern, "2");
  EXPECT_EQ(c.mongodb.write_concern_timeout, std::chrono::seconds(30));
  EXPECT_EQ(c.mongodb.read_concern, "local");
  EXPECT_NE(DescribeConfig(c).find("write_concern = 2\n"), std::string::npos);
}

TEST_F(ConfigFile, TheExampleConfigurationLoads) {
  Config c;
  txn_recovery::Status s =
      LoadConfig(std::string(TXN_RECOVERY_SOURCE_DIR) + "/config/txn-recoveryd.toml", Env(), &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.watches.at(0).name, "bank");
}

TEST_F(ConfigFile, TheExampleConfiguresTheSchemaBookTransfer) {
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

TEST_F(ConfigFile, TheFleetsTimesFollowTheIntervalUnlessSet) {
  Config c;
  ASSERT_TRUE(
      LoadConfig(Write(std::string("[daemon]\ninterval = \"10s\"\n") + kMinimal), Env(), &c).ok());
  EXPECT_TRUE(c.fleet.enabled) << "a fleet by default";
  EXPECT_EQ(c.fleet.heartbeat, std::chrono::seconds(10));
  EXPECT_EQ(c.fleet.expiry, std::chrono::seconds(30));
  EXPECT_EQ(c.fleet.overdue_after, std::chrono::seconds(150)) << "5 x expiry";

  ASSERT_TRUE(LoadConfig(Write(std::string("[fleet]\nexpiry = \"1m\"\noverdue_after = \"1m\"\n") +
                               kMinimal),
                         Env(), &c)
                  .ok());
  EXPECT_EQ(c.fleet.overdue_after, std::chrono::minutes(1)) << "the expiry itself is allowed";
}

// Each default is typed once, in the library's struct (or the daemon's Config where the
// library has none): a file that sets nothing hands the library exactly its own defaults,
// so that no second copy can part from them unnoticed.
TEST_F(ConfigFile, AFileThatSetsNothingHandsTheLibraryItsOwnDefaults) {
  Config c;
  ASSERT_TRUE(LoadConfig(Write(kMinimal), Env(), &c).ok());
  const txn_recovery::MongoOptions mongo = MongoOptionsFor(c), library_mongo;
  EXPECT_EQ(mongo.server_selection_timeout, library_mongo.server_selection_timeout);
  EXPECT_EQ(mongo.socket_timeout, library_mongo.socket_timeout);
  EXPECT_EQ(mongo.write_concern, library_mongo.write_concern);
  EXPECT_EQ(mongo.write_concern_timeout, library_mongo.write_concern_timeout);
  EXPECT_EQ(mongo.read_concern, library_mongo.read_concern);
  EXPECT_EQ(mongo.server_clock, library_mongo.server_clock);

  const txn_recovery::SweepOptions library_sweep;
  EXPECT_EQ(c.sweep.workers, library_sweep.workers);
  EXPECT_EQ(c.sweep.batch_size, library_sweep.batch_size);
  EXPECT_EQ(c.sweep.bulk_size, library_sweep.bulk_size);
  EXPECT_EQ(c.sweep.max_failures, library_sweep.max_failures);
  const txn_recovery::LeaseOptions lease = LeaseOptionsFor(c), library_lease;
  EXPECT_EQ(lease.duration, library_lease.duration);
  EXPECT_EQ(lease.margin, library_lease.margin);
  const txn_recovery::OrphanOptions orphans = OrphanOptionsFor(c, lease), library_orphans;
  EXPECT_EQ(orphans.marker_cap, library_orphans.marker_cap);
  // One [sweep] batch_size serves the sweep and the orphan scan: their defaults must agree.
  EXPECT_EQ(orphans.batch_size, library_orphans.batch_size);

  const txn_recovery::FleetMemberOptions library_fleet;
  EXPECT_EQ(c.fleet.members_collection, library_fleet.members_collection);
  EXPECT_EQ(c.fleet.heartbeat, library_fleet.heartbeat) << "daemon.interval's default";
  EXPECT_EQ(c.fleet.expiry, library_fleet.expiry) << "3 x heartbeat";

  const txn_recovery::WatchSpec& w = c.watches.at(0);
  const txn_recovery::WatchSpec library_watch;
  const txn_recovery::Thresholds library_thresholds;
  EXPECT_EQ(w.thresholds.resume_after, library_thresholds.resume_after);
  EXPECT_EQ(w.thresholds.rollback_after, library_thresholds.rollback_after);
  EXPECT_EQ(w.thresholds.initial_timeout, library_thresholds.initial_timeout);
  EXPECT_EQ(w.thresholds.late_write_window, library_thresholds.late_write_window);
  EXPECT_EQ(w.thresholds.max_clock_skew, library_thresholds.max_clock_skew);
  const txn_recovery::RetentionPolicy library_retention;
  EXPECT_EQ(w.retention.batch_size, library_retention.batch_size);
  EXPECT_EQ(w.retention.pause_between_batches, library_retention.pause_between_batches);
  EXPECT_EQ(w.retention.max_batches, library_retention.max_batches);
  EXPECT_EQ(w.lease_field, library_watch.lease_field);
  EXPECT_EQ(w.profile.kind(), library_watch.profile.kind());
  for (const auto state : txn_recovery::kAllTxnStates)
    EXPECT_EQ(w.profile.states.For(state), library_watch.profile.states.For(state))
        << txn_recovery::TxnStateName(state);
  EXPECT_EQ(w.profile.states.resuming, library_watch.profile.states.resuming);
}

// The least lease is explained by the lease-deadline margin the library keeps, not by a
// copy of it that could say another.
TEST_F(ConfigFile, AShortLeaseIsRefusedWithTheMarginTheLibraryKeeps) {
  Config c;
  txn_recovery::Status s =
      LoadConfig(Write(std::string("[sweep]\nlease = \"5s\"\n") + kMinimal), Env(), &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(
      s.message().find("sweep.lease: must be at least 15s (the daemon stops writing " +
                       FormatDuration(txn_recovery::LeaseOptions{}.margin) + " before it expires)"),
      std::string::npos)
      << s.message();
}

// The lease and the orphan scan's options are built from [sweep] in one place, for `run`,
// the one-shot `sweep` (and its --orphans), `rehearse` and the operator's commands alike.
TEST_F(ConfigFile, TheLeaseAndTheOrphanScanTakeTheirTermsFromTheSweepSection) {
  Config c;
  ASSERT_TRUE(LoadConfig(Write(std::string("[sweep]\nlease = \"2m\"\nbatch_size = 50\n"
                                           "marker_cap = 4\n") +
                               kMinimal),
                         Env(), &c)
                  .ok());
  const txn_recovery::LeaseOptions lease = LeaseOptionsFor(c);
  EXPECT_EQ(lease.duration, std::chrono::minutes(2));
  EXPECT_EQ(lease.margin, txn_recovery::LeaseOptions{}.margin) << "no key sets the margin";
  EXPECT_TRUE(lease.owner.empty()) << "the caller names itself";
  EXPECT_EQ(ConfiguredSweepOptions(c).lease.duration, lease.duration);
  const txn_recovery::OrphanOptions orphans = OrphanOptionsFor(c, lease);
  EXPECT_EQ(orphans.lease.duration, std::chrono::minutes(2));
  EXPECT_EQ(orphans.batch_size, 50);
  EXPECT_EQ(orphans.marker_cap, 4);
  EXPECT_FALSE(orphans.dry_run);
}

// What the schema documents as each default (and docs/configuration.md, the man page and
// the example state, tests/docs_test.cc) is rendered from the same values, with the
// duration formatter: a default changed in the library changes its documentation.
TEST(Defaults, AreDocumentedAsTheLibraryAndTheDaemonHoldThem) {
  EXPECT_EQ(DefaultFor(SchemaKey("sweep", "lease"), ""),
            "\"" + FormatDuration(txn_recovery::LeaseOptions{}.duration) + "\"");
  EXPECT_EQ(DefaultFor(SchemaKey("daemon", "drain_deadline"), ""),
            "\"" + FormatDuration(DaemonConfig{}.drain_deadline) + "\"");
  EXPECT_EQ(DefaultFor(SchemaKey("watch", "resume_after"), "transfer"),
            "\"" + FormatDuration(txn_recovery::Thresholds{}.resume_after) + "\"");
  EXPECT_EQ(DefaultText(SchemaKey("watch", "state_field")),
            R"("state"; operations, tagged-insert: "status")");
  EXPECT_EQ(
      DefaultText(SchemaKey("watch.states", "cancelled")),
      R"(["cancelled", "canceled"]; operations: ["canceled", "cancelled"]; tagged-insert: [])");
  EXPECT_EQ(DefaultFor(SchemaKey("watch.steps", "key"), "steps"), R"("_id")");
  EXPECT_EQ(DefaultText(SchemaKey("watch", "profile")), R"("transfer")");
  EXPECT_EQ(DefaultText(SchemaKey("fleet", "heartbeat")), "") << "unset: daemon.interval";
  EXPECT_EQ(DefaultText(SchemaKey("watch", "name")), "") << "required";
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
                ":6:16: watch[0].missing_time: must be \"first_seen\", \"quarantine\" or "
                "\"object_id\""},
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
        BadCase{"unacknowledged_writes", "[mongodb]\nuri = \"mongodb://h\"\nwrite_concern = 0\n",
                ":3:17: mongodb.write_concern: must be \"majority\" or a number"},
        BadCase{"write_concern_typo",
                "[mongodb]\nuri = \"mongodb://h\"\nwrite_concern = \"majorty\"\n",
                ":3:17: mongodb.write_concern: must be \"majority\" or a number"},
        BadCase{"read_concern_available",
                "[mongodb]\nuri = \"mongodb://h\"\nread_concern = \"available\"\n",
                ":3:16: mongodb.read_concern: must be \"majority\" or \"local\""},
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

TEST(Duration, CompoundDurationsAreWrittenAsGoAndPrometheusWriteThem) {
  using namespace std::chrono;
  std::chrono::milliseconds d;
  const std::pair<const char*, milliseconds> good[] = {{"1h30m", minutes(90)},
                                                       {"1m30s", seconds(90)},
                                                       {"1d12h", hours(36)},
                                                       {"2h0m5s", hours(2) + seconds(5)},
                                                       {"1s500ms", milliseconds(1500)},
                                                       {"1d1h1m1s1ms", milliseconds(90'061'001)}};
  for (const auto& [text, expected] : good) {
    ASSERT_TRUE(ParseDuration(text, &d).ok()) << text;
    EXPECT_EQ(d, expected) << text;
  }
  for (const char* bad : {"30m1h", "1h1h", "1h 30m", "1h30", "1h-30m", "h30m", "1h30x"})
    EXPECT_FALSE(ParseDuration(bad, &d).ok()) << bad;
  EXPECT_NE(ParseDuration("30m1h", &d).message().find("largest"), std::string::npos)
      << ParseDuration("30m1h", &d).message();
  // What check-config prints reads back the same.
  for (milliseconds m :
       std::vector<milliseconds>{minutes(90), seconds(90), hours(36), milliseconds(1500),
                                 milliseconds(90'061'001), milliseconds(0), hours(24 * 400)}) {
    ASSERT_TRUE(ParseDuration(FormatDuration(m), &d).ok()) << FormatDuration(m);
    EXPECT_EQ(d, m) << FormatDuration(m);
  }
  EXPECT_EQ(FormatDuration(minutes(90)), "1h30m");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1s500ms");
}

// An age as explain and a decision's row show it: to the second, and truncated, never
// rounded up, so that an age shown beside a threshold has reached it only if the age has.
TEST(Duration, AnAgeIsWrittenToTheSecondTruncatedNeverRoundedUp) {
  using namespace std::chrono;
  auto age = [](milliseconds m) {
    return FormatDuration(m, txn_recovery::DurationPrecision::kSeconds);
  };
  EXPECT_EQ(age(minutes(12) + milliseconds(31'482)), "12m31s");
  EXPECT_EQ(FormatDuration(minutes(12) + milliseconds(31'482)), "12m31s482ms") << "exact";
  EXPECT_EQ(age(milliseconds(59'999)), "59s") << "under a threshold of 1m, as the age is";
  EXPECT_EQ(age(minutes(1)), "1m");
  EXPECT_EQ(age(hours(2) + minutes(5) + milliseconds(999)), "2h5m");
  EXPECT_EQ(age(hours(24 * 3) + seconds(1)), "3d1s");
  EXPECT_EQ(age(milliseconds(250)), "250ms") << "under a second: its milliseconds";
  EXPECT_EQ(age(milliseconds(0)), "0ms");
  EXPECT_EQ(age(-seconds(3) - milliseconds(700)), "-3s") << "ahead of the clock";
  EXPECT_EQ(age(milliseconds(-400)), "-400ms");
  EXPECT_EQ(age(milliseconds(std::numeric_limits<std::int64_t>::min())), "-106751991167d7h12m55s");
  // What an age says reads back as a duration, the age truncated.
  milliseconds d;
  ASSERT_TRUE(ParseDuration(age(minutes(90) + milliseconds(1)), &d).ok());
  EXPECT_EQ(d, minutes(90));
}

TEST_F(ConfigFile, ThresholdsMayBeCompoundDurations) {
  Config c;
  ASSERT_TRUE(LoadConfig(Write(std::string(kMinimal) + "resume_after = \"1m30s\"\n"
                                                       "rollback_after = \"1h30m\"\n"),
                         Env(), &c)
                  .ok());
  EXPECT_EQ(c.watches[0].thresholds.resume_after, std::chrono::seconds(90));
  EXPECT_EQ(c.watches[0].thresholds.rollback_after, std::chrono::minutes(90));
}

TEST_F(ConfigFile, AUriTheDriverWouldRefuseIsRefusedAtItsLine) {
  Config c;
  std::string path = Write(
      "[mongodb]\nuri = \"mongodb//db.example\"\n[[watch]]\nname = \"w\"\n"
      "database = \"d\"\n");
  txn_recovery::Status s = LoadConfig(path, Env(), &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(path + ":2:7: mongodb.uri: not a usable MongoDB URI", 0), 0u)
      << s.message();
  // From the environment: the variable is named.
  s = LoadConfig(Write(kMinimal), Env({{"TXN_RECOVERYD_MONGODB_URI", "mongodb://u:pw@"}}), &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("environment TXN_RECOVERYD_MONGODB_URI: mongodb.uri: not a usable"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find(":pw@"), std::string::npos) << "no password in the message";
}

TEST_F(ConfigFile, AControlCharacterInAnyVariableIsAStatusNamingItNeverAnException) {
  std::string path = Write(kMinimal);
  for (const std::string& name : EnvironmentVariables()) {
    for (const char* value : {"1\x01", "60s\nx = 1", "\x1b[31m", "a\x7f"}) {
      Config c;
      txn_recovery::Status s;
      EXPECT_NO_THROW(s = LoadConfig(path, Env({{name, value}}), &c)) << name;
      EXPECT_TRUE(s.IsInvalidArgument()) << name;
      EXPECT_NE(s.message().find("environment " + name + ": byte "), std::string::npos)
          << s.message();
    }
  }
}

TEST_F(ConfigFile, AVariableThatIsNoTomlValueIsTakenAsTextWithQuotesAndBackslashes) {
  Config c;
  txn_recovery::Status s =
      LoadConfig(Write(kMinimal), Env({{"TXN_RECOVERYD_LOG_LEVEL", "de'b\"u\\g"}}), &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("environment TXN_RECOVERYD_LOG_LEVEL:1:5: log.level"),
            std::string::npos)
      << s.message();
}

TEST_F(ConfigFile, JournalIsTheDefaultFormatOnlyWhenStderrIsTheJournalStream) {
  Config c;
  // Inherited from a systemd service by a shell whose stderr is a terminal or a file.
  ASSERT_TRUE(LoadConfig(Write(kMinimal), Env({{"JOURNAL_STREAM", "8:12345"}}), &c).ok());
  EXPECT_EQ(c.log.format, LogFormat::kText);
  struct stat st {};
  ASSERT_EQ(fstat(STDERR_FILENO, &st), 0);
  std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  ASSERT_TRUE(LoadConfig(Write(kMinimal), Env({{"JOURNAL_STREAM", mine}}), &c).ok());
  EXPECT_EQ(c.log.format, LogFormat::kJournal);
}

TEST(Environment, AMisspeltVariableIsNamedWithTheOneItResembles) {
  std::vector<std::string> unknown = UnknownEnvironmentVariables(
      {"PATH", "TXN_RECOVERYD_SWEEP_WORKER", "TXN_RECOVERYD_SWEEP_WORKERS", "TXN_RECOVERYD_FOO",
       "TXN_RECOVERY_TEST_URI"});
  EXPECT_EQ(unknown,
            (std::vector<std::string>{
                "TXN_RECOVERYD_FOO",
                "TXN_RECOVERYD_SWEEP_WORKER (did you mean TXN_RECOVERYD_SWEEP_WORKERS?)"}));
  for (const auto& known : EnvironmentVariables())
    EXPECT_TRUE(UnknownEnvironmentVariables({known}).empty()) << known;
}

TEST_F(ConfigFile, SelectWatchesKeepsTheNamedOnesAndNamesTheKnownOnesForAnUnknownName) {
  Config c;
  ASSERT_TRUE(
      LoadConfig(Write(std::string(kMinimal) + "[[watch]]\nname = \"other\"\ndatabase = \"o\"\n"),
                 Env(), &c)
          .ok());
  Config all = c;
  ASSERT_TRUE(SelectWatches({}, &all).ok());
  EXPECT_EQ(all.watches.size(), 2u);
  txn_recovery::Status s = SelectWatches({"nope"}, &c);
  EXPECT_NE(s.message().find("--watch nope: no watch of that name in " + path_ +
                             " (it has: bank, other)"),
            std::string::npos)
      << s.message();
  ASSERT_TRUE(SelectWatches({"other"}, &c).ok());
  ASSERT_EQ(c.watches.size(), 1u);
  EXPECT_EQ(c.watches[0].name, "other");
}

// A misspelt key is named with the key it resembles, and the hint points at the example
// as installed (the Debian package and the image carry it), not at a path of the source.
TEST_F(ConfigFile, AMisspeltKeyIsNamedWithTheKeyItResemblesAndTheInstalledExample) {
  Config c;
  std::string path = Write(
      "[mongodb]\nuri = \"mongodb://h\"\n[daemon]\nintreval = \"30s\"\n[[watch]]\n"
      "name = \"w\"\ndatabase = \"d\"\nrollbak_after = \"5m\"\n[watch.states]\npendng = [\"p\"]\n");
  txn_recovery::Status s = LoadConfig(path, Env(), &c);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_NE(m.find(":4:1: daemon.intreval: unknown key (did you mean 'interval'?"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(":8:1: watch[0].rollbak_after: unknown key (did you mean 'rollback_after'?"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(":10:1: watch[0].states.pendng: unknown state (did you mean 'pending'?"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("/usr/share/doc/txn-recoveryd/txn-recoveryd.toml"), std::string::npos) << m;
  EXPECT_EQ(m.find("against config/"), std::string::npos) << "a path of the source tree: " << m;
}

// An operator fixing a file learns of every problem in one go, not one per attempt: each
// on its own line, in the order of the file, whatever section it is in.
TEST_F(ConfigFile, EveryProblemOfTheFileIsReportedAtOnce) {
  Config c;
  std::string path = Write(
      "[mongodb]\nuri = \"mongodb://h\"\nwrite_concern = 0\n"               // 1-3
      "[sweep]\nworkers = \"four\"\nlease = \"5s\"\n"                       // 4-6
      "[daemon]\nintreval = \"30s\"\n"                                      // 7-8
      "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nresume_after = \"5x\"\n"  // 9-12
      "[[watch]]\nname = \"v\"\n");                                         // 13-14
  txn_recovery::Status s = LoadConfig(path, Env(), &c);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  std::vector<std::string> expected = {
      path + ":3:17: mongodb.write_concern: ",
      path + ":5:11: sweep.workers: must be an integer",
      path + ":6:9: sweep.lease: must be at least 15s",
      path + ":8:1: daemon.intreval: unknown key",
      path + ":12:16: watch[0].resume_after: ",
      path + ":13:1: watch[1].database: is required",
  };
  std::size_t at = 0;
  for (const auto& e : expected) {
    std::size_t found = m.find(e, at);
    EXPECT_NE(found, std::string::npos) << "missing, or out of order: " << e << "\n" << m;
    if (found != std::string::npos) at = found;
  }
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 5) << "one line each:\n" << m;
}

TEST_F(ConfigFile, EveryProblemOfAWatchIsReportedAtTheKeyTheFileSetsUnderItsOwnName) {
  Config c;
  // The library's Validate() names its keys (allowed_collections, states.applied); the
  // loader finds them in the file, under the name the file uses (finishing).
  std::string path = Write(
      "[mongodb]\nuri = \"mongodb://h\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n"
      "profile = \"operations\"\nallowed_collections = [\"users\", \"a$b\"]\n"
      "state_field = \"$s\"\n[watch.states]\npending = [\"x\"]\ncommitted = [\"x\"]\n");
  txn_recovery::Status s = LoadConfig(path, Env(), &c);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_NE(m.find(path + ":8:15: watch[0].state_field: '$s' must not start with '$'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(path + ":7:23: watch[0].allowed_collections: 'a$b' is not a collection name"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(path + ":11:13: watch[0].states.committed: spelling 'x' is used by two "
                          "states (also pending)"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace txn_recovery::daemon
