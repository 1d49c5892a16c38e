#include "txn_recovery/engine/decision.h"

#include <algorithm>
#include <limits>

#include "txn_recovery/base/duration.h"

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
      // What is left to apply only the application knows when it cannot be resumed (tagged
      // inserts): it keeps the whole of rollback_after to finish.
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

std::string NewerFormat(const RecoveryRecord& record) {
  return "its daemon's sub-document is in format " + std::to_string(record.format) +
         ", newer than this txn-recoveryd's (" + std::to_string(RecoveryRecord::kFormat) +
         "): left alone; upgrade this daemon (docs/upgrading.md)";
}

Action Decide(const Transaction& txn, DateTime now, const Thresholds& t) {
  if (txn.record.Newer()) return Action::kNone;  // not this daemon's to read, nor to drive
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

Action DecideIgnoringAge(const Transaction& txn, DateTime now, const Thresholds& t) {
  if (txn.record.Newer()) return Action::kNone;
  if (IsTerminal(txn.state)) return Action::kCheckLateWrites;
  const std::optional<AgeWindow> window = EligibleAges(txn.state, txn.resumable, t);
  if (!window) return Action::kNone;
  const std::chrono::milliseconds age = std::max(AgeOf(now, txn.last_modified), window->from);
  Transaction aged = txn;
  aged.last_modified = Minus(now, age);
  return Decide(aged, now, t);
}

std::string DecisionRow(const Transaction& txn, DateTime now, const Thresholds& t) {
  const std::chrono::milliseconds age = AgeOf(now, txn.last_modified);
  // Appended piece by piece: GCC 12 at -O3 takes `a + FormatDuration(...) + b` for an
  // overlapping copy (-Wrestrict, a false positive).
  std::string row(TxnStateName(txn.state));
  row.append(", ").append(FormatDuration(age, DurationPrecision::kSeconds)).append(" old: ");
  auto threshold = [](std::chrono::milliseconds d) {
    std::string text = "(";
    text.append(FormatDuration(d, DurationPrecision::kSeconds)).append(")");
    return text;
  };
  const std::optional<AgeWindow> w = EligibleAges(txn.state, txn.resumable, t);
  const Action action = Decide(txn, now, t);
  if (txn.record.Newer()) return row + NewerFormat(txn.record);
  if (AheadOfTheClock(txn, now, t))
    return row.append("ahead of the server's clock by more than max_clock_skew ")
        .append(threshold(t.max_clock_skew))
        .append(": reported, not acted on");
  if (!w) return row + "terminal and past the late-write window: nothing to do";
  switch (txn.state) {
    case TxnState::kInitial:
      row += age >= t.initial_timeout ? "at least initial_timeout " : "under initial_timeout ";
      row += threshold(t.initial_timeout);
      break;
    case TxnState::kPending:
      if (!txn.resumable) {
        row += std::string(age >= t.rollback_after ? "at least" : "under") + " rollback_after " +
               threshold(t.rollback_after) + " (only its application can finish it before that)";
      } else if (age >= t.rollback_after) {
        row += "at least rollback_after " + threshold(t.rollback_after);
      } else {
        row += std::string(age >= t.resume_after ? "at least" : "under") + " resume_after " +
               threshold(t.resume_after) + ", under rollback_after " + threshold(t.rollback_after);
      }
      break;
    case TxnState::kApplied:
    case TxnState::kCanceling:
      row += std::string(age >= t.resume_after ? "at least" : "under") + " resume_after " +
             threshold(t.resume_after);
      break;
    case TxnState::kDone:
    case TxnState::kCancelled:
      row += std::string(age < t.resume_after ? "under resume_after " + threshold(t.resume_after)
                         : age >= t.late_write_window
                             ? "past late_write_window " + threshold(t.late_write_window)
                             : "within late_write_window " + threshold(t.late_write_window));
      break;
  }
  return row + ": " + (action == Action::kNone ? "nothing yet" : std::string(ActionName(action)));
}

}  // namespace txn_recovery
