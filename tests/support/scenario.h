// Helpers every scenario shares, whatever the profile: the ages of a stuck and of an expired
// transaction, a transaction killed part-way, failing loudly on a setup error, reading a
// whole collection, making ObjectIds of a chosen age, the server's time, one sweep.
// gtest-free, so that the simulators built on them serve tests, the demo, the benchmarks and
// multi-process fault suites alike.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "txn_recovery/base/clock.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::testing {

// Ages against a watch's default thresholds (resume_after 1m, rollback_after and
// initial_timeout 30m).
inline constexpr std::chrono::minutes kStuck{2};     // past resume_after, before rollback_after
inline constexpr std::chrono::minutes kExpired{31};  // past rollback_after and initial_timeout

// An application killed after its first `steps` steps, `age` ago, and the state the daemon
// must leave its transaction in.
struct KilledCase {
  int steps;
  std::chrono::minutes age;
  const char* expected;
};

// Names a test instance whose parameter is (backend, KilledCase):
// "<backend>_<what>_<steps>_steps_<stuck|expired>".
struct KilledCaseName {
  const char* what;  // "after": the application's own steps; "app": a daemon sweeping them
  template <typename ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    const KilledCase& c = std::get<1>(info.param);
    return std::get<0>(info.param) + "_" + what + "_" + std::to_string(c.steps) + "_steps_" +
           (c.age == kStuck ? "stuck" : "expired");
  }
};

// Names a test instance whose parameter is (backend, KilledCase) by what the daemon does:
// "<backend>_<what>resume" for a stuck transaction, "<backend>_<what>rollback" for an
// expired one.
struct KilledCaseDecisionName {
  const char* what = "";
  template <typename ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    const KilledCase& c = std::get<1>(info.param);
    return std::get<0>(info.param) + "_" + what + (c.age == kStuck ? "resume" : "rollback");
  }
};

// Throws std::runtime_error with the status when it is not OK. Scenario helpers use it so
// that a failed setup step fails the test (gtest reports the exception) or the tool.
void Must(const Status& s);

// The document of `ns` whose _id is `id`, if there is one.
std::optional<Document> FindById(Store* store, const Namespace& ns, const Value& id);

// The state a transaction document `txn` holds in `state_field`, as written: "<missing>"
// without a document, "<unreadable>" when it is not a string.
std::string StateOf(const std::optional<Document>& txn, const std::string& state_field);

// Every document of `ns`, in the store's natural order.
std::vector<Document> AllDocs(Store* store, const Namespace& ns);

// The database server's current time.
DateTime ServerNow(Store* store);

// A fresh ObjectId whose embedded creation time is `millis` (unique within the process).
ObjectId NewObjectId(std::int64_t millis);
// A fresh ObjectId created `age` ago by the server's clock.
ObjectId ObjectIdAged(Store* store, std::chrono::milliseconds age);

// Sets `field` of the document `id` in `ns` to the server's now minus `age`.
void AgeDocument(Store* store, const Namespace& ns, const Value& id, const std::string& field,
                 std::chrono::milliseconds age);

// Expires every lease in `ns` (time passing beyond a crashed daemon's lease).
void ExpireLeases(Store* store, const Namespace& ns, const std::string& lease_field = "recovery");

// Moves the deadline of every quarantine record of `txn_ns`'s database to the epoch (time
// passing beyond it: a real server's clock cannot be moved). quarantine_records.h.
void ExpireQuarantineRecords(Store* store, const Namespace& txn_ns);
// The quarantine records of `watch`, as inspect and the gauge count them.
std::int64_t QuarantineRecords(Store* store, const WatchSpec& watch);
// Whether transaction `id` of `watch` has its quarantine record.
bool HasQuarantineRecord(Store* store, const WatchSpec& watch, const Value& id);

// Runs one sweep of `watch` and returns its summary; reports are appended to *reports.
WatchSummary SweepOnce(Store* store, Clock* clock, const WatchSpec& watch, const std::string& owner,
                       std::vector<TxnReport>* reports = nullptr, int workers = 1,
                       bool dry_run = false);

}  // namespace txn_recovery::testing
