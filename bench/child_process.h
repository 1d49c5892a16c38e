// What the benchmark measures of a process it starts (the daemon) and of the server it
// talks to, from the kernel's own accounts (/proc and wait4), never from the process itself.
//
// Peak RSS. `wait4`'s ru_maxrss cannot be used for a child: when a process execs, Linux
// carries the high-water mark of the memory it leaves into the new program's, so a child
// spawned by a 313 MiB parent reports about 313 MiB however small it stays, and
// posix_spawn/vfork do not help (the memory left at exec is then the parent's itself).
// RunChild reads the child's own high-water mark instead, VmHWM of /proc/PID/status, which
// belongs to the memory of the program it runs; the last moment that memory still exists is
// the child's exit, after which /proc shows nothing. So the child is traced (ptrace, only its
// first thread, only to stop it as it exits: PTRACE_O_TRACEEXIT), VmHWM is read at that stop,
// and it is let go. Signals reach it unchanged.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace txn_recovery::bench {

struct ChildRun {
  int exit_code = -1;      // -1 when it ended on a signal
  int term_signal = 0;     // the signal that ended it, or 0
  double seconds = 0;      // wall time, start to reaping
  double cpu_seconds = 0;  // user + system, all its threads (wait4)
  // Its program's own peak resident set (VmHWM at exit), or -1 when the exit stop was not
  // seen (killed by SIGKILL, which skips it).
  long peak_rss_kb = -1;
  // wait4's ru_maxrss, kept only to show how far off it is (see above).
  long wait4_maxrss_kb = 0;
};

// Runs `binary` with `args` (argv[0] is `binary`) and the current environment, its standard
// output into `stdout_path` (created 0600, truncated), its standard error inherited, and
// waits for it. Throws std::runtime_error if it cannot be started.
ChildRun RunChild(const std::string& binary, const std::vector<std::string>& args,
                  const std::string& stdout_path);

// A field of /proc/PID/status in kB ("VmHWM", "VmRSS"), or nullopt.
std::optional<long> StatusKb(pid_t pid, const char* field);

// CPU time (user + system) of a set of processes and of every descendant they have, live or
// already reaped (a parent's cutime/cstime hold its reaped children's), in seconds: the
// server's work. Roots come from a test server's state directory (scripts/testdb-start.sh):
//   testdb.pid                  the embedded server (the JVM, all its threads);
//   gateway.pid, pgdata/postmaster.pid   DocumentDB: the gateway, and PostgreSQL's
//                               postmaster with every backend and worker it forks.
class ProcessTreeCpu {
 public:
  ProcessTreeCpu() = default;
  explicit ProcessTreeCpu(std::vector<pid_t> roots) : roots_(std::move(roots)) {}
  static ProcessTreeCpu FromStateDir(const std::string& dir);

  bool empty() const { return roots_.empty(); }
  // "embedded server pid 123" or "DocumentDB gateway pid 1 + PostgreSQL pid 2 and children"
  const std::string& description() const { return description_; }
  // nullopt when no root is alive.
  std::optional<double> Seconds() const;
  // How many processes Seconds() would sum right now.
  int Processes() const;

 private:
  std::vector<pid_t> Tree() const;
  std::vector<pid_t> roots_;
  std::string description_;
};

// This process's own CPU time (user + system, all threads), in seconds.
double SelfCpuSeconds();

}  // namespace txn_recovery::bench
