// The health/metrics listener, queried over loopback with httplib's own client.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include <httplib.h>

#include "http_server.h"

namespace txn_recoveryd {
namespace {

using namespace std::chrono_literals;

// Handlers whose answers the test changes while the server runs.
struct Fake {
  std::atomic<bool> live{true};
  std::atomic<bool> ready{true};

  HealthHandlers Handlers() {
    return HealthHandlers{
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

httplib::Client ClientFor(const HealthServer& server) {
  httplib::Client client("127.0.0.1", server.port());
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  return client;
}

TEST(HealthServer, ServesMetricsWithTheExpositionContentType) {
  Fake fake;
  HealthServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));

  auto res = ClientFor(server).Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "# TYPE up gauge\nup 1\n");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
}

TEST(HealthServer, ProbesAnswerOkOr503WithTheReason) {
  Fake fake;
  HealthServer server;
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

TEST(HealthServer, AFailingProbeWithoutAReasonStillSaysWhichProbeFailed) {
  HealthServer server;
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

TEST(HealthServer, UnknownPathsAre404AndMethodsOtherThanGetAndHead405) {
  Fake fake;
  HealthServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", fake.Handlers()).ok());
  auto client = ClientFor(server);

  for (const char* path : {"/", "/metrics/", "/healthz", "/livez/extra"}) {
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

TEST(HealthServer, HeadAnswersLikeGetWithoutABody) {
  Fake fake;
  fake.ready = false;
  HealthServer server;
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

TEST(HealthServer, ASecondServerOnTheSamePortFailsNamingTheAddress) {
  Fake fake;
  HealthServer first;
  ASSERT_TRUE(first.Start("127.0.0.1:0", fake.Handlers()).ok());
  std::string taken = "127.0.0.1:" + std::to_string(first.port());

  HealthServer second;
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

TEST(HealthServer, UnparsableAddressesAreInvalidArgumentNamingTheAddress) {
  Fake fake;
  for (const char* bad : {"", "9090", ":9090", "localhost:", "localhost:http", "localhost:65536",
                          "::1:9090", "[::1]", "[::1]9090", "[not-v6]:9090", "host:-1"}) {
    HealthServer server;
    txn_recovery::Status s = server.Start(bad, fake.Handlers());
    EXPECT_TRUE(s.IsInvalidArgument()) << bad << ": " << s.ToString();
    EXPECT_NE(s.message().find(std::string("\"").append(bad) + "\""), std::string::npos)
        << s.message();
  }
}

TEST(HealthServer, AnAddressThatIsNotLocalIsUnavailableNamingIt) {
  Fake fake;
  HealthServer server;
  // TEST-NET-1 (RFC 5737): never an address of this machine, so bind fails.
  txn_recovery::Status s = server.Start("192.0.2.1:0", fake.Handlers());
  ASSERT_TRUE(s.IsUnavailable()) << s.ToString();
  EXPECT_NE(s.message().find("192.0.2.1:0"), std::string::npos) << s.message();
}

TEST(HealthServer, ListensOnIpv6LoopbackInBrackets) {
  Fake fake;
  HealthServer server;
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

TEST(HealthServer, StopIsIdempotentReleasesThePortAndAllowsARestart) {
  Fake fake;
  HealthServer server;
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

TEST(HealthServer, StopReturnsOnlyAfterTheRunningHandlerFinished) {
  std::atomic<bool> entered{false};
  std::atomic<bool> finished{false};
  HealthServer server;
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

TEST(HealthServer, AThrowingHandlerAnswers500AndTheServerKeepsServing) {
  HealthServer server;
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

TEST(HealthServer, AClientThatConnectsAndSendsNothingHoldsNeitherRequestsNorStop) {
  Fake fake;
  HealthServer server;
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

}  // namespace
}  // namespace txn_recoveryd
