#include "daemon/run/config_source.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "daemon/configuration/config_schema.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;

Status ApplyOverrides(const RunOptions& options, Config* config) {
  if (!options.log_format.empty()) {
    std::optional<LogFormat> format = LogFormatNamed(options.log_format);
    if (!format)
      return Status::InvalidArgument("--log-format: must be " +
                                     Alternatives(Choices(SchemaKey("log", "format"))) + ", not '" +
                                     options.log_format + "'");
    config->log.format = *format;
  }
  if (!options.log_level.empty()) {
    const std::vector<std::string> levels = Choices(SchemaKey("log", "level"));
    if (std::find(levels.begin(), levels.end(), options.log_level) == levels.end())
      return Status::InvalidArgument("--log-level: must be " + Alternatives(levels) + ", not '" +
                                     options.log_level + "'");
    config->log.level = options.log_level;
  }
  if (!options.http_listen.empty()) {
    ListenAddress unused;
    if (Status s = ParseListenAddress(options.http_listen, &unused); !s.ok())
      return Status::InvalidArgument("--http-listen: " + s.message());
    config->http.listen = options.http_listen;
  }
  if (!options.web_config_file.empty()) {
    if (Status s = LoadHttpSecurity(options.web_config_file, &config->http.security); !s.ok())
      return Status::InvalidArgument("--web.config.file: " + s.message());
    config->http.web_config = options.web_config_file;
  }
  return Status::Ok();
}

Status ConfigSource::Load(Config* config) const {
  Status s = LoadConfig(options_.config_path, env_, config);
  if (s.ok()) s = ApplyOverrides(options_, config);
  return s;
}

bool ConfigSource::UriFileChanged(const Config& running) {
  const std::string& path = running.mongodb.uri_path;
  if (path.empty()) return false;
  std::string now;
  // Unreadable for a moment (a file being replaced by hand): the next round reads it again.
  if (!ReadSecretFile(path, &now).ok() || now == uri_read_) return false;
  uri_read_ = now;
  return true;
}

Status OpenStore(const Config& config, std::unique_ptr<txn_recovery::MongoStore>* store) {
  txn_recovery::MongoOptions options = MongoOptionsFor(config);
  Status s = txn_recovery::MongoStore::Open(options, store);
  if (!s.ok())
    return Status::InvalidArgument(config.mongodb.uri_source + ": mongodb.uri: " + s.message());
  return s;
}

bool StoreChanged(const Config& running, const Config& next) {
  return next.mongodb.uri != running.mongodb.uri ||
         next.mongodb.server_selection_timeout != running.mongodb.server_selection_timeout ||
         next.mongodb.socket_timeout != running.mongodb.socket_timeout ||
         next.sweep.workers != running.sweep.workers;
}

}  // namespace txn_recovery::daemon
