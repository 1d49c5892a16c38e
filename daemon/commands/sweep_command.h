// `txn-recoveryd sweep`: one pass over every watch, a summary, an exit code.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "daemon/commands/sweep_textfile.h"
#include "daemon/configuration/config.h"
#include "txn_recovery/engine/membership.h"
#include "txn_recovery/engine/sweeper.h"
#include "txn_recovery/stores/store.h"
#include "txn_recovery/tools/orphans.h"

namespace txn_recovery::daemon {

struct SweepCommandOptions {
  bool dry_run = false;  // plan, write nothing, and list every planned action
  bool json = false;
  bool verbose = false;  // one line (or JSON entry) per transaction acted on
  bool orphans = false;  // also scan the participants for orphan markers (orphans.h)
  // --share K/N: only the candidates whose bucket b has b mod N = K (docs/fleet.md), so
  // that N sweeps started by hand divide a large backlog; nullopt: every candidate.
  std::optional<txn_recovery::Share> share;
  // --textfile-dir DIR: write what the run did into DIR/txn-recoveryd-sweep.prom for
  // node_exporter's textfile collector (sweep_textfile.h); empty: no file.
  std::string textfile_dir;
  // Where RunSweep records each watch's figures for that file; null: nowhere.
  SweepFigures* figures = nullptr;
};

// Reads "K/N" (0 <= K < N <= 256) into `share`; otherwise returns what is wrong with it.
std::string ParseShare(const std::string& text, txn_recovery::Share* share);

// The "after" column of a report: the state a resolved transaction reached; for a dry
// run's planned action, the terminal state that action would reach (a planned resume of
// a pending transaction: done); otherwise the state it was found in.
std::string StateAfter(const txn_recovery::TxnReport& report);

// Logs one transaction's outcome with the watch and _id as structured fields.
void LogTransaction(const txn_recovery::TxnReport& report);
// Logs one orphan-scan finding the same way (the participant's _id as a field too).
void LogOrphan(const std::string& watch, const txn_recovery::OrphanFinding& finding);

// The sweeper's options the configuration sets, one assembly for `run` and `sweep`: the
// workers, the batch and bulk sizes, the lease's duration, max_failures. Each caller adds
// its own: the lease owner, and a dry run and a share (`sweep`) or the stop flag, the
// memory and the overdue rule (`run`).
txn_recovery::SweepOptions ConfiguredSweepOptions(const Config& config);

// Sweeps every watch of `config` through `store` and writes the report to `out`.
// Returns the process exit code (exit_codes.h).
int RunSweep(const Config& config, txn_recovery::Store* store, const SweepCommandOptions& options,
             std::ostream& out);

}  // namespace txn_recovery::daemon
