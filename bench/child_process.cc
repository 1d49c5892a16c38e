#include "child_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace txn_recovery::bench {

namespace {

double TimevalSeconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

std::optional<pid_t> ReadPidFile(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

struct ProcStat {
  pid_t ppid = 0;
  unsigned long long ticks = 0;  // utime + stime + cutime + cstime
};

// /proc/PID/stat: "pid (comm) state ppid ... utime(14) stime(15) cutime(16) cstime(17)".
// comm may hold spaces and parentheses: fields are counted from the last ')'.
std::optional<ProcStat> ReadStat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  std::size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  std::vector<std::string> f;
  for (std::string s; fields >> s && f.size() < 15;) f.push_back(s);
  if (f.size() < 15) return std::nullopt;  // f[0] is field 3 (state)
  ProcStat st;
  st.ppid = static_cast<pid_t>(std::stol(f[1]));
  for (int i = 11; i <= 14; ++i) st.ticks += std::stoull(f[static_cast<std::size_t>(i)]);
  return st;
}

}  // namespace

std::optional<long> StatusKb(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  const std::string prefix = std::string(field) + ":";
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, prefix.size(), prefix) == 0) return std::stol(line.substr(prefix.size()));
  return std::nullopt;
}

ChildRun RunChild(const std::string& binary, const std::vector<std::string>& args,
                  const std::string& stdout_path) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int out = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) throw std::runtime_error("cannot create " + stdout_path + ": " + strerror(errno));

  ChildRun r;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    close(out);
    throw std::runtime_error(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec. The exec stops the child with a
    // SIGTRAP (PTRACE_TRACEME), which lets the parent set the options before it runs.
    if (dup2(out, STDOUT_FILENO) < 0) _exit(127);
    if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) _exit(127);
    execve(binary.c_str(), argv.data(), environ);
    _exit(127);
  }
  close(out);

  bool exec_seen = false;
  for (;;) {
    int status = 0;
    struct rusage ru {};
    pid_t w = wait4(pid, &status, 0, &ru);
    if (w < 0 && errno == EINTR) continue;
    if (w != pid) throw std::runtime_error(std::string("wait4: ") + strerror(errno));
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      r.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      r.cpu_seconds = TimevalSeconds(ru.ru_utime) + TimevalSeconds(ru.ru_stime);
      r.wait4_maxrss_kb = ru.ru_maxrss;
      return r;
    }
    if (!WIFSTOPPED(status)) continue;
    const int sig = WSTOPSIG(status);
    const int event = status >> 16;
    int deliver = 0;
    if (sig == SIGTRAP && event == 0 && !exec_seen) {
      exec_seen = true;  // the exec's stop: from here on, stop only at the exit
      // ptrace takes its options and signals in the pointer argument.
      ptrace(PTRACE_SETOPTIONS, pid, nullptr,
             reinterpret_cast<void*>(  // NOLINT(performance-no-int-to-ptr)
                 static_cast<long>(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)));
    } else if (sig == SIGTRAP && event == PTRACE_EVENT_EXIT) {
      // Exiting, its memory not yet released: the program's own high-water mark.
      if (auto hwm = StatusKb(pid, "VmHWM")) r.peak_rss_kb = *hwm;
    } else {
      deliver = sig;  // a signal for the child: pass it on
    }
    ptrace(
        PTRACE_CONT, pid, nullptr,
        reinterpret_cast<void*>(static_cast<long>(deliver)));  // NOLINT(performance-no-int-to-ptr)
  }
}

ProcessTreeCpu ProcessTreeCpu::FromStateDir(const std::string& dir) {
  std::vector<pid_t> roots;
  std::string what;
  if (auto pid = ReadPidFile(dir + "/testdb.pid")) {
    roots.push_back(*pid);
    what = "embedded server pid " + std::to_string(*pid);
  }
  auto gateway = ReadPidFile(dir + "/gateway.pid");
  auto postmaster = ReadPidFile(dir + "/pgdata/postmaster.pid");
  if (gateway) roots.push_back(*gateway);
  if (postmaster) roots.push_back(*postmaster);
  if (gateway || postmaster) {
    if (!what.empty()) what += " + ";
    what += "DocumentDB gateway pid " + (gateway ? std::to_string(*gateway) : "?") +
            " + PostgreSQL pid " + (postmaster ? std::to_string(*postmaster) : "?") +
            " and its children";
  }
  ProcessTreeCpu t(std::move(roots));
  t.description_ = what;
  return t;
}

std::vector<pid_t> ProcessTreeCpu::Tree() const {
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 0) continue;
      if (auto st = ReadStat(static_cast<pid_t>(pid)))
        children.emplace(st->ppid, static_cast<pid_t>(pid));
    }
    closedir(d);
  }
  std::vector<pid_t> tree;
  std::set<pid_t> seen;
  for (pid_t root : roots_)
    if (ReadStat(root) && seen.insert(root).second) tree.push_back(root);
  for (std::size_t i = 0; i < tree.size(); ++i) {
    auto [b, e] = children.equal_range(tree[i]);
    for (auto it = b; it != e; ++it)
      if (seen.insert(it->second).second) tree.push_back(it->second);
  }
  return tree;
}

std::optional<double> ProcessTreeCpu::Seconds() const {
  std::vector<pid_t> tree = Tree();
  if (tree.empty()) return std::nullopt;
  unsigned long long ticks = 0;
  for (pid_t pid : tree)
    if (auto st = ReadStat(pid)) ticks += st->ticks;
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int ProcessTreeCpu::Processes() const {
  return static_cast<int>(Tree().size());
}

double SelfCpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return TimevalSeconds(ru.ru_utime) + TimevalSeconds(ru.ru_stime);
}

}  // namespace txn_recovery::bench
