// The ages at which a watch acts on a transaction (the decision table, decision.h, reads
// them; `ValidateThresholds`, config_problem.h, checks them). A header of its own, and not
// part of decision.h, because validating a watch's settings is the shapes layer's work and
// must not reach up into the engine for the type it validates.
#pragma once

#include <chrono>

namespace txn_recovery {

// The defaults are also a watch's in the daemon's configuration, whose documentation is
// rendered from them (a change here is a change there, caught by its tests until the
// documents follow).
struct Thresholds {
  std::chrono::milliseconds resume_after{std::chrono::minutes(1)};
  std::chrono::milliseconds rollback_after{std::chrono::minutes(30)};
  std::chrono::milliseconds initial_timeout{std::chrono::minutes(30)};
  // Terminal transactions younger than this have their participants re-checked for late
  // writes (an application that woke up after the daemon resolved its transaction).
  std::chrono::milliseconds late_write_window{std::chrono::hours(1)};
  // A transaction whose time is further ahead of the server's clock than this (an
  // application host whose clock is wrong, a corrupt date) is reported on every sweep until
  // the server's clock reaches it, instead of waiting unseen.
  std::chrono::milliseconds max_clock_skew{std::chrono::minutes(5)};
};

}  // namespace txn_recovery
