// The mongoose operations application (`operations` profile), one function per step of its
// life cycle, so that a scenario can stop ("kill") it between any two:
//   1            insert {status: new, lastModified, data: {operations: [...]}}
//   2            new -> pending
//   3 .. 2+n     apply operation i: {_id, marker: {$ne: tx}} -> the change and $push marker
//   3+n          pending -> applied
//   4+n .. 3+2n  $pull the marker from operation i's document
//   4+2n         applied -> done
// Each step reads the transaction document, as the mongoose application does, so that any
// process can carry on another's transaction given its id. gtest-free: tests, tools and the
// fault-injection workers drive it alike.
//
// The invariant checker works from the database alone: the snapshot taken before, and the
// operations each transaction document lists.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/scenario.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::testing {

// One operation as the application writes it (the profile's key names are used).
struct Operation {
  std::string collection;
  Value id;
  Document inc;       // field -> amount
  Document set;       // field -> new value
  Document previous;  // field -> value before the set (null: the field was absent)

  static Operation Inc(std::string collection, Value id, const std::string& field, Value amount);
  static Operation Set(std::string collection, Value id, const std::string& field, Value value,
                       Value previous);
};

// The documents of the participant collections, by collection and _id.
struct OperationsSnapshot {
  std::map<std::string, std::map<std::string, Document>> docs;
};

class OperationsApp {
 public:
  // `profile` must be an operations profile; the transactions go to
  // `<database>.<transactions>`.
  OperationsApp(Store* store, const std::string& database, Profile profile = Profile::Operations(),
                const std::string& transactions = "transactions");

  const Namespace& txns() const { return txns_; }
  Namespace Collection(const std::string& name) const { return {txns_.database, name}; }
  const Profile& profile() const { return profile_; }
  WatchSpec Watch() const;

  // ---- The application's steps -------------------------------------------------------
  // Step 1. `id` may be given (e.g. an ObjectId); by default a fresh ObjectId.
  Value InsertNew(const std::vector<Operation>& ops, std::optional<Value> id = std::nullopt);
  // The transitions are compare-and-set; each returns Conflict when the transaction is no
  // longer in the state it moves from (the daemon resolved it): the application stops.
  Status MarkPending(const Value& tx);                    // step 2
  Status ApplyOperation(const Value& tx, std::size_t i);  // steps 3 .. 2+n
  Status MarkApplied(const Value& tx);                    // step 3+n
  Status PullMarker(const Value& tx, std::size_t i);      // steps 4+n .. 3+2n
  Status MarkDone(const Value& tx);                       // step 4+2n

  // The numbered steps above, for a transaction of `operations` operations.
  static int StepCount(std::size_t operations) { return 4 + 2 * static_cast<int>(operations); }
  static std::string StepName(int steps_done, std::size_t operations);
  // Runs step `step` (2 .. StepCount) of `tx`.
  Status RunStep(const Value& tx, int step, std::size_t operations);
  // Inserts a transaction and runs its first `steps` steps.
  Value Run(const std::vector<Operation>& ops, int steps);

  // ---- Looking at the world ------------------------------------------------------------
  void Age(const Value& tx, std::chrono::milliseconds age);
  std::optional<Document> Txn(const Value& tx);
  std::string State(const Value& tx);
  std::optional<Document> Doc(const std::string& collection, const Value& id);
  // The sum of `field` over every document of `collection` (conservation).
  double Sum(const std::string& collection, const std::string& field);
  // The markers on one document.
  Array Markers(const std::string& collection, const Value& id);

  OperationsSnapshot Take(const std::vector<std::string>& collections);
  // docs/chaos.md's invariants against `before`: every document equals its snapshot plus exactly
  // the operations of the transactions that ended done, each once (which implies
  // conservation for every `inc` that balances); no document appeared or vanished; no
  // marker of a terminal transaction is left. With `all_terminal`, every transaction must be
  // terminal (or quarantined) and no marker at all may be left; without, documents that a
  // non-terminal transaction names are not compared.
  std::vector<std::string> Violations(const OperationsSnapshot& before, bool all_terminal = true);

 private:
  Status Transition(const Value& tx, TxnState from, TxnState to);
  Status ReadOperation(const Value& tx, std::size_t i, Document* op);

  Store* store_;
  Profile profile_;
  OperationsProfile op_;
  Namespace txns_;
};

}  // namespace txn_recovery::testing
