// txn-recoveryd: drives stuck MongoDB two-phase-commit transactions to a terminal state.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <iostream>

#include "config.h"
#include "exit_codes.h"
#include "logging.h"
#include "sweep_command.h"
#include "txn_recovery/mongo_store.h"

namespace {

using namespace txn_recoveryd;

int LoadOrExit(const std::string& path, Config* config) {
  if (txn_recovery::Status s = LoadConfig(path, ProcessEnv(), config); !s.ok()) {
    std::cerr << "txn-recoveryd: bad configuration: " << s.message() << "\n";
    return kExitConfig;
  }
  return kExitOk;
}

int OpenStore(const Config& config, std::unique_ptr<txn_recovery::MongoStore>* store) {
  txn_recovery::MongoOptions mo;
  mo.uri = config.mongodb.uri;
  mo.server_selection_timeout = config.mongodb.server_selection_timeout;
  mo.max_pool_size = config.sweep.workers + 2;
  if (txn_recovery::Status s = txn_recovery::MongoStore::Open(mo, store); !s.ok()) {
    std::cerr << "txn-recoveryd: bad configuration: " << config.mongodb.uri_source
              << ": mongodb.uri: " << s.message() << "\n";
    return kExitConfig;
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"txn-recoveryd: recovers stuck MongoDB two-phase-commit transactions"};
  app.set_version_flag("--version", std::string(TXN_RECOVERYD_VERSION));
  app.require_subcommand(1);

  std::string config_path;
  int verbosity = 0;
  SweepCommandOptions sweep_options;
  CLI::App* sweep = app.add_subcommand("sweep", "One pass over every watch, then a summary");
  sweep->add_option("-c,--config", config_path, "Configuration file (TOML)")
      ->required()
      ->check(CLI::ExistingFile);
  sweep->add_flag("--dry-run", sweep_options.dry_run,
                  "Print what would be done to each transaction; write nothing");
  sweep->add_flag("--json", sweep_options.json, "Print the summary as one JSON document");
  sweep->add_flag("-v,--verbose", verbosity, "One line per transaction; twice for debug logs");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  SetupLogging(LogFormat::kText, verbosity >= 2 ? "debug" : verbosity == 1 ? "info" : "warn");
  txn_recovery::MongoDriver driver(DriverLogToSpdlog());

  if (*sweep) {
    sweep_options.verbose = verbosity > 0;
    Config config;
    if (int rc = LoadOrExit(config_path, &config); rc != kExitOk) return rc;
    std::unique_ptr<txn_recovery::MongoStore> store;
    if (int rc = OpenStore(config, &store); rc != kExitOk) return rc;
    spdlog::info("sweeping {} watch(es) on {}", config.watches.size(),
                 txn_recovery::RedactUri(config.mongodb.uri));
    return RunSweep(config, store.get(), sweep_options, std::cout);
  }
  return kExitUsage;
}
