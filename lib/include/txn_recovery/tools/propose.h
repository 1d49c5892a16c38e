// Propose: the [[watch]] that fits each collection of two-phase-commit transactions of one
// database, inferred from the documents alone, read-only (docs/operating.md, "propose").
//
// For each collection it samples documents (Store::Sample), follows the references of the
// first of them to documents of the other collections, and reads what the data shows: the
// profile (transfer, operations, tagged-insert, or steps with their paths), the state field
// and which of its values hold markers on participants (in flight) or never do, the time
// field, the participants' collection, key, marker and amount fields, the _id type. It never
// guesses silently: what the data cannot decide (a state seen once, two shapes in one
// collection, a value that may be a state not started yet or one cancelled) is written as
// such, with counts, and the key is left commented out for the operator to fill in.
//
// States are recognised by how transactions move through them, not by their names: a value
// some of whose transactions hold a marker on a participant is in flight with changes
// applied; markers added in the steps' order (the first step marked, a later one not) make
// it the state the steps are applied in (pending), markers pulled in the steps' order (a
// later step still marked, the first not) the state they are finished in (applied); the
// most frequent value, whose transactions never hold a marker, is the finished one (done).
// A spelling the profile documents decides a value whose evidence agrees with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txn_recovery/base/status.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

struct ProposeOptions {
  std::int64_t sample_size = 1000;  // documents sampled per collection ($sample)
  // Of the sample, the transactions whose references are followed to their participants.
  std::int64_t follow = 200;
  std::string lease_field = "recovery";  // the daemon's own sub-document: not the application's
  // The daemon's own collections (control, fleet members): never proposed.
  std::vector<std::string> own_collections = {"txn_recoveryd_control", "txn_recoveryd_members",
                                              "txn_recoveryd_quarantine"};
};

struct CollectionProposal {
  enum class Verdict {
    kProposed,         // a watch, every key decided by the data
    kUndecided,        // a watch with keys left for the operator (listed in `unsure`)
    kMixed,            // two shapes in one collection: each shown, no watch
    kNotTransactions,  // nothing of a two-phase-commit transaction (`why`)
    kEmpty,
    kOwn,  // one of the daemon's own collections
  };
  std::string collection;
  Verdict verdict = Verdict::kNotTransactions;
  std::int64_t sampled = 0;
  std::string profile;                // "transfer", ... (kProposed, kUndecided)
  std::string watch_toml;             // the [[watch]] table; for kMixed each shape's, commented out
  std::vector<std::string> evidence;  // what the data showed, one line each
  std::vector<std::string> unsure;    // what the data cannot decide, with counts
  std::string why;                    // kNotTransactions, kEmpty, kMixed: why no watch
};

struct Proposal {
  std::string database;
  std::int64_t sample_size = 0;
  std::vector<CollectionProposal> collections;
};

// Reads `database` (listCollections, $sample, finds by the participants' keys; never a
// write) and proposes a watch per collection of transactions.
Status Propose(Store* store, const std::string& database, const ProposeOptions& options,
               Proposal* proposal);

// The proposal as TOML: each watch with its evidence as comments, every other collection
// as a comment saying why it has none.
std::string ProposalText(const Proposal& proposal);

// "1,000"
std::string WithThousands(std::int64_t n);

}  // namespace txn_recovery
