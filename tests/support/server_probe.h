// What tests and the benchmark ask of a MongoDB server that the daemon never asks: how it
// would run a read (explain), and to drop a whole database. Kept out of the library, so
// that no production code can reach them; built over MongoStore's public calls and the
// library's private BSON conversions, so that a read is explained exactly as it is sent.
#pragma once

#include <string>

#include "support/query_log.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery {

// How the server runs `query`, by its own account (the explain command with
// "executionStats": the read is executed, nothing is written), sent exactly as
// MongoStore::Find or Count would send it (a count is the aggregation the driver sends for
// it; a filter that compares with the server's clock compares as the store would).
// ServerError when the server does not answer explain (mongo-java-server).
Status Explain(MongoStore* store, const ReadQuery& query, QueryPlan* plan);

// Drops every collection of `database` (views and system collections aside), which leaves
// no database behind: a test's or a benchmark's clean-up.
Status DropDatabase(MongoStore* store, const std::string& database);

}  // namespace txn_recovery
