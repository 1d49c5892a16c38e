#include "test_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "support/server_probe.h"
#include "txn_recovery/stores/memory_store.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::testing {

TestUri FindTestUri() {
  // The second pass of scripts/test.sh (DocumentDB) runs only the tests labelled `database`:
  // a test that reaches the server without the label would pass on one engine only.
  if (std::getenv("TXN_RECOVERY_TEST_UNLABELLED") != nullptr &&
      ::testing::UnitTest::GetInstance()->current_test_info() != nullptr) {
    const std::string why =
        "this test uses the test database, but is not labelled `database`: declare its "
        "suite with TXN_RECOVERY_DATABASE_SUITE (tests/support/database_suites.h), or name "
        "its instance on the server `mongo...`, or it would run against one engine only";
    ADD_FAILURE() << why;
    return {false, why};
  }
  if (const char* uri = std::getenv("TXN_RECOVERY_TEST_URI"); uri && *uri) return {true, uri};
  const char* file = std::getenv("TXN_RECOVERY_TESTDB_URI_FILE");
  if (file == nullptr || *file == '\0')
    return {false,
            "no test database: set TXN_RECOVERY_TEST_URI, or run the tests through ctest "
            "(scripts/test.sh), whose fixture starts the embedded server"};
  std::ifstream in(file);
  std::string uri;
  if (!in || !std::getline(in, uri) || uri.empty())
    return {false, std::string("the embedded test server did not start: no URI in ") + file +
                       " (see the output of the testdb_start test)"};
  return {true, uri};
}

std::string UniqueDatabaseName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string base = "t_";
  if (info) base += std::string(info->test_suite_name()) + "_" + info->name();
  for (char& c : base)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  std::random_device rd;
  std::string suffix = std::string("_").append(std::to_string(rd() % 1000000));
  if (base.size() + suffix.size() > 60) base.resize(60 - suffix.size());
  return base + suffix;
}

namespace {

class MemoryBackend final : public TestBackend {
 public:
  MemoryBackend() : store_(&clock_) { database_ = "test"; }
  Store* store() override { return &store_; }
  Clock* clock() override { return &clock_; }
  void Advance(std::chrono::milliseconds d) override { clock_.Advance(d); }

 private:
  ManualClock clock_;
  MemoryStore store_;
};

class MongoBackend final : public TestBackend {
 public:
  explicit MongoBackend(MongoOptions::ServerClock clock) {
    database_ = UniqueDatabaseName();
    TestUri uri = FindTestUri();
    if (!uri.ok) {
      error_ = uri.uri_or_reason;
      return;
    }
    MongoOptions options;
    options.uri = uri.uri_or_reason;
    options.max_pool_size = 32;
    options.server_clock = clock;
    if (Status s = MongoStore::Open(options, &store_); !s.ok()) {
      error_ = s.ToString();
      return;
    }
    if (Status s = store_->Ping(); !s.ok())
      error_ = "test server " + RedactUri(uri.uri_or_reason) + " unreachable: " + s.ToString();
  }
  ~MongoBackend() override {
    if (store_ && error_.empty()) (void)DropDatabase(store_.get(), database_);
  }
  Store* store() override { return store_.get(); }
  Clock* clock() override { return Clock::Real(); }
  void Advance(std::chrono::milliseconds) override {}

 private:
  std::unique_ptr<MongoStore> store_;
};

}  // namespace

std::unique_ptr<TestBackend> TestBackend::Create(const std::string& kind) {
  if (kind == "memory") return std::make_unique<MemoryBackend>();
  if (kind == "mongo_daemon_clock")
    return std::make_unique<MongoBackend>(MongoOptions::ServerClock::kDaemon);
  return std::make_unique<MongoBackend>(MongoOptions::ServerClock::kAuto);
}

}  // namespace txn_recovery::testing
