// The bank of seeds 002/004, for scenarios: accounts, an application that performs the
// seed's two-phase-commit steps one at a time (so a test can "kill" it between any two),
// and the invariant checker of DESIGN.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "txn_recovery/profile.h"
#include "txn_recovery/store.h"
#include "txn_recovery/sweeper.h"

namespace txn_recovery::testing {

// Throws std::runtime_error with the status when it is not OK. Scenario helpers use it so
// that a failed setup step fails the test (gtest reports the exception) or the tool.
void Must(const Status& s);

// The application's steps for one transfer, in the seed's order.
enum class AppStep {
  kInsertInitial,      // insert {state: initial, lastModified: now}
  kMarkPending,        // initial -> pending
  kDebitSource,        // guarded $inc/$push on the source
  kCreditDestination,  // guarded $inc/$push on the destination
  kMarkApplied,        // pending -> applied
  kPullSource,         // $pull the marker from the source
  kPullDestination,    // $pull the marker from the destination
  kMarkDone,           // applied -> done
};
inline constexpr int kAppStepCount = 8;
const char* AppStepName(int steps_done);

struct Snapshot {
  std::map<std::string, Document> accounts;  // by _id.ToString()
  std::vector<Document> bystanders;          // documents no transaction may touch
  double total = 0;
};

class Bank {
 public:
  Bank(Store* store, const std::string& database, TransferProfile profile = {});

  const Namespace& txns() const { return txns_; }
  const Namespace& accounts() const { return accounts_; }
  const TransferProfile& profile() const { return profile_; }
  WatchSpec Watch() const;

  // Accounts "A0".."A<n-1>" with `balance` each, plus bystanders: an account no
  // transaction names and a document in an unrelated collection.
  void Open(int n, std::int32_t balance = 1000);

  // Inserts a transfer in the initial state (the application's first step).
  Value Begin(const std::string& from, const std::string& to, std::int32_t amount);
  // Inserts a transfer and runs its first `steps` steps (kAppStepCount = all of them).
  Value Transfer(const std::string& from, const std::string& to, std::int32_t amount, int steps);
  // Runs one application step for `id` (a no-op where the seed's guard says so).
  Status RunStep(const Value& id, AppStep step);

  // Sets the transaction's time to the server's now minus `age` (time passing).
  void Age(const Value& id, std::chrono::milliseconds age);
  void AgeAll(std::chrono::milliseconds age);
  // Expires every lease (time passing beyond a crashed daemon's lease).
  void ExpireLeases();

  std::optional<Document> Txn(const Value& id);
  std::string State(const Value& id);
  std::int64_t Balance(const std::string& account);
  Array Markers(const std::string& account);

  Snapshot Take();
  // DESIGN.md's invariants against `before`; an empty list when all hold. With
  // `all_terminal`, every transaction must be done/cancelled (or quarantined).
  std::vector<std::string> Violations(const Snapshot& before, bool all_terminal = true);

 private:
  Store* store_;
  TransferProfile profile_;
  Namespace txns_, accounts_, other_;
  int next_id_ = 1;
};

// Runs one sweep of `watch` and returns its summary; reports are appended to *reports.
WatchSummary SweepOnce(Store* store, Clock* clock, const WatchSpec& watch, const std::string& owner,
                       std::vector<TxnReport>* reports = nullptr, int workers = 1,
                       bool dry_run = false);

}  // namespace txn_recovery::testing
