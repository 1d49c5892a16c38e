// The Prometheus registry: exact exposition text, escaping, histograms, misuse, threads.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "daemon/serving/metrics.h"

namespace txn_recovery::daemon {
namespace {

using T = Metrics::Type;

TEST(Metrics, ACounterWithLabelsRendersHelpTypeAndOneLinePerSeries) {
  Metrics m;
  m.Describe("txn_recoveryd_resolved_total", T::kCounter, "Resolved transactions.");
  m.Inc("txn_recoveryd_resolved_total", {{"watch", "bank"}, {"action", "rollback"}});
  m.Inc("txn_recoveryd_resolved_total", {{"watch", "bank"}, {"action", "rollback"}}, 2);
  m.Inc("txn_recoveryd_resolved_total", {{"watch", "bank"}, {"action", "finish"}});
  EXPECT_EQ(m.Render(),
            "# HELP txn_recoveryd_resolved_total Resolved transactions.\n"
            "# TYPE txn_recoveryd_resolved_total counter\n"
            "txn_recoveryd_resolved_total{action=\"finish\",watch=\"bank\"} 1\n"
            "txn_recoveryd_resolved_total{action=\"rollback\",watch=\"bank\"} 3\n");
  EXPECT_EQ(m.Value("txn_recoveryd_resolved_total", {{"action", "rollback"}, {"watch", "bank"}}),
            3);
}

TEST(Metrics, LabelsInAnyOrderAreTheSameSeries) {
  Metrics m;
  m.Describe("stuck", T::kGauge, "h");
  m.Set("stuck", {{"watch", "w"}, {"state", "pending"}}, 4);
  m.Inc("stuck", {{"state", "pending"}, {"watch", "w"}}, -1);
  EXPECT_EQ(m.Value("stuck", {{"watch", "w"}, {"state", "pending"}}), 3);
  EXPECT_EQ(m.Render(),
            "# HELP stuck h\n# TYPE stuck gauge\nstuck{state=\"pending\",watch=\"w\"} 3\n");
}

TEST(Metrics, FamiliesAreSortedByNameAndSeriesByLabelValues) {
  Metrics m;
  m.Describe("zeta", T::kGauge, "z");
  m.Describe("alpha_total", T::kCounter, "a");
  m.Describe("middle", T::kGauge, "m");
  m.Set("zeta", {}, 1);
  m.Inc("alpha_total", {{"watch", "orders"}});
  m.Inc("alpha_total", {{"watch", "bank"}});
  m.Inc("alpha_total", {{"watch", "ledger"}});
  m.Set("middle", {{"a", "2"}, {"b", "1"}}, 1);
  m.Set("middle", {{"a", "1"}, {"b", "9"}}, 2);
  EXPECT_EQ(m.Render(),
            "# HELP alpha_total a\n# TYPE alpha_total counter\n"
            "alpha_total{watch=\"bank\"} 1\n"
            "alpha_total{watch=\"ledger\"} 1\n"
            "alpha_total{watch=\"orders\"} 1\n"
            "# HELP middle m\n# TYPE middle gauge\n"
            "middle{a=\"1\",b=\"9\"} 2\n"
            "middle{a=\"2\",b=\"1\"} 1\n"
            "# HELP zeta z\n# TYPE zeta gauge\n"
            "zeta 1\n");
}

TEST(Metrics, HelpAndLabelValuesAreEscapedAsTheFormatRequires) {
  Metrics m;
  m.Describe("odd", T::kGauge, "back\\slash and\nnewline \"quotes stay\"");
  m.Set("odd", {{"path", "C:\\dir\n\"x\""}}, 1);
  EXPECT_EQ(m.Render(),
            "# HELP odd back\\\\slash and\\nnewline \"quotes stay\"\n"
            "# TYPE odd gauge\n"
            "odd{path=\"C:\\\\dir\\n\\\"x\\\"\"} 1\n");
}

TEST(Metrics, AHistogramHasCumulativeBucketsSumAndCount) {
  Metrics m;
  m.Describe("d_seconds", T::kHistogram, "Durations.", {0.005, 0.5, 1, 2.5});
  // Binary fractions, so that the sum is exact.
  for (double v : {0.00390625, 0.25, 0.75, 1.0, 3.0}) m.Observe("d_seconds", {{"watch", "w"}}, v);
  EXPECT_EQ(m.Render(),
            "# HELP d_seconds Durations.\n"
            "# TYPE d_seconds histogram\n"
            "d_seconds_bucket{watch=\"w\",le=\"0.005\"} 1\n"
            "d_seconds_bucket{watch=\"w\",le=\"0.5\"} 2\n"
            "d_seconds_bucket{watch=\"w\",le=\"1\"} 4\n"  // le is inclusive: 1.0 counts
            "d_seconds_bucket{watch=\"w\",le=\"2.5\"} 4\n"
            "d_seconds_bucket{watch=\"w\",le=\"+Inf\"} 5\n"
            "d_seconds_sum{watch=\"w\"} 5.00390625\n"
            "d_seconds_count{watch=\"w\"} 5\n");
  EXPECT_EQ(m.Value("d_seconds", {{"watch", "w"}}), 5);
}

TEST(Metrics, AHistogramWithoutLabelsAndWithoutBucketsUsesTheClientDefaults) {
  Metrics m;
  m.Describe("h", T::kHistogram, "x");
  m.Observe("h", {}, 7);
  std::string out = m.Render();
  EXPECT_NE(out.find("h_bucket{le=\"0.005\"} 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("h_bucket{le=\"5\"} 0\nh_bucket{le=\"10\"} 1\nh_bucket{le=\"+Inf\"} 1\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("h_sum 7\nh_count 1\n"), std::string::npos) << out;
}

TEST(Metrics, ValuesPrintIntegersPlainlyAndSpecialValuesAsPrometheusSpellsThem) {
  Metrics m;
  m.Describe("g", T::kGauge, "x");
  m.Set("g", {{"k", "big"}}, 1700000000);  // a Unix timestamp: no exponent
  m.Set("g", {{"k", "frac"}}, 0.25);
  m.Set("g", {{"k", "nan"}}, std::numeric_limits<double>::quiet_NaN());
  m.Set("g", {{"k", "neg"}}, -3);
  m.Set("g", {{"k", "ninf"}}, -std::numeric_limits<double>::infinity());
  m.Set("g", {{"k", "pinf"}}, std::numeric_limits<double>::infinity());
  m.Set("g", {{"k", "tiny"}}, 1e-7);
  EXPECT_EQ(m.Render(),
            "# HELP g x\n# TYPE g gauge\n"
            "g{k=\"big\"} 1700000000\n"
            "g{k=\"frac\"} 0.25\n"
            "g{k=\"nan\"} NaN\n"
            "g{k=\"neg\"} -3\n"
            "g{k=\"ninf\"} -Inf\n"
            "g{k=\"pinf\"} +Inf\n"
            "g{k=\"tiny\"} 1e-07\n");
}

TEST(Metrics, ClearDropsEverySeriesAndAnEmptyFamilyIsNotRendered) {
  Metrics m;
  m.Describe("stuck", T::kGauge, "h");
  m.Set("stuck", {{"state", "pending"}}, 2);
  m.Set("stuck", {{"state", "applied"}}, 1);
  m.Clear("stuck");
  EXPECT_EQ(m.Render(), "");
  EXPECT_EQ(m.Value("stuck", {{"state", "pending"}}), 0);
  m.Set("stuck", {{"state", "applied"}}, 5);
  EXPECT_EQ(m.Render(), "# HELP stuck h\n# TYPE stuck gauge\nstuck{state=\"applied\"} 5\n");
}

TEST(Metrics, RedeclaringWithTheSameTypeKeepsTheFamilyAndItsSeries) {
  Metrics m;
  m.Describe("c_total", T::kCounter, "first help");
  m.Inc("c_total");
  m.Describe("c_total", T::kCounter, "second help");
  EXPECT_EQ(m.Render(), "# HELP c_total first help\n# TYPE c_total counter\nc_total 1\n");
  EXPECT_THROW(m.Describe("c_total", T::kGauge, "h"), std::logic_error);
}

TEST(Metrics, MisuseIsAProgrammingError) {
  Metrics m;
  EXPECT_THROW(m.Describe("9lives", T::kGauge, "h"), std::logic_error);
  EXPECT_THROW(m.Describe("has-dash", T::kGauge, "h"), std::logic_error);
  EXPECT_THROW(m.Describe("", T::kGauge, "h"), std::logic_error);
  EXPECT_THROW(m.Describe("g_with_buckets", T::kGauge, "h", {1}), std::logic_error);
  EXPECT_THROW(m.Describe("unsorted", T::kHistogram, "h", {1, 0.5}), std::logic_error);
  EXPECT_NO_THROW(m.Describe("ns:recorded_rule", T::kGauge, "h"));

  EXPECT_THROW(m.Inc("undeclared_total"), std::logic_error);
  EXPECT_THROW(m.Set("undeclared", {}, 1), std::logic_error);
  EXPECT_THROW(m.Clear("undeclared"), std::logic_error);

  m.Describe("c_total", T::kCounter, "h");
  m.Describe("g", T::kGauge, "h");
  m.Describe("h_seconds", T::kHistogram, "h", {1});
  EXPECT_THROW(m.Inc("c_total", {}, -1), std::logic_error);
  EXPECT_THROW(m.Set("c_total", {}, 1), std::logic_error);
  EXPECT_THROW(m.Observe("g", {}, 1), std::logic_error);
  EXPECT_THROW(m.Inc("h_seconds"), std::logic_error);
  EXPECT_THROW(m.Set("g", {{"bad-name", "v"}}, 1), std::logic_error);
  EXPECT_THROW(m.Set("g", {{"__reserved", "v"}}, 1), std::logic_error);
  EXPECT_THROW(m.Set("g", {{"a", "1"}, {"a", "2"}}, 1), std::logic_error);
  EXPECT_THROW(m.Observe("h_seconds", {{"le", "1"}}, 1), std::logic_error);
  EXPECT_EQ(m.Render(), "") << "a refused update must leave no series behind";

  m.Set("g", {{"watch", "w"}}, 1);
  EXPECT_THROW(m.Set("g", {{"wacth", "w"}}, 1), std::logic_error)
      << "a series with other label names than its family's is a typo";
}

TEST(Metrics, ConcurrentIncrementsFromSeveralThreadsSumExactly) {
  Metrics m;
  m.Describe("c_total", T::kCounter, "h");
  m.Describe("h_seconds", T::kHistogram, "h", {1});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&m, t] {
      Labels mine = {{"thread", std::to_string(t)}};
      for (int i = 0; i < kPerThread; ++i) {
        m.Inc("c_total", {{"thread", "shared"}});
        m.Inc("c_total", mine);
        m.Observe("h_seconds", {}, 0.5);
        if (i % 1000 == 0) (void)m.Render();  // readers interleave with writers
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(m.Value("c_total", {{"thread", "shared"}}), kThreads * kPerThread);
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(m.Value("c_total", {{"thread", std::to_string(t)}}), kPerThread);
  EXPECT_EQ(m.Value("h_seconds", {}), kThreads * kPerThread);
  EXPECT_NE(m.Render().find("h_seconds_sum 40000\n"), std::string::npos);
}

TEST(Metrics, StandardFamiliesAreDeclaredWithTheirContractNamesAndBuildInfoIsSet) {
  Metrics m;
  DescribeStandardMetrics(&m, "1.2.3", "v1.2.3-4-gabcdef0");
  EXPECT_EQ(m.Render(),
            "# HELP txn_recoveryd_build_info Always 1; the version and revision labels say "
            "which build is running.\n"
            "# TYPE txn_recoveryd_build_info gauge\n"
            "txn_recoveryd_build_info{revision=\"v1.2.3-4-gabcdef0\",version=\"1.2.3\"} 1\n");

  // Every contract name is declared with its type: updating it the right way is accepted.
  const Labels w = {{"watch", "bank"}};
  for (const char* c : {"txn_recoveryd_sweeps_total", "txn_recoveryd_sweep_failures_total",
                        "txn_recoveryd_quarantined_total", "txn_recoveryd_late_writes_undone_total",
                        "txn_recoveryd_busy_total"}) {
    EXPECT_NO_THROW(m.Inc(c, w)) << c;
    EXPECT_THROW(m.Set(c, w, 1), std::logic_error) << c << " must be a counter";
  }
  EXPECT_NO_THROW(m.Inc("txn_recoveryd_resolved_total", {{"watch", "b"}, {"action", "commit"}}));
  EXPECT_NO_THROW(
      m.Inc("txn_recoveryd_transaction_failures_total", {{"watch", "b"}, {"action", "commit"}}));
  EXPECT_NO_THROW(
      m.Inc("txn_recoveryd_finished_removed_total", {{"watch", "b"}, {"mode", "delete"}}));
  EXPECT_NO_THROW(m.Inc("txn_recoveryd_log_messages_suppressed_total"));
  for (const char* g : {"txn_recoveryd_last_successful_sweep_timestamp_seconds",
                        "txn_recoveryd_oldest_stuck_age_seconds",
                        "txn_recoveryd_quarantined_transactions", "txn_recoveryd_paused"}) {
    EXPECT_NO_THROW(m.Set(g, w, 1)) << g;
  }
  EXPECT_NO_THROW(m.Set("txn_recoveryd_stuck_transactions", {{"watch", "b"}, {"state", "x"}}, 1));
  for (const char* g : {"txn_recoveryd_database_up", "txn_recoveryd_last_reload_successful",
                        "txn_recoveryd_last_reload_success_timestamp_seconds"}) {
    EXPECT_NO_THROW(m.Set(g, {}, 1)) << g;
  }
  m.Observe("txn_recoveryd_sweep_duration_seconds", w, 45);
  std::string out = m.Render();
  EXPECT_NE(out.find("txn_recoveryd_sweep_duration_seconds_bucket{watch=\"bank\",le=\"30\"} 0\n"
                     "txn_recoveryd_sweep_duration_seconds_bucket{watch=\"bank\",le=\"60\"} 1\n"
                     "txn_recoveryd_sweep_duration_seconds_bucket{watch=\"bank\",le=\"120\"} 1\n"
                     "txn_recoveryd_sweep_duration_seconds_bucket{watch=\"bank\",le=\"+Inf\"} 1\n"),
            std::string::npos)
      << out;
  EXPECT_NE(
      out.find("txn_recoveryd_sweep_duration_seconds_bucket{watch=\"bank\",le=\"0.005\"} 0\n"),
      std::string::npos)
      << out;
}

TEST(Metrics, TheHelpOfEachCounterSaysWhatItCounts) {
  Metrics m;
  DescribeStandardMetrics(&m, "1", "r");
  const Labels w = {{"watch", "bank"}};
  for (const char* c : {"txn_recoveryd_sweeps_total", "txn_recoveryd_quarantined_total",
                        "txn_recoveryd_busy_total"})
    m.Inc(c, w, 0);
  std::string text = m.Render();
  // sweeps_total counts every attempt (the scheduler counts a failed one in both).
  EXPECT_NE(text.find("# HELP txn_recoveryd_sweeps_total Sweeps of a watch attempted, failed "
                      "ones included"),
            std::string::npos)
      << text;
  // A malformed document is quarantined at once, not only after max_failures sweeps.
  EXPECT_NE(text.find("# HELP txn_recoveryd_quarantined_total Transactions set aside for an "
                      "operator: documents that do not fit their profile, and transactions "
                      "whose recovery failed sweep.max_failures sweeps in a row."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# HELP txn_recoveryd_busy_total Transactions left alone because another "
                      "daemon held their lease"),
            std::string::npos)
      << text;
}

TEST(StuckAgeEstimate, GrowsFromTheLastCountWhileSweepsFailAndRestartsAtTheNextCount) {
  using std::chrono::milliseconds;
  using std::chrono::minutes;
  const StuckAgeEstimate::Clock::time_point t0{};
  StuckAgeEstimate age;
  EXPECT_FALSE(age.known()) << "no sweep has counted yet: nothing to carry on";

  // A sweep counts a transaction stuck for 50 minutes; the sweeps after it fail (the
  // database went away). The transaction is as stuck as before, and older: 10 minutes on,
  // the gauge reads an hour, and an alert at an hour can fire during the outage.
  age.Measured(minutes(50), t0);
  EXPECT_TRUE(age.known());
  EXPECT_EQ(age.SecondsAt(t0), 3000);
  EXPECT_EQ(age.SecondsAt(t0 + minutes(10)), 3600);
  EXPECT_EQ(age.SecondsAt(t0 + minutes(10) + milliseconds(500)), 3600.5);

  // The next count is what the database says, whatever the estimate was: the application
  // finished the old one meanwhile, and the oldest now is 2 minutes old.
  age.Measured(minutes(2), t0 + minutes(11));
  EXPECT_EQ(age.SecondsAt(t0 + minutes(11)), 120);

  // Nothing stuck at the last count: a failed sweep has seen nothing to age.
  age.Measured(std::nullopt, t0 + minutes(12));
  EXPECT_EQ(age.SecondsAt(t0 + minutes(40)), 0);
}

}  // namespace
}  // namespace txn_recovery::daemon
