// The one translation of the driver's errors into Status (mongo_handles.h).
#include <string>
#include <string_view>

#include "stores/mongo_handles.h"
#include "txn_recovery/stores/uri_redaction.h"

namespace txn_recovery {

namespace mongo {

namespace {

// A login refused because the server behind the wire protocol is not ready, not because
// of the credentials: DocumentDB's gateway passes PostgreSQL's own words on when it cannot
// reach its database (restarting, in crash recovery, shutting down). Taken for refused
// credentials, it would make `sweep` exit 77 and `run` say "authentication failed" until
// the operator looked, for an outage that ends by itself.
// So are its words when PostgreSQL is gone altogether (killed in a failover, before the
// standby is promoted): code 1, "error connecting to server: Connection refused".
bool ServerNotReady(std::string_view message) {
  for (std::string_view says :
       {"the database system is in recovery mode", "the database system is starting up",
        "the database system is shutting down", "the database system is not yet accepting",
        "the database system is not accepting connections", "error connecting to server"})
    if (message.find(says) != std::string_view::npos) return true;
  return false;
}

}  // namespace

Status StatusFromBsonError(const bson_error_t& error, std::string_view what) {
  const std::string detail = RedactSecrets(error.message) + " (domain " +
                             std::to_string(error.domain) + ", code " + std::to_string(error.code) +
                             ")";
  const std::string msg = std::string(what) + " failed: " + detail;
  if (ServerNotReady(error.message)) return Status::Unavailable(msg);
  // The server's AuthenticationFailed (18) comes back as the client's "authenticate" error
  // when the driver logs in for a new connection, and as itself from a command.
  if ((error.domain == MONGOC_ERROR_CLIENT && error.code == MONGOC_ERROR_CLIENT_AUTHENTICATE) ||
      ((error.domain == MONGOC_ERROR_SERVER || error.domain == MONGOC_ERROR_QUERY) &&
       error.code == 18))
    return Status::Unauthenticated(std::string(what) + ": authentication failed: " + detail);
  // Unauthorized (13): logged in, but the user lacks a privilege the daemon needs. Like a
  // refused login, nothing a transaction did: counting it against each transaction would
  // quarantine well-formed ones for a missing role. Retried like an outage until an
  // operator grants it (README, "What the daemon requires of the deployment").
  if ((error.domain == MONGOC_ERROR_SERVER || error.domain == MONGOC_ERROR_QUERY) &&
      error.code == 13)
    return Status::PermissionDenied(std::string(what) + ": not authorized: " + detail);
  switch (error.domain) {
    case MONGOC_ERROR_SERVER_SELECTION:
    case MONGOC_ERROR_STREAM:
    case MONGOC_ERROR_CLIENT:
      return Status::Unavailable(msg);
    case MONGOC_ERROR_SERVER:
    case MONGOC_ERROR_WRITE_CONCERN:
      switch (error.code) {
        // WriteConcernFailed: not (yet) replicated to the members the write concern asks
        // for, within its timeout. Applied on the primary, not durable: retry later.
        case 64:
        // Not primary, node recovering, shutting down, host unreachable: a replica set in
        // the middle of an election. Worth retrying, not worth quarantining anything.
        case 6:
        case 7:
        case 89:
        case 91:
        case 189:
        case 10107:
        case 11600:
        case 11602:
        case 13435:
        case 13436:
          return Status::Unavailable(msg);
        // ExceededTimeLimit: DocumentDB's gateway answers a write that reached a standby
        // (a failover under way) with it, "waiting for a new primary to be elected".
        case 262:
          if (std::string_view(error.message).find("primary") != std::string_view::npos)
            return Status::Unavailable(msg);
          return Status::ServerError(msg);
        default:
          return Status::ServerError(msg);
      }
    default:
      return Status::ServerError(msg);
  }
}

}  // namespace mongo

}  // namespace txn_recovery
