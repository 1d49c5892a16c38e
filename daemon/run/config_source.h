// Where `run` reads its configuration, at start and at every reload: the file and the
// environment (LoadConfig), with the command line's overrides on top (ApplyOverrides); and
// the URI file it reads again before every round, so that a rotated URI is taken up
// without a signal.
#pragma once

#include <memory>
#include <string>

#include "daemon/configuration/config.h"
#include "daemon/run/scheduler.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::daemon {

class ConfigSource {
 public:
  ConfigSource(RunOptions options, EnvLookup env)
      : options_(std::move(options)), env_(std::move(env)) {}

  // Loads the configuration, overrides applied. As LoadConfig and ApplyOverrides fail.
  txn_recovery::Status Load(Config* config) const;
  // Whether the file the URI comes from (mongodb.uri_file, a Kubernetes Secret's file) now
  // holds another URI than the one last read from it.
  bool UriFileChanged(const Config& running);
  // `config` is now in force: its URI is the one last read.
  void InForce(const Config& config) { uri_read_ = config.mongodb.uri; }

 private:
  RunOptions options_;
  EnvLookup env_;
  // The URI last read from mongodb.uri_path: a change reloads once, not every round while
  // a reload keeps failing.
  std::string uri_read_;
};

// Opens the database `config` names. InvalidArgument naming where the URI came from.
txn_recovery::Status OpenStore(const Config& config,
                               std::unique_ptr<txn_recovery::MongoStore>* store);
// Whether `next` needs another connection than `running` has.
bool StoreChanged(const Config& running, const Config& next);

}  // namespace txn_recovery::daemon
