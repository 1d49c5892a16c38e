// The health/metrics listener, queried over loopback with httplib's own client.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "daemon/serving/http_server.h"

namespace txn_recovery::daemon {
namespace {

using namespace std::chrono_literals;

// Handlers whose answers the test changes while the server runs.
struct Fake {
  std::atomic<bool> live{true};
  std::atomic<bool> ready{true};

  HealthAndMetricsHandlers Handlers() {
    return HealthAndMetricsHandlers{
        .metrics = [] { return std::string("# TYPE up gauge\nup 1\n"); },
        .live =
            [this](std::string* why) {
              if (!live) *why = "no sweep finished for 120s";
              return live.load();
            },
        .ready =
            [this](std::string* why) {
              if (!ready) *why = "database unreachable: connection refused";
              return ready.load();
            },
    };
  }
};

httplib::Client ClientFor(const HealthAndMetricsServer& server) {
  httplib::Client client("127.0.0.1", server.port());
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  return client;
}

TEST(HealthAndMetricsServer, ServesMetricsWithTheExpositionContentType) {
  Fake fake;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));

  auto res = ClientFor(server).Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "# TYPE up gauge\nup 1\n");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
}

TEST(HealthAndMetricsServer, ProbesAnswerOkOr503WithTheReason) {
  Fake fake;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  auto client = ClientFor(server);

  for (const char* path : {"/livez", "/readyz"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_EQ(res->body, "ok\n") << path;
  }

  // Readiness follows the database; liveness does not.
  fake.ready = false;
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->body, "database unreachable: connection refused\n");
  auto live = client.Get("/livez");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200);

  fake.live = false;
  live = client.Get("/livez");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 503);
  EXPECT_EQ(live->body, "no sweep finished for 120s\n");
}

TEST(HealthAndMetricsServer, AFailingProbeWithoutAReasonStillSaysWhichProbeFailed) {
  HealthAndMetricsServer server;
  ASSERT_TRUE(server
                  .Start("127.0.0.1:0", {.metrics = nullptr,
                                         .live = [](std::string*) { return true; },
                                         .ready = [](std::string*) { return false; }})
                  .ok());
  auto res = ClientFor(server).Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->body, "not ready\n");
  auto metrics = ClientFor(server).Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 404) << "a handler left empty is not served";
}

TEST(HealthAndMetricsServer, UnknownPathsAre404AndMethodsOtherThanGetAndHead405) {
  Fake fake;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  auto client = ClientFor(server);

  for (const char* path : {"/metrics/", "/healthz", "/livez/extra", "/index.html"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
  auto post = client.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  auto del = client.Delete("/livez");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
}

TEST(HealthAndMetricsServer, HeadAnswersLikeGetWithoutABody) {
  Fake fake;
  fake.ready = false;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  auto client = ClientFor(server);

  auto metrics = client.Head("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->body, "");
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(metrics->get_header_value("Content-Length"), "21");  // the GET body's length

  auto ready = client.Head("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->body, "");
  auto missing = client.Head("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST(HealthAndMetricsServer, ASecondServerOnTheSamePortFailsNamingTheAddress) {
  Fake fake;
  HealthAndMetricsServer first;
  ASSERT_TRUE(first.Start("127.0.0.1:0", fake.Handlers()).ok());
  std::string taken = "127.0.0.1:" + std::to_string(first.port());

  HealthAndMetricsServer second;
  txn_recovery::Status s = second.Start(taken, fake.Handlers());
  ASSERT_TRUE(s.IsUnavailable()) << s.ToString();
  EXPECT_NE(s.message().find(taken), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("in use"), std::string::npos) << s.message();
  EXPECT_EQ(second.port(), 0);

  // The first one is unaffected, and still gets every request.
  for (int i = 0; i < 5; ++i) {
    auto res = ClientFor(first).Get("/livez");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
  }
}

TEST(HealthAndMetricsServer, UnparsableAddressesAreInvalidArgumentNamingTheAddress) {
  Fake fake;
  for (const char* bad :
       {"", "9090", "localhost:", "localhost:http", "localhost:65536", "::1:9090", "[::1]",
        "[::1]9090", "[not-v6]:9090", "host:-1", "0:9090", "127.1:9090", "0x7f.0.0.1:9090",
        "2130706433:9090", "bad_host!:9090", " 127.0.0.1:9090"}) {
    HealthAndMetricsServer server;
    txn_recovery::Status s = server.Start(bad, fake.Handlers());
    EXPECT_TRUE(s.IsInvalidArgument()) << bad << ": " << s.ToString();
    EXPECT_NE(s.message().find(std::string("\"").append(bad) + "\""), std::string::npos)
        << s.message();
  }
}

TEST(HealthAndMetricsServer, AnAddressThatIsNotLocalIsUnavailableNamingIt) {
  Fake fake;
  HealthAndMetricsServer server;
  // TEST-NET-1 (RFC 5737): never an address of this machine, so bind fails.
  txn_recovery::Status s = server.Start("192.0.2.1:0", fake.Handlers());
  ASSERT_TRUE(s.IsUnavailable()) << s.ToString();
  EXPECT_NE(s.message().find("192.0.2.1:0"), std::string::npos) << s.message();
}

TEST(HealthAndMetricsServer, ListensOnIpv6LoopbackInBrackets) {
  Fake fake;
  HealthAndMetricsServer server;
  txn_recovery::Status s = server.Start("[::1]:0", fake.Handlers());
  if (s.IsUnavailable()) GTEST_SKIP() << "no IPv6 loopback here: " << s.ToString();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(server.address(), "[::1]:" + std::to_string(server.port()));
  httplib::Client client("::1", server.port());
  client.set_connection_timeout(2);
  auto res = client.Get("/livez");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

TEST(HealthAndMetricsServer, StopIsIdempotentReleasesThePortAndAllowsARestart) {
  Fake fake;
  HealthAndMetricsServer server;
  server.Stop();  // never started: nothing to do
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  int port = server.port();
  server.Stop();
  server.Stop();
  EXPECT_EQ(server.port(), 0);
  EXPECT_EQ(server.address(), "");

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  EXPECT_FALSE(client.Get("/livez")) << "nothing listens after Stop";

  // The same port binds again at once (SO_REUSEADDR), on a restart as after a reload.
  std::string again = "127.0.0.1:" + std::to_string(port);
  txn_recovery::Status s = server.Start(again, fake.Handlers());
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto res = client.Get("/livez");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HealthAndMetricsServer, StopReturnsOnlyAfterTheRunningHandlerFinished) {
  std::atomic<bool> entered{false};
  std::atomic<bool> finished{false};
  HealthAndMetricsServer server;
  ASSERT_TRUE(server
                  .Start("127.0.0.1:0", {.metrics =
                                             [&] {
                                               entered = true;
                                               std::this_thread::sleep_for(300ms);
                                               finished = true;
                                               return std::string("up 1\n");
                                             },
                                         .live = nullptr,
                                         .ready = nullptr})
                  .ok());
  std::thread scraper([port = server.port()] {
    httplib::Client client("127.0.0.1", port);
    (void)client.Get("/metrics");
  });
  while (!entered) std::this_thread::sleep_for(1ms);
  server.Stop();
  EXPECT_TRUE(finished) << "Stop returned while a handler was still running";
  scraper.join();
}

TEST(HealthAndMetricsServer, AThrowingHandlerAnswers500AndTheServerKeepsServing) {
  HealthAndMetricsServer server;
  ASSERT_TRUE(server
                  .Start("127.0.0.1:0",
                         {.metrics = []() -> std::string { throw std::runtime_error("boom"); },
                          .live = [](std::string*) -> bool { throw 42; },
                          .ready = [](std::string*) { return true; }})
                  .ok());
  auto client = ClientFor(server);
  for (int i = 0; i < 3; ++i) {  // more requests than workers: none of them died
    auto metrics = client.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 500);
    EXPECT_EQ(metrics->body, "internal error\n") << "the exception's text is not shown";
    auto live = client.Get("/livez");
    ASSERT_TRUE(live);
    EXPECT_EQ(live->status, 500);
  }
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
}

TEST(HealthAndMetricsServer, AClientThatConnectsAndSendsNothingHoldsNeitherRequestsNorStop) {
  Fake fake;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());

  int stalled = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(stalled, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(stalled, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::this_thread::sleep_for(100ms);  // accepted, and a worker waits on it

  auto res = ClientFor(server).Get("/livez");  // the other worker answers
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);

  auto start = std::chrono::steady_clock::now();
  server.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  close(stalled);
}

// A raw TCP client, for what an HTTP client library will not do (send half a request,
// trickle, never read).
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  bool connected() const { return connected_; }
  bool Send(const std::string& text) {
    return send(fd_, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
  }
  // Everything until the server closes (or 5 s of silence).
  std::string ReadAll() {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = recv(fd_, buf, sizeof buf, 0)) > 0;) out.append(buf, n);
    return out;
  }
  // Whether the server closed the connection (read returns 0) within 5 s.
  bool ClosedByServer() {
    char buf[256];
    for (;;) {
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

int OpenDescriptors() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

TEST(HealthAndMetricsServer, ARangeHeaderOnMetricsIsIgnored) {
  Fake fake;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  auto res = ClientFor(server).Get("/metrics", {{"Range", "bytes=0-5"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << "a scraper gets the whole exposition, never a piece of it";
  EXPECT_EQ(res->body, "# TYPE up gauge\nup 1\n");
}

TEST(HealthAndMetricsServer, TheLandingPageNamesTheEndpoints) {
  Fake fake;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  auto res = ClientFor(server).Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  for (const char* link : {"href=\"/metrics\"", "href=\"/livez\"", "href=\"/readyz\""})
    EXPECT_NE(res->body.find(link), std::string::npos) << res->body;
}

TEST(HealthAndMetricsServer, ColonPortListensOnEveryAddressAndSaysSo) {
  Fake fake;
  HealthAndMetricsServer server;
  txn_recovery::Status s = server.Start(":0", fake.Handlers());
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string port = std::to_string(server.port());
  EXPECT_TRUE(server.address() == "[::]:" + port || server.address() == "0.0.0.0:" + port)
      << server.address();
  httplib::Client v4("127.0.0.1", server.port());
  auto res = v4.Get("/livez");
  ASSERT_TRUE(res) << "IPv4 is part of every address";
  EXPECT_EQ(res->status, 200);
  if (server.address()[0] == '[') {
    httplib::Client v6("::1", server.port());
    auto res6 = v6.Get("/livez");
    ASSERT_TRUE(res6);
    EXPECT_EQ(res6->status, 200);
  }
}

TEST(HealthAndMetricsServer, ParseListenAddressSaysWhatEachFormMeans) {
  ListenAddress a;
  ASSERT_TRUE(ParseListenAddress(":9464", &a).ok());
  EXPECT_TRUE(a.every_address);
  EXPECT_EQ(a.port, 9464);
  EXPECT_EQ(a.ToString(), ":9464");
  ASSERT_TRUE(ParseListenAddress("0.0.0.0:9464", &a).ok());
  EXPECT_FALSE(a.every_address);
  EXPECT_EQ(a.host, "0.0.0.0");
  ASSERT_TRUE(ParseListenAddress("[::1]:80", &a).ok());
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.ToString(), "[::1]:80");
  ASSERT_TRUE(ParseListenAddress("metrics-host.example:9464", &a).ok());
  EXPECT_EQ(a.host, "metrics-host.example");
  txn_recovery::Status zero = ParseListenAddress("0:9464", &a);
  ASSERT_TRUE(zero.IsInvalidArgument());
  EXPECT_NE(zero.message().find(":PORT for every address"), std::string::npos) << zero.message();
}

TEST(HealthAndMetricsServer, TwoClientsSendingAHeaderLineASecondNeverDelayAProbe) {
  Fake fake;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  std::atomic<bool> done{false};
  std::vector<std::thread> slow;
  for (int i = 0; i < 2; ++i)
    slow.emplace_back([&, port = server.port()] {
      // A new slow client whenever the server drops one: slow the whole time.
      while (!done) {
        RawClient c(port);
        if (!c.Send("GET /metrics HTTP/1.1\r\n")) continue;
        for (int line = 0; !done && c.Send("X-Slow-" + std::to_string(line) + ": 1\r\n"); ++line)
          for (int t = 0; t < 10 && !done; ++t) std::this_thread::sleep_for(100ms);
      }
    });
  std::this_thread::sleep_for(200ms);  // both slow clients connected and trickling
  auto until = std::chrono::steady_clock::now() + 5s;
  int probes = 0;
  while (std::chrono::steady_clock::now() < until) {
    httplib::Client client("127.0.0.1", server.port());
    client.set_connection_timeout(1);
    client.set_read_timeout(1);
    auto t0 = std::chrono::steady_clock::now();
    auto res = client.Get("/livez");
    ASSERT_TRUE(res) << "probe " << probes << ": " << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "probe " << probes;
    ++probes;
    std::this_thread::sleep_for(100ms);
  }
  done = true;
  for (auto& t : slow) t.join();
  EXPECT_GT(server.counters().timed_out, 0u) << "the slow clients were cut at the deadline";
}

TEST(HealthAndMetricsServer, AConnectionFloodHoldsABoundedNumberOfDescriptorsAndProbesStillAnswer) {
  Fake fake;
  HealthAndMetricsServer server;
  HttpLimits limits;
  limits.max_connections = 32;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers(), limits).ok());
  const int before = OpenDescriptors();
  std::vector<std::unique_ptr<RawClient>> flood;
  for (int i = 0; i < 400; ++i) {
    flood.push_back(std::make_unique<RawClient>(server.port()));
    if (i % 50 == 49) {  // probes keep being answered during the flood
      auto res = ClientFor(server).Get("/livez");
      ASSERT_TRUE(res) << "after " << i + 1 << " idle connections";
      EXPECT_EQ(res->status, 200);
    }
  }
  std::this_thread::sleep_for(200ms);  // the server has accepted what it will
  // The test holds 400 client sockets; beyond them the server holds at most its limit.
  const int server_side = OpenDescriptors() - before - static_cast<int>(flood.size());
  EXPECT_LE(server_side, limits.max_connections) << "descriptors held by the server";
  EXPECT_GT(server.counters().evicted, 0u);
}

TEST(HealthAndMetricsServer, ARequestThatNeverCompletesIsClosedAtItsDeadline) {
  Fake fake;
  HealthAndMetricsServer server;
  HttpLimits limits;
  limits.request_deadline = 300ms;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers(), limits).ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.Send("GET /livez HTTP/1.1\r\nHost: x\r\n"));  // never the blank line
  EXPECT_TRUE(c.ClosedByServer());
  EXPECT_EQ(server.counters().timed_out, 1u);
}

TEST(HealthAndMetricsServer, AnOversizedRequestHeadIsRefused) {
  Fake fake;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.Send("GET /livez HTTP/1.1\r\nX-Big: " + std::string(20000, 'a')));
  std::string answer = c.ReadAll();
  EXPECT_EQ(answer.rfind("HTTP/1.1 431 ", 0), 0u) << answer.substr(0, 200);
}

TEST(HealthAndMetricsServer, KeepAliveIsBoundedInRequests) {
  Fake fake;
  HealthAndMetricsServer server;
  HttpLimits limits;
  limits.max_requests_per_connection = 3;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers(), limits).ok());
  RawClient c(server.port());
  std::string requests;
  for (int i = 0; i < 5; ++i) requests += "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(c.Send(requests));     // pipelined
  std::string answer = c.ReadAll();  // until the server closes
  std::size_t responses = 0;
  for (std::size_t at = 0; (at = answer.find("HTTP/1.1 200 OK", at)) != std::string::npos; ++at)
    ++responses;
  EXPECT_EQ(responses, 3u) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
}

TEST(HealthAndMetricsServer, StopNeverWaitsForAClientInTheMiddleOfARequest) {
  Fake fake;
  HealthAndMetricsServer server;
  HttpLimits limits;
  limits.request_deadline = 60s;  // the client alone would hold the connection a minute
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers(), limits).ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.Send("GET /livez HTTP/1.1\r\n"));
  std::this_thread::sleep_for(100ms);
  auto t0 = std::chrono::steady_clock::now();
  server.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_TRUE(c.ClosedByServer());
}

}  // namespace
}  // namespace txn_recovery::daemon
