// The wire toolkit under the chaos proxy, the forged wire server and the bench's counter
// (support/wire/forwarder.h): a mongodb:// URI pointed at a forwarder keeps what it must, the
// OP_MSG codec reads and rewrites what the servers send, and the forwarder hands each reply
// to its hook with its request's note, holds back, closes and cuts as told. Against a small
// echo server in the test: no database.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <any>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "support/wire/bson.h"
#include "support/wire/forwarder.h"
#include "support/wire/little_endian.h"
#include "support/wire/message.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::milliseconds;

TEST(WireToolkit, AForwardedUriKeepsCredentialsDatabaseAndOptionsAndConnectsDirectly) {
  auto parts = SplitMongoUri(
      "mongodb://u:p%40ss@db1:27018,db2/admin?replicaSet=rs0&authSource=admin&"
      "directConnection=false&tls=false");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->host, "db1");
  EXPECT_EQ(parts->port, 27018);
  EXPECT_TRUE(parts->several_hosts);
  EXPECT_EQ(ForwardedUri(*parts, 4000),
            "mongodb://u:p%40ss@127.0.0.1:4000/admin?directConnection=true&authSource=admin&"
            "tls=false");
  parts = SplitMongoUri("mongodb://[::1]");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->host, "::1");
  EXPECT_EQ(parts->port, 27017);
  EXPECT_FALSE(parts->several_hosts);
  EXPECT_EQ(ForwardedUri(*parts, 5), "mongodb://127.0.0.1:5/?directConnection=true");
  EXPECT_FALSE(SplitMongoUri("mongodb+srv://cluster.example"));
  EXPECT_FALSE(SplitMongoUri("mongodb://db:port/"));
}

TEST(WireToolkit, AnOpMsgIsReadWithItsSequencesAndRewrittenWithoutItsChecksum) {
  const std::string body = BsonWriter().String("insert", "c").String("$db", "d").Finish();
  const std::string doc = BsonWriter().Int32("_id", 1).Finish();
  std::string m = BuildOpMsg(7, 3, 0, body, {{"documents", {doc, doc}}});
  // A checksum at the end, as a server may send it: parsed around, dropped by a rewrite.
  m.replace(16, 4, std::string("\x01\0\0\0", 4));
  m += "CRC!";
  m.replace(0, 4, std::string(1, static_cast<char>(m.size())) + std::string(3, '\0'));
  auto msg = ParseOpMsg(m);
  ASSERT_TRUE(msg);
  EXPECT_EQ(msg->flags, kChecksumPresent);
  EXPECT_EQ(msg->body, body);
  ASSERT_EQ(msg->sequences.size(), 1u);
  EXPECT_EQ(msg->sequences[0].identifier, "documents");
  EXPECT_EQ(msg->sequences[0].documents.size(), 2u);
  auto h = ReadHeader(m);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->request_id, 7);
  EXPECT_EQ(h->response_to, 3);

  const std::string other = BsonWriter().Int32("ok", 1).Finish();
  auto rewritten = ReplaceCommandDocument(m, other);
  ASSERT_TRUE(rewritten);
  auto again = ParseOpMsg(*rewritten);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->flags, 0u);
  EXPECT_EQ(again->body, other);
  EXPECT_EQ(again->sequences.size(), 1u);
  EXPECT_EQ(rewritten->find("CRC!"), std::string::npos);

  EXPECT_FALSE(ParseOpMsg(m.substr(0, m.size() - 1)));  // the length no longer matches
  EXPECT_TRUE(CommandDocument("garbage").empty());
}

// Answers each whole message with an OP_MSG {n: <its requestID>} that responds to it.
class EchoServer {
 public:
  EchoServer() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    // Port 0 tells the test it could not listen.
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        listen(listen_fd_, 8) == 0 &&
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      std::string in;
      char buf[4096];
      while (true) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
        while (in.size() >= 16 && in.size() >= static_cast<std::size_t>(GetInt32(in, 0))) {
          const std::int32_t id = GetInt32(in, 4);
          in.erase(0, static_cast<std::size_t>(GetInt32(in, 0)));
          std::string reply = BuildOpMsg(100 + id, id, 0, BsonWriter().Int32("n", id).Finish());
          send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        }
      }
      close(fd);
    });
  }
  ~EchoServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    close(listen_fd_);
  }
  int port() const { return port_; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  timeval tv{5, 0};  // a test that goes wrong fails instead of hanging
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// One request; the reply's `n`, or nullopt when the connection closed first.
std::optional<std::int64_t> Ask(int fd, std::int32_t id) {
  std::string m = BuildOpMsg(id, 0, 0, BsonWriter().Int32("ping", 1).Finish());
  if (send(fd, m.data(), m.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(m.size()))
    return std::nullopt;
  std::string in;
  char buf[4096];
  while (in.size() < 16 || in.size() < static_cast<std::size_t>(GetInt32(in, 0))) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    in.append(buf, static_cast<std::size_t>(n));
  }
  auto msg = ParseOpMsg(in);
  if (!msg) return std::nullopt;
  return IntegerField(msg->body, "n");
}

TEST(WireToolkit, EachReplyMeetsItsRequestsNoteAndIsRewrittenHeldBackOrEndsTheConnection) {
  EchoServer server;
  ASSERT_NE(server.port(), 0);
  std::atomic<int> requests{0};
  WireForwarder::Hooks hooks;
  hooks.on_request = [&](std::string_view request) {
    ++requests;
    return std::any(ReadHeader(request)->request_id * 10);
  };
  hooks.on_reply = [](std::string* message, std::any* note) {
    WireForwarder::ReplyVerdict v;
    const int asked = std::any_cast<int>(*note) / 10;
    if (asked == 2) {
      *message = *ReplaceCommandDocument(
          *message, BsonWriter().Int32("n", std::any_cast<int>(*note)).Finish());
    } else if (asked == 3) {
      v.delay = milliseconds(300);
    } else if (asked == 4) {
      message->clear();
      v.then = WireForwarder::ReplyVerdict::Then::kClose;
    }
    return v;
  };
  std::string error;
  auto forwarder = WireForwarder::Start("127.0.0.1", server.port(), hooks, &error);
  ASSERT_TRUE(forwarder) << error;
  int fd = Connect(forwarder->port());
  ASSERT_GE(fd, 0);
  EXPECT_EQ(Ask(fd, 1), 1);   // untouched
  EXPECT_EQ(Ask(fd, 2), 20);  // rewritten with what the request hook noted
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Ask(fd, 3), 3);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(300));
  EXPECT_EQ(Ask(fd, 4), std::nullopt);  // closed without an answer
  EXPECT_EQ(requests.load(), 4);
  EXPECT_EQ(forwarder->accepted(), 1);
  close(fd);
}

TEST(WireToolkit, WithoutHooksBytesPassAsTheyComeAndConnectionsAreCutOrRefused) {
  EchoServer server;
  ASSERT_NE(server.port(), 0);
  std::string error;
  auto forwarder = WireForwarder::Start("127.0.0.1", server.port(), {}, &error);
  ASSERT_TRUE(forwarder) << error;
  int fd = Connect(forwarder->port());
  ASSERT_GE(fd, 0);
  EXPECT_EQ(Ask(fd, 5), 5);
  EXPECT_EQ(forwarder->open_connections(), 1);
  EXPECT_EQ(forwarder->Reset(), 1);
  EXPECT_EQ(Ask(fd, 6), std::nullopt);
  close(fd);

  forwarder->Refuse(true);
  fd = Connect(forwarder->port());  // accepted by the kernel, then closed by the forwarder
  ASSERT_GE(fd, 0);
  EXPECT_EQ(Ask(fd, 7), std::nullopt);
  close(fd);
  EXPECT_EQ(forwarder->accepted(), 2);
}

}  // namespace
}  // namespace txn_recovery::testing
