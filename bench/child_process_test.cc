// The benchmark's measures of a child process are the child's alone: its peak RSS does not
// include the benchmark's own memory (which wait4's ru_maxrss does), its exit status and
// signals are passed on, and the CPU of a process tree counts its reaped children.
#include "child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace txn_recovery::bench {
namespace {

constexpr long kMiB = 1024;  // in kB

std::string OutPath() {
  return "/tmp/txn-recovery-bench-test-" + std::to_string(getpid());
}

// This process holds `mib` MiB resident for as long as the object lives.
class Ballast {
 public:
  explicit Ballast(std::size_t mib) : size_(mib << 20), bytes_(new char[size_]) {
    std::memset(bytes_.get(), 1, size_);
  }
  char touch() const { return bytes_[size_ - 1]; }

 private:
  std::size_t size_;
  std::unique_ptr<char[]> bytes_;
};

TEST(ChildProcess, ATrivialChildOfALargeParentIsMeasuredSmall) {
  Ballast ballast(320);
  ASSERT_EQ(ballast.touch(), 1);
  ASSERT_GT(*StatusKb(getpid(), "VmRSS"), 300 * kMiB);
  ChildRun r = RunChild("/bin/true", {}, OutPath());
  std::remove(OutPath().c_str());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GT(r.peak_rss_kb, 0);
  EXPECT_LT(r.peak_rss_kb, 16 * kMiB);
  // What wait4 reports for the same child: the parent's memory (the reason for RunChild).
  RecordProperty("wait4_maxrss_kb", std::to_string(r.wait4_maxrss_kb));
  RecordProperty("peak_rss_kb", std::to_string(r.peak_rss_kb));
}

TEST(ChildProcess, AChildsOwnMemoryIsMeasured) {
  Ballast ballast(200);
  ASSERT_EQ(ballast.touch(), 1);
  // dd reads 64 MiB into one buffer: at least 64 MiB resident, and not the parent's 200.
  ChildRun r = RunChild(
      "/bin/dd", {"if=/dev/zero", "of=/dev/null", "bs=64M", "count=1", "status=none"}, OutPath());
  std::remove(OutPath().c_str());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(r.peak_rss_kb, 64 * kMiB);
  EXPECT_LT(r.peak_rss_kb, 96 * kMiB);
}

TEST(ChildProcess, ExitCodesOutputAndSignalsArePassedOn) {
  ChildRun r = RunChild("/bin/sh", {"-c", "echo out; exit 3"}, OutPath());
  EXPECT_EQ(r.exit_code, 3);
  char buf[16] = {};
  std::FILE* f = std::fopen(OutPath().c_str(), "r");
  ASSERT_NE(f, nullptr);
  ASSERT_NE(std::fgets(buf, sizeof buf, f), nullptr);
  std::fclose(f);
  EXPECT_STREQ(buf, "out\n");

  // A signal the child handles reaches its handler (the tracer passes it on).
  r = RunChild("/bin/sh", {"-c", "trap 'exit 5' USR1; kill -USR1 $$; sleep 5; exit 0"}, OutPath());
  EXPECT_EQ(r.exit_code, 5);
  // A signal it does not handle ends it, and is reported as such.
  r = RunChild("/bin/sh", {"-c", "kill -TERM $$; sleep 5"}, OutPath());
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.term_signal, SIGTERM);
  std::remove(OutPath().c_str());

  EXPECT_THROW(RunChild("/bin/true", {}, "/nonexistent-dir/out"), std::runtime_error);
  r = RunChild("/nonexistent-binary", {}, OutPath());
  std::remove(OutPath().c_str());
  EXPECT_EQ(r.exit_code, 127);
}

TEST(ChildProcess, ATreesCpuCountsChildrenThatAlreadyExited) {
  // This process is the root; a child that burns CPU and is reaped moves into its cutime.
  ProcessTreeCpu tree({getpid()});
  ASSERT_FALSE(tree.empty());
  const double before = *tree.Seconds();
  ChildRun r =
      RunChild("/bin/sh", {"-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"}, OutPath());
  std::remove(OutPath().c_str());
  ASSERT_EQ(r.exit_code, 0);
  const double after = *tree.Seconds();
  EXPECT_GE(after - before, r.cpu_seconds * 0.9 - 0.02);
  EXPECT_FALSE(ProcessTreeCpu::FromStateDir("/nonexistent").Seconds().has_value());
  EXPECT_FALSE(ProcessTreeCpu().Seconds().has_value());
}

}  // namespace
}  // namespace txn_recovery::bench
