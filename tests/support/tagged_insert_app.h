// The application of the tagged inserts (`tagged-insert` profile), one function per numbered
// step of its description, so that a scenario can kill it at any of its crash points:
//   1  txns.insertOne({_id: ObjectId, status: "started", lastUpdate: now})
//   2  coll.insertMany(documents, each with tx: <txId>)
//   3  txns.updateOne({_id}, {$set: {status: "finishing"}, $currentDate: {lastUpdate}})
//   4  coll.updateMany({tx: <txId>}, {$unset: {tx}, $set: {valid: true}})
//   5  txns.updateOne({_id}, {$set: {status: "done"}, $currentDate: {lastUpdate}})
// and, when step 2 or 3 throws, the catch block:
//   6  txns.updateOne({_id, status: {$ne: "rollback"}}, {$set: {status: "rollback"}, ...})
//   7  coll.deleteMany({tx: <txId>})
//   8  txns.updateOne({_id}, {$set: {status: "done"}, ...})
// With several tagged collections, steps 2, 4 and 7 run once per collection, in the
// profile's order; `collections` stops them after that many (a crash or an exception
// midway). Steps 3, 5 and 8 are unconditional, exactly as the application writes them, unless
// set_checked_finishing(true): then step 3 moves only a started transaction and returns
// Conflict when the transaction is no longer started (the daemon rolled it back), and the
// application stops there, leaving its late documents to the daemon.
//
// Every document inserted carries `origin: <txId>`, `part` and `of` (how many documents the
// transaction inserts in all), so that the checker tells from the database alone whether a
// transaction's documents are all there or none are. gtest-free: tests, tools and the
// fault-injection workers drive it alike.
#pragma once

#include <chrono>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/scenario.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/shapes/profile.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::testing {

struct TaggedSnapshot {
  // Documents that belong to no transaction of the scenario, by collection and _id.
  std::map<std::string, std::map<std::string, Document>> bystanders;
};

class TaggedInsertApp {
 public:
  static constexpr std::size_t kAll = std::numeric_limits<std::size_t>::max();

  // `profile` must be a tagged-insert profile; transactions go to
  // `<database>.<transactions>`. `per_collection` is how many documents each transaction
  // inserts into each collection.
  TaggedInsertApp(Store* store, const std::string& database, Profile profile,
                  int per_collection = 2, const std::string& transactions = "transactions");

  const Namespace& txns() const { return txns_; }
  Namespace Collection(const std::string& name) const { return {txns_.database, name}; }
  const std::vector<std::string>& collections() const { return tp_.tagged_collections; }
  const Profile& profile() const { return profile_; }
  WatchSpec Watch() const;

  // ---- The application's steps -------------------------------------------------------
  Value InsertTransaction();                                             // 1
  Status InsertTagged(const Value& tx, std::size_t collections = kAll);  // 2
  Status MarkFinishing(const Value& tx);                                 // 3
  Status Untag(const Value& tx, std::size_t collections = kAll);         // 4
  Status MarkDone(const Value& tx);                                      // 5
  Status MarkRollback(const Value& tx);                                  // 6
  Status DeleteTagged(const Value& tx, std::size_t collections = kAll);  // 7
  Status MarkRolledBackDone(const Value& tx);                            // 8
  // Application step `step` (2 .. 8) of `tx`, by its number in the description; `collections` as
  // above for steps 2, 4 and 7.
  Status RunStep(const Value& tx, int step, std::size_t collections = kAll);
  void set_checked_finishing(bool on) { checked_finishing_ = on; }
  // The application's happy path (steps 1-5) and its catch block (steps 6-8).
  Value Commit();
  Status RollBack(const Value& tx);

  // ---- Setting the scene and looking at it -----------------------------------------------
  // A valid, untagged document in each collection that no transaction owns.
  void AddBystanders();
  void Age(const Value& tx, std::chrono::milliseconds age);
  std::optional<Document> Txn(const Value& tx);
  std::string State(const Value& tx);
  // The documents a transaction inserted that are still there, and how many still carry
  // the tag / are valid.
  struct Docs {
    int present = 0, tagged = 0, valid = 0;
  };
  Docs DocsOf(const Value& tx);
  int DocsPerTransaction() const {
    return per_collection_ * static_cast<int>(tp_.tagged_collections.size());
  }

  TaggedSnapshot Take();
  // docs/chaos.md's invariants: every terminal transaction has all of its documents, untagged
  // and valid, or none of them, and that agrees with the way the daemon recorded it ended;
  // no document carries the tag of a terminal transaction; bystanders are unchanged. With
  // `all_terminal`, every transaction must be terminal (or quarantined).
  std::vector<std::string> Violations(const TaggedSnapshot& before, bool all_terminal = true);

 private:
  Status SetStatus(const Value& tx, TxnState to, std::optional<TxnState> unless = std::nullopt);

  Store* store_;
  Profile profile_;
  TaggedInsertProfile tp_;
  int per_collection_;
  Namespace txns_;
  bool checked_finishing_ = false;
};

}  // namespace txn_recovery::testing
