// txn-recoveryd: drives stuck MongoDB two-phase-commit transactions to a terminal state.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <iostream>

#include "config.h"
#include "exit_codes.h"
#include "inspect_command.h"
#include "logging.h"
#include "scheduler.h"
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
  txn_recovery::MongoOptions mo = MongoOptionsFor(config);
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
  auto add_config = [&config_path](CLI::App* cmd) {
    cmd->add_option("-c,--config", config_path, "Configuration file (TOML)")
        ->required()
        ->check(CLI::ExistingFile);
  };
  int verbosity = 0;
  bool json = false;

  SweepCommandOptions sweep_options;
  CLI::App* sweep = app.add_subcommand("sweep", "One pass over every watch, then a summary");
  add_config(sweep);
  sweep->add_flag("--dry-run", sweep_options.dry_run,
                  "Print what would be done to each transaction; write nothing");
  sweep->add_flag("--json", sweep_options.json, "Print the summary as one JSON document");
  sweep->add_flag("--orphans", sweep_options.orphans,
                  "Also scan the participants for markers of finished or missing transactions");
  sweep->add_flag("-v,--verbose", verbosity, "One line per transaction; twice for debug logs");

  RunOptions run_options;
  CLI::App* run = app.add_subcommand(
      "run", "Run as a daemon: sweep every interval until SIGTERM; SIGHUP reloads");
  add_config(run);
  run->add_option("--log-format", run_options.log_format, "text, json or journal")
      ->check(CLI::IsMember({"text", "json", "journal"}));
  run->add_option("--log-level", run_options.log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  run->add_option("--http-listen", run_options.http_listen,
                  "Serve /metrics, /livez and /readyz on HOST:PORT");

  CLI::App* check = app.add_subcommand("check-config",
                                       "Validate the configuration and print it, secrets redacted");
  add_config(check);

  CLI::App* inspect =
      app.add_subcommand("inspect", "What is stuck and what is quarantined, per watch");
  add_config(inspect);
  inspect->add_flag("--json", json, "Print one JSON document");

  CLI::App* pause = app.add_subcommand(
      "pause", "Stop every instance from acting on the watches (they keep running)");
  add_config(pause);
  CLI::App* resume = app.add_subcommand("resume", "Undo pause");
  add_config(resume);

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

  if (*run) {
    run_options.config_path = config_path;
    return RunDaemon(run_options, ProcessEnv());
  }

  Config config;
  if (int rc = LoadOrExit(config_path, &config); rc != kExitOk) return rc;
  if (*check) {
    std::cout << DescribeConfig(config);
    return kExitOk;
  }
  std::unique_ptr<txn_recovery::MongoStore> store;
  if (int rc = OpenStore(config, &store); rc != kExitOk) return rc;
  if (*sweep) {
    sweep_options.verbose = verbosity > 0;
    spdlog::info("sweeping {} watch(es) on {}", config.watches.size(),
                 txn_recovery::RedactUri(config.mongodb.uri));
    return RunSweep(config, store.get(), sweep_options, std::cout);
  }
  if (*inspect) return RunInspect(config, store.get(), json, std::cout);
  if (*pause || *resume) return RunPause(config, store.get(), pause->parsed(), std::cout);
  return kExitUsage;
}
