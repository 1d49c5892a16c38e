// `txn-recoveryd sweep --textfile-dir DIR`: what a one-shot sweep did, as a file for
// node_exporter's textfile collector, so that a sweep run by a timer (which serves no
// /metrics) is monitored: Prometheus scrapes node_exporter, which serves the file's figures
// with the host's. Every run writes the file, a failed one too (bad configuration, database
// unreachable), so that a failure is seen as a failure and a run that stopped happening as a
// file that stops changing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txn_recovery/base/status.h"

namespace txn_recovery::daemon {

// The file's name in DIR. node_exporter reads only the files named *.prom.
inline constexpr const char* kSweepTextfileName = "txn-recoveryd-sweep.prom";

// What one sweep did, filled by RunSweep as it goes: one entry per watch swept (none when
// the sweep stopped before its first watch, e.g. on a bad configuration).
struct SweepFigures {
  struct Watch {
    std::string name;
    bool ok = false;  // its sweep (and orphan scan, when asked) ended without an error
    std::int64_t resolved = 0, quarantined = 0, failed = 0, busy = 0;
  };
  std::vector<Watch> watches;
};

// The file's content in the Prometheus text format (gauges only, since each run replaces
// the file):
//   txn_recoveryd_oneshot_sweep_last_run_timestamp_seconds  when the run ended (Unix time)
//   txn_recoveryd_oneshot_sweep_success                     1 if it exited 0, else 0
//   txn_recoveryd_oneshot_sweep_exit_code                   its exit code (exit_codes.h)
//   txn_recoveryd_oneshot_sweep_duration_seconds            how long it ran
//   txn_recoveryd_oneshot_sweep_watch_success{watch}        1 if the watch's sweep had no error
//   txn_recoveryd_oneshot_sweep_transactions{watch,outcome} resolved, quarantined, failed and
//                                                          busy transactions of the run
std::string RenderSweepTextfile(const SweepFigures& figures, int exit_code, double ended_unix,
                                double duration_seconds);

// Replaces DIR/txn-recoveryd-sweep.prom with `content` atomically: written to a temporary
// file in DIR (a name node_exporter does not read), synced, made readable by all (the
// collector runs as another user; the content is no secret), then renamed over the old
// file, so that a scrape reads the whole old file or the whole new one, never a part.
// The temporary file is removed when anything fails.
txn_recovery::Status WriteSweepTextfile(const std::string& dir, const std::string& content);

}  // namespace txn_recovery::daemon
