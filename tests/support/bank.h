// The bank of the transfer shapes, for scenarios: accounts, an application that performs the
// shape's two-phase-commit steps one at a time (so a test can "kill" it between any two),
// and the invariant checker of docs/chaos.md. Three dialects of the application:
//   kManual      the MongoDB manual transfer: integer _ids, accounts by _id, compare-and-set
//                transitions that also set lastModified;
//   kNoTime      the transfer without a time field: the same without any time field (the
//                insert and the transitions write none);
//   kSchemaBook  the schema-book transfer: ObjectId _ids and no time field at all, accounts
//                found by `name`, unconditional $set of the state, the debit guarded by
//                `balance >= amount`, the owner claimed with findAndModify when the
//                transaction goes pending (`application`).
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

// The application's steps for one transfer, in the application's order.
enum class AppStep {
  kInsertInitial,      // insert {state: initial[, lastModified: now]}
  kMarkPending,        // initial -> pending (schema book: and claim `application`)
  kDebitSource,        // guarded $inc/$push on the source
  kCreditDestination,  // guarded $inc/$push on the destination
  kMarkApplied,        // pending -> applied (schema book: committed)
  kPullSource,         // $pull the marker from the source
  kPullDestination,    // $pull the marker from the destination
  kMarkDone,           // applied -> done
};
inline constexpr int kAppStepCount = 8;
const char* AppStepName(int steps_done);

// The application killed after each of its steps, stuck and expired, and the state the
// daemon must leave the transfer in: an initial one waits until it expires and is then
// cancelled (spelled `cancelled`), a pending one is resumed or, expired, rolled back, an
// applied one is finished.
std::vector<KilledCase> KilledTransferCases(const char* cancelled = "cancelled");

struct Snapshot {
  std::map<std::string, Document> accounts;  // by participant key, as Value::ToString()
  std::vector<Document> bystanders;          // documents no transaction may touch
  double total = 0;
};

class Bank {
 public:
  enum class Dialect { kManual, kSchemaBook, kNoTime };

  // `profile` must be a transfer profile.
  Bank(Store* store, const std::string& database, Profile profile = Profile::Transfer(),
       Dialect dialect = Dialect::kManual);

  const Namespace& txns() const { return txns_; }
  const Namespace& accounts() const { return accounts_; }
  const Profile& profile() const { return profile_; }
  Dialect dialect() const { return dialect_; }
  WatchSpec Watch() const;

  // The application name the schema-book application claims its transactions with when it
  // marks them pending; nullopt (the default) claims none.
  void set_application(std::optional<std::string> name) { application_ = std::move(name); }
  // The integer _id the next Begin uses (kManual); several application processes sharing
  // one bank each start at their own base so that their ids never collide.
  void set_next_id(std::int64_t id) { next_id_ = id; }

  // Accounts "A0".."A<n-1>" with `balance` each, plus bystanders: an account no
  // transaction names and a document in an unrelated collection. With a participant key
  // other than _id, the names go into that field and the _ids are ObjectIds.
  void Open(int n, std::int32_t balance = 1000);
  // The snapshot Open(n, balance) leaves, for a checker that did not see the bank opened
  // (txn-recovery-workload verify, in another process). Only for accounts keyed by _id,
  // whose documents Open fully determines.
  Snapshot Opened(int n, std::int32_t balance = 1000) const;
  // The name Open gives account i: "A<i>".
  static std::string Account(int i);
  // One account named `name` (used for the schema book's own names).
  void OpenAccount(const std::string& name, std::int32_t balance);

  // Inserts a transfer in the initial state (the application's first step). `created_ago`
  // backdates the ObjectId _id of the schema-book dialect (its only notion of time).
  Value Begin(const std::string& from, const std::string& to, std::int32_t amount,
              std::chrono::milliseconds created_ago = {});
  // Inserts a transfer and runs its first `steps` steps (kAppStepCount = all of them).
  Value Transfer(const std::string& from, const std::string& to, std::int32_t amount, int steps,
                 std::chrono::milliseconds created_ago = {});
  // Runs one application step for `id` (a no-op where the application's guard says so). A state
  // change that matches nothing returns Conflict: the MongoDB manual transfer checks nMatched
  // and goes no further, since someone else (the daemon) has moved the transaction on.
  // (The schema-book transfer sets the state unconditionally and cannot tell.)
  Status RunStep(const Value& id, AppStep step);

  // Sets the transaction's time to the server's now minus `age` (time passing). A
  // transaction without a time field (kNoTime) is aged by its first-sighting stamp, which a
  // sweep must have written.
  void Age(const Value& id, std::chrono::milliseconds age);
  void AgeAll(std::chrono::milliseconds age);
  // Expires every lease (time passing beyond a crashed daemon's lease).
  void ExpireLeases();

  std::optional<Document> Txn(const Value& id);
  std::string State(const Value& id);
  // Whether every one of `ids` is in `state` (e.g. "done"), read now.
  bool AllIn(const std::vector<Value>& ids, const std::string& state);
  std::int64_t Balance(const std::string& account);
  Array Markers(const std::string& account);

  Snapshot Take();
  // docs/chaos.md's invariants against `before`; an empty list when all hold. With
  // `all_terminal`, every transaction must be done/cancelled (or quarantined).
  std::vector<std::string> Violations(const Snapshot& before, bool all_terminal = true);

 private:
  std::optional<Document> Account(const std::string& name);

  Store* store_;
  Profile profile_;
  TransferProfile tp_;  // profile_'s transfer part
  Dialect dialect_;
  std::optional<std::string> application_;
  Namespace txns_, accounts_, other_;
  std::int64_t next_id_ = 1;
};

}  // namespace txn_recovery::testing
