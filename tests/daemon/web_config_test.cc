// Web configuration files (web_config.h) that must be refused, each with a message naming
// the file, the key and, where the YAML parser knows it, the line; and the way they reach
// the daemon's configuration (http.web_config), check-config and run: exit 78, never a
// crash, never a password hash in what is printed.
#include <crypt.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/configuration/config.h"
#include "daemon/serving/http_server.h"
#include "daemon/serving/web_config.h"
#include "support/subprocess.h"

namespace txn_recovery::daemon {
namespace {

using namespace std::chrono_literals;
using txn_recovery::Status;
using txn_recovery::testing::Subprocess;

// A syntactically valid hash whose password nobody knows; any bcrypt hash would do.
constexpr const char* kHash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

class WebConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "txn_recoveryd_web_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  Status Load(const std::string& text, std::string* path = nullptr) {
    std::string p = Write("web.yml", text);
    if (path != nullptr) *path = p;
    HttpSecurity security;
    return LoadHttpSecurity(p, &security);
  }
  std::string dir_;
};

TEST_F(WebConfigFile, AnEmptyFileMeansPlainHttpWithoutCredentials) {
  HttpSecurity security;
  ASSERT_TRUE(LoadHttpSecurity(Write("empty.yml", ""), &security).ok());
  EXPECT_EQ(security.tls, nullptr);
  EXPECT_EQ(security.auth, nullptr);
}

TEST_F(WebConfigFile, TheFormatOfExporterToolkitIsRead) {
  WebConfig c;
  ASSERT_TRUE(ParseWebConfig(Write("full.yml", std::string(R"(# node_exporter's file, as is
tls_server_config:
  cert_file: tls/server.crt
  key_file: /etc/keys/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS13
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
  prefer_server_cipher_suites: false
  curve_preferences: [X25519, CurveP256]
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  prometheus: )") + kHash + "\n"),
                             &c)
                  .ok());
  EXPECT_EQ(c.tls.cert_file, dir_ + "/tls/server.crt") << "relative to the file's directory";
  EXPECT_EQ(c.tls.key_file, "/etc/keys/server.key");
  EXPECT_EQ(c.tls.client_auth_type, "RequireAndVerifyClientCert");
  EXPECT_EQ(c.tls.min_version, "TLS13");
  EXPECT_EQ(c.tls.max_version, "TLS13");
  EXPECT_FALSE(c.tls.prefer_server_cipher_suites);
  EXPECT_EQ(c.tls.curve_preferences.size(), 2u);
  EXPECT_FALSE(c.http2);
  ASSERT_EQ(c.headers.size(), 2u);
  EXPECT_EQ(c.headers[0].first, "X-Frame-Options");
  ASSERT_EQ(c.users.size(), 1u);
  EXPECT_EQ(c.users[0].first, "prometheus");
}

TEST_F(WebConfigFile, AnUnknownKeyIsNamedWithItsLineAndTheNearestKnownOne) {
  std::string path;
  Status s = Load("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_fil: x\n", &path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(path + ":4:3: tls_server_config.client_ca_fil: unknown key", 0), 0u)
      << s.message();
  EXPECT_NE(s.message().find("did you mean client_ca_file?"), std::string::npos);
  s = Load("basic_auth_user:\n  u: x\n");
  EXPECT_NE(s.message().find(":1:1: basic_auth_user: unknown key (did you mean basic_auth_users?)"),
            std::string::npos)
      << s.message();
}

TEST_F(WebConfigFile, KeysOfExporterToolkitThatTheDaemonDoesNotSupportAreRefusedByName) {
  Status s = Load("tls_server_config:\n  cert: |\n    -----BEGIN CERTIFICATE-----\n");
  EXPECT_NE(s.message().find(":2:3: tls_server_config.cert: is not supported by txn-recoveryd"),
            std::string::npos)
      << s.message();
  s = Load("rate_limit:\n  interval: 1s\n");
  EXPECT_NE(s.message().find(":1:1: rate_limit: is not supported"), std::string::npos)
      << s.message();
  s = Load("tls_server_config:\n  client_allowed_sans: [a]\n");
  EXPECT_NE(s.message().find("client_allowed_sans: is not supported"), std::string::npos);
}

TEST_F(WebConfigFile, BadYamlIsReportedWithItsLine) {
  std::string path;
  Status s = Load("tls_server_config:\n  cert_file: a\n  key_file: [b\n", &path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(path + ":", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(": not YAML: "), std::string::npos) << s.message();
  s = Load("basic_auth_users: [a, b]\n");
  EXPECT_NE(s.message().find(":1:19: basic_auth_users: must be a map"), std::string::npos)
      << s.message();
}

TEST_F(WebConfigFile, AHashThatIsNotBcryptIsRefusedWithoutPrintingIt) {
  Status s = Load("basic_auth_users:\n  alice: $1$abcdefgh$notbcryptatall00000000\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(":2:10: basic_auth_users.alice: must be a bcrypt hash"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("notbcrypt"), std::string::npos) << "the hash is a secret";
  std::string cost_99 = kHash;
  cost_99.replace(4, 2, "99");
  EXPECT_FALSE(Load("basic_auth_users:\n  alice: " + cost_99 + "\n").ok());
  EXPECT_TRUE(IsBcryptHash(kHash));
  EXPECT_FALSE(IsBcryptHash(std::string(kHash).substr(0, 59)));
}

TEST_F(WebConfigFile, AMissingCertificateOrKeyFileIsNamed) {
  const std::string missing = dir_ + "/nowhere.crt";
  Status s = Load("tls_server_config:\n  cert_file: nowhere.crt\n  key_file: nowhere.key\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tls_server_config.cert_file " + missing + ": No such file"),
            std::string::npos)
      << s.message();
  s = Load("tls_server_config:\n  cert_file: a.crt\n");
  EXPECT_NE(s.message().find("tls_server_config.key_file: is required"), std::string::npos)
      << s.message();
}

TEST_F(WebConfigFile, AKeyThatIsNotTheCertificatesIsRefused) {
  const std::string script =
      "cd \"$1\" && for n in a b; do openssl req -x509 -newkey ec -pkeyopt "
      "ec_paramgen_curve:prime256v1 -nodes -keyout $n.key -out $n.crt -days 1 "
      "-subj /CN=$n 2>/dev/null; done";
  Subprocess make({"/bin/sh", "-c", script, "pki", dir_});
  ASSERT_EQ(make.Wait(60s).value_or(-1), 0) << make.Stderr();
  Status s = Load("tls_server_config:\n  cert_file: a.crt\n  key_file: b.key\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tls_server_config.key_file " + dir_ +
                             "/b.key: is not the key of "
                             "cert_file " +
                             dir_ + "/a.crt"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("PRIVATE KEY"), std::string::npos);
  EXPECT_TRUE(Load("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n").ok());
}

TEST_F(WebConfigFile, ValuesOutsideTheirChoicesAreRefused) {
  EXPECT_NE(Load("tls_server_config:\n  client_auth_type: Maybe\n")
                .message()
                .find("client_auth_type: must be NoClientCert, "),
            std::string::npos);
  EXPECT_NE(Load("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n"
                 "  max_version: TLS12\n")
                .message()
                .find("min_version: TLS13 is above max_version TLS12"),
            std::string::npos);
  EXPECT_NE(Load("http_server_config:\n  headers:\n    X-Frame-Options: allow\n")
                .message()
                .find("X-Frame-Options: must be deny or sameorigin"),
            std::string::npos);
  EXPECT_NE(Load("http_server_config:\n  headers:\n    Server: me\n").message().find("unknown key"),
            std::string::npos);
  EXPECT_NE(Load("tls_server_config:\n  client_ca_file: ca.crt\n")
                .message()
                .find("client certificates need TLS"),
            std::string::npos);
}

// ---- Through the daemon's configuration ----------------------------------------------------

class WebConfigInToml : public WebConfigFile {
 protected:
  std::string Toml(const std::string& web_config_path) {
    return Write("daemon.toml",
                 "[mongodb]\nuri = \"mongodb://127.0.0.1:1\"\n[http]\n"
                 "listen = \"127.0.0.1:0\"\nweb_config = \"" +
                     web_config_path + "\"\n[[watch]]\nname = \"w\"\ndatabase = \"d\"\n");
  }
};

TEST_F(WebConfigInToml, ABadWebConfigIsABadConfigurationNamingBothFiles) {
  const std::string web = Write("web.yml", "tls_server_config:\n  cert_fil: x\n");
  const std::string toml = Toml(web);
  Config c;
  Status s = LoadConfig(
      toml, [](const std::string&) { return std::optional<std::string>(); }, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(toml + ":5:", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("http.web_config: " + web + ":2:3: tls_server_config.cert_fil"),
            std::string::npos)
      << s.message();
}

TEST_F(WebConfigInToml, TheEnvironmentNamesTheFileToo) {
  const std::string web = Write("web.yml", "basic_auth_users:\n  u: " + std::string(kHash) + "\n");
  const std::string toml = Write("daemon.toml",
                                 "[mongodb]\nuri = \"mongodb://127.0.0.1:1\"\n"
                                 "[[watch]]\nname = \"w\"\ndatabase = \"d\"\n");
  Config c;
  Status s = LoadConfig(
      toml,
      [&](const std::string& name) {
        return name == "TXN_RECOVERYD_HTTP_WEB_CONFIG" ? std::optional<std::string>(web)
                                                       : std::nullopt;
      },
      &c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.http.web_config, web);
  EXPECT_NE(c.http.security.auth, nullptr);
}

TEST_F(WebConfigInToml, CheckConfigAndRunExit78AndNeverPrintAHash) {
  const std::string bad = Write("bad.yml", "basic_auth_users:\n  alice: $2y$10$tooshort\n");
  const std::string good =
      Write("good.yml", "basic_auth_users:\n  alice: " + std::string(kHash) + "\n");
  const std::vector<std::string> unset = {"TXN_RECOVERYD_MONGODB_URI", "TXN_RECOVERYD_LOG_FORMAT",
                                          "NOTIFY_SOCKET"};
  for (const char* command : {"check-config", "run"}) {
    SCOPED_TRACE(command);
    Subprocess p({TXN_RECOVERYD_BINARY, command, "--config", Toml(bad)}, {}, unset);
    ASSERT_EQ(p.Wait(20s).value_or(-1), 78) << p.Stderr();
    EXPECT_NE(p.Stderr().find(bad + ":2:10: basic_auth_users.alice: must be a bcrypt hash"),
              std::string::npos)
        << p.Stderr();
    EXPECT_EQ(p.Stderr().find("tooshort"), std::string::npos);
  }
  Subprocess flag({TXN_RECOVERYD_BINARY, "run", "--config", Toml(good), "--web.config.file", bad},
                  {}, unset);
  ASSERT_EQ(flag.Wait(20s).value_or(-1), 78) << flag.Stderr();
  EXPECT_NE(flag.Stderr().find("--web.config.file: " + bad + ":2:10:"), std::string::npos)
      << flag.Stderr();
  Subprocess check({TXN_RECOVERYD_BINARY, "check-config", "--config", Toml(good)}, {}, unset);
  ASSERT_EQ(check.Wait(20s).value_or(-1), 0) << check.Stderr();
  EXPECT_NE(check.Stdout().find(good), std::string::npos) << "the path is no secret";
  EXPECT_EQ(check.Stdout().find(kHash), std::string::npos);
  EXPECT_EQ(check.Stdout().find("$2y$"), std::string::npos);
}

}  // namespace
}  // namespace txn_recovery::daemon
