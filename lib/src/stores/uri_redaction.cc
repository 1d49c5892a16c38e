// Redaction of MongoDB URIs from their parsed form (see uri_redaction.h).
#include "txn_recovery/stores/uri_redaction.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "stores/mongo_handles.h"

namespace txn_recovery {
namespace {

constexpr std::string_view kMask = "***";
constexpr std::size_t kMinSearchedSecret = 4;
constexpr std::size_t kMaxRememberedSecrets = 256;

thread_local int t_quiet = 0;    // QuietDriverLog scopes alive on this thread
thread_local int t_parsing = 0;  // ParsingUriScope scopes alive on this thread

// The options the driver knows, by the lower-case name it stores them under, with the
// spelling the documentation uses.
struct OptionName {
  std::string_view lower, display;
};
constexpr std::array kOptionNames = {
    OptionName{"appname", "appName"},
    OptionName{"authmechanism", "authMechanism"},
    OptionName{"authmechanismproperties", "authMechanismProperties"},
    OptionName{"authsource", "authSource"},
    OptionName{"canonicalizehostname", "canonicalizeHostName"},
    OptionName{"compressors", "compressors"},
    OptionName{"connecttimeoutms", "connectTimeoutMS"},
    OptionName{"directconnection", "directConnection"},
    OptionName{"gssapiservicename", "gssapiServiceName"},
    OptionName{"heartbeatfrequencyms", "heartbeatFrequencyMS"},
    OptionName{"journal", "journal"},
    OptionName{"loadbalanced", "loadBalanced"},
    OptionName{"localthresholdms", "localThresholdMS"},
    OptionName{"maxidletimems", "maxIdleTimeMS"},
    OptionName{"maxpoolsize", "maxPoolSize"},
    OptionName{"maxstalenessseconds", "maxStalenessSeconds"},
    OptionName{"minpoolsize", "minPoolSize"},
    OptionName{"readconcernlevel", "readConcernLevel"},
    OptionName{"readpreference", "readPreference"},
    OptionName{"readpreferencetags", "readPreferenceTags"},
    OptionName{"replicaset", "replicaSet"},
    OptionName{"retryreads", "retryReads"},
    OptionName{"retrywrites", "retryWrites"},
    OptionName{"safe", "safe"},
    OptionName{"serverselectiontimeoutms", "serverSelectionTimeoutMS"},
    OptionName{"serverselectiontryonce", "serverSelectionTryOnce"},
    OptionName{"slaveok", "slaveOk"},
    OptionName{"socketcheckintervalms", "socketCheckIntervalMS"},
    OptionName{"sockettimeoutms", "socketTimeoutMS"},
    OptionName{"srvmaxhosts", "srvMaxHosts"},
    OptionName{"srvservicename", "srvServiceName"},
    OptionName{"ssl", "ssl"},
    OptionName{"sslallowinvalidcertificates", "sslAllowInvalidCertificates"},
    OptionName{"sslallowinvalidhostnames", "sslAllowInvalidHostnames"},
    OptionName{"sslcertificateauthorityfile", "sslCertificateAuthorityFile"},
    OptionName{"sslclientcertificatekeyfile", "sslClientCertificateKeyFile"},
    OptionName{"sslclientcertificatekeypassword", "sslClientCertificateKeyPassword"},
    OptionName{"tls", "tls"},
    OptionName{"tlsallowinvalidcertificates", "tlsAllowInvalidCertificates"},
    OptionName{"tlsallowinvalidhostnames", "tlsAllowInvalidHostnames"},
    OptionName{"tlscafile", "tlsCAFile"},
    OptionName{"tlscertificatekeyfile", "tlsCertificateKeyFile"},
    OptionName{"tlscertificatekeyfilepassword", "tlsCertificateKeyFilePassword"},
    OptionName{"tlsdisablecertificaterevocationcheck", "tlsDisableCertificateRevocationCheck"},
    OptionName{"tlsdisableocspendpointcheck", "tlsDisableOCSPEndpointCheck"},
    OptionName{"tlsinsecure", "tlsInsecure"},
    OptionName{"w", "w"},
    OptionName{"waitqueuemultiple", "waitQueueMultiple"},
    OptionName{"waitqueuetimeoutms", "waitQueueTimeoutMS"},
    OptionName{"wtimeoutms", "wTimeoutMS"},
    OptionName{"zlibcompressionlevel", "zlibCompressionLevel"},
};

// authMechanismProperties that name a service rather than prove an identity.
constexpr std::array<std::string_view, 7> kPublicMechanismProperties = {
    "SERVICE_NAME", "SERVICE_REALM",  "SERVICE_HOST", "CANONICALIZE_HOST_NAME",
    "ENVIRONMENT",  "TOKEN_RESOURCE", "ALLOWED_HOSTS"};

constexpr std::array<std::string_view, 7> kMechanisms = {
    "SCRAM-SHA-1", "SCRAM-SHA-256", "MONGODB-X509", "MONGODB-AWS", "GSSAPI", "PLAIN", "MONGODB-CR"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view DisplayName(std::string_view lower) {
  for (const auto& o : kOptionNames)
    if (o.lower == lower) return o.display;
  return lower;
}

bool IsOptionOrMechanismName(std::string_view s) {
  std::string l = Lower(s);
  for (const auto& o : kOptionNames)
    if (o.lower == l) return true;
  for (auto m : kMechanisms)
    if (Lower(m) == l) return true;
  return s == "=" || s == "mongodb://" || s == "mongodb+srv://" || s == "$external";
}

// An option whose value is a credential: its name says so.
bool IsSecretOption(std::string_view lower) {
  return lower.find("password") != std::string_view::npos ||
         lower.find("secret") != std::string_view::npos ||
         lower.find("token") != std::string_view::npos;
}

bool IsPublicMechanismProperty(std::string_view name) {
  return std::find(kPublicMechanismProperties.begin(), kPublicMechanismProperties.end(), name) !=
         kPublicMechanismProperties.end();
}

// RFC 3986 percent-encoding of everything but the unreserved characters.
std::string PercentEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// ---- The remembered secrets ------------------------------------------------------------

std::mutex g_secrets_mu;
// Longest first, so that a secret containing another is replaced whole.
struct LongestFirst {
  bool operator()(const std::string& a, const std::string& b) const {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  }
};
std::set<std::string, LongestFirst>& Secrets() {
  static auto* secrets = new std::set<std::string, LongestFirst>();  // never destroyed:
  return *secrets;  // log lines may be redacted while the process exits
}

void Remember(std::string_view secret) {
  if (secret.size() < kMinSearchedSecret) return;
  std::lock_guard lock(g_secrets_mu);
  auto& secrets = Secrets();
  if (secrets.size() >= kMaxRememberedSecrets) return;
  secrets.emplace(secret);
  std::string encoded = PercentEncode(secret);
  if (encoded != secret) secrets.insert(std::move(encoded));
}

// ---- Rendering the parsed URI ------------------------------------------------------------

std::string ValueText(const bson_iter_t* it) {
  switch (bson_iter_type(it)) {
    case BSON_TYPE_UTF8: {
      std::uint32_t len = 0;
      const char* s = bson_iter_utf8(it, &len);
      return std::string(s, len);
    }
    case BSON_TYPE_BOOL:
      return bson_iter_bool(it) ? "true" : "false";
    case BSON_TYPE_INT32:
      return std::to_string(bson_iter_int32(it));
    case BSON_TYPE_INT64:
      return std::to_string(bson_iter_int64(it));
    default:
      return "...";
  }
}

// Appends `a`, `b` and `c` to the comma-separated `list`. Appended piecewise: GCC 12 at -O3
// warns (-Wrestrict, a false positive) on `"," + string` chains here once inlined, and a
// plain Release build must print no warning.
void AppendItem(std::string* list, std::string_view a, std::string_view b = {},
                std::string_view c = {}) {
  if (!list->empty()) list->push_back(',');
  list->append(a).append(b).append(c);
}

// KEY=VALUE of the option at `it`, the value masked (and kept in `secrets`) when secret.
std::string OptionText(const std::string& key, const bson_iter_t* it,
                       std::vector<std::string>* secrets) {
  std::string value = ValueText(it);
  if (IsSecretOption(key)) {
    secrets->push_back(value);
    value = kMask;
  }
  std::string text(DisplayName(key));
  text.push_back('=');
  text.append(value);
  return text;
}

// NAME:VALUE,... of the authMechanismProperties document at `it`, the values of all but
// the public properties masked (and kept in `secrets`).
std::string MechanismPropertiesText(const bson_iter_t* it, std::vector<std::string>* secrets) {
  bson_iter_t props;
  std::string list;
  if (BSON_ITER_HOLDS_DOCUMENT(it) && bson_iter_recurse(it, &props)) {
    while (bson_iter_next(&props)) {
      std::string name = bson_iter_key(&props);
      std::string value = ValueText(&props);
      if (!IsPublicMechanismProperty(name)) {
        secrets->push_back(value);
        value = kMask;
      }
      AppendItem(&list, name, ":", value);
    }
  }
  return list;
}

// One readPreferenceTags=NAME:VALUE,... option for each tag set of the read preference.
void AddReadPreferenceTags(const mongoc_uri_t* uri, std::vector<std::string>* options) {
  const mongoc_read_prefs_t* prefs = mongoc_uri_get_read_prefs_t(uri);
  if (prefs == nullptr) return;
  const bson_t* tags = mongoc_read_prefs_get_tags(prefs);
  bson_iter_t it, tag_set, tag;
  if (tags && bson_iter_init(&it, tags)) {
    while (bson_iter_next(&it)) {
      std::string list;
      if (BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &tag_set))
        while (bson_iter_next(&tag_set)) {
          tag = tag_set;
          AppendItem(&list, bson_iter_key(&tag), ":", ValueText(&tag));
        }
      options->push_back("readPreferenceTags=" + list);
    }
  }
}

struct Rendered {
  std::string text;
  std::vector<std::string> secrets;
};

// user[:****]@ (the password kept in `secrets`), then the SRV name or the hosts.
std::string AuthorityText(const mongoc_uri_t* uri, const char* srv,
                          std::vector<std::string>* secrets) {
  std::string out;
  if (const char* user = mongoc_uri_get_username(uri)) {
    out += PercentEncode(user);
    if (const char* password = mongoc_uri_get_password(uri)) {
      out += ':';
      out += kMask;
      secrets->emplace_back(password);
    }
    out += '@';
  }
  if (srv) {
    out += srv;
  } else {
    bool first = true;
    for (const mongoc_host_list_t* h = mongoc_uri_get_hosts(uri); h != nullptr; h = h->next) {
      if (!first) out += ',';
      first = false;
      // A Unix socket's path goes percent-encoded, as the URI must spell it.
      out += h->family == AF_UNIX ? PercentEncode(h->host) : std::string(h->host_and_port);
    }
  }
  return out;
}

// Every option the URI sets, as KEY=VALUE, the secret values masked (and kept in `secrets`).
std::vector<std::string> OptionsText(const mongoc_uri_t* uri, std::vector<std::string>* secrets) {
  std::vector<std::string> options;
  bson_iter_t it;
  if (const bson_t* opts = mongoc_uri_get_options(uri); opts && bson_iter_init(&it, opts)) {
    while (bson_iter_next(&it)) {
      std::string key = Lower(bson_iter_key(&it));
      if (key == MONGOC_URI_APPNAME) continue;  // the daemon's own name, set on every open
      options.push_back(OptionText(key, &it, secrets));
    }
  }
  if (const bson_t* creds = mongoc_uri_get_credentials(uri); creds && bson_iter_init(&it, creds)) {
    while (bson_iter_next(&it)) {
      std::string key = Lower(bson_iter_key(&it));
      if (key == MONGOC_URI_AUTHMECHANISMPROPERTIES) {
        std::string list = MechanismPropertiesText(&it, secrets);
        if (!list.empty()) options.push_back("authMechanismProperties=" + list);
        continue;
      }
      options.push_back(OptionText(key, &it, secrets));
    }
  }
  if (const bson_t* compressors = mongoc_uri_get_compressors(uri);
      compressors && bson_iter_init(&it, compressors)) {
    std::string list;
    while (bson_iter_next(&it)) AppendItem(&list, bson_iter_key(&it));
    if (!list.empty()) options.push_back("compressors=" + list);
  }
  AddReadPreferenceTags(uri, &options);
  if (const mongoc_read_concern_t* rc = mongoc_uri_get_read_concern(uri))
    if (const char* level = mongoc_read_concern_get_level(rc))
      options.push_back(std::string("readConcernLevel=") + level);
  return options;
}

Rendered Render(const mongoc_uri_t* uri) {
  Rendered r;
  std::string& out = r.text;
  const char* srv = mongoc_uri_get_srv_hostname(uri);
  out = srv ? "mongodb+srv://" : "mongodb://";
  out += AuthorityText(uri, srv, &r.secrets);
  const std::vector<std::string> options = OptionsText(uri, &r.secrets);
  const char* database = mongoc_uri_get_database(uri);
  if ((database && *database) || !options.empty()) out += '/';
  if (database) out += PercentEncode(database);
  for (std::size_t i = 0; i < options.size(); ++i) out += (i == 0 ? "?" : "&") + options[i];
  return r;
}

// A host the driver accepted that no resolver would: what is left of a password holding
// an unencoded '@' ("app:pa@ss@db" reads as password "pa" and host "ss@db").
bool ImpossibleHost(std::string_view host) {
  for (unsigned char c : host)
    if (!std::isalnum(c) && c != '-' && c != '.' && c != '_' && c != ':' && c != '%' && c != '[' &&
        c != ']')
      return true;
  return host.empty();
}

// Parses `uri` for display or validation; the driver's warnings about it are kept quiet
// (`quiet`) or shown with their quoted values masked.
mongo::UriPtr Parse(std::string_view uri, bool quiet, bson_error_t* error) {
  std::string text(uri);
  std::memset(error, 0, sizeof *error);
  if (text.find('\0') != std::string::npos) {
    bson_set_error(error, MONGOC_ERROR_COMMAND, MONGOC_ERROR_COMMAND_INVALID_ARG,
                   "the URI contains a NUL character");
    return nullptr;
  }
  mongo::ParsingUriScope parsing;
  std::optional<mongo::QuietDriverLog> silence;
  if (quiet) silence.emplace();
  mongo::UriPtr parsed(mongoc_uri_new_with_error(text.c_str(), error));
  if (!parsed) return parsed;
  bool impossible = false;
  if (const char* srv = mongoc_uri_get_srv_hostname(parsed.get())) impossible = ImpossibleHost(srv);
  for (const mongoc_host_list_t* h = mongoc_uri_get_hosts(parsed.get()); h && !impossible;
       h = h->next)
    impossible = h->family != AF_UNIX && ImpossibleHost(h->host);
  if (impossible) {
    bson_set_error(error, MONGOC_ERROR_COMMAND, MONGOC_ERROR_COMMAND_INVALID_ARG,
                   "a host name holds a character no host name has (a password holding '@', "
                   "':' or '/' must percent-encode it: %%40, %%3A, %%2F)");
    return nullptr;
  }
  return parsed;
}

}  // namespace

namespace mongo {

QuietDriverLog::QuietDriverLog() {
  ++t_quiet;
}
QuietDriverLog::~QuietDriverLog() {
  --t_quiet;
}
ParsingUriScope::ParsingUriScope() {
  ++t_parsing;
}
ParsingUriScope::~ParsingUriScope() {
  --t_parsing;
}
DriverLogMode CurrentDriverLogMode() {
  if (t_quiet > 0) return DriverLogMode::kDrop;
  if (t_parsing > 0) return DriverLogMode::kMaskQuoted;
  return DriverLogMode::kNormal;
}

void RememberSecretsOf(const mongoc_uri_t* uri) {
  for (const auto& s : Render(uri).secrets) Remember(s);
}

}  // namespace mongo

std::string RedactUri(std::string_view uri) {
  bson_error_t error;
  mongo::UriPtr parsed = Parse(uri, /*quiet=*/true, &error);
  if (!parsed) return "(a MongoDB URI that does not parse; not shown)";
  Rendered r = Render(parsed.get());
  for (const auto& s : r.secrets) Remember(s);
  return r.text;
}

Status ValidateMongoUri(std::string_view uri) {
  bson_error_t error;
  mongo::UriPtr parsed = Parse(uri, /*quiet=*/false, &error);
  if (!parsed)
    return Status::InvalidArgument("not a usable MongoDB URI (not shown): " +
                                   MaskQuotedValues(error.message));
  mongo::RememberSecretsOf(parsed.get());
  return Status::Ok();
}

std::string RedactSecrets(std::string_view text) {
  std::string out(text);
  std::lock_guard lock(g_secrets_mu);
  for (const std::string& secret : Secrets()) {
    for (std::size_t at = out.find(secret); at != std::string::npos;
         at = out.find(secret, at + kMask.size()))
      out.replace(at, secret.size(), kMask);
  }
  return out;
}

std::string MaskQuotedValues(std::string_view message) {
  std::string out;
  std::size_t i = 0;
  while (i < message.size()) {
    char c = message[i];
    if (c != '"' && c != '\'') {
      out += c;
      ++i;
      continue;
    }
    std::size_t close = message.find(c, i + 1);
    if (close == std::string_view::npos) {
      // An unbalanced quote: everything after it may be the value.
      out += c;
      out += kMask;
      break;
    }
    std::string_view inside = message.substr(i + 1, close - i - 1);
    out += c;
    out += IsOptionOrMechanismName(inside) ? std::string(inside) : std::string(kMask);
    out += c;
    i = close + 1;
  }
  return out;
}

}  // namespace txn_recovery
