// A document _id as the daemon's reports and logs show it, once and in the reader's terms:
// in JSON as what it is (a string, a number, {"$oid": "..."}, MongoDB Extended JSON for
// the rest), never as a JSON string holding JSON; in text as the plain string, number or
// hex ObjectId, so that a search for the id finds it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "txn_recovery/base/document.h"

namespace txn_recovery::daemon {

// The value as MongoDB Extended JSON (relaxed): "abc", 42, 1.5, {"$oid": "54fd..."},
// {"$date": {"$numberLong": "..."}}, null, documents and arrays recursively.
nlohmann::json IdJson(const txn_recovery::Value& id);

// The value as an operator types it: abc, 42, 54fd7392742abeef6186a68e; anything else as
// its compact JSON.
std::string IdText(const txn_recovery::Value& id);

// The _ids an operator may mean by `text`, as the reports print them: JSON ("abc" in
// quotes, 42, 1.5, {"$oid": "..."}) is taken as what it says; anything else as the plain
// string, and also as an ObjectId when it is 24 hexadecimal digits. Empty (and *problem
// set) when `text` is JSON of no _id type.
std::vector<txn_recovery::Value> IdCandidates(std::string_view text, std::string* problem);

}  // namespace txn_recovery::daemon
