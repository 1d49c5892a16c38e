// Fuzz target: a transaction document as the driver hands it over (BSON bytes, never
// validated beyond its framing), converted to our Document and parsed by a watch of every
// profile the daemon ships (transfer as the MongoDB manual transfer, the one without a time
// field and the schema-book transfer write it, operations, tagged-insert), then decided on
// and matched against the candidate query. Parse must
// return a Status for anything (never crash, never accept a document it cannot act on);
// for a document it accepts, every write the engine could make of it must be expressible
// as BSON.
#include <bson/bson.h>

#include <cstdint>
#include <cstdlib>

#include "engine/requests.h"
#include "stores/mongo_handles.h"
#include "txn_recovery/engine/candidates.h"
#include "txn_recovery/engine/state_machine.h"
#include "txn_recovery/shapes/profile.h"

namespace {

using namespace txn_recovery;

const std::vector<WatchSpec>& Watches() {
  static const std::vector<WatchSpec> watches = [] {
    std::vector<WatchSpec> w(4);
    w[0].name = "manual";  // the MongoDB manual transfer, and the one without a time field
    w[0].ns = {"bank", "transactions"};
    w[0].profile = Profile::Transfer();
    w[1] = w[0];
    w[1].name = "schema-book";  // the schema-book transfer
    Profile& p = w[1].profile;
    p.missing_time = MissingTime::kObjectIdTime;
    p.states.applied = {"committed"};
    p.states.cancelled = {"canceled", "cancel", "cancelled"};
    p.owner.applications = {"A1"};
    p.owner.include_unowned = true;
    p.transfer()->participant_key = "name";
    p.transfer()->amount_field = "amount";
    p.transfer()->require_funds = true;
    w[2].name = "mongoose";  // mongoose operations
    w[2].ns = {"app", "transactions"};
    w[2].profile = Profile::Operations();
    w[3].name = "orders";  // tagged inserts
    w[3].ns = {"shop", "transactions"};
    w[3].profile = Profile::TaggedInsert();
    w[3].profile.tagged_insert()->tagged_collections = {"orders", "lines"};
    return w;
  }();
  return watches;
}

bool Expressible(const UpdateRequest& r) {
  bson_t* q = bson_new();
  bson_t* u = bson_new();
  const bool ok = mongo::FilterToBson(r.filter, q).ok() && mongo::UpdateToBson(r.update, u).ok();
  bson_destroy(q);
  bson_destroy(u);
  return ok;
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
    (void)CandidateFilter(w, now).Matches(doc, now);
    if (!s.ok()) {
      if (!s.IsMalformed()) std::abort();  // a bad document is Malformed, nothing else
      continue;
    }
    // What Parse accepts, the engine acts on: every write it could make must be expressible.
    if (txn.steps.empty() && txn.tagged_sets.empty()) std::abort();
    (void)Decide(txn, now, w.thresholds);
    const RecoveryPaths paths(w.lease_field);
    requests::LeaseTerms lease{"fuzzer", "1", now, now};
    for (Action a : {Action::kCancel, Action::kResume, Action::kRollback, Action::kFinish,
                     Action::kFinishRollback})
      for (bool nothing_to_write : {false, true})
        if (!Expressible(requests::Claim(txn, a, nothing_to_write, w.profile, paths, lease)))
          std::abort();
    for (TxnState to :
         {TxnState::kApplied, TxnState::kDone, TxnState::kCanceling, TxnState::kCancelled})
      if (!Expressible(requests::Transition(txn.id, txn.state_as_read, to, Action::kResume,
                                            w.profile, paths, lease, now)))
        std::abort();
    // The participant as read: the document itself stands in (any shape will do).
    for (const auto& step : txn.steps) {
      const auto finish = requests::Finish(step, txn.id, paths);
      for (const UpdateRequest& r :
           {requests::Apply(step, txn.id, doc), requests::Undo(step, txn.id, doc), finish.first,
            finish.second, requests::LateUndo(step, txn.id, TxnState::kDone, doc),
            requests::LateUndo(step, txn.id, TxnState::kCancelled, doc)})
        if (!Expressible(r)) std::abort();
      const auto untrace = requests::Untrace(step.target, txn.id, paths);
      if (!Expressible(untrace.first) || !Expressible(untrace.second)) std::abort();
    }
    for (const auto& set : txn.tagged_sets)
      if (!Expressible(requests::FinishTagged(set))) std::abort();
  }
  bson_t* again = bson_new();
  (void)mongo::ToBson(doc, again);
  bson_destroy(again);
  return 0;
}
