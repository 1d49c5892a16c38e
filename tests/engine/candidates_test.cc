// The candidate query as a filter: what it finds, and the shape that lets an index bound it
// (docs/state-machine.md, "Finding candidates" and "What a sweep reads"). The server's
// account of the same query is tests/engine/server_work_test.cc.
#include <gtest/gtest.h>

#include "support/watch_config.h"
#include "txn_recovery/engine/candidates.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

const DateTime kNow{1'800'000'000'000};

WatchSpec Watch(const std::string& missing_time) {
  return WatchFromToml(
      "[[watch]]\nname = \"w\"\ndatabase = \"d\"\nprofile = \"transfer\"\nmissing_time = \"" +
          missing_time + "\"\n",
      "d");
}

TEST(CandidateQuery, EveryAlternativeIsBoundedByTheState) {
  // An alternative without a condition on the state is no range of an index on the state:
  // the server would read every finished transaction for it, on every sweep. So is one
  // that takes the complement of a set ($nin, $ne) or a set of types: ranges, points and
  // single types only.
  for (const char* missing_time : {"quarantine", "object_id", "first_seen"}) {
    SCOPED_TRACE(missing_time);
    const WatchSpec w = Watch(missing_time);
    std::vector<CandidateRead> reads = CandidateReads(w, kNow, true);
    for (CandidateRead& r : CandidateReads(w, kNow, false)) reads.push_back(std::move(r));
    reads.push_back(FinishedTimesProbe(w));
    for (const CandidateRead& read : reads) {
      // The probe is one range, no $or.
      if (read.filter.any_of().empty()) {
        bool bounded = false;
        for (const Predicate& p : read.filter.all())
          bounded = bounded || (p.path == w.profile.state_field && p.op == Predicate::Op::kIn);
        EXPECT_TRUE(bounded) << read.filter.ToString();
        continue;
      }
      ASSERT_FALSE(read.filter.any_of().empty());
      for (const Filter& alternative : read.filter.any_of()) {
        bool bounded = false;
        for (const Predicate& p : alternative.all())
          bounded = bounded || (p.path == w.profile.state_field &&
                                (p.op == Predicate::Op::kIn || p.op == Predicate::Op::kLt ||
                                 p.op == Predicate::Op::kGt || p.op == Predicate::Op::kLte ||
                                 p.op == Predicate::Op::kGte || p.op == Predicate::Op::kOfType ||
                                 p.op == Predicate::Op::kNotExists));
        EXPECT_TRUE(bounded) << alternative.ToString();
      }
    }
  }
}

TEST(CandidateQuery, TheReadsFindWhatTheQueryFindsAndUnknownStatesOnTheStateAndTimeIndex) {
  const WatchSpec w = Watch("quarantine");
  const std::vector<CandidateRead> reads = CandidateReads(w, kNow, true);
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_TRUE(reads[0].hint.empty()) << "the planner picks among the ordered indexes";
  EXPECT_EQ(reads[1].hint, AgeIndex(w, AgeSource::kTimeField).keys);
  const Filter all = CandidateFilter(w, kNow);
  const DateTime old = Minus(kNow, hours(1));
  // Strings below, between and above the spellings (a schema-book spelling under the
  // manual's profile sorts between "cancelled" and "done"), no state, null, other types.
  for (const Value& state :
       {Value("aborted"), Value("committed"), Value("cancelling"), Value("zombie"), Value(),
        Value(std::int64_t{3}), Value(true), Value(Document{{"s", 1}}), Value(old)}) {
    Document d{{"_id", 1}, {"state", state}, {"lastModified", old}};
    EXPECT_TRUE(all.Matches(d)) << state.ToString();
    EXPECT_FALSE(reads[0].filter.Matches(d)) << state.ToString();
    EXPECT_TRUE(reads[1].filter.Matches(d)) << state.ToString();
  }
  Document no_state{{"_id", 2}, {"lastModified", old}};
  EXPECT_TRUE(reads[1].filter.Matches(no_state)) << "no state at all";
  for (const char* known : {"pending", "applied", "done", "cancelled", "initial"}) {
    Document d{{"_id", 3}, {"state", known}, {"lastModified", old}};
    EXPECT_FALSE(reads[1].filter.Matches(d)) << known << " is a spelling";
  }
}

TEST(CandidateQuery, NoRangeOfUnknownStatesEndsAtAStateTheFinishedHistoryHolds) {
  // On DocumentDB's ordered {state, time} index a range of the state reads every entry equal
  // to either end: an end at "done" would be a walk of every finished transaction, at every
  // sweep. So no range opens past a spelling (it starts at the spelling and U+0000), and
  // none ends at a finished one.
  const WatchSpec w = Watch("quarantine");
  const std::vector<Value> finished = w.profile.states.TerminalSpellings();
  ASSERT_FALSE(finished.empty());
  for (const Filter& alternative : UnknownStates(w.profile)) {
    for (const Predicate& p : alternative.all()) {
      EXPECT_NE(p.op, Predicate::Op::kGt) << alternative.ToString();
      if (p.op != Predicate::Op::kLt && p.op != Predicate::Op::kLte) continue;
      for (const Value& f : finished) EXPECT_NE(p.value, f) << alternative.ToString();
    }
  }
}

TEST(CandidateQuery, StatesThatSortNextToASpellingAreUnknownStatesAllTheSame) {
  const WatchSpec w = Watch("quarantine");
  const Filter unknown = CandidateReads(w, kNow, true)[1].filter;
  const DateTime old = Minus(kNow, hours(1));
  auto with_state = [&](const std::string& state) {
    return Document{{"_id", 1}, {"state", Value(state)}, {"lastModified", old}};
  };
  const std::string max_utf8 = "\xF4\x8F\xBF\xBF";  // U+10FFFF
  const std::string max_bmp = "\xEF\xBF\xBF";       // U+FFFF
  for (const std::string& s :
       {std::string("done\0", 5), std::string("done\0x", 6), std::string("donc"), "donc" + max_utf8,
        "donc" + max_bmp, "donc" + max_utf8 + max_bmp + "zz", std::string("cancellec"),
        std::string("cancelle"), std::string("pending\0", 8), std::string("pendingz"),
        std::string(""), std::string("a"), std::string("zzz")})
    EXPECT_TRUE(unknown.Matches(with_state(s))) << "\"" << s << "\" is no spelling";
  for (const char* known : {"pending", "applied", "done", "cancelled", "initial"})
    EXPECT_FALSE(unknown.Matches(with_state(known))) << known;
  // The documented limit (docs/state-machine.md): past the end below "done", strings that
  // begin with "dond" and sixteen of the greatest character.
  EXPECT_TRUE(unknown.Matches(with_state("dond" + max_utf8 + "zz")));
  std::string past = "dond";
  for (int i = 0; i < 16; ++i) past += max_utf8;
  EXPECT_FALSE(unknown.Matches(with_state(past + "x")));
}

TEST(CandidateQuery, AnUnreadableTimeIsQuarantinedInFlightAndLeftAloneOnceFinished) {
  const WatchSpec w = Watch("quarantine");
  const Filter f = CandidateFilter(w, kNow);
  for (const Value& bad : {Value("yesterday"), Value(std::int64_t{5})}) {
    EXPECT_TRUE(f.Matches(Document{{"_id", 1}, {"state", "pending"}, {"lastModified", bad}}))
        << "found, to be quarantined: " << bad.ToString();
    EXPECT_FALSE(f.Matches(Document{{"_id", 2}, {"state", "done"}, {"lastModified", bad}}))
        << "nothing of it to recover, no late-write window to place: " << bad.ToString();
  }
  EXPECT_TRUE(f.Matches(Document{{"_id", 3}, {"state", "applied"}})) << "no time, in flight";
  EXPECT_FALSE(f.Matches(Document{{"_id", 4}, {"state", "cancelled"}})) << "no time, finished";
  EXPECT_TRUE(f.Matches(Document{{"_id", 5}, {"state", "weird"}})) << "an unknown state";
  EXPECT_TRUE(f.Matches(Document{{"_id", 6}})) << "no state at all";
}

TEST(CandidateQuery, AFinishedTransactionIsReadInsideItsLateWriteWindowOrAheadOfTheClockOnly) {
  const WatchSpec w = Watch("quarantine");
  const Filter f = CandidateFilter(w, kNow);
  auto done_at = [](DateTime t) {
    return Document{{"_id", 1}, {"state", "done"}, {"lastModified", t}};
  };
  EXPECT_TRUE(f.Matches(done_at(Minus(kNow, minutes(30)))));
  EXPECT_FALSE(f.Matches(done_at(Minus(kNow, hours(2)))));
  EXPECT_FALSE(f.Matches(done_at(Minus(kNow, std::chrono::seconds(10)))));
  EXPECT_TRUE(
      f.Matches(done_at(DateTime{kNow.millis + std::chrono::milliseconds(hours(1)).count()})))
      << "ahead of the clock by more than max_clock_skew: reported";
}

TEST(CandidateQuery, TheNotYetSeenAreReadOnTheIndexWhoseSecondKeyTheHistoryCarries) {
  // Where finished transactions carry a time, "no time" is the few not seen yet; where they
  // do not, every one of them lacks it, and "no stamp" is the few.
  const WatchSpec w = Watch("first_seen");
  const std::vector<CandidateRead> with_times = CandidateReads(w, kNow, true);
  const std::vector<CandidateRead> without = CandidateReads(w, kNow, false);
  ASSERT_EQ(with_times.size(), 3u);
  ASSERT_EQ(without.size(), 3u);
  EXPECT_EQ(with_times[2].hint, AgeIndex(w, AgeSource::kTimeField).keys);
  EXPECT_EQ(without[2].hint, AgeIndex(w, AgeSource::kFirstSeen).keys);
  const Document unseen{{"_id", 1}, {"state", "done"}};
  EXPECT_TRUE(with_times[2].filter.Matches(unseen));
  EXPECT_TRUE(without[2].filter.Matches(unseen));
  const CandidateRead probe = FinishedTimesProbe(w);
  EXPECT_TRUE(
      probe.filter.Matches(Document{{"_id", 2}, {"state", "done"}, {"lastModified", kNow}}));
  EXPECT_FALSE(probe.filter.Matches(Document{{"_id", 3}, {"state", "done"}}));
  EXPECT_FALSE(
      probe.filter.Matches(Document{{"_id", 4}, {"state", "pending"}, {"lastModified", kNow}}))
      << "the history is the finished ones";
}

TEST(CandidateQuery, WithoutATimeFieldAFinishedTransactionIsStampedOnceThenAgedFromTheStamp) {
  const WatchSpec w = Watch("first_seen");
  const Filter f = CandidateFilter(w, kNow);
  EXPECT_TRUE(f.Matches(Document{{"_id", 1}, {"state", "done"}})) << "not seen yet: stamped";
  Document seen{{"_id", 1}, {"state", "done"}};
  seen.Set(w.lease_field, Document{{"firstSeen", Minus(kNow, hours(2))}});
  EXPECT_FALSE(f.Matches(seen)) << "stamped two hours ago: past its late-write window";
}

}  // namespace
}  // namespace txn_recovery::testing
