// How a watch's finished transactions are retained (retention.h removes them): how long,
// where to (deleted or archived), at what pace. A header of its own, below the tools that
// apply it, because a watch (watch.h, the engine) carries it and the engine may not include
// the tools; its validation is with the other checks of a watch's settings, in the shapes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "txn_recovery/shapes/config_problem.h"

namespace txn_recovery {

struct RetentionPolicy {
  std::chrono::milliseconds retain_finished{0};  // 0 = retention off
  // Empty: delete. Otherwise the collection (same database) finished transactions are
  // moved to; a document already there is not inserted again, so an interrupted move
  // completes on the next run without duplicates.
  std::string archive_collection;
  std::int32_t batch_size = 500;
  std::chrono::milliseconds pause_between_batches{200};
  // Batches per call; 0 = until nothing is left. A backlog (retention switched on over a
  // year of history) then drains over several sweeps instead of holding one sweep, and the
  // watchdog it feeds, for minutes.
  std::int32_t max_batches = 20;

  bool enabled() const { return retain_finished.count() > 0; }
  // Keys "retain_finished", "archive_collection" (of the watch) and "retention_batch_size",
  // "retention_pause", "retention_max_batches" (of [sweep]). The archive must be a
  // collection of its own: not one of `in_use` (the watch's transactions, participants and
  // control collections), where archived transactions would mix with live data.
  ConfigProblems Validate(const std::vector<std::string>& in_use) const;
};

}  // namespace txn_recovery
