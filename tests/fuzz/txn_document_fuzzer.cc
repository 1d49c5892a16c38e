// Fuzz target: a transaction document as the driver hands it over (BSON bytes, never
// validated beyond its framing), converted to our Document and parsed by each profile the
// daemon ships, then decided on and matched against the candidate query. Parse must return
// a Status for anything (never crash, never accept a document it cannot act on); a
// document it accepts must convert back to BSON.
#include <bson/bson.h>

#include <cstdint>
#include <cstdlib>

#include "mongo_handles.h"
#include "txn_recovery/candidates.h"
#include "txn_recovery/profile.h"
#include "txn_recovery/state_machine.h"

namespace {

using namespace txn_recovery;

const std::vector<WatchSpec>& Watches() {
  static const std::vector<WatchSpec> watches = [] {
    std::vector<WatchSpec> w(2);
    w[0].name = "manual";  // seeds 002/004
    w[0].ns = {"bank", "transactions"};
    w[0].profile = Profile::Transfer();
    w[1] = w[0];
    w[1].name = "schema-book";  // seed 001
    Profile& p = w[1].profile;
    p.missing_time = MissingTime::kObjectIdTime;
    p.states.applied = {"committed"};
    p.states.cancelled = {"canceled", "cancel", "cancelled"};
    p.owner.applications = {"A1"};
    p.owner.include_unowned = true;
    p.transfer()->participant_key = "name";
    p.transfer()->amount_field = "amount";
    p.transfer()->require_funds = true;
    return w;
  }();
  return watches;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bson_t b;
  if (!bson_init_static(&b, data, size)) return 0;
  Document doc = mongo::FromBson(&b);
  const DateTime now{1'700'000'000'000};
  for (const WatchSpec& w : Watches()) {
    Transaction txn;
    Status s = w.profile.Parse(doc, w.ns, w.lease_field, &txn);
    (void)CandidateFilter(w, now).Matches(doc);
    if (!s.ok()) {
      if (!s.IsMalformed()) std::abort();  // a bad document is Malformed, nothing else
      continue;
    }
    // What Parse accepts, the state machine acts on: its writes must be expressible.
    if (txn.steps.empty()) std::abort();
    (void)Decide(txn, now, w.thresholds);
    for (const auto& step : txn.steps) {
      bson_t* q = bson_new();
      bson_t* u = bson_new();
      Status fs = mongo::FilterToBson(step.target, q);
      Status us = mongo::UpdateToBson(step.apply, u);
      bson_destroy(q);
      bson_destroy(u);
      if (!fs.ok() || !us.ok()) std::abort();
    }
  }
  bson_t* again = bson_new();
  (void)mongo::ToBson(doc, again);
  bson_destroy(again);
  return 0;
}
