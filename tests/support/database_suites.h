// Which tests use the test database, said where they are written: a suite whose tests reach
// the server declares itself beside them (TXN_RECOVERY_DATABASE_SUITE); a parameterized
// suite that runs on several backends needs no declaration, its instances on the server
// being named `mongo...` (TestBackend, test_env.h). ctest labels exactly these tests
// `database` and the others `unit`, asking the test binary for them (tests/CMakeLists.txt:
// the filter `@database`), so that no list of names is kept apart from the tests; a test of
// neither kind that asks for the server fails, saying so (test_env.h), so that none runs on
// one engine only.
#pragma once

#include <string>

namespace txn_recovery::testing {

// Records `suite` as a database suite (its instances too, when it is parameterized).
// Returns true, for the macro's static.
bool DeclareDatabaseSuite(const char* suite);

// The gtest filter of every database test: each declared suite and every instance named
// `mongo...`.
std::string DatabaseTestFilter();

// Replaces the gtest filter `@database` by DatabaseTestFilter() and `-@database` by its
// negation (the two sides ctest discovers); any other filter is left as it is. After
// ::testing::InitGoogleTest.
void ExpandDatabaseFilter();

}  // namespace txn_recovery::testing

#define TXN_RECOVERY_DATABASE_SUITE(suite)                           \
  [[maybe_unused]] static const bool txn_recovery_database_##suite = \
      ::txn_recovery::testing::DeclareDatabaseSuite(#suite)
