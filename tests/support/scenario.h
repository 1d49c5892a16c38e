// Helpers every scenario shares, whatever the profile: failing loudly on a setup error,
// reading a whole collection, making ObjectIds of a chosen age, the server's time, one sweep.
// gtest-free, so that the simulators built on them serve tests, the demo, the benchmarks and
// multi-process fault suites alike.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "txn_recovery/clock.h"
#include "txn_recovery/store.h"
#include "txn_recovery/sweeper.h"

namespace txn_recovery::testing {

// Throws std::runtime_error with the status when it is not OK. Scenario helpers use it so
// that a failed setup step fails the test (gtest reports the exception) or the tool.
void Must(const Status& s);

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

// Runs one sweep of `watch` and returns its summary; reports are appended to *reports.
WatchSummary SweepOnce(Store* store, Clock* clock, const WatchSpec& watch, const std::string& owner,
                       std::vector<TxnReport>* reports = nullptr, int workers = 1,
                       bool dry_run = false);

}  // namespace txn_recovery::testing
