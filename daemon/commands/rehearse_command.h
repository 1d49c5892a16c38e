// `txn-recoveryd rehearse`: each watch of the configuration (or those --watch names)
// rehearsed on the operator's own server with the daemon's own privileges
// (txn_recovery::Rehearse; docs/operating.md, "rehearse").
#pragma once

#include <atomic>
#include <ostream>

#include "config.h"
#include "txn_recovery/stores/store.h"

namespace txn_recoveryd {

// Prints a table per watch (or, with `json`, one JSON document): the scratch collections, each
// scenario and whether every invariant held, the time taken. Exit 0 when every invariant of
// every watch held; 2 (kExitRehearsalFailed) when one did not; 1 when a watch's profile is not
// rehearsed or a scratch collection could not be dropped; 69, 77 or 79 when the database
// could not be used. `stop` (SIGINT, SIGTERM) ends the rehearsal early; what was created is
// dropped all the same.
int RunRehearse(const Config& config, txn_recovery::Store* store, bool json,
                const std::atomic<bool>* stop, std::ostream& out);

}  // namespace txn_recoveryd
