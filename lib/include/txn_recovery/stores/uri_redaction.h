// Keeping the credentials a MongoDB URI can carry out of every message, report and log.
//
// A URI may carry secrets in several places: the password of its user information, and
// options such as tlsCertificateKeyFilePassword (sslClientCertificateKeyPassword is its old
// spelling) and authMechanismProperties values such as AWS_SESSION_TOKEN. Passwords may
// hold unencoded ',' ';' '#' '?' and spaces, which no pattern over the text can delimit
// reliably, so every function here works from the URI as the driver parses it (libmongoc's
// mongoc_uri_t), never by cutting the text.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <string>
#include <string_view>

#include "txn_recovery/base/status.h"

namespace txn_recovery {

// `uri` rebuilt from its parsed form with every credential replaced by "***": the password
// (the user name is kept), tlsCertificateKeyFilePassword and every other option whose name
// says password, secret or token, and every authMechanismProperties value except the few
// that name a service (SERVICE_NAME, SERVICE_REALM, SERVICE_HOST, CANONICALIZE_HOST_NAME,
// ENVIRONMENT, TOKEN_RESOURCE). Options appear as the driver understood them (unknown
// options, which the driver ignores, are left out). A URI that does not parse is never
// shown: the result then says only that it does not parse.
// As a side effect the URI's secrets are remembered for RedactSecrets.
std::string RedactUri(std::string_view uri);

// InvalidArgument if the driver cannot parse `uri`, with the driver's reason, any value it
// quotes masked (the text never contains the URI or a fragment of it); OK otherwise.
// Remembers the URI's secrets for RedactSecrets, as RedactUri does.
Status ValidateMongoUri(std::string_view uri);

// `text` with every secret of every URI this process has parsed through RedactUri,
// ValidateMongoUri or MongoStore::Open (in its decoded and its percent-encoded spelling)
// replaced by "***". For free text that may quote a secret: the driver's error messages
// and log lines, and as the last filter of every log sink. Secrets shorter than 4
// characters are not searched for (they would mangle every message); RedactUri still
// hides them wherever a URI is shown.
std::string RedactSecrets(std::string_view text);

// `message` (an error or log line of the driver about a URI it could not parse) with every
// quoted value masked unless it is the name of a URI option or of an authentication
// mechanism: such messages quote the offending text ('URI option "cd" contains no "="
// sign' for a password holding '&'), which may be part of a secret.
std::string MaskQuotedValues(std::string_view message);

}  // namespace txn_recovery
