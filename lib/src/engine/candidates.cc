#include "txn_recovery/engine/candidates.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>

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

namespace {

// The UTF-8 encoding of code point `cp`.
std::string Utf8(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// How many of the greatest character an upper bound below a finished spelling ends with:
// a state must begin with the spelling's predecessor and this many of them to pass it.
constexpr int kPastTheLastCharacter = 16;

// Closed upper bounds whose union holds every string that sorts below `spelling`, but for
// strings that begin with the spelling's last character lowered by one and then
// kPastTheLastCharacter of the greatest character: on DocumentDB's ordered {state, time}
// index an open bound `$lt: "done"` walks every entry of "done" (the whole finished history)
// where a closed bound at a string nobody writes stops at once. The greatest character is
// U+10FFFF in the order of UTF-8's bytes (mongod, DocumentDB) and U+FFFF in that of UTF-16's
// units (mongo-java-server orders strings as Java does): one bound each. Exact (one bound)
// when the spelling ends with U+0000, or is empty (nothing is below it).
std::vector<std::string> ClosedBoundsBelow(const std::string& spelling) {
  if (spelling.empty()) return {};
  // The last code point: its lead byte is the last byte that is not a continuation byte.
  std::size_t at = spelling.size() - 1;
  while (at > 0 && (static_cast<unsigned char>(spelling[at]) & 0xC0) == 0x80) --at;
  const std::string prefix = spelling.substr(0, at);
  const auto lead = static_cast<unsigned char>(spelling[at]);
  char32_t cp = lead < 0x80   ? lead
                : lead < 0xE0 ? lead & 0x1F
                : lead < 0xF0 ? lead & 0x0F
                              : lead & 0x07;
  for (std::size_t i = at + 1; i < spelling.size(); ++i)
    cp = (cp << 6) | (static_cast<unsigned char>(spelling[i]) & 0x3F);
  if (cp == 0) return {prefix};
  char32_t below = cp - 1;
  if (below >= 0xD800 && below <= 0xDFFF) below = 0xD7FF;  // no surrogate is a character
  std::vector<std::string> out;
  for (char32_t greatest : {char32_t{0x10FFFF}, char32_t{0xFFFF}}) {
    std::string bound = prefix + Utf8(below);
    for (int i = 0; i < kPastTheLastCharacter; ++i) bound += Utf8(greatest);
    out.push_back(std::move(bound));
  }
  return out;
}

}  // namespace

std::vector<Filter> UnknownStates(const Profile& profile) {
  const std::string& field = profile.state_field;
  std::vector<std::string> known, finished;
  for (const Value& v : profile.states.AllSpellings())
    if (const std::string* s = v.as_string()) known.push_back(*s);
  for (const Value& v : profile.states.TerminalSpellings())
    if (const std::string* s = v.as_string()) finished.push_back(*s);
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  std::vector<Filter> out;
  if (known.empty()) out.push_back(Filter().OfType(field, "string"));
  // The strings between two spellings, below the first and above the last. Each range is
  // read on the ordered {state, time} index, which bounds a range of its first key by the
  // entries equal to either end: past a spelling is `$gte` of the spelling followed by
  // U+0000 (the next string in every order), and below a finished spelling is below a
  // string nobody writes (ClosedBoundsBelow), so that no read walks the finished history.
  for (std::size_t i = 0; i <= known.size() && !known.empty(); ++i) {
    Filter range;
    if (i > 0) range.Gte(field, known[i - 1] + std::string(1, '\0'));
    if (i == known.size()) {
      out.push_back(std::move(range));
    } else if (std::find(finished.begin(), finished.end(), known[i]) == finished.end()) {
      out.push_back(std::move(range.Lt(field, known[i])));
    } else {
      for (std::string& bound : ClosedBoundsBelow(known[i])) {
        Filter below = range;
        out.push_back(std::move(below.Lte(field, std::move(bound))));
      }
    }
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

Status AnyMatches(Store* store, const Namespace& ns, const CandidateRead& read, bool* found) {
  FindOptions o;
  o.limit = 1;
  o.projection = {"_id"};
  o.hint = read.hint;
  std::unique_ptr<Cursor> cursor;
  if (Status s = store->Find(ns, read.filter, o, &cursor); !s.ok()) return s;
  Document d;
  return cursor->Next(&d, found);
}

CandidateRead FinishedProbe(const WatchSpec& watch) {
  const Profile& p = watch.profile;
  return {Filter().In(p.state_field, p.states.TerminalSpellings()),
          AgeIndex(watch, AgeSource::kTimeField).keys};
}

CandidateRead TimelessProbe(const WatchSpec& watch) {
  const Profile& p = watch.profile;
  return {Filter().In(p.state_field, p.states.AllSpellings()).NotExists(p.time_field),
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
  reads.push_back(
      {Ours(watch, UnknownStates(watch.profile)), AgeIndex(watch, AgeSource::kTimeField).keys});
  if (watch.profile.missing_time == MissingTime::kFirstSeen)
    reads.push_back(NotYetSeenRead(watch, finished_carry_times));
  return reads;
}

}  // namespace txn_recovery
