#include "support/database_suites.h"

#include <gtest/gtest.h>

#include <set>

namespace txn_recovery::testing {
namespace {

// Filled by static initializers, hence behind a function.
std::set<std::string>& Suites() {
  static std::set<std::string> suites;
  return suites;
}

}  // namespace

bool DeclareDatabaseSuite(const char* suite) {
  Suites().insert(suite);
  return true;
}

std::string DatabaseTestFilter() {
  std::string filter = "*/mongo*";
  for (const std::string& suite : Suites())
    filter.append(":").append(suite).append(".*:*/").append(suite).append(".*");
  return filter;
}

void ExpandDatabaseFilter() {
  const std::string filter = GTEST_FLAG_GET(filter);
  if (filter == "@database") GTEST_FLAG_SET(filter, DatabaseTestFilter());
  if (filter == "-@database") GTEST_FLAG_SET(filter, std::string("-").append(DatabaseTestFilter()));
}

}  // namespace txn_recovery::testing
