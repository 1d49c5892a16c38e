#include "txn_recovery/candidates.h"

#include <limits>
#include <map>

#include "txn_recovery/recovery_record.h"

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

Filter CandidateFilter(const WatchSpec& watch, DateTime now) {
  const Profile& p = watch.profile;
  const std::vector<TxnState> all(kAllTxnStates.begin(), kAllTxnStates.end());
  std::vector<Filter> alternatives = AgedAlternatives(watch, all, now, AgeSource::kTimeField);
  for (AgeSource clock : {AgeSource::kObjectId, AgeSource::kFirstSeen})
    for (Filter& f : AgedAlternatives(watch, all, now, clock)) alternatives.push_back(std::move(f));
  // Documents that can never match the alternatives above must still be found, or they
  // would stay stuck without anyone knowing: unknown states and unreadable times. Each of
  // these alternatives, like those above, is bounded by the state, so that each is a range
  // of the index RequiredIndexes asks for and none reads the finished history (an idle
  // sweep's work must not grow with it; docs/state-machine.md, "What a sweep reads").
  // Unknown states: the complement of the known spellings is a set of ranges of the index.
  alternatives.push_back(Filter().Nin(p.state_field, p.states.AllSpellings()));
  // A transaction in flight whose time cannot be read is quarantined. A finished one is left
  // alone: nothing of it is left to recover, and its late-write window cannot be placed.
  const std::vector<Value> open = p.states.NonTerminalSpellings();
  const std::string first_seen = RecoveryPaths(watch.lease_field).FirstSeen();
  if (p.missing_time == MissingTime::kObjectIdTime) {
    alternatives.push_back(
        Filter().In(p.state_field, open).NotExists(p.time_field).NotObjectId("_id"));
  } else if (p.missing_time == MissingTime::kFirstSeen) {
    // Not seen yet: the sweep stamps it, finished ones too (their late-write window starts
    // at the stamp). A stamp that is not a date: quarantined.
    alternatives.push_back(
        NotYetSeen(p, RecoveryPaths(watch.lease_field)).In(p.state_field, p.states.AllSpellings()));
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
  Filter f;
  f.NotExists(RecoveryPaths(watch.lease_field).Quarantine())
      .And(p.owner.Condition())
      .AnyOf(std::move(alternatives));
  return f;
}

}  // namespace txn_recovery
