// `txn-recoveryd explain ID`, `retry ID` and `release ID`: an operator's commands on one
// transaction, found by its _id in the configured watches (or the one --watch names).
// Exit codes: 0 done (explain: shown); 1 no such transaction, or it could not be done
// (retry: refused, busy, failed or quarantined; release: not quarantined); 64 an _id found
// in several watches, or not an _id; 69 the database unreachable; 77 credentials refused;
// 79 a privilege missing.
#pragma once

#include <ostream>
#include <string>

#include "daemon/configuration/config.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery::daemon {

struct TransactionCommand {
  std::string id;  // as typed: JSON ("abc", 42, {"$oid": "..."}) or a plain string
  bool json = false;
};

// Its state, age on the server's clock and where that age comes from, the decision-table
// row, what a sweep would do and why, its lease and quarantine record, and the exact
// filter and update of each write the action would send. Reads only.
int RunExplain(const Config& config, txn_recovery::Store* store, const TransactionCommand& c,
               std::ostream& out);
// Drives it now, as a sweep would once it is old enough, under a lease.
int RunRetry(const Config& config, txn_recovery::Store* store, const TransactionCommand& c,
             std::ostream& out);
// Hands a quarantined transaction back to the daemon.
int RunRelease(const Config& config, txn_recovery::Store* store, const TransactionCommand& c,
               std::ostream& out);

}  // namespace txn_recovery::daemon
