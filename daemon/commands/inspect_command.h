// `txn-recoveryd inspect`, `pause` and `resume`: what an operator asks of a deployment
// without changing any transaction.
#pragma once

#include <ostream>

#include "daemon/configuration/config.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::daemon {

// What is stuck right now, per watch and state, the oldest age, whether the watch is
// paused, and every quarantined transaction with its reason. Reads only.
int RunInspect(const Config& config, txn_recovery::Store* store, bool json, std::ostream& out);

// check-config --probe: what each watch's profile makes of up to `limit` of its documents
// (txn_recovery::Probe), as TOML comments after the configuration. Exit 0 when every
// document read fits and every participant looked up is there; 78 (the description is
// wrong) when documents were read and none fits; 1 when some do not fit or a participant is
// missing; 69, 77 or 79 when the database cannot be read.
int RunProbe(const Config& config, txn_recovery::Store* store, std::int64_t limit,
             std::ostream& out);

// Turns the pause switch of every watch on (`paused`) or off. Every instance reading the
// same database stops acting on the watch at its next sweep, without being stopped.
int RunPause(const Config& config, txn_recovery::Store* store, bool paused, std::ostream& out);

}  // namespace txn_recovery::daemon
