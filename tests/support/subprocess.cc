#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace txn_recovery::testing {
namespace {

std::atomic<int> g_counter{0};

std::string TempBase(const char* what) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/txnrec_" + what + "_" +
         std::to_string(getpid()) + "_" + std::to_string(g_counter++);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

bool Subprocess::Fork() {
  std::string base = TempBase("proc");
  out_path_ = base + ".out";
  err_path_ = base + ".err";
  std::fflush(nullptr);  // or the child flushes the parent's buffered output again
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ != 0) return false;
  // The child: only async-signal-safe calls from here on, until exec (a function child
  // carries on as the test's copy).
  int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(out, 1);
  dup2(err, 2);
  return true;
}

Subprocess::Subprocess(std::vector<std::string> argv,
                       const std::map<std::string, std::string>& extra,
                       const std::vector<std::string>& unset) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    bool drop = extra.count(key) > 0;
    for (const auto& u : unset) drop = drop || key == u;
    if (!drop) env.push_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);

  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  if (Fork()) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
}

Subprocess::Subprocess(const std::function<void()>& fn) {
  if (!Fork()) return;
  try {
    fn();
  } catch (...) {
    _exit(kThrew);
  }
  _exit(0);
}

Subprocess::~Subprocess() {
  if (Running()) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::seconds(5));
  }
  std::remove(out_path_.c_str());
  std::remove(err_path_.c_str());
}

void Subprocess::Signal(int sig) {
  if (!status_) kill(pid_, sig);
}

bool Subprocess::Running() {
  if (status_ || pid_ <= 0) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    return false;
  }
  return true;
}

std::optional<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  // Polled every 1 ms at first, backing off to 50: a short command costs no more than it
  // runs, and hundreds of them run in the unit tests alone.
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (std::chrono::milliseconds pause(1); Running() && std::chrono::steady_clock::now() < until;
       pause = std::min(2 * pause, std::chrono::milliseconds(50)))
    std::this_thread::sleep_for(pause);
  return status_;
}

std::string Subprocess::Stdout() const {
  return ReadFile(out_path_);
}
std::string Subprocess::Stderr() const {
  return ReadFile(err_path_);
}

FakeNotifySocket::FakeNotifySocket() {
  path_ = TempBase("notify") + ".sock";
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::runtime_error("cannot bind the fake notify socket " + path_);
  reader_ = std::thread([this] {
    while (!done_.load()) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::lock_guard<std::mutex> l(mu_);
      messages_.emplace_back(buf, static_cast<std::size_t>(n));
    }
  });
}

FakeNotifySocket::~FakeNotifySocket() {
  done_ = true;
  if (reader_.joinable()) reader_.join();
  if (fd_ >= 0) close(fd_);
  unlink(path_.c_str());
}

std::vector<std::string> FakeNotifySocket::messages() const {
  std::lock_guard<std::mutex> l(mu_);
  return messages_;
}

bool FakeNotifySocket::WaitFor(const std::string& needle, std::chrono::milliseconds timeout) {
  return Eventually(
      [&] {
        for (const auto& m : messages())
          if (m.find(needle) != std::string::npos) return true;
        return false;
      },
      timeout);
}

}  // namespace txn_recovery::testing
