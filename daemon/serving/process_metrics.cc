#include "daemon/serving/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace txn_recovery::daemon {

std::optional<ProcessStats> ParseProcStat(const std::string& stat, double boot_time_seconds,
                                          long ticks_per_second, long page_size) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the fields after
  // the last ')' are plain numbers. Field numbers below are proc(5)'s.
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos || ticks_per_second <= 0 || page_size <= 0) return std::nullopt;
  std::istringstream in(stat.substr(close + 1));
  std::vector<std::string> fields = {"", "", ""};  // fields 1 and 2 precede the ')'
  for (std::string f; in >> f;) fields.push_back(f);
  if (fields.size() < 25) return std::nullopt;
  auto number = [&](std::size_t field, double* out) {
    try {
      std::size_t used = 0;
      *out = std::stod(fields[field], &used);
      return used == fields[field].size();
    } catch (const std::exception&) {
      return false;
    }
  };
  double utime, stime, starttime, vsize, rss;
  if (!number(14, &utime) || !number(15, &stime) || !number(22, &starttime) ||
      !number(23, &vsize) || !number(24, &rss))
    return std::nullopt;
  ProcessStats s;
  const auto ticks = static_cast<double>(ticks_per_second);
  s.cpu_seconds = (utime + stime) / ticks;
  s.start_time_seconds = boot_time_seconds + starttime / ticks;
  s.virtual_bytes = vsize;
  s.resident_bytes = rss * static_cast<double>(page_size);
  return s;
}

namespace {

std::optional<double> BootTime() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  return std::nullopt;
}

double OpenFds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  double n = 0;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1;  // the descriptor opendir itself holds
}

}  // namespace

std::optional<ProcessStats> ReadProcessStats() {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  std::optional<double> boot = BootTime();
  if (!boot) return std::nullopt;
  std::optional<ProcessStats> s =
      ParseProcStat(stat, *boot, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE));
  if (!s) return s;
  s->open_fds = OpenFds();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0)
    s->max_fds = limit.rlim_cur == RLIM_INFINITY ? -1 : static_cast<double>(limit.rlim_cur);
  return s;
}

void UpdateProcessMetrics(Metrics* m) {
  using T = Metrics::Type;
  m->Describe("process_start_time_seconds", T::kGauge,
              "Start time of the process since unix epoch in seconds.");
  m->Describe("process_cpu_seconds_total", T::kCounter,
              "Total user and system CPU time spent in seconds.");
  m->Describe("process_resident_memory_bytes", T::kGauge, "Resident memory size in bytes.");
  m->Describe("process_virtual_memory_bytes", T::kGauge, "Virtual memory size in bytes.");
  m->Describe("process_open_fds", T::kGauge, "Number of open file descriptors.");
  m->Describe("process_max_fds", T::kGauge, "Maximum number of open file descriptors.");
  std::optional<ProcessStats> s = ReadProcessStats();
  if (!s) return;
  m->Set("process_start_time_seconds", {}, s->start_time_seconds);
  m->SetCounter("process_cpu_seconds_total", {}, s->cpu_seconds);
  m->Set("process_resident_memory_bytes", {}, s->resident_bytes);
  m->Set("process_virtual_memory_bytes", {}, s->virtual_bytes);
  m->Set("process_open_fds", {}, s->open_fds);
  m->Set("process_max_fds", {}, s->max_fds);
}

}  // namespace txn_recovery::daemon
