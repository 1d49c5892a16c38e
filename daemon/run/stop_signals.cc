#include "daemon/run/stop_signals.h"

#include <signal.h>

namespace txn_recovery::daemon {

StopSignals::Decision StopSignals::On(int sig, Clock::time_point now) {
  if (!first_) {
    first_ = now;
    return Decision::kDrain;
  }
  if (sig == SIGINT || sig == SIGQUIT) return Decision::kExitNow;
  return now - *first_ >= grace_ ? Decision::kExitNow : Decision::kIgnore;
}

}  // namespace txn_recovery::daemon
