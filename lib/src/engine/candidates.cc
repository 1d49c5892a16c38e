#include "txn_recovery/engine/candidates.h"

#include <algorithm>
#include <limits>
#include <map>

#include "txn_recovery/base/recovery_record.h"

namespace txn_recovery {

Filter NotYetSeen(const Profile& profile, const RecoveryPaths& paths) {
  Filter f;
  f.NotExists(profile.time_field).NotExists(paths.FirstSeen());
  return f;
}

std::vector<Filter> AgedAlternatives(const WatchSpec& watch, const std::vector<TxnState>& states,
                                     DateTime now, AgeSource clock) {
  const Profile& p = watch.profile;
  if (clock == AgeSource::kObjectId && p.missing_time != MissingTime::kObjectIdTime) return {};
  if (clock == AgeSource::kFirstSeen && p.missing_time != MissingTime::kFirstSeen) return {};
  if (clock == AgeSource::kNotYetSeen) return {};
  const std::string first_seen = RecoveryPaths(watch.lease_field).FirstSeen();
  // States sharing an age window share one alternative: {state: {$in: [...]}, age in it}.
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<Value>> groups;
  for (TxnState st : states) {
    const std::optional<AgeWindow> w = EligibleAges(st, p.ResumesPending(), watch.thresholds);
    if (!w) continue;
    std::vector<Value> spellings = p.states.SpellingsOf({st});
    if (spellings.empty()) continue;
    auto& group = groups[{w->from.count(), w->until ? w->until->count() : -1}];
    group.insert(group.end(), spellings.begin(), spellings.end());
  }
  std::vector<Filter> out;
  for (auto& [window, spellings] : groups) {
    // Older than `from`: a time before now - from; younger than `until`: at or after.
    const DateTime oldest_allowed = Minus(now, std::chrono::milliseconds(window.first));
    Filter f;
    f.In(p.state_field, std::move(spellings));
    if (clock == AgeSource::kTimeField) {
      f.Lt(p.time_field, oldest_allowed);
      if (window.second >= 0)
        f.Gte(p.time_field, Minus(now, std::chrono::milliseconds(window.second)));
    } else if (clock == AgeSource::kObjectId) {
      f.NotExists(p.time_field).Lt("_id", ObjectId::AtTime(oldest_allowed.millis));
      if (window.second >= 0)
        f.Gte("_id", ObjectId::AtTime(Minus(now, std::chrono::milliseconds(window.second)).millis));
    } else {
      f.NotExists(p.time_field).Lt(first_seen, oldest_allowed);
      if (window.second >= 0)
        f.Gte(first_seen, Minus(now, std::chrono::milliseconds(window.second)));
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Filter> UnknownStates(const Profile& profile) {
  const std::string& field = profile.state_field;
  std::vector<std::string> known;
  for (const Value& v : profile.states.AllSpellings())
    if (const std::string* s = v.as_string()) known.push_back(*s);
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  std::vector<Filter> out;
  if (known.empty()) {
    out.push_back(Filter().OfType(field, "string"));
  } else {
    out.push_back(Filter().Lt(field, known.front()));
    for (std::size_t i = 1; i < known.size(); ++i)
      out.push_back(Filter().Gt(field, known[i - 1]).Lt(field, known[i]));
    out.push_back(Filter().Gt(field, known.back()));
  }
  // No state, or null: two alternatives, since DocumentDB reads {state: null} (which means
  // both) by walking its index.
  out.push_back(Filter().NotExists(field));
  out.push_back(Filter().OfType(field, "null"));
  for (const char* type : kOtherStateTypes) out.push_back(Filter().OfType(field, type));
  return out;
}

namespace {

// The alternatives of the candidate query whose state is a known spelling.
std::vector<Filter> KnownStateAlternatives(const WatchSpec& watch, DateTime now) {
  const Profile& p = watch.profile;
  const std::vector<TxnState> all(kAllTxnStates.begin(), kAllTxnStates.end());
  std::vector<Filter> alternatives = AgedAlternatives(watch, all, now, AgeSource::kTimeField);
  for (AgeSource clock : {AgeSource::kObjectId, AgeSource::kFirstSeen})
    for (Filter& f : AgedAlternatives(watch, all, now, clock)) alternatives.push_back(std::move(f));
  // Documents that can never match the alternatives above must still be found, or they
  // would stay stuck without anyone knowing: unreadable times here, unknown states in a read
  // of their own (CandidateReads). Each of these alternatives, like those above, is bounded
  // by the state, so that each is a range of an index RequiredIndexes asks for and none
  // reads the finished history (an idle sweep's work must not grow with it;
  // docs/state-machine.md, "What a sweep reads").
  // A transaction in flight whose time cannot be read is quarantined. A finished one is left
  // alone: nothing of it is left to recover, and its late-write window cannot be placed.
  const std::vector<Value> open = p.states.NonTerminalSpellings();
  const std::string first_seen = RecoveryPaths(watch.lease_field).FirstSeen();
  if (p.missing_time == MissingTime::kObjectIdTime) {
    alternatives.push_back(
        Filter().In(p.state_field, open).NotExists(p.time_field).NotObjectId("_id"));
  } else if (p.missing_time == MissingTime::kFirstSeen) {
    // Not seen yet: a read of its own (NotYetSeenRead). A stamp that is not a date:
    // quarantined.
    alternatives.push_back(Filter()
                               .In(p.state_field, open)
                               .NotExists(p.time_field)
                               .Exists(first_seen)
                               .NotDateTime(first_seen));
  } else {
    alternatives.push_back(Filter().In(p.state_field, open).NotExists(p.time_field));
  }
  alternatives.push_back(Filter().In(p.state_field, open).NotDateTime(p.time_field));
  // Ahead of the clock by more than the skew allowed, in any known state: reported
  // (AheadOfTheClock). A range of the index's time key within each state.
  const DateTime ahead{now.millis > std::numeric_limits<std::int64_t>::max() -
                                        watch.thresholds.max_clock_skew.count()
                           ? std::numeric_limits<std::int64_t>::max()
                           : now.millis + watch.thresholds.max_clock_skew.count() + 1};
  alternatives.push_back(
      Filter().In(p.state_field, p.states.AllSpellings()).Gte(p.time_field, ahead));
  return alternatives;
}

// Not quarantined, and the application's own (owner condition), with these alternatives.
Filter Ours(const WatchSpec& watch, std::vector<Filter> alternatives) {
  Filter f;
  f.NotExists(RecoveryPaths(watch.lease_field).Quarantine())
      .And(watch.profile.owner.Condition())
      .AnyOf(std::move(alternatives));
  return f;
}

}  // namespace

IndexSpec StateIndex(const Profile& profile) {
  IndexSpec spec{{{profile.state_field, 1}}, ""};
  spec.hinted = true;
  return spec;
}

IndexSpec AgeIndex(const WatchSpec& watch, AgeSource clock) {
  const Profile& p = watch.profile;
  IndexSpec spec{{{p.state_field, 1}}, ""};
  if (clock == AgeSource::kTimeField) spec.keys.emplace_back(p.time_field, 1);
  if (clock == AgeSource::kObjectId) spec.keys.emplace_back("_id", 1);
  if (clock == AgeSource::kFirstSeen)
    spec.keys.emplace_back(RecoveryPaths(watch.lease_field).FirstSeen(), 1);
  spec.ordered = true;
  spec.hinted = true;
  return spec;
}

CandidateRead FinishedTimesProbe(const WatchSpec& watch) {
  const Profile& p = watch.profile;
  return {Filter().In(p.state_field, p.states.TerminalSpellings()).OfType(p.time_field, "date"),
          AgeIndex(watch, AgeSource::kTimeField).keys};
}

namespace {

// Transactions seen by no sweep yet (missing_time = "first_seen"), finished ones too: the
// sweep stamps them (a finished one's late-write window starts at the stamp). Read on the
// index whose second key the finished transactions carry, where "that key absent" is the
// few not yet seen: the time, where they have one; else the stamp. On the other, that
// point is the whole history (DocumentDB reads it; mongod would too).
CandidateRead NotYetSeenRead(const WatchSpec& watch, bool finished_carry_times) {
  const Profile& p = watch.profile;
  return {
      Ours(watch, {NotYetSeen(p, RecoveryPaths(watch.lease_field))
                       .In(p.state_field, p.states.AllSpellings())}),
      AgeIndex(watch, finished_carry_times ? AgeSource::kTimeField : AgeSource::kFirstSeen).keys};
}

}  // namespace

Filter CandidateFilter(const WatchSpec& watch, DateTime now) {
  std::vector<Filter> alternatives = KnownStateAlternatives(watch, now);
  for (Filter& f : UnknownStates(watch.profile)) alternatives.push_back(std::move(f));
  if (watch.profile.missing_time == MissingTime::kFirstSeen)
    alternatives.push_back(NotYetSeen(watch.profile, RecoveryPaths(watch.lease_field))
                               .In(watch.profile.state_field, watch.profile.states.AllSpellings()));
  return Ours(watch, std::move(alternatives));
}

std::optional<Filter> OverdueFilter(const WatchSpec& watch, DateTime now,
                                    std::chrono::milliseconds overdue_after) {
  const std::vector<TxnState> all(kAllTxnStates.begin(), kAllTxnStates.end());
  const DateTime then = Minus(now, overdue_after);
  std::vector<Filter> alternatives;
  for (AgeSource clock : {AgeSource::kTimeField, AgeSource::kObjectId, AgeSource::kFirstSeen})
    for (Filter& f : AgedAlternatives(watch, all, then, clock))
      alternatives.push_back(std::move(f));
  // No alternative is no disjunction, which would match everything.
  if (alternatives.empty()) return std::nullopt;
  return Ours(watch, std::move(alternatives));
}

std::vector<CandidateRead> CandidateReads(const WatchSpec& watch, DateTime now,
                                          bool finished_carry_times) {
  std::vector<CandidateRead> reads;
  reads.push_back({Ours(watch, KnownStateAlternatives(watch, now)), {}});
  reads.push_back({Ours(watch, UnknownStates(watch.profile)), StateIndex(watch.profile).keys});
  if (watch.profile.missing_time == MissingTime::kFirstSeen)
    reads.push_back(NotYetSeenRead(watch, finished_carry_times));
  return reads;
}

}  // namespace txn_recovery
