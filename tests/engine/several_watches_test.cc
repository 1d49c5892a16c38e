// Several watches in one configuration: one sweep covers them all, and a watch that fails
// (the database refuses us, the collection does not exist) does not stop the others.
// Through the sweep command, against the in-memory store and the test server.
#include <gtest/gtest.h>

#include <sstream>

#include "daemon/base/exit_codes.h"
#include "daemon/commands/sweep_command.h"
#include "support/bank.h"
#include "support/test_env.h"

namespace txn_recovery::testing {
namespace {

// Refuses every operation on one database, as a server does for a user without rights.
class DeniedDatabaseStore final : public Store {
 public:
  DeniedDatabaseStore(Store* base, std::string denied) : base_(base), denied_(std::move(denied)) {}
  Status ServerTime(DateTime* now) override { return base_->ServerTime(now); }
  Status Find(const Namespace& ns, const Filter& f, const FindOptions& o,
              std::unique_ptr<Cursor>* c) override {
    if (ns.database == denied_) return Denied(ns);
    return base_->Find(ns, f, o, c);
  }
  Status Count(const Namespace& ns, const Filter& f, std::int64_t* n) override {
    if (ns.database == denied_) return Denied(ns);
    return base_->Count(ns, f, n);
  }
  Status UpdateOne(const Namespace& ns, const Filter& f, const Update& u, WriteResult* r) override {
    if (ns.database == denied_) return Denied(ns);
    return base_->UpdateOne(ns, f, u, r);
  }
  Status UpdateMany(const Namespace& ns, const Filter& f, const Update& u,
                    WriteResult* r) override {
    if (ns.database == denied_) return Denied(ns);
    return base_->UpdateMany(ns, f, u, r);
  }
  Status FindOneAndUpdate(const Namespace& ns, const Filter& f, const Update& u,
                          std::optional<Document>* after) override {
    if (ns.database == denied_) return Denied(ns);
    return base_->FindOneAndUpdate(ns, f, u, after);
  }
  Status DeleteMany(const Namespace& ns, const Filter& f, WriteResult* r) override {
    if (ns.database == denied_) return Denied(ns);
    return base_->DeleteMany(ns, f, r);
  }
  Status InsertMany(const Namespace& ns, const std::vector<Document>& docs) override {
    if (ns.database == denied_) return Denied(ns);
    return base_->InsertMany(ns, docs);
  }
  Status ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) override {
    if (ns.database == denied_) return Denied(ns);
    return base_->ListIndexes(ns, indexes);
  }
  Status CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) override {
    if (ns.database == denied_) return Denied(ns);
    return base_->CreateIndexes(ns, indexes);
  }

 private:
  static Status Denied(const Namespace& ns) {
    return Status::ServerError("not authorized on " + ns.database + " to execute command");
  }
  Store* base_;
  std::string denied_;
};

class SeveralWatches : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
  }
  std::unique_ptr<TestBackend> backend_;
};

TEST_P(SeveralWatches, ADeniedDatabaseAndAMissingCollectionDoNotStopTheOtherWatches) {
  Bank bank(backend_->store(), backend_->database());
  bank.Open(4);
  Snapshot before = bank.Take();
  Value stuck = bank.Transfer("A0", "A1", 10, 3);
  bank.Age(stuck, std::chrono::minutes(5));

  txn_recovery::daemon::Config config;
  WatchSpec denied = bank.Watch();
  denied.name = "denied";
  denied.ns.database = backend_->database() + "_denied";
  WatchSpec missing = bank.Watch();
  missing.name = "missing";
  missing.ns.collection = "no_such_collection";
  WatchSpec good = bank.Watch();
  good.name = "good";
  config.watches = {denied, missing, good};  // the broken ones first: they must not stop it

  DeniedDatabaseStore store(backend_->store(), denied.ns.database);
  std::ostringstream out;
  int code = txn_recovery::daemon::RunSweep(config, &store, {}, out);

  EXPECT_EQ(code, txn_recovery::daemon::kExitIncomplete) << out.str();
  EXPECT_NE(out.str().find("watch denied"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("ERROR ServerError: not authorized"), std::string::npos) << out.str();
  EXPECT_NE(
      out.str().find("watch missing (" + backend_->database() + ".no_such_collection): examined 0"),
      std::string::npos)
      << "a collection that does not exist is empty, not an error\n"
      << out.str();
  EXPECT_NE(out.str().find("watch good"), std::string::npos) << out.str();
  EXPECT_EQ(bank.State(stuck), "done") << out.str();
  for (const auto& v : bank.Violations(before)) ADD_FAILURE() << v;
}

INSTANTIATE_TEST_SUITE_P(Backends, SeveralWatches, ::testing::Values("memory", "mongo"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txn_recovery::testing
