// The process_* metrics every Prometheus client library exports (the names and units of
// the Go and Python clients), read from /proc/self at scrape time: what dashboards and
// alerts for any daemon expect to find next to its own metrics.
//   process_start_time_seconds     gauge    Unix time the process started
//   process_cpu_seconds_total      counter  user + system CPU time
//   process_resident_memory_bytes  gauge    resident set size
//   process_virtual_memory_bytes   gauge    virtual memory size
//   process_open_fds               gauge    open file descriptors
//   process_max_fds                gauge    the soft limit on them (RLIMIT_NOFILE)
#pragma once

#include <optional>
#include <string>

#include "daemon/serving/metrics.h"

namespace txn_recovery::daemon {

struct ProcessStats {
  double start_time_seconds = 0;
  double cpu_seconds = 0;
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double open_fds = 0;
  double max_fds = 0;
};

// Parses the text of /proc/<pid>/stat (proc(5)) given the system's boot time (btime of
// /proc/stat), clock ticks per second and page size. nullopt when the text does not parse.
std::optional<ProcessStats> ParseProcStat(const std::string& stat, double boot_time_seconds,
                                          long ticks_per_second, long page_size);

// This process's figures, or nullopt where /proc is not mounted.
std::optional<ProcessStats> ReadProcessStats();

// Declares the families (once) and sets them from ReadProcessStats(); a no-op without /proc.
void UpdateProcessMetrics(Metrics* metrics);

}  // namespace txn_recovery::daemon
