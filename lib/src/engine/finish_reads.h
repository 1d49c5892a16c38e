// What a read of participants decides for a finish: how each step is finished, and where a
// finish's trace is left to remove. Shared by the claim (its read before), the apply, the
// finish and the late-write check. Private to the engine.
#pragma once

#include <string_view>
#include <vector>

#include "engine/batch_item.h"
#include "engine/batch_trace.h"
#include "engine/participant_reads.h"

namespace txn_recovery {

// Whether a finish left its trace of transaction `id` on `doc`.
bool HasTrace(const RecoveryPaths& paths, const Document& doc, const Value& id);

// Records that `it`'s `step` has a finish's trace on its participant, and whether the read
// says it is all the daemon's sub-document there holds.
void MarkTraced(Item* it, const ParticipantStep* step, bool all_it_holds);

// Records how `it`'s `step` is to be finished, `doc` being its participant as read;
// `applying`: read by the apply of a resume, whose markers are all there once it is done.
void DecideFinish(const RecoveryPaths& paths, Item* it, const ParticipantStep* step,
                  const Document& doc, bool applying);

// Reads the participants of the finishes of `list` that no read has decided yet (before
// their claim: ReadBeforeClaim), one query per collection, and decides from each how its
// step is finished. A participant that does not fit, or a key naming two documents, ends
// the transaction before anything is written to any of its participants. `trace_as`: the
// event of the conformance trace that the read is.
void ReadForFinish(ParticipantReads& reads, const BatchTrace& trace, const RecoveryPaths& paths,
                   const std::vector<Item*>& list, std::string_view trace_as);

}  // namespace txn_recovery
