// The process_* metrics (process_metrics.h) from /proc/<pid>/stat.
#include <gtest/gtest.h>

#include "daemon/serving/process_metrics.h"

namespace txn_recovery::daemon {
namespace {

TEST(ProcessMetrics, ReadsProcStatEvenWithSpacesAndParenthesesInTheCommandName) {
  // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24 (pages).
  const std::string stat =
      "4242 (txn (re) covery) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 150 0 0 20 0 7 0 "
      "123400 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
  std::optional<ProcessStats> s = ParseProcStat(stat, 1'700'000'000, 100, 4096);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 4.0);                     // (250 + 150) / 100
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1'700'001'234.0);  // boot + 123400 / 100
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 104857600.0);
  EXPECT_DOUBLE_EQ(s->resident_bytes, 2560.0 * 4096);
  EXPECT_FALSE(ParseProcStat("garbage", 0, 100, 4096));
  EXPECT_FALSE(ParseProcStat("1 (x) S 1 2 3", 0, 100, 4096)) << "too few fields";
}

TEST(ProcessMetrics, ThisProcessHasPlausibleFigures) {
  std::optional<ProcessStats> s = ReadProcessStats();
  ASSERT_TRUE(s) << "/proc is mounted on every machine the tests run on";
  EXPECT_GT(s->resident_bytes, 0);
  EXPECT_GE(s->open_fds, 3) << "stdin, stdout, stderr";
  EXPECT_GT(s->max_fds, s->open_fds);
  Metrics m;
  UpdateProcessMetrics(&m);
  EXPECT_GT(m.Value("process_resident_memory_bytes", {}), 0);
  std::string text = m.Render();
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE process_start_time_seconds gauge\n"), std::string::npos);
}

}  // namespace
}  // namespace txn_recovery::daemon
