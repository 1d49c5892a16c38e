// Every credential a MongoDB URI can carry stays out of every output: RedactUri, the log
// filter every log format passes through, check-config, sweep and inspect (text and JSON,
// with the driver's own debug lines), the daemon's log in text, json and journal format,
// and the messages of the exit 69 and 78 paths. A table of URIs covering each place a
// credential can sit, and passwords holding the characters that defeat text patterns.
#include <gtest/gtest.h>

#include <signal.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <fstream>

#include <mutex>
#include <string>
#include <vector>

#include "daemon/logging/logging.h"
#include "support/daemon_process.h"
#include "txn_recovery/stores/uri_redaction.h"

namespace txn_recovery::testing {
namespace {

using std::chrono::seconds;

struct SecretCase {
  const char* name;
  std::string uri;
  // Each must appear in no output: the credentials whole (as written, and as the driver
  // decodes them), then pieces of them, such as the tail after a character that cut the
  // old text-pattern redaction short.
  std::vector<std::string> secrets;
  std::vector<std::string> fragments;
  // What RedactUri shows; empty for a URI the driver cannot parse (never shown). The
  // commands get as far as the database (and fail: 69) exactly when it parses; otherwise
  // they stop at the URI (78).
  std::string shown;
};

// Hosts that refuse at once (port 1), a socket path that does not exist, a DNS name in the
// reserved .invalid domain: every command fails fast as "unreachable", after having
// parsed the URI and built its client pool.
const std::vector<SecretCase>& Cases() {
  static const std::vector<SecretCase> cases = {
      {"Password",
       "mongodb://app:s3cret-pw@127.0.0.1:1,127.0.0.2:1/bank?replicaSet=rs0",
       {"s3cret-pw"},
       {},
       "mongodb://app:***@127.0.0.1:1,127.0.0.2:1/bank?replicaSet=rs0"},
      {"PasswordWithComma",
       "mongodb://app:pa,ss-comma@127.0.0.1:1/",
       {"pa,ss-comma"},
       {"ss-comma"},
       "mongodb://app:***@127.0.0.1:1"},
      {"PasswordWithSemicolon",
       "mongodb://app:pa;ss-semi@127.0.0.1:1/",
       {"pa;ss-semi"},
       {"ss-semi"},
       "mongodb://app:***@127.0.0.1:1"},
      {"PasswordWithHash",
       "mongodb://app:pa#ss-hash@127.0.0.1:1/",
       {"pa#ss-hash"},
       {"ss-hash"},
       "mongodb://app:***@127.0.0.1:1"},
      {"PasswordWithQuestionMark",
       "mongodb://app:pa?ss-question@127.0.0.1:1/",
       {"pa?ss-question"},
       {"ss-question"},
       "mongodb://app:***@127.0.0.1:1"},
      {"PasswordWithSpace",
       "mongodb://app:pa ss-space@127.0.0.1:1/",
       {"pa ss-space"},
       {"ss-space"},
       "mongodb://app:***@127.0.0.1:1"},
      {"PasswordWithSlash",
       "mongodb://app:pa/ss-slash@127.0.0.1:1/",
       {"pa/ss-slash"},
       {"ss-slash"},
       ""},
      // The driver reads password "pa" and a host "ss-at@127.0.0.1": refused, never shown.
      {"PasswordWithAt", "mongodb://app:pa@ss-at@127.0.0.1:1/", {"pa@ss-at"}, {"ss-at"}, ""},
      {"PasswordWithColon",
       "mongodb://app:pa:ss-colon@127.0.0.1:1/",
       {"pa:ss-colon"},
       {"ss-colon"},
       ""},
      {"PercentEncodedPassword",
       "mongodb://app:p%40ss%2Cw%C3%B6rd-enc@127.0.0.1:1/",
       {"p@ss,wörd-enc", "p%40ss%2Cw%C3%B6rd-enc"},
       {"wörd-enc", "w%C3%B6rd-enc"},
       "mongodb://app:***@127.0.0.1:1"},
      // libmongoc resolves an SRV name when the client pool is created; the store retries
      // that creation, so a name that does not resolve (yet) is an unreachable database:
      // exit 69, and a running daemon keeps trying.
      {"SrvPassword",
       "mongodb+srv://app:srv-s3cret@cluster0.example.invalid/",
       {"srv-s3cret"},
       {},
       "mongodb+srv://app:***@cluster0.example.invalid/?tls=true"},
      {"TlsKeyPassword",
       "mongodb://127.0.0.1:1/?tls=true&tlsCertificateKeyFilePassword=tls-key-s3cret",
       {"tls-key-s3cret"},
       {},
       "mongodb://127.0.0.1:1/?tls=true&tlsCertificateKeyFilePassword=***"},
      {"SslKeyPassword",
       "mongodb://127.0.0.1:1/?ssl=true&sslClientCertificateKeyPassword=ssl-key-s3cret",
       {"ssl-key-s3cret"},
       {},
       "mongodb://127.0.0.1:1/?tls=true&tlsCertificateKeyFilePassword=***"},
      {"TlsKeyPasswordWithAmpersand",
       "mongodb://127.0.0.1:1/?tls=true&tlsCertificateKeyFilePassword=amp&s3cret-tail",
       {"amp&s3cret-tail"},
       {"s3cret-tail"},
       ""},
      {"AwsSecretKeyAndSessionToken",
       "mongodb://AKIAEXAMPLE:aws-secret-key@127.0.0.1:1/"
       "?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:aws-session-tok",
       {"aws-secret-key", "aws-session-tok"},
       {},
       "mongodb://AKIAEXAMPLE:***@127.0.0.1:1/"
       "?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:***"},
      {"AwsSessionTokenWithoutUser",
       "mongodb://127.0.0.1:1/?authMechanism=MONGODB-AWS"
       "&authMechanismProperties=AWS_SESSION_TOKEN:token-alone-s3cret",
       {"token-alone-s3cret"},
       {},
       "mongodb://127.0.0.1:1/?authMechanism=MONGODB-AWS&authMechanismProperties="
       "AWS_SESSION_TOKEN:***"},
      {"GssapiPassword",
       "mongodb://user%40EXAMPLE.COM:gssapi-s3cret@127.0.0.1:1/?authMechanism=GSSAPI"
       "&authMechanismProperties=SERVICE_NAME:mongodb,SERVICE_REALM:EXAMPLE.COM",
       {"gssapi-s3cret"},
       {},
       "mongodb://user%40EXAMPLE.COM:***@127.0.0.1:1/?authMechanism=GSSAPI"
       "&authMechanismProperties=SERVICE_NAME:mongodb,SERVICE_REALM:EXAMPLE.COM"
       "&authSource=$external"},
      {"LdapPassword",
       "mongodb://ldapuser:ldap-s3cret@127.0.0.1:1/?authMechanism=PLAIN&authSource=$external",
       {"ldap-s3cret"},
       {},
       "mongodb://ldapuser:***@127.0.0.1:1/?authMechanism=PLAIN&authSource=$external"},
      {"ScramWithOptions",
       "mongodb://app:scram-s3cret@127.0.0.1:1,127.0.0.2:1,127.0.0.3:1/"
       "?authSource=admin&authMechanism=SCRAM-SHA-256&replicaSet=rs&readPreference=secondary",
       {"scram-s3cret"},
       {},
       "mongodb://app:***@127.0.0.1:1,127.0.0.2:1,127.0.0.3:1/"
       "?replicaSet=rs&readPreference=secondary&authSource=admin&authMechanism=SCRAM-SHA-256"},
      {"Ipv6Host",
       "mongodb://app:ipv6-s3cret@[::1]:1/",
       {"ipv6-s3cret"},
       {},
       "mongodb://app:***@[::1]:1"},
      {"UnixSocket",
       "mongodb://app:unix-s3cret@%2Ftmp%2Ftxnrec-no-such.sock/",
       {"unix-s3cret"},
       {},
       "mongodb://app:***@%2Ftmp%2Ftxnrec-no-such.sock"},
      {"PasswordAndTlsKeyPassword",
       "mongodb://app:both-s3cret@127.0.0.1:1/?tls=true&tlsCertificateKeyFilePassword=both-tls-key",
       {"both-s3cret", "both-tls-key"},
       {},
       "mongodb://app:***@127.0.0.1:1/?tls=true&tlsCertificateKeyFilePassword=***"},
      {"NoHost", "mongodb://app:nohost-s3cret@/db", {"nohost-s3cret"}, {}, ""},
      {"BadOptionValueEchoedByTheDriver",
       "mongodb://app:echo-s3cret@127.0.0.1:1/?tls=echo-s3cret-2",
       {"echo-s3cret", "echo-s3cret-2"},
       {},
       ""},
      {"BadSchemeWithPassword",
       "mongodb//app:scheme-s3cret@127.0.0.1:1/",
       {"scheme-s3cret"},
       {},
       ""},
  };
  return cases;
}

class UriSecrets : public ::testing::TestWithParam<SecretCase> {
 protected:
  void ExpectNoSecret(const std::string& where, const std::string& text) {
    for (const auto* list : {&GetParam().secrets, &GetParam().fragments})
      for (const auto& secret : *list)
        EXPECT_EQ(text.find(secret), std::string::npos)
            << where << " shows \"" << secret << "\" of " << GetParam().uri << ":\n"
            << text;
  }
  bool Parses() const { return !GetParam().shown.empty(); }
  bool ReachesDatabase() const { return Parses(); }

  std::string Config() {
    std::string uri;
    for (char c : GetParam().uri) {
      if (c == '"' || c == '\\') uri += '\\';
      uri += c;
    }
    // A short selection timeout: every command here waits it out (a sweep three times), and
    // an unreachable server is all the same after 100 ms as after 300.
    return WriteTestFile(".toml", "[mongodb]\nuri = \"" + uri +
                                      "\"\nserver_selection_timeout = \"100ms\"\n"
                                      "[daemon]\ninterval = \"300ms\"\n"
                                      "[[watch]]\nname = \"w\"\ndatabase = \"d\"\n");
  }
};

TEST_P(UriSecrets, RedactUriShowsTheParsedUriWithoutItsCredentials) {
  std::string shown = RedactUri(GetParam().uri);
  ExpectNoSecret("RedactUri", shown);
  if (Parses()) {
    EXPECT_EQ(shown, GetParam().shown);
    EXPECT_TRUE(ValidateMongoUri(GetParam().uri).ok());
  } else {
    EXPECT_EQ(shown, "(a MongoDB URI that does not parse; not shown)");
    Status s = ValidateMongoUri(GetParam().uri);
    EXPECT_TRUE(s.IsInvalidArgument());
    ExpectNoSecret("ValidateMongoUri", s.ToString());
  }
}

// Every format's sink sits behind the same filter: what it lets through is what the text,
// json and journal sinks write. (An unparsed URI's secrets are unknown to it; such a URI is
// never shown anywhere.)
TEST(UriSecretsLogFilter, HidesTheCredentialsOfEveryParsedUriInAnyMessage) {
  struct Capture : spdlog::sinks::base_sink<std::mutex> {
    std::vector<std::string> lines;
    void sink_it_(const spdlog::details::log_msg& m) override {
      lines.emplace_back(m.payload.data(), m.payload.size());
    }
    void flush_() override {}
  };
  for (const SecretCase& c : Cases()) {
    if (c.shown.empty()) continue;
    (void)RedactUri(c.uri);  // remembered as the daemon remembers its URI
    auto capture = std::make_shared<Capture>();
    spdlog::logger logger("test",
                          txn_recovery::daemon::FilteredSink(capture, std::chrono::seconds(60)));
    int n = 0;
    for (const auto& secret : c.secrets)
      logger.warn("the driver said ({}): {} (quoted)", ++n, secret);
    ASSERT_EQ(capture->lines.size(), c.secrets.size()) << c.name;
    for (const auto& line : capture->lines) {
      for (const auto& secret : c.secrets)
        EXPECT_EQ(line.find(secret), std::string::npos) << c.name << ": " << line;
      EXPECT_NE(line.find("the driver said ("), std::string::npos) << line;
    }
  }
}

TEST_P(UriSecrets, NoOutputOfAnyCommandShowsThem) {
  std::string config = Config();
  // All the commands at once: each waits out the server selection timeout on its own.
  auto check = StartTxnRecoveryd({"check-config", "--config", config});
  // The exit 69 path (unreachable) or, for a URI that does not parse, the exit 78 path; -vv
  // adds the driver's own messages.
  const int expected = ReachesDatabase() ? 69 : 78;
  std::vector<std::pair<std::string, std::unique_ptr<Subprocess>>> commands;
  for (std::vector<std::string> args : {std::vector<std::string>{"sweep", "-vv"},
                                        {"sweep", "--json", "-v"},
                                        {"inspect"},
                                        {"inspect", "--json"}}) {
    std::string what = args[0] + (args.size() > 1 ? " " + args[1] : "");
    args.push_back("--config");
    args.push_back(config);
    commands.emplace_back(what, StartTxnRecoveryd(args));
  }
  ASSERT_TRUE(check->Wait(seconds(30)));
  ExpectNoSecret("check-config", check->Stdout() + check->Stderr());
  for (auto& [what, p] : commands) {
    std::optional<int> rc = p->Wait(seconds(60));
    EXPECT_EQ(rc, expected) << what << "\n" << p->Stdout() << p->Stderr();
    ExpectNoSecret(what, p->Stdout() + p->Stderr());
  }
}

// Whether process `pid` blocks SIGTERM (/proc/<pid>/status, SigBlk: a hexadecimal mask).
bool BlocksSigterm(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigBlk:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> (SIGTERM - 1)) & 1U;
  return false;
}

TEST_P(UriSecrets, TheDaemonsLogInEveryFormatDoesNotShowThem) {
  std::string config = Config();
  // All three at once: each logs its start and its first failed sweeps, then is stopped.
  std::vector<std::pair<std::string, std::unique_ptr<Subprocess>>> daemons;
  for (const char* format : {"text", "json", "journal"})
    daemons.emplace_back(format, StartTxnRecoveryd({"run", "--config", config, "--log-format",
                                                    format, "--log-level", "debug"}));
  for (auto& [format, daemon] : daemons) {
    if (!ReachesDatabase()) {
      // Refused at start, before it could do anything else.
      EXPECT_EQ(daemon->Wait(seconds(15)), 78) << format << "\n"
                                               << daemon->Stdout() << daemon->Stderr();
    } else {
      // Outside systemd the journal format writes to a journal that is not there; whatever
      // it falls back to is checked all the same.
      if (format != "journal") {
        EXPECT_TRUE(Eventually(
            [&daemon = daemon] {
              return (daemon->Stdout() + daemon->Stderr()).find("database unreachable") !=
                     std::string::npos;
            },
            seconds(20)))
            << format << "\n"
            << daemon->Stdout() << daemon->Stderr();
      }
      // Its stop signals are handled (blocked, then waited for) once it has started: a
      // SIGTERM sent before that, while it reads its configuration, ends it as any process.
      EXPECT_TRUE(Eventually([pid = daemon->pid()] { return BlocksSigterm(pid); }, seconds(20)))
          << format;
      daemon->Signal(SIGTERM);
      EXPECT_EQ(daemon->Wait(seconds(15)), 0) << format << "\n"
                                              << daemon->Stdout() << daemon->Stderr();
    }
    ExpectNoSecret("run --log-format " + format, daemon->Stdout() + daemon->Stderr());
  }
}

INSTANTIATE_TEST_SUITE_P(Table, UriSecrets, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace txn_recovery::testing
