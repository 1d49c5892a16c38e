// Where the database tests find their server: TXN_RECOVERY_TEST_URI if set (a real mongod
// or replica set), otherwise the embedded server the CTest fixture started and recorded in
// the file named by TXN_RECOVERY_TESTDB_URI_FILE. No server is a test failure, never a skip.
// Under ctest, a test that is not labelled `database` (TXN_RECOVERY_TEST_UNLABELLED set;
// database_suites.h says which are) fails as soon as it asks for the server.
#pragma once

#include <memory>
#include <string>

#include "txn_recovery/base/clock.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::testing {

// The URI, or a description of why there is none (then `ok` is false).
struct TestUri {
  bool ok = false;
  std::string uri_or_reason;
};
TestUri FindTestUri();

// A database name unique to this test and process ("t_<suite>_<test>_<random>"), at most
// 63 bytes as MongoDB requires.
std::string UniqueDatabaseName();

// A store for one test: "memory" (MemoryStore over a ManualClock), "mongo" (MongoStore
// on the test server, its database dropped at the end), or "mongo_daemon_clock" (the same,
// comparing with the server's clock on the store's estimate instead of $$NOW, as it does
// for servers that refuse $$NOW in filters).
class TestBackend {
 public:
  static std::unique_ptr<TestBackend> Create(const std::string& kind);
  virtual ~TestBackend() = default;
  virtual Store* store() = 0;
  virtual Clock* clock() = 0;  // drives the sweeper's monotonic time
  // The database every namespace of this test lives in.
  const std::string& database() const { return database_; }
  // Simulates the passage of time for leases. ManualClock advances; for MongoDB nothing
  // needs to happen, because scenarios age documents explicitly.
  virtual void Advance(std::chrono::milliseconds d) = 0;
  // Non-empty when the backend could not be set up (the test must fail with it).
  const std::string& error() const { return error_; }

 protected:
  std::string database_;
  std::string error_;
};

}  // namespace txn_recovery::testing
