#include "daemon/run/http_endpoint.h"

#include <spdlog/spdlog.h>

#include "daemon/serving/process_metrics.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;

std::string SecurityNote(const HttpConfig& http) {
  if (http.web_config.empty()) return "";
  std::string note = " (web configuration " + http.web_config;
  note += http.security.tls ? ": TLS" : ": no TLS";
  if (http.security.auth) note += ", basic authentication on / and /metrics";
  return note + ")";
}

Status StartHttpEndpoint(const HttpConfig& http, Metrics* metrics, const Watchdog* watchdog,
                         const DatabaseStatus* database,
                         std::unique_ptr<HealthAndMetricsServer>* server) {
  const std::string& listen = http.listen;
  auto next = std::make_unique<HealthAndMetricsServer>();
  HealthAndMetricsHandlers h;
  h.metrics = [metrics] {
    UpdateProcessMetrics(metrics);
    return metrics->Render();
  };
  h.live = [watchdog](std::string* why) { return watchdog->Live(why); };
  h.ready = [database](std::string* why) { return database->Ready(why); };
  Status s = next->Start(listen, std::move(h), {}, http.security);
  if (!s.ok()) return s;
  ListenAddress parsed;
  const bool every = ParseListenAddress(listen, &parsed).ok() && parsed.every_address;
  spdlog::info("health and metrics on {}://{}{}{}", http.security.tls ? "https" : "http",
               next->address(), every ? " (every IPv4 and IPv6 address of this host)" : "",
               SecurityNote(http));
  *server = std::move(next);
  return Status::Ok();
}

}  // namespace txn_recovery::daemon
