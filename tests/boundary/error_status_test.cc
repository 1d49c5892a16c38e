// How a driver error becomes our Status: which failures are the deployment's (credentials,
// privileges: exit 77), which are an outage to wait out (exit 69, retried), which are the
// server's answer to one request.
#include <bson/bson.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "stores/mongo_handles.h"

namespace txn_recovery {
namespace {

bson_error_t Error(std::uint32_t domain, std::uint32_t code, const std::string& message) {
  bson_error_t e;
  std::memset(&e, 0, sizeof e);
  e.domain = domain;
  e.code = code;
  std::strncpy(e.message, message.c_str(), sizeof e.message - 1);
  return e;
}

TEST(ErrorStatus, RefusedCredentialsAndAMissingPrivilegeAreTheDeployments) {
  EXPECT_TRUE(
      mongo::StatusFromBsonError(
          Error(MONGOC_ERROR_CLIENT, MONGOC_ERROR_CLIENT_AUTHENTICATE, "Authentication failed."),
          "find")
          .IsUnauthenticated());
  EXPECT_TRUE(
      mongo::StatusFromBsonError(Error(MONGOC_ERROR_SERVER, 18, "Authentication failed."), "update")
          .IsUnauthenticated());
  // Logged in, a privilege missing: a role to grant, not credentials to fix; retried like
  // an outage all the same.
  const Status unauthorized =
      mongo::StatusFromBsonError(Error(MONGOC_ERROR_SERVER, 13, "not authorized on bank"), "find");
  EXPECT_TRUE(unauthorized.IsPermissionDenied()) << unauthorized.ToString();
  EXPECT_FALSE(unauthorized.IsUnauthenticated());
  EXPECT_TRUE(unauthorized.IsUnavailable());
}

// DocumentDB's gateway, its PostgreSQL restarting after a crash, refuses the login with
// PostgreSQL's words: an outage that ends by itself, not refused credentials.
TEST(ErrorStatus, ALoginRefusedWhileTheServerRecoversIsAnOutageNotRefusedCredentials) {
  for (const char* says :
       {"the database system is in recovery mode", "the database system is starting up",
        "FATAL: the database system is shutting down",
        "the database system is not yet accepting connections"}) {
    const Status s = mongo::StatusFromBsonError(
        Error(MONGOC_ERROR_CLIENT, MONGOC_ERROR_CLIENT_AUTHENTICATE, says), "find");
    EXPECT_TRUE(s.IsUnavailable()) << says << ": " << s.ToString();
    EXPECT_FALSE(s.IsUnauthenticated()) << says;
  }
}

// DocumentDB during a failover, its PostgreSQL killed and the standby not yet promoted: the
// gateway answers any command so (found by the chaos round's failovers).
TEST(ErrorStatus, AGatewayThatCannotReachItsDatabaseIsAnOutage) {
  EXPECT_TRUE(mongo::StatusFromBsonError(
                  Error(MONGOC_ERROR_SERVER, 1,
                        "error connecting to server: Connection refused (os error 111)"),
                  "count")
                  .IsUnavailable());
}

// DocumentDB during a failover: a write that reached the standby waits, then gives up.
TEST(ErrorStatus, AWriteRefusedWhileANewPrimaryIsAwaitedIsAnOutage) {
  EXPECT_TRUE(
      mongo::StatusFromBsonError(Error(MONGOC_ERROR_SERVER, 262,
                                       "Timed out while waiting for a new primary to be elected"),
                                 "update")
          .IsUnavailable());
  EXPECT_FALSE(mongo::StatusFromBsonError(
                   Error(MONGOC_ERROR_SERVER, 262, "operation exceeded time limit"), "find")
                   .IsUnavailable())
      << "a read over its own time limit is that read's answer";
}

TEST(ErrorStatus, AnElectionIsAnOutageAndARefusedRequestIsTheServersAnswer) {
  EXPECT_TRUE(mongo::StatusFromBsonError(Error(MONGOC_ERROR_SERVER, 10107, "not primary"), "update")
                  .IsUnavailable());
  EXPECT_TRUE(mongo::StatusFromBsonError(Error(MONGOC_ERROR_STREAM, 0, "socket error"), "find")
                  .IsUnavailable());
  const Status refused =
      mongo::StatusFromBsonError(Error(MONGOC_ERROR_SERVER, 2, "bad $set"), "update");
  EXPECT_FALSE(refused.IsUnavailable());
  EXPECT_FALSE(refused.IsUnauthenticated());
}

}  // namespace
}  // namespace txn_recovery
