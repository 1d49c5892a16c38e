// The test binary's main: libmongoc is initialized once for the whole run, as in the daemon.
#include <gtest/gtest.h>

#include "support/database_suites.h"
#include "txn_recovery/stores/mongo_store.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  txn_recovery::testing::ExpandDatabaseFilter();  // ctest's discovery of one side
  txn_recovery::MongoDriver driver;               // driver log messages are dropped in tests
  return RUN_ALL_TESTS();
}
