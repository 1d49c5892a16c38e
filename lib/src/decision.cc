#include "txn_recovery/decision.h"

#include <limits>

namespace txn_recovery {

std::string_view ActionName(Action a) noexcept {
  switch (a) {
    case Action::kNone:
      return "none";
    case Action::kCancel:
      return "cancel";
    case Action::kResume:
      return "resume";
    case Action::kRollback:
      return "rollback";
    case Action::kFinish:
      return "finish";
    case Action::kFinishRollback:
      return "finish-rollback";
    case Action::kCheckLateWrites:
      return "check-late-writes";
    case Action::kQuarantine:
      return "quarantine";
  }
  return "?";
}

std::chrono::milliseconds AgeOf(DateTime now, DateTime then) noexcept {
  std::int64_t age;
  if (__builtin_sub_overflow(now.millis, then.millis, &age))
    age = now.millis < then.millis ? std::numeric_limits<std::int64_t>::min()
                                   : std::numeric_limits<std::int64_t>::max();
  return std::chrono::milliseconds(age);
}

DateTime Minus(DateTime t, std::chrono::milliseconds d) noexcept {
  std::int64_t out;
  if (__builtin_sub_overflow(t.millis, d.count(), &out))
    out = d.count() > 0 ? std::numeric_limits<std::int64_t>::min()
                        : std::numeric_limits<std::int64_t>::max();
  return DateTime{out};
}

std::optional<AgeWindow> EligibleAges(TxnState state, bool resumable, const Thresholds& t) {
  switch (state) {
    case TxnState::kInitial:
      return AgeWindow{t.initial_timeout, std::nullopt};
    case TxnState::kPending:
      // What is left to apply only the application knows when it cannot be resumed (seed
      // 003): it keeps the whole of rollback_after to finish.
      return AgeWindow{resumable ? t.resume_after : t.rollback_after, std::nullopt};
    case TxnState::kApplied:
    case TxnState::kCanceling:
      return AgeWindow{t.resume_after, std::nullopt};
    case TxnState::kDone:
    case TxnState::kCancelled:
      // The grace of resume_after leaves an application that finishes its own transaction
      // the time to do so before its participants are judged.
      if (t.late_write_window <= t.resume_after) return std::nullopt;
      return AgeWindow{t.resume_after, t.late_write_window};
  }
  return std::nullopt;
}

bool AheadOfTheClock(const Transaction& txn, DateTime now, const Thresholds& t) {
  return AgeOf(now, txn.last_modified) < -t.max_clock_skew;
}

Action Decide(const Transaction& txn, DateTime now, const Thresholds& t) {
  const std::chrono::milliseconds age = AgeOf(now, txn.last_modified);
  const std::optional<AgeWindow> window = EligibleAges(txn.state, txn.resumable, t);
  if (!window || age < window->from || (window->until && age >= *window->until))
    return Action::kNone;
  switch (txn.state) {
    case TxnState::kInitial:
      return Action::kCancel;
    case TxnState::kPending:
      return age >= t.rollback_after ? Action::kRollback : Action::kResume;
    case TxnState::kApplied:
      return Action::kFinish;
    case TxnState::kCanceling:
      return Action::kFinishRollback;
    case TxnState::kDone:
    case TxnState::kCancelled:
      return Action::kCheckLateWrites;
  }
  return Action::kNone;
}

}  // namespace txn_recovery
