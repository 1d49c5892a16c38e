// The systemd notifier as PID 1 sees it: messages arrive on NOTIFY_SOCKET, a path or an
// abstract name, and a receiver that stops reading never stalls the daemon.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/serving/notifier.h"
#include "support/deadline.h"

namespace txn_recovery::daemon {
namespace {

using txn_recovery::testing::FinishesWithin;

// A datagram socket standing in for systemd, bound to `name` ("/path" or "@abstract").
class Receiver {
 public:
  explicit Receiver(std::string name) : name_(std::move(name)) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name_.data(), name_.size());
    if (name_[0] == '@') addr.sun_path[0] = '\0';
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size());
    bound_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0;
    setenv("NOTIFY_SOCKET", name_.c_str(), 1);
  }
  ~Receiver() {
    unsetenv("NOTIFY_SOCKET");
    if (fd_ >= 0) close(fd_);
    if (name_[0] == '/') unlink(name_.c_str());
  }
  bool bound() const { return bound_; }
  std::vector<std::string> Drain() {
    std::vector<std::string> out;
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) return out;
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n > 0) out.emplace_back(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
};

TEST(Notifier, StateChangesArriveOnAnAbstractSocket) {
  Receiver pid1("@txn-recoveryd-test-" + std::to_string(getpid()));
  ASSERT_TRUE(pid1.bound());
  Notifier n;
  ASSERT_TRUE(n.enabled());
  n.Ready();
  n.Status("last sweep: 3 resolved\nsecond line");
  n.Stopping();
  std::vector<std::string> got = pid1.Drain();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "READY=1");
  EXPECT_EQ(got[1], "STATUS=last sweep: 3 resolved second line") << "STATUS is one line";
  EXPECT_EQ(got[2], "STOPPING=1");
}

TEST(Notifier, AReceiverThatStopsReadingNeverStallsTheDaemon) {
  Receiver pid1(::testing::TempDir() + "notify-" + std::to_string(getpid()) + ".sock");
  ASSERT_TRUE(pid1.bound());
  // Far more than the receiver's queue holds (net.unix.max_dgram_qlen, 10 by default).
  // sd_notify() would block here for good; run in a child that is killed at the deadline,
  // a hang is a failure within 30 s instead of a test stuck until CTest's timeout.
  EXPECT_TRUE(FinishesWithin(std::chrono::seconds(30), [] {
    Notifier n;
    for (int i = 0; i < 200; ++i) {
      n.Status("sweep " + std::to_string(i));
      n.Watchdog();
    }
    n.Stopping();  // retried for up to a second, then dropped
  })) << "the notifier blocked on a full queue";
  std::vector<std::string> got = pid1.Drain();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0], "STATUS=sweep 0") << "what fitted arrived, in order";
  EXPECT_LT(got.size(), 400u) << "the rest was dropped, not queued without bound";
}

TEST(Notifier, TheGuardTurnsAHangIntoAFailureAtItsDeadline) {
  auto t0 = std::chrono::steady_clock::now();
  ::testing::AssertionResult hung = FinishesWithin(std::chrono::milliseconds(300), [] {
    for (;;) pause();  // as sd_notify() blocked on a full queue would
  });
  EXPECT_FALSE(hung);
  EXPECT_NE(std::string(hung.message()).find("did not finish within 300 ms"), std::string::npos)
      << hung.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_TRUE(FinishesWithin(std::chrono::seconds(10), [] {}));
}

}  // namespace
}  // namespace txn_recovery::daemon
