// The decision table (docs/state-machine.md): what the daemon does with a transaction of a
// given state and age. Pure functions, no I/O.
//
// The "older than" column is written once, in EligibleAges: Decide, the sweep's candidate
// query and `inspect`'s count of stuck transactions all derive from it, so that what the
// sweep reads, what it acts on and what an operator is told is stuck cannot drift apart.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "txn_recovery/base/document.h"
#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/shapes/thresholds.h"

namespace txn_recovery {

// Whether `txn`'s time is further ahead of `now` than thresholds.max_clock_skew.
bool AheadOfTheClock(const Transaction& txn, DateTime now, const Thresholds& thresholds);

// Why a transaction whose sub-document a newer daemon wrote is left alone, for reports.
std::string NewerFormat(const RecoveryRecord& record);

enum class Action {
  kNone,             // too young, terminal and outside the late-write window, or unknown
  kCancel,           // initial, stale: nothing was applied; mark cancelled
  kResume,           // pending: apply what is missing, mark applied, then finish
  kRollback,         // pending, expired: mark canceling, undo what was applied, mark cancelled
  kFinish,           // applied: remove markers, mark done
  kFinishRollback,   // canceling: undo what is still applied, mark cancelled
  kCheckLateWrites,  // terminal and recent: undo any change applied after the fact
  kQuarantine,       // the document does not fit its profile (never returned by Decide)
};
std::string_view ActionName(Action a) noexcept;

// now - then, saturating at the limits of milliseconds instead of overflowing: a date a
// corrupt document puts at the edge of the representable range is very old (or very far
// in the future), never a wrapped-around nonsense age.
std::chrono::milliseconds AgeOf(DateTime now, DateTime then) noexcept;
// t - d, saturating likewise.
DateTime Minus(DateTime t, std::chrono::milliseconds d) noexcept;

// The ages at which the daemon acts on a transaction in `state`: from `from` (inclusive)
// until `until` (exclusive; none = forever). nullopt: never by age. `resumable` is
// Transaction::resumable (Profile::ResumesPending): a pending transaction the daemon cannot
// resume is only acted on once it is old enough to roll back.
struct AgeWindow {
  std::chrono::milliseconds from;
  std::optional<std::chrono::milliseconds> until;
};
std::optional<AgeWindow> EligibleAges(TxnState state, bool resumable, const Thresholds& t);

// The decision table. `now` is the server's time.
Action Decide(const Transaction& txn, DateTime now, const Thresholds& thresholds);

// What an operator's `retry` does: the action the decision table gives `txn` once it is
// old enough to be acted on at all (its age taken as at least the start of its window);
// for a terminal transaction, the late-write check at any age.
Action DecideIgnoringAge(const Transaction& txn, DateTime now, const Thresholds& thresholds);

// The row of the decision table that applies to `txn` at `now`, and why, in words:
// "pending, 12m31s old: at least resume_after (1m), under rollback_after (30m): resume"
// (ages and thresholds to the second: FormatDuration's DurationPrecision::kSeconds).
std::string DecisionRow(const Transaction& txn, DateTime now, const Thresholds& thresholds);

}  // namespace txn_recovery
