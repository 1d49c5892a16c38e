// `txn-recoveryd rehearse`: each watch of the configuration (or those --watch names)
// rehearsed on the operator's own server with the daemon's own privileges
// (txn_recovery::Rehearse; docs/operating.md, "rehearse").
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "daemon/configuration/config.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::daemon {

// Prints a table per watch (or, with `json`, one JSON document): the scratch collections, each
// scenario and whether every invariant held, the time taken. Exit 0 when every invariant of
// every watch held; 2 (kExitRehearsalFailed) when one did not; 1 when it was stopped or a
// scratch collection could not be dropped; 69, 77 or 79 when the database
// could not be used. `stop` (SIGINT, SIGTERM) ends the rehearsal early; what was created is
// dropped all the same.
//
// Before anything is created: the server's version and topology as it reports them
// (buildInfo, hello), and the user's privileges (connectionStatus): a user without `find`,
// `insert`, `update`, `remove` or `dropCollection` on the collections of a watch's database
// is one message naming the missing action and the database, exit 79, with nothing created.
// A server that reports no authenticated user (no access control) is not checked.
int RunRehearse(const Config& config, txn_recovery::MongoStore* store, bool json,
                const std::atomic<bool>* stop, std::ostream& out, std::ostream& err);

// The actions of `needed` that the privileges of a connectionStatus reply (with
// showPrivileges) do not grant on every collection of `database`, in `needed`'s order.
// Empty also when the reply names no authenticated user (nothing to check).
std::vector<std::string> MissingActions(const txn_recovery::Document& connection_status,
                                        const std::string& database,
                                        const std::vector<std::string>& needed);

}  // namespace txn_recovery::daemon
