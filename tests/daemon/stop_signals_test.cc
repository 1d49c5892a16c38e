// How `run` counts stop signals (stop_signals.h): a process-group SIGTERM that arrives
// twice starts one drain; an operator's second signal ends it.
#include <gtest/gtest.h>
#include <signal.h>

#include "daemon/run/stop_signals.h"

namespace txn_recovery::daemon {
namespace {

using D = StopSignals::Decision;
using std::chrono::milliseconds;

TEST(StopSignals, ACopyOfTheFirstSigtermWithinTheGraceIsTheSameRequest) {
  StopSignals s(milliseconds(1000));
  auto t0 = StopSignals::Clock::now();
  EXPECT_EQ(s.On(SIGTERM, t0), D::kDrain);
  EXPECT_EQ(s.On(SIGTERM, t0 + milliseconds(1)), D::kIgnore) << "timeout(1) signals twice";
  EXPECT_EQ(s.On(SIGTERM, t0 + milliseconds(999)), D::kIgnore);
  EXPECT_EQ(s.On(SIGTERM, t0 + milliseconds(1000)), D::kExitNow) << "after the grace: insist";
}

TEST(StopSignals, ASecondSigintOrSigquitExitsAtOnce) {
  for (int second : {SIGINT, SIGQUIT}) {
    StopSignals s;
    auto t0 = StopSignals::Clock::now();
    EXPECT_EQ(s.On(SIGTERM, t0), D::kDrain);
    EXPECT_EQ(s.On(second, t0 + milliseconds(1)), D::kExitNow) << second;
  }
  StopSignals s;
  auto t0 = StopSignals::Clock::now();
  EXPECT_EQ(s.On(SIGINT, t0), D::kDrain) << "the first Ctrl-C drains";
  EXPECT_EQ(s.On(SIGINT, t0 + milliseconds(300)), D::kExitNow) << "the second does not wait";
}

}  // namespace
}  // namespace txn_recovery::daemon
