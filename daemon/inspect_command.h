// `txn-recoveryd inspect`, `pause` and `resume`: what an operator asks of a deployment
// without changing any transaction.
#pragma once

#include <ostream>

#include "config.h"
#include "txn_recovery/store.h"

namespace txn_recoveryd {

// What is stuck right now, per watch and state, the oldest age, whether the watch is
// paused, and every quarantined transaction with its reason. Reads only.
int RunInspect(const Config& config, txn_recovery::Store* store, bool json, std::ostream& out);

// Turns the pause switch of every watch on (`paused`) or off. Every instance reading the
// same database stops acting on the watch at its next sweep, without being stopped.
int RunPause(const Config& config, txn_recovery::Store* store, bool paused, std::ostream& out);

}  // namespace txn_recoveryd
