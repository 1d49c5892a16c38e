// `run`'s HTTP endpoint ([http] listen): the metrics, /livez from the watchdog, /readyz from
// the database's status, served with the web configuration's security.
#pragma once

#include <memory>
#include <string>

#include "daemon/configuration/config.h"
#include "daemon/run/database_status.h"
#include "daemon/run/watchdog.h"
#include "daemon/serving/http_server.h"
#include "daemon/serving/metrics.h"
#include "txn_recovery/base/status.h"

namespace txn_recovery::daemon {

// What the web configuration does to the endpoint, for the log: never a secret. Empty
// without a web configuration.
std::string SecurityNote(const HttpConfig& http);

// Starts serving `http` (it says where in the log). The handlers read the three others,
// which must outlive the server. As HealthAndMetricsServer::Start fails.
txn_recovery::Status StartHttpEndpoint(const HttpConfig& http, Metrics* metrics,
                                       const Watchdog* watchdog, const DatabaseStatus* database,
                                       std::unique_ptr<HealthAndMetricsServer>* server);

}  // namespace txn_recovery::daemon
