// `txn-recoveryd sweep --textfile-dir DIR`: the one-shot sweep's figures for node_exporter's
// textfile collector, as a timer runs it: the file's content after a sweep that worked and
// after ones that failed, and its replacement in one step.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/commands/sweep_textfile.h"
#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/exposition.h"
#include "support/test_env.h"

namespace txn_recovery::testing {
namespace {

namespace fs = std::filesystem;
using txn_recovery::daemon::kSweepTextfileName;
using txn_recovery::daemon::RenderSweepTextfile;
using txn_recovery::daemon::SweepFigures;
using txn_recovery::daemon::WriteSweepTextfile;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory for the collector's files.
std::string TextfileDir() {
  std::string dir = TestFile("_textfile");
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Every name in `dir`.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SweepTextfile, SaysWhenTheRunEndedHowItEndedAndWhatItDidToEachWatch) {
  SweepFigures f;
  f.watches.push_back({"bank", true, 3, 1, 0, 2});
  f.watches.push_back({"orders", false, 0, 0, 4, 0});
  const std::string text = RenderSweepTextfile(f, 1, 1700000000.5, 2.25);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_last_run_timestamp_seconds"),
            1700000000.5);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_success"), 0) << "exit 1 is no success";
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_exit_code"), 1);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_duration_seconds"), 2.25);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_watch_success{watch=\"bank\"}"), 1);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_watch_success{watch=\"orders\"}"), 0);
  // Labels in the order of their names, as the registry writes them.
  auto bank = [](const std::string& outcome) {
    return "txn_recoveryd_oneshot_sweep_transactions{outcome=\"" + outcome + "\",watch=\"bank\"}";
  };
  EXPECT_EQ(SeriesValue(text, bank("resolved")), 3) << text;
  EXPECT_EQ(SeriesValue(text, bank("quarantined")), 1);
  EXPECT_EQ(SeriesValue(text, bank("failed")), 0);
  EXPECT_EQ(SeriesValue(text, bank("busy")), 2);
  EXPECT_EQ(
      SeriesValue(text,
                  "txn_recoveryd_oneshot_sweep_transactions{outcome=\"failed\",watch=\"orders\"}"),
      4);
  // Typed, as node_exporter requires of what it serves.
  EXPECT_NE(text.find("# TYPE txn_recoveryd_oneshot_sweep_success gauge\n"), std::string::npos);
  EXPECT_EQ(SeriesValue(RenderSweepTextfile({}, 0, 1, 1), "txn_recoveryd_oneshot_sweep_success"),
            1);
}

TEST(SweepTextfile, ReplacesTheFileInOneStepAndLeavesNothingElseInTheDirectory) {
  const std::string dir = TextfileDir();
  const std::string path = dir + "/" + kSweepTextfileName;
  ASSERT_TRUE(WriteSweepTextfile(dir, "old 1\n").ok());
  EXPECT_EQ(ReadAll(path), "old 1\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "node_exporter runs as another user";
  const ino_t first = st.st_ino;

  // A scrape under way holds the old file open: it reads the old content whole, never a
  // truncated or half-written one, because the new content arrives under another inode.
  std::ifstream reading(path);
  ASSERT_TRUE(WriteSweepTextfile(dir, "new 2\nmore 3\n").ok());
  std::stringstream old;
  old << reading.rdbuf();
  EXPECT_EQ(old.str(), "old 1\n");
  EXPECT_EQ(ReadAll(path), "new 2\nmore 3\n");
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_NE(st.st_ino, first) << "rewritten in place, not renamed over";
  EXPECT_EQ(Names(dir), std::vector<std::string>{kSweepTextfileName}) << "a temporary file left";
}

TEST(SweepTextfile, ADirectoryThatCannotBeWrittenIsAnErrorThatNamesIt) {
  txn_recovery::Status s = WriteSweepTextfile("/nonexistent/textfiles", "x 1\n");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/textfiles"), std::string::npos) << s.message();
}

TXN_RECOVERY_DATABASE_SUITE(SweepTextfileCli);

TEST(SweepTextfileCli, TheSweepWritesItsFiguresAfterItsWork) {
  auto backend = TestBackend::Create("mongo");
  ASSERT_TRUE(backend->error().empty()) << backend->error();
  Bank bank(backend->store(), backend->database());
  bank.Open(2);
  Value id = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(id, std::chrono::minutes(5));
  const std::string config = WriteTestFile(
      ".toml", "[mongodb]\nuri = \"" + FindTestUri().uri_or_reason +
                   "\"\nserver_selection_timeout = \"2s\"\n[[watch]]\nname = \"bank\"\n"
                   "database = \"" +
                   backend->database() + "\"\n");
  const std::string dir = TextfileDir();
  const double before = static_cast<double>(std::time(nullptr));
  ProcessResult r = RunTxnRecoveryd({"sweep", "--config", config, "--textfile-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(bank.State(id), "done");
  const std::string text = ReadAll(dir + "/" + kSweepTextfileName);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_success"), 1) << text;
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_exit_code"), 0);
  EXPECT_GE(SeriesValue(text, "txn_recoveryd_oneshot_sweep_last_run_timestamp_seconds"), before);
  EXPECT_LE(SeriesValue(text, "txn_recoveryd_oneshot_sweep_last_run_timestamp_seconds"),
            static_cast<double>(std::time(nullptr)) + 1);
  EXPECT_GE(SeriesValue(text, "txn_recoveryd_oneshot_sweep_duration_seconds"), 0);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_watch_success{watch=\"bank\"}"), 1);
  EXPECT_EQ(
      SeriesValue(text,
                  "txn_recoveryd_oneshot_sweep_transactions{outcome=\"resolved\",watch=\"bank\"}"),
      1)
      << text;
  EXPECT_EQ(Names(dir), std::vector<std::string>{kSweepTextfileName});
}

TEST(SweepTextfileCli, AFailedRunIsWrittenTooWithItsExitCode) {
  const std::string dir = TextfileDir();
  const std::string file = dir + "/" + kSweepTextfileName;
  // A database nobody listens on: every watch fails, exit 69.
  const std::string down = WriteTestFile(
      "_down.toml", "[mongodb]\nuri = \"mongodb://127.0.0.1:" + std::to_string(FreePort()) +
                        "\"\nserver_selection_timeout = \"1s\"\n[[watch]]\nname = \"bank\"\n"
                        "database = \"bank\"\n");
  ProcessResult r = RunTxnRecoveryd({"sweep", "--config", down, "--textfile-dir", dir});
  ASSERT_EQ(r.exit_code, 69) << r.err;
  std::string text = ReadAll(file);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_success"), 0) << text;
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_exit_code"), 69);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_watch_success{watch=\"bank\"}"), 0);

  // A configuration that does not load: no watch is known, the run is still reported.
  const std::string bad = WriteTestFile("_bad.toml", "[daemon]\ninterval = 5\n");
  r = RunTxnRecoveryd({"sweep", "--config", bad, "--textfile-dir", dir});
  ASSERT_EQ(r.exit_code, 78) << r.err;
  text = ReadAll(file);
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_success"), 0) << text;
  EXPECT_EQ(SeriesValue(text, "txn_recoveryd_oneshot_sweep_exit_code"), 78);
  EXPECT_EQ(text.find("watch_success"), std::string::npos) << text;

  // A dry run acts on nothing, so it writes no figures: refused as a usage error.
  r = RunTxnRecoveryd({"sweep", "--config", bad, "--dry-run", "--textfile-dir", dir});
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_EQ(SeriesValue(ReadAll(file), "txn_recoveryd_oneshot_sweep_exit_code"), 78)
      << "left alone";
}

}  // namespace
}  // namespace txn_recovery::testing
