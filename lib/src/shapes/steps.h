// Internal to the profiles: the one place where a participant change becomes a guarded
// ParticipantStep. Every protocol resolves its document into Changes (the values read, each
// with the path it was read from) and hands them to BuildStep; the marker guard, the exact
// inverse, the duplicate undo and the finish are therefore the same for every shape the
// daemon recovers.
#pragma once

#include <string>
#include <vector>

#include "txn_recovery/shapes/profile.h"

namespace txn_recovery::steps {

// One participant change with every value resolved from one transaction document.
struct Change {
  struct Inc {
    std::string field;  // in the participant
    Value amount;       // as applied (already negated where the description says so)
    std::string where;  // where it was read, for messages: "data.amount"
  };
  struct Set {
    std::string field;
    Value value;
    Value previous;  // null: the field was absent
    std::string where;
  };
  Namespace ns;
  std::string key = "_id";  // the participant field that identifies it
  Value key_value;
  std::vector<Inc> incs;
  std::vector<Set> sets;
  Filter guard;  // extra conditions for applying
  std::string marker_field;
  std::string label;  // a verb for reports; empty: the changes themselves
};

// The guarded step for `change` of transaction `txn_id`: applied where the marker is absent
// (and the guard and every set's previous value hold), pushing the marker; undone by the
// exact inverse where it is present, pulling it; a late duplicate of an $inc undone like the
// first, of a $set only unmarked. Malformed, naming the path, when a value has no exact
// inverse: a non-finite amount, one that cannot be negated, a value the daemon cannot write
// back exactly or one holding a `$` key.
Status BuildStep(const Change& change, const Value& txn_id, ParticipantStep* out);

// Malformed when two steps change the same participant document: its one marker could not
// tell them apart (the second would look applied once the first was). `what` names the
// steps in the message ("data.operations", "steps").
Status CheckDistinctTargets(const std::vector<ParticipantStep>& steps, std::string_view what);

// Malformed, naming `where`, unless the daemon can write `v` back exactly (no type it does
// not model) and it holds no `$` key (which a filter would read as an operator).
Status CheckWritable(const std::string& where, const Value& v);

}  // namespace txn_recovery::steps
