// `txn-recoveryd propose`: the [[watch]] that fits each collection of two-phase-commit
// transactions of one database, inferred from its documents, read-only
// (txn_recovery::Propose; docs/operating.md, "propose").
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "daemon/configuration/config.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::daemon {

struct ProposeCommandOptions {
  std::string database;             // --database (required)
  std::int64_t sample_size = 1000;  // --sample N
};

// Prints the proposal as TOML, evidence and doubts as comments. Exit 0 when at least one
// collection got a watch and none is left undecided; 1 when some collection's watch has keys
// the data cannot decide, holds two shapes, or no collection holds transactions; 69, 77 or 79
// when the database cannot be read. Never writes.
int RunPropose(txn_recovery::Store* store, const ProposeCommandOptions& options, std::ostream& out);

// The connection of a command that may run before any configuration exists (propose): the
// file's [mongodb] when `config_path` names a readable file, else the defaults with the URI
// from TXN_RECOVERYD_MONGODB_URI. Returns an exit code (0: *config is usable) and says why on
// `err` otherwise.
int ConnectionConfig(const std::string& config_path, bool path_given, Config* config,
                     std::ostream& err);

}  // namespace txn_recovery::daemon
