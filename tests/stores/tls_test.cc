// The daemon on a server that requires TLS: DocumentDB's TLS gateway (scripts/test.sh names it
// in TXN_RECOVERY_TEST_TLS_URI, with `tls=true&tlsCAFile=` the CA that signed its certificate,
// TXN_RECOVERY_TEST_TLS_CA). It serves the same database as TXN_RECOVERY_TEST_URI, where the
// tests set up their stuck transfers. Engines without TLS (the embedded server) skip them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "support/bank.h"
#include "support/daemon_process.h"
#include "support/database_suites.h"
#include "support/test_env.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::seconds;

struct TlsServer {
  std::string uri;      // tls=true&tlsCAFile=<ca> among its options
  std::string ca_file;  // the CA that signed the server's certificate
};

std::optional<TlsServer> FindTlsServer() {
  const char* uri = std::getenv("TXN_RECOVERY_TEST_TLS_URI");
  const char* ca = std::getenv("TXN_RECOVERY_TEST_TLS_CA");
  if (uri == nullptr || *uri == '\0' || ca == nullptr || *ca == '\0') return std::nullopt;
  return TlsServer{uri, ca};
}

std::string Replaced(std::string text, const std::string& what, const std::string& with) {
  size_t at = text.find(what);
  EXPECT_NE(at, std::string::npos) << "no '" << what << "' in the TLS URI";
  if (at != std::string::npos) text.replace(at, what.size(), with);
  return text;
}

std::string WatchOf(const std::string& database) {
  return "server_selection_timeout = \"3s\"\n[[watch]]\nname = \"bank\"\ndatabase = \"" + database +
         "\"\n";
}

TXN_RECOVERY_DATABASE_SUITE(Tls);

// A bank on the test server with one transfer stuck in `pending` for two minutes.
class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<TlsServer> server = FindTlsServer();
    if (!server)
      GTEST_SKIP() << "no TLS test server: TXN_RECOVERY_TEST_TLS_URI and "
                      "TXN_RECOVERY_TEST_TLS_CA are unset (scripts/test.sh sets them for "
                      "DocumentDB; the embedded server has no TLS)";
    server_ = *server;
    backend_ = TestBackend::Create("mongo");
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    bank_ = std::make_unique<Bank>(backend_->store(), backend_->database());
    bank_->Open(2);
    stuck_ = bank_->Transfer("A0", "A1", 100, 3);
    bank_->Age(stuck_, std::chrono::minutes(2));
  }

  ProcessResult Sweep(const std::string& mongodb_section) {
    std::string path =
        WriteTestFile(".toml", "[mongodb]\n" + mongodb_section + WatchOf(backend_->database()));
    return RunTxnRecoveryd({"sweep", "--json", "--config", path}, {}, seconds(60));
  }

  TlsServer server_;
  std::unique_ptr<TestBackend> backend_;
  std::unique_ptr<Bank> bank_;
  Value stuck_;
};

TEST_F(Tls, ASweepOverTlsTrustingTheServersCaResolvesAStuckTransfer) {
  ASSERT_NE(server_.uri.find("tls=true&tlsCAFile=" + server_.ca_file), std::string::npos)
      << "the TLS URI should name its CA";
  ProcessResult r = Sweep("uri = \"" + server_.uri + "\"\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["watches"][0]["resolved"], 1) << r.out;
  EXPECT_EQ(bank_->State(stuck_), "done");
}

TEST_F(Tls, TheTlsUriReadFromAUriFileWorksTheSame) {
  std::string uri_file = WriteTestFile(".uri", server_.uri + "\n");
  ProcessResult r = Sweep("uri_file = \"" + uri_file + "\"\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(bank_->State(stuck_), "done");
}

// The public CAs of the system did not sign the test server's certificate: the handshake
// fails, which is an outage of the path to the database (exit 69, as for an unreachable
// server), said in words that point at TLS, never taken for refused credentials.
TEST_F(Tls, AServerWhoseCertificateAnotherCaSignedIsRefusedAsUnreachableSayingWhy) {
  const std::string system_cas = "/etc/ssl/certs/ca-certificates.crt";
  std::string uri =
      Replaced(server_.uri, "tlsCAFile=" + server_.ca_file, "tlsCAFile=" + system_cas);
  ProcessResult r = Sweep("uri = \"" + uri + "\"\n");
  EXPECT_EQ(r.exit_code, 69) << r.out << r.err;
  EXPECT_NE(r.err.find("TLS handshake failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("certificate verify failed"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("authentication failed"), std::string::npos) << r.err;
  EXPECT_EQ(bank_->State(stuck_), "pending") << "nothing may be written";
}

// 127.1 reaches the same server (the resolver reads it as 127.0.0.1), but is not a name its
// certificate carries (localhost and 127.0.0.1): refused like a wrong CA.
TEST_F(Tls, AServerCertificateForAnotherHostNameIsRefusedAsUnreachableSayingWhy) {
  std::string uri = Replaced(server_.uri, "@127.0.0.1:", "@127.1:");
  ProcessResult r = Sweep("uri = \"" + uri + "\"\n");
  EXPECT_EQ(r.exit_code, 69) << r.out << r.err;
  EXPECT_NE(r.err.find("TLS handshake failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hostname mismatch"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("authentication failed"), std::string::npos) << r.err;
  EXPECT_EQ(bank_->State(stuck_), "pending") << "nothing may be written";
}

// DocumentDB's gateway knows SCRAM-SHA-256 (and OIDC) only: an x.509 login, with a client
// certificate its CA signed, is refused as credentials it cannot check (exit 77), in its
// own words. A deployment on DocumentDB keeps the password in the URI (uri_file).
TEST_F(Tls, AnX509ClientCertificateIsALoginTheGatewayDoesNotKnow) {
  const char* client = std::getenv("TXN_RECOVERY_TEST_TLS_CLIENT_CERT");
  if (client == nullptr || *client == '\0')
    GTEST_SKIP() << "TXN_RECOVERY_TEST_TLS_CLIENT_CERT is unset (scripts/test.sh sets it for "
                    "DocumentDB)";
  std::string uri = server_.uri;
  uri.erase(uri.find("mongodb://") + 10, uri.find('@') - 9);  // no user, no password
  uri = Replaced(uri, "authSource=admin&authMechanism=SCRAM-SHA-256",
                 "authSource=$external&authMechanism=MONGODB-X509");
  uri += std::string("&tlsCertificateKeyFile=") + client;
  ProcessResult r = Sweep("uri = \"" + uri + "\"\n");
  EXPECT_EQ(r.exit_code, 77) << r.out << r.err;
  EXPECT_NE(r.err.find("Unknown request received: authenticate"), std::string::npos) << r.err;
  EXPECT_EQ(bank_->State(stuck_), "pending");
}

}  // namespace
}  // namespace txn_recovery::testing
