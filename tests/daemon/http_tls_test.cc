// The HTTP endpoint with a web configuration (http_server.h, web_config.h): TLS checked
// with a real client (curl), client certificates, plain HTTP sent to the TLS port, a client
// that stalls in the middle of its handshake, and basic authentication, with a flood of
// wrong passwords that must not make /livez deaf. The certificates and keys are made at
// test time with the openssl command in a temporary directory: test-only, never committed.
#include <arpa/inet.h>
#include <crypt.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/serving/http_server.h"
#include "support/subprocess.h"

namespace txn_recovery::daemon {
namespace {

using namespace std::chrono_literals;
using txn_recovery::testing::Subprocess;
using SteadyClock = std::chrono::steady_clock;

// `name` found on PATH, as a shell would; "" when absent.
std::string Which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// A CA and the server's certificate it signed (for 127.0.0.1 and localhost), a client CA
// and a client certificate it signed, and a CA that signed nothing: made once per run.
struct Pki {
  std::string dir;
  std::string File(const std::string& name) const { return dir + "/" + name; }
};

const Pki& TestPki() {
  static const Pki pki = [] {
    Pki p;
    p.dir = ::testing::TempDir() + "txn_recoveryd_pki_" + std::to_string(getpid());
    std::filesystem::create_directories(p.dir);
    std::ofstream(p.File("server.ext"))
        << "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n";
    std::ofstream(p.File("client.ext")) << "extendedKeyUsage=clientAuth\n";
    const std::string script = R"(set -e
cd "$1"
key='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
for ca in ca client-ca other-ca; do
  openssl req -x509 $key -keyout $ca.key -out $ca.crt -days 2 -subj /CN=test-$ca
done
openssl req $key -keyout server.key -out server.csr -subj /CN=localhost
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.crt
for who in client:client-ca stranger:other-ca; do
  name=${who%%:*} ca=${who##*:}
  openssl req $key -keyout $name.key -out $name.csr -subj /CN=$name
  openssl x509 -req -in $name.csr -CA $ca.crt -CAkey $ca.key -CAcreateserial -days 2 \
    -extfile client.ext -out $name.crt
done
)";
    Subprocess make({"/bin/sh", "-c", script, "pki", p.dir});
    auto rc = make.Wait(60s);
    if (!rc || *rc != 0) throw std::runtime_error("openssl failed: " + make.Stderr());
    return p;
  }();
  return pki;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  std::string path = TestPki().File(name);
  std::ofstream(path) << text;
  return path;
}

// A bcrypt hash of `password` at `cost`, as htpasswd -B makes one.
std::string Bcrypt(const std::string& password, int cost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", cost, nullptr, 0, salt, sizeof salt) == nullptr)
    throw std::runtime_error("crypt_gensalt_rn failed");
  crypt_data data{};
  const char* hash = crypt_r(password.c_str(), salt, &data);
  if (hash == nullptr || hash[0] == '*') throw std::runtime_error("crypt_r failed");
  return hash;
}

struct CurlResult {
  int exit = -1;  // curl's exit code (60: the certificate is not trusted)
  int status = 0;
  std::string body;
};

// curl against https://127.0.0.1:PORT/PATH (or http:// with `scheme`), with `args`.
CurlResult Curl(int port, const std::string& path, std::vector<std::string> args,
                const std::string& scheme = "https") {
  const std::string curl = Which("curl");
  if (curl.empty()) throw std::runtime_error("curl is not installed (scripts/deps.sh)");
  std::vector<std::string> argv = {curl, "-sS", "--max-time", "5", "-w", "\n%{http_code}"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(scheme + "://127.0.0.1:" + std::to_string(port) + path);
  Subprocess p(argv);
  CurlResult r;
  auto rc = p.Wait(15s);
  r.exit = rc.value_or(-1);
  std::string out = p.Stdout();
  std::size_t nl = out.rfind('\n');
  if (nl != std::string::npos) {
    r.body = out.substr(0, nl);
    r.status = std::atoi(out.c_str() + nl + 1);
  }
  return r;
}

HealthAndMetricsHandlers Handlers() {
  return HealthAndMetricsHandlers{
      .metrics = [] { return std::string("# TYPE up gauge\nup 1\n"); },
      .live = [](std::string*) { return true; },
      .ready = [](std::string*) { return true; },
  };
}

constexpr const char* kNoTls = "no TLS";

// A web configuration with the test's server certificate and key and `tls` (more lines
// under tls_server_config), or without TLS when `tls` is kNoTls, and `rest` (more of the
// file), loaded.
HttpSecurity Security(const std::string& name, const std::string& tls,
                      const std::string& rest = {}) {
  const Pki& pki = TestPki();
  std::string text;
  if (tls != kNoTls)
    text = "tls_server_config:\n  cert_file: " + pki.File("server.crt") +
           "\n  key_file: " + pki.File("server.key") + "\n" + tls;
  HttpSecurity security;
  txn_recovery::Status s = LoadHttpSecurity(WriteFile(name, text + rest), &security);
  if (!s.ok()) throw std::runtime_error(s.ToString());
  return security;
}

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Everything the server sends until it closes (or 10 s pass).
std::string ReadAll(int fd) {
  std::string all;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) all.append(buf, static_cast<std::size_t>(n));
  return all;
}

TEST(HttpTls, ServesTheProbesAndMetricsToAClientThatTrustsItsCa) {
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Handlers(), {}, Security("plain-tls.yml", "")).ok());
  CurlResult r = Curl(server.port(), "/livez", {"--cacert", TestPki().File("ca.crt")});
  EXPECT_EQ(r.exit, 0);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
  r = Curl(server.port(), "/metrics", {"--cacert", TestPki().File("ca.crt")});
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("up 1"), std::string::npos);
}

TEST(HttpTls, AClientTrustingAnotherCaRefusesTheServerWhichKeepsServing) {
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Handlers(), {}, Security("other-ca.yml", "")).ok());
  CurlResult r = Curl(server.port(), "/livez", {"--cacert", TestPki().File("other-ca.crt")});
  EXPECT_EQ(r.exit, 60) << "curl: the peer's certificate cannot be verified";
  EXPECT_EQ(r.status, 0);
  r = Curl(server.port(), "/livez", {"--cacert", TestPki().File("ca.crt")});
  EXPECT_EQ(r.status, 200);
  EXPECT_GE(server.counters().tls_failed, 1u);
}

TEST(HttpTls, PlainHttpToTheTlsPortIsAnswered400AndClosedAndTheServerKeepsServing) {
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Handlers(), {}, Security("plain-http.yml", "")).ok());
  int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  const std::string get = "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  std::string answer = ReadAll(fd);  // returns at the server's close
  close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.0 400 Bad Request\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("HTTP request to an HTTPS server"), std::string::npos);
  // curl's own plain request is refused as cleanly.
  CurlResult plain = Curl(server.port(), "/livez", {}, "http");
  EXPECT_EQ(plain.status, 400);
  EXPECT_EQ(Curl(server.port(), "/livez", {"--cacert", TestPki().File("ca.crt")}).status, 200);
}

TEST(HttpTls, RequireAndVerifyClientCertAdmitsOnlyCertificatesOfTheClientCa) {
  const Pki& pki = TestPki();
  HealthAndMetricsServer server;
  ASSERT_TRUE(server
                  .Start("127.0.0.1:0", Handlers(), {},
                         Security("mtls.yml",
                                  "  client_auth_type: RequireAndVerifyClientCert\n"
                                  "  client_ca_file: " +
                                      pki.File("client-ca.crt") + "\n"))
                  .ok());
  const std::vector<std::string> trust = {"--cacert", pki.File("ca.crt")};
  auto with = [&](const std::string& who) {
    std::vector<std::string> args = trust;
    args.insert(args.end(), {"--cert", pki.File(who + ".crt"), "--key", pki.File(who + ".key")});
    return args;
  };
  CurlResult good = Curl(server.port(), "/metrics", with("client"));
  EXPECT_EQ(good.status, 200);
  EXPECT_NE(good.body.find("up 1"), std::string::npos);
  EXPECT_NE(Curl(server.port(), "/metrics", trust).status, 200) << "no certificate";
  EXPECT_NE(Curl(server.port(), "/metrics", with("stranger")).status, 200)
      << "a certificate of another CA";
  EXPECT_GE(server.counters().tls_failed, 2u);
  EXPECT_EQ(Curl(server.port(), "/livez", with("client")).status, 200);
}

// A client that sends the first bytes of a ClientHello and stalls holds a connection slot
// until the request deadline, never a worker: another client is served meanwhile, and the
// stalled one is closed at its deadline.
TEST(HttpTls, AHalfHandshakeIsClosedAtTheRequestDeadlineWhileAnotherClientIsServed) {
  HttpLimits limits;
  limits.request_deadline = 700ms;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Handlers(), limits, Security("stall.yml", "")).ok());
  int stalled = Connect(server.port());
  ASSERT_GE(stalled, 0);
  // A handshake record header announcing 512 bytes, and 4 of them.
  const unsigned char half[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc};
  ASSERT_EQ(send(stalled, half, sizeof half, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof half));
  const auto start = SteadyClock::now();
  CurlResult r = Curl(server.port(), "/livez", {"--cacert", TestPki().File("ca.crt")});
  EXPECT_EQ(r.status, 200);
  std::string rest = ReadAll(stalled);  // returns when the server closes
  const auto closed_after = SteadyClock::now() - start;
  close(stalled);
  EXPECT_TRUE(rest.empty());
  EXPECT_LT(closed_after, 3s) << "the stalled handshake outlived its deadline";
  EXPECT_GE(closed_after, 500ms);
  EXPECT_EQ(server.counters().timed_out, 1u);
}

// Stalled handshakes in every slot: the next client takes the place of the oldest.
TEST(HttpTls, StalledHandshakesInEverySlotAreEvictedForANewClient) {
  HttpLimits limits;
  limits.max_connections = 3;
  limits.request_deadline = 10s;
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Handlers(), limits, Security("evict.yml", "")).ok());
  std::vector<int> stalled;
  for (int i = 0; i < 3; ++i) {
    stalled.push_back(Connect(server.port()));
    const unsigned char header[] = {0x16, 0x03, 0x01};
    ASSERT_EQ(send(stalled.back(), header, sizeof header, MSG_NOSIGNAL), 3);
  }
  std::this_thread::sleep_for(200ms);  // all three accepted
  CurlResult r = Curl(server.port(), "/livez", {"--cacert", TestPki().File("ca.crt")});
  EXPECT_EQ(r.status, 200);
  EXPECT_GE(server.counters().evicted, 1u);
  for (int fd : stalled) close(fd);
}

// ---- Basic authentication -----------------------------------------------------------------

httplib::Client Plain(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  return client;
}

TEST(HttpAuth, MetricsNeedCredentialsAndTheProbesDoNot) {
  const std::string users = "basic_auth_users:\n  prometheus: " + Bcrypt("s3cret", 4) +
                            "\n  other: " + Bcrypt("other-password", 4) + "\n";
  HealthAndMetricsServer server;
  ASSERT_TRUE(
      server.Start("127.0.0.1:0", Handlers(), {}, Security("auth.yml", kNoTls, users)).ok());
  httplib::Client client = Plain(server.port());
  auto none = client.Get("/metrics");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"),
            "Basic realm=\"txn-recoveryd\", charset=\"UTF-8\"");
  EXPECT_EQ(client.Get("/")->status, 401);
  EXPECT_EQ(client.Get("/livez")->status, 200);
  EXPECT_EQ(client.Get("/readyz")->status, 200);

  client.set_basic_auth("prometheus", "s3cret");
  auto good = client.Get("/metrics");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
  EXPECT_NE(good->body.find("up 1"), std::string::npos);
  EXPECT_EQ(client.Get("/metrics")->status, 200) << "again, from the cache";
  client.set_basic_auth("prometheus", "wrong");
  EXPECT_EQ(client.Get("/metrics")->status, 401);
  client.set_basic_auth("nobody", "s3cret");
  EXPECT_EQ(client.Get("/metrics")->status, 401);
  client.set_basic_auth("other", "s3cret");
  EXPECT_EQ(client.Get("/metrics")->status, 401) << "another user's password";
  EXPECT_GE(server.counters().unauthorized, 5u);
}

TEST(HttpAuth, OverTlsWithCurlAndTheConfiguredHeaders) {
  const std::string rest =
      "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
      "basic_auth_users:\n  prometheus: " +
      Bcrypt("s3cret", 4) + "\n";
  HealthAndMetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0", Handlers(), {}, Security("tls-auth.yml", "", rest)).ok());
  const std::vector<std::string> trust = {"--cacert", TestPki().File("ca.crt")};
  EXPECT_EQ(Curl(server.port(), "/metrics", trust).status, 401);
  std::vector<std::string> good = trust;
  good.insert(good.end(), {"-u", "prometheus:s3cret", "-D", "-"});
  CurlResult r = Curl(server.port(), "/metrics", good);
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("X-Content-Type-Options: nosniff"), std::string::npos) << r.body;
  std::vector<std::string> bad = trust;
  bad.insert(bad.end(), {"-u", "prometheus:nope"});
  EXPECT_EQ(Curl(server.port(), "/metrics", bad).status, 401);
}

TEST(HttpAuth, AuthorizationHeadersAreParsedAsRfc7617Says) {
  std::string user, password;
  EXPECT_TRUE(BasicAuth::ParseHeader("Basic cHJvbWV0aGV1czpzM2NyZXQ=", &user, &password));
  EXPECT_EQ(user, "prometheus");
  EXPECT_EQ(password, "s3cret");
  EXPECT_TRUE(BasicAuth::ParseHeader("basic dTpwOnE=", &user, &password)) << "u:p:q";
  EXPECT_EQ(password, "p:q");
  EXPECT_FALSE(BasicAuth::ParseHeader("Bearer abc", &user, &password));
  EXPECT_FALSE(BasicAuth::ParseHeader("Basic !!!!", &user, &password));
  EXPECT_FALSE(BasicAuth::ParseHeader("Basic dXNlcg==", &user, &password)) << "no colon";
  EXPECT_FALSE(BasicAuth::ParseHeader("Basic", &user, &password));
}

// bcrypt is slow by design. A flood of wrong passwords is checked one at a time, at most
// kMaxWaitingVerifications waiting, the rest answered 503 at once: /livez and a scraper
// whose password was verified before keep their answers within a fraction of a second.
TEST(HttpAuth, AFloodOfWrongPasswordsLeavesTheProbesAndCachedScrapersAnswered) {
  const std::string users = "basic_auth_users:\n  prometheus: " + Bcrypt("s3cret", 11) + "\n";
  HealthAndMetricsServer server;
  ASSERT_TRUE(
      server.Start("127.0.0.1:0", Handlers(), {}, Security("flood.yml", kNoTls, users)).ok());
  {
    httplib::Client first = Plain(server.port());
    first.set_basic_auth("prometheus", "s3cret");
    ASSERT_EQ(first.Get("/metrics")->status, 200);  // verified once, then cached
  }
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 16; ++i)
    flood.emplace_back([&, i] {
      httplib::Client c = Plain(server.port());
      c.set_read_timeout(10);
      for (int n = 0; !stop.load(); ++n) {
        c.set_basic_auth("prometheus", "guess-" + std::to_string(i) + "-" + std::to_string(n));
        auto r = c.Get("/metrics");
        if (r && (r->status == 401 || r->status == 503)) answered++;
        // An attacker would not pause; this spares the machine's other tests.
        if (r && r->status == 503) std::this_thread::sleep_for(5ms);
      }
    });
  std::this_thread::sleep_for(300ms);  // the queue fills
  httplib::Client probe = Plain(server.port());
  httplib::Client scraper = Plain(server.port());
  scraper.set_basic_auth("prometheus", "s3cret");
  auto slowest = SteadyClock::duration::zero();
  for (int i = 0; i < 15; ++i) {
    auto t0 = SteadyClock::now();
    auto live = probe.Get("/livez");
    auto scrape = scraper.Get("/metrics");
    slowest = std::max(slowest, SteadyClock::now() - t0);
    ASSERT_TRUE(live && scrape);
    EXPECT_EQ(live->status, 200);
    EXPECT_EQ(scrape->status, 200);
    std::this_thread::sleep_for(100ms);
  }
  stop = true;
  for (auto& t : flood) t.join();
  EXPECT_LT(slowest, 500ms) << "a probe waited for the password checks";
  EXPECT_GT(answered.load(), 16);
  EXPECT_GT(server.counters().auth_busy, 0u) << "the flood never filled the queue";
}

}  // namespace
}  // namespace txn_recovery::daemon
