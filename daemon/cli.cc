#include "daemon/cli.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <CLI/CLI.hpp>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <iostream>
#include <thread>

#include "daemon/base/exit_codes.h"
#include "daemon/base/revision.h"
#include "daemon/base/suggest.h"
#include "daemon/commands/inspect_command.h"
#include "daemon/commands/rehearse_command.h"
#include "daemon/commands/transaction_commands.h"
#include "daemon/configuration/config.h"
#include "daemon/configuration/config_schema.h"
#include "daemon/logging/logging.h"
#include "daemon/run/config_source.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::daemon {

std::string VersionText() {
  return std::string(TXN_RECOVERYD_VERSION) + " (revision " + Revision() + ")";
}

namespace {

void AddConfigOption(CLI::App* cmd, CliOptions* o) {
  cmd->add_option("-c,--config", o->config_path, "Configuration file (TOML)")
      ->capture_default_str();
}

void AddWatchOption(CLI::App* cmd, CliOptions* o) {
  cmd->add_option("--watch", o->watches,
                  "Only the watch of this name (repeatable; default: every watch)");
}

void AddSweepCommand(CLI::App* app, CliOptions* o) {
  CLI::App* sweep = app->add_subcommand("sweep", "One pass over every watch, then a summary");
  AddConfigOption(sweep, o);
  AddWatchOption(sweep, o);
  CLI::Option* dry_run = sweep->add_flag(
      "--dry-run", o->sweep.dry_run, "List what would be done to each transaction; write nothing");
  // Named after node_exporter's --collector.textfile.directory, the directory it reads.
  sweep
      ->add_option("--textfile-dir", o->sweep.textfile_dir,
                   "Also write the run's figures (success, exit code, duration, transactions "
                   "per watch) to DIR/txn-recoveryd-sweep.prom for node_exporter's textfile "
                   "collector, atomically, failed runs included")
      ->type_name("DIR")
      // A dry run acts on nothing: its figures would read as a sweep that did its work.
      ->excludes(dry_run);
  sweep->add_flag("--json", o->sweep.json, "Print the summary as one JSON document");
  sweep->add_flag("--orphans", o->sweep.orphans,
                  "Also scan the participants for markers of finished or missing transactions");
  sweep->add_flag("-v,--verbose", o->verbosity, "One line per transaction; twice for debug logs");
  sweep
      ->add_option_function<std::string>(
          "--share",
          [o](const std::string& text) {
            txn_recovery::Share share;
            if (std::string error = ParseShare(text, &share); !error.empty())
              throw CLI::ValidationError(error);
            o->sweep.share = share;
          },
          "Only the candidates in share K of N (K/N, e.g. 0/4): N sweeps started by hand, one "
          "per K, divide a large backlog between them (docs/fleet.md); --orphans is not divided")
      ->type_name("K/N");
}

// The commands from a database to a proven configuration: propose reads the data, rehearse
// proves each watch on the server.
void AddProposeAndRehearse(CLI::App* app, CliOptions* o) {
  CLI::App* propose = app->add_subcommand(
      "propose",
      "Read one database's collections (never writing) and print the [[watch]] that fits each "
      "collection of two-phase-commit transactions, with the evidence as comments");
  propose
      ->add_option("-c,--config", o->config_path,
                   "Configuration file whose [mongodb] to connect with (optional: "
                   "TXN_RECOVERYD_MONGODB_URI otherwise)")
      ->capture_default_str();
  propose->add_option("--database", o->propose.database, "The database to read")->required();
  propose
      ->add_option("--sample", o->propose.sample_size, "Documents sampled per collection ($sample)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000000));

  CLI::App* rehearse = app->add_subcommand(
      "rehearse",
      "Prove each watch on this server: plant its transactions in scratch collections, stuck "
      "at every crash point, sweep them, check the invariants, drop the scratch");
  AddConfigOption(rehearse, o);
  AddWatchOption(rehearse, o);
  rehearse->add_flag("--json", o->rehearse_json, "Print one JSON document");
}

void AddRunCommand(CLI::App* app, CliOptions* o) {
  CLI::App* run = app->add_subcommand(
      "run", "Run as a daemon: sweep every interval until SIGTERM; SIGHUP reloads");
  AddConfigOption(run, o);
  // The values of the configuration's log keys, which these override.
  const std::vector<std::string> formats = Choices(SchemaKey("log", "format"));
  const std::vector<std::string> levels = Choices(SchemaKey("log", "level"));
  run->add_option("--log-format", o->run.log_format, Alternatives(formats))
      ->check(CLI::IsMember(formats));
  run->add_option("--log-level", o->run.log_level, Alternatives(levels))
      ->check(CLI::IsMember(levels));
  run->add_option("--http-listen", o->run.http_listen,
                  "Serve /metrics, /livez and /readyz on HOST:PORT");
  // exporter-toolkit's flag, spelt as node_exporter and Prometheus spell it.
  run->add_option("--web.config.file", o->run.web_config_file,
                  "TLS and basic authentication for the HTTP endpoint, from a web "
                  "configuration file (overrides http.web_config)");
}

void AddCheckConfigCommand(CLI::App* app, CliOptions* o) {
  CLI::App* check = app->add_subcommand(
      "check-config", "Validate the configuration and print it, secrets redacted");
  AddConfigOption(check, o);
  check
      ->add_option("--probe", o->probe,
                   "Also read up to N transactions of each watch from the database and show "
                   "what its profile makes of them (writes nothing)")
      ->expected(0, 1)
      ->default_str("100")
      ->check(CLI::Range(1, 1000000));
}

}  // namespace

std::unique_ptr<CLI::App> BuildCli(CliOptions* o) {
  auto app = std::make_unique<CLI::App>(
      "txn-recoveryd: recovers stuck MongoDB two-phase-commit transactions");
  app->set_version_flag("--version", "txn-recoveryd " + VersionText());
  app->require_subcommand(1);
  auto add_config = [o](CLI::App* cmd) { AddConfigOption(cmd, o); };
  auto add_watch = [o](CLI::App* cmd) { AddWatchOption(cmd, o); };

  AddSweepCommand(app.get(), o);

  AddRunCommand(app.get(), o);
  AddCheckConfigCommand(app.get(), o);

  AddProposeAndRehearse(app.get(), o);

  CLI::App* inspect =
      app->add_subcommand("inspect", "What is stuck and what is quarantined, per watch");
  add_config(inspect);
  add_watch(inspect);
  inspect->add_flag("--json", o->inspect_json, "Print one JSON document");

  CLI::App* pause = app->add_subcommand(
      "pause", "Stop every instance from acting on the watches (they keep running)");
  add_config(pause);
  add_watch(pause);
  CLI::App* resume = app->add_subcommand("resume", "Undo pause");
  add_config(resume);
  add_watch(resume);

  const std::pair<const char*, const char*> one[] = {
      {"explain",
       "Why the daemon does what it does with one transaction: state, age, decision, lease, "
       "quarantine, and the writes it would send"},
      {"retry", "Drive one transaction now, whatever its age, as a sweep would"},
      {"release", "Hand a quarantined transaction back to the daemon"}};
  for (const auto& [name, help] : one) {
    CLI::App* cmd = app->add_subcommand(name, help);
    add_config(cmd);
    add_watch(cmd);
    cmd->add_option("id", o->transaction.id,
                    "The transaction's _id as the reports print it: \"abc\", 42, "
                    "{\"$oid\": \"...\"} (JSON), or a plain string")
        ->required();
    cmd->add_flag("--json", o->transaction.json, "Print one JSON document");
  }
  return app;
}

namespace {

// The first argument, when it is meant as a command but names none: CLI11 would only say
// that an argument was not expected.
int RefuseUnknownCommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return kExitOk;
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == argv[1]) return kExitOk;
    names.push_back(sub->get_name());
  }
  std::string closest = Closest(argv[1], names);
  std::cerr << "txn-recoveryd: unknown command '" << argv[1] << "' ("
            << (closest.empty() ? "" : "did you mean '" + closest + "'? ") << "commands: ";
  for (std::size_t i = 0; i < names.size(); ++i) std::cerr << (i ? ", " : "") << names[i];
  std::cerr << "; see txn-recoveryd --help)\n";
  return kExitUsage;
}

// A missing file is the usual first-day mistake (a container without its mounted
// configuration): say where it was looked for and how to provide it.
int RequireConfigFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return kExitOk;
  std::cerr << "txn-recoveryd: no configuration file at " << path;
  if (path == kDefaultConfigPath)
    std::cerr << " (the default --config).\n"
              << "The watches (which databases to recover, and how) can only come from a "
                 "file, and nothing is recovered without one.\n"
              << "Container: mount it there (-v \"$PWD/txn-recoveryd.toml:" << kDefaultConfigPath
              << ":ro\", or a Kubernetes ConfigMap); elsewhere: pass --config FILE.\n";
  else
    std::cerr << ": pass --config with the path of a readable TOML file.\n";
  return kExitUsage;
}

int LoadOrExit(const std::string& path, const std::vector<std::string>& watches, Config* config) {
  if (txn_recovery::Status s = LoadConfig(path, ProcessEnv(), config); !s.ok()) {
    // Every problem of the file, one "FILE:LINE:COL: KEY: problem" line each, as compilers
    // print them (editors jump to each).
    auto lines = std::count(s.message().begin(), s.message().end(), '\n') + 1;
    if (lines == 1)
      std::cerr << "txn-recoveryd: bad configuration: " << s.message() << "\n";
    else
      std::cerr << "txn-recoveryd: bad configuration, " << lines << " problems:\n"
                << s.message() << "\n";
    return kExitConfig;
  }
  if (txn_recovery::Status s = SelectWatches(watches, config); !s.ok()) {
    std::cerr << "txn-recoveryd: " << s.message() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

int OpenStoreOrSay(const Config& config, std::unique_ptr<txn_recovery::MongoStore>* store) {
  if (txn_recovery::Status s = OpenStore(config, store); !s.ok()) {
    std::cerr << "txn-recoveryd: bad configuration: " << s.message() << "\n";
    return kExitConfig;
  }
  return kExitOk;
}

// rehearse, stopped by SIGINT or SIGTERM between its phases: the signals are taken by a
// thread of their own (blocked everywhere else), so that the scratch collections are dropped
// on the way out rather than left behind by a process killed mid-call.
int RehearseUntilStopped(const Config& config, txn_recovery::MongoStore* store, bool json) {
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stops, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    const timespec tick{0, 100 * 1000 * 1000};
    while (!done.load()) {
      if (sigtimedwait(&stops, nullptr, &tick) > 0) {
        std::cerr << "txn-recoveryd: stopping the rehearsal; dropping what it created\n";
        stop = true;
      }
    }
  });
  const int code = RunRehearse(config, store, json, &stop, std::cout, std::cerr);
  done = true;
  waiter.join();
  pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);
  return code;
}

void WarnAboutUnknownVariables() {
  for (const auto& unknown : UnknownEnvironmentVariables(ProcessEnvironmentNames()))
    spdlog::warn("unknown environment variable {} is ignored", unknown);
}

}  // namespace

namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The parsed command, run.
int Dispatch(const CLI::App& app, CliOptions& o) {
  auto chosen = [&app](const char* name) { return app.get_subcommand(name)->parsed(); };
  if (chosen("propose")) {
    SetupLogging(LogFormat::kText, "warn");
    txn_recovery::MongoDriver driver(DriverLogToSpdlog());
    Config config;
    const bool given = app.get_subcommand("propose")->count("--config") > 0;
    if (int rc = ConnectionConfig(o.config_path, given, &config, std::cerr); rc != kExitOk)
      return rc;
    std::unique_ptr<txn_recovery::MongoStore> store;
    if (int rc = OpenStoreOrSay(config, &store); rc != kExitOk) return rc;
    return RunPropose(store.get(), o.propose, std::cout);
  }
  if (int rc = RequireConfigFile(o.config_path); rc != kExitOk) return rc;

  SetupLogging(LogFormat::kText, o.verbosity >= 2 ? "debug" : o.verbosity == 1 ? "info" : "warn");
  txn_recovery::MongoDriver driver(DriverLogToSpdlog());

  if (chosen("run")) {
    o.run.config_path = o.config_path;
    return RunDaemon(o.run, ProcessEnv());
  }
  WarnAboutUnknownVariables();
  Config config;
  if (int rc = LoadOrExit(o.config_path, o.watches, &config); rc != kExitOk) return rc;
  const bool probe = chosen("check-config") && app.get_subcommand("check-config")->count("--probe");
  if (chosen("check-config")) std::cout << DescribeConfig(config);
  if (chosen("check-config") && !probe) return kExitOk;
  std::unique_ptr<txn_recovery::MongoStore> store;
  if (int rc = OpenStoreOrSay(config, &store); rc != kExitOk) return rc;
  if (probe) return RunProbe(config, store.get(), o.probe > 0 ? o.probe : 100, std::cout);
  if (chosen("rehearse")) return RehearseUntilStopped(config, store.get(), o.rehearse_json);
  if (chosen("sweep")) {
    o.sweep.verbose = o.verbosity > 0;
    spdlog::info("sweeping {} watch(es) on {}", config.watches.size(),
                 txn_recovery::RedactUri(config.mongodb.uri));
    return RunSweep(config, store.get(), o.sweep, std::cout);
  }
  if (chosen("inspect")) return RunInspect(config, store.get(), o.inspect_json, std::cout);
  if (chosen("pause")) return RunPause(config, store.get(), true, std::cout);
  if (chosen("resume")) return RunPause(config, store.get(), false, std::cout);
  if (chosen("explain")) return RunExplain(config, store.get(), o.transaction, std::cout);
  if (chosen("retry")) return RunRetry(config, store.get(), o.transaction, std::cout);
  if (chosen("release")) return RunRelease(config, store.get(), o.transaction, std::cout);
  return kExitUsage;
}

}  // namespace

int GuardInternalErrors(const std::function<int()>& command) {
  try {
    return command();
  } catch (const std::exception& e) {
    std::cerr << "txn-recoveryd: internal error (a bug; please report it with this line): "
              << e.what() << "\n";
    return kExitSoftware;
  }
}

int Main(int argc, char** argv) {
  CliOptions o;
  std::unique_ptr<CLI::App> app = BuildCli(&o);
  if (int rc = RefuseUnknownCommand(*app, argc, argv); rc != kExitOk) return rc;
  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app->exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app->exit(e);
  } catch (const CLI::ParseError& e) {
    app->exit(e);
    return kExitUsage;
  }
  const bool textfile = app->get_subcommand("sweep")->parsed() && !o.sweep.textfile_dir.empty();
  SweepFigures figures;
  if (textfile) o.sweep.figures = &figures;
  const auto started = std::chrono::steady_clock::now();
  const int rc = GuardInternalErrors([&] { return Dispatch(*app, o); });
  if (textfile) {
    // Whatever the run ended with, a bad configuration included: a failure the timer's
    // monitoring does not see is the one this file is for.
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (txn_recovery::Status s = WriteSweepTextfile(
            o.sweep.textfile_dir, RenderSweepTextfile(figures, rc, UnixNow(), took));
        !s.ok())
      std::cerr << "txn-recoveryd: " << s.message() << "\n";
  }
  return rc;
}

}  // namespace txn_recovery::daemon
