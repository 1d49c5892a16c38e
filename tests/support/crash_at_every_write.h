// The daemon killed at every one of its writes (docs/chaos.md): a clean sweep of one stuck
// transaction first counts the daemon's writes and must reach the scenario's decision; then,
// on a world set up afresh each time, a daemon is killed after 0, 1, ... of those writes
// (a FaultStore: nothing after the kill reaches the server), time passes beyond its lease,
// and a successor sweeps. Whichever write the kill fell at, the successor must complete the
// decision the clean run made, with the scenario's invariants intact.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "support/bank.h"
#include "support/scenario.h"
#include "support/test_env.h"
#include "txn_recovery/engine/watch.h"

namespace txn_recovery::testing {

// One world with one transaction, the application killed as `c` says, the watch both daemons
// sweep, and what must hold once a daemon has recovered the transaction.
class KilledDaemonScenario {
 public:
  KilledDaemonScenario(WatchSpec watch, const KilledCase& c) : watch_(std::move(watch)), c_(c) {}
  virtual ~KilledDaemonScenario() = default;
  const WatchSpec& watch() const { return watch_; }
  // Time has passed: makes the transaction `c.age` old again.
  virtual void Age() = 0;
  // The decision (`c.expected`) and the invariants, after the clean run and after every
  // successor.
  virtual void ExpectRecovered() = 0;

 protected:
  const WatchSpec watch_;
  const KilledCase c_;
};

// Starts a new world in the conformance trace (txn_recovery/engine/conformance_trace.h):
// what follows, until the next, is checked against the model on its own. Named by the
// running test and `what`. Nothing when the trace is off.
void TraceWorld(const std::string& what);

// Every marked transaction of `watch` has its quarantine record, and every record its marked
// transaction: what a sweep's repair leaves once every record's deadline has passed
// (quarantine_records.h). Checked after every successor.
void ExpectQuarantineRecordsMatchMarks(Store* store, const WatchSpec& watch);

// Sets the scenario up on a fresh backend.
using KilledDaemonSetUp = std::function<std::unique_ptr<KilledDaemonScenario>(TestBackend*)>;

// Runs the clean sweep and then one killed daemon and its successor per write, each on a
// fresh `backend_kind` backend (TestBackend::Create), every failure traced with the kill.
void CrashAtEveryWrite(const std::string& backend_kind, const KilledDaemonSetUp& set_up);

// The scenario of the transfer shapes: a transfer of 100 from A0 to A1 of `bank` (its
// accounts opened here), the application killed after `c.steps` steps `c.age` ago. The
// bank's dialect says how it is aged: by its time field, by its ObjectId (schema-book
// transfer: it is created that old), or from the daemon's first sighting (transfer without
// a time field: a sweep stamps it first). Recovered: ExpectTransferEnded in `c.expected`.
class StuckTransfer final : public KilledDaemonScenario {
 public:
  StuckTransfer(TestBackend* backend, Bank bank, WatchSpec watch, const KilledCase& c);
  void Age() override { bank_.Age(id_, c_.age); }
  void ExpectRecovered() override;

 private:
  Bank bank_;
  Snapshot before_;
  Value id_;
};

// A transfer that does not fit its profile (its time field missing): the clean sweep
// quarantines it, two writes to two collections (its record, then its mark). Recovered:
// marked, with its record, counted once, whichever write the kill fell at.
class QuarantinedTransfer final : public KilledDaemonScenario {
 public:
  QuarantinedTransfer(TestBackend* backend, Bank bank, WatchSpec watch);
  void Age() override {}
  void ExpectRecovered() override;

 private:
  TestBackend* backend_;
  Bank bank_;
  Value id_;
};

}  // namespace txn_recovery::testing
