// The fixture of the scenarios on the MongoDB manual transfer's bank: each test runs once per
// backend (its parameter, a TestBackend::Create kind) with a bank on it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/bank.h"
#include "support/test_env.h"

namespace txn_recovery::testing {

// After the daemon: the transfer of 100 from A0 to A1 `id` is in `expected`, the money
// moved if that is "done" and not at all otherwise, no marker left on either account, and
// docs/chaos.md's invariants hold against `before` (every transaction terminal unless this
// one is still "initial").
inline void ExpectTransferEnded(Bank& bank, const Value& id, const std::string& expected,
                                const Snapshot& before) {
  EXPECT_EQ(bank.State(id), expected);
  for (const auto& v : bank.Violations(before, expected != "initial")) ADD_FAILURE() << v;
  const bool done = expected == "done";
  EXPECT_EQ(bank.Balance("A0"), done ? 900 : 1000);
  EXPECT_EQ(bank.Balance("A1"), done ? 1100 : 1000);
  EXPECT_TRUE(bank.Markers("A0").empty());
  EXPECT_TRUE(bank.Markers("A1").empty());
}

class BankTest : public ::testing::TestWithParam<std::string> {
 protected:
  // `accounts`: how many accounts ("A0".."A<n-1>") are open before each test.
  explicit BankTest(int accounts = 0) : accounts_(accounts) {}

  // A fixture that sets up more returns first when HasFatalFailure().
  void SetUp() override {
    backend_ = TestBackend::Create(GetParam());
    ASSERT_TRUE(backend_->error().empty()) << backend_->error();
    bank_ = std::make_unique<Bank>(backend_->store(), backend_->database());
    if (accounts_ > 0) bank_->Open(accounts_);
  }

  std::unique_ptr<TestBackend> backend_;
  std::unique_ptr<Bank> bank_;

 private:
  int accounts_;
};

}  // namespace txn_recovery::testing
