// The command line: the subcommands and options of txn-recoveryd, and Main(). Built by one
// function so that the tests compare the man page and the shell completions with it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/commands/propose_command.h"
#include "daemon/commands/sweep_command.h"
#include "daemon/commands/transaction_commands.h"
#include "daemon/run/scheduler.h"

// CLI11's parser, declared only: its header costs every file that includes this one seconds
// of compile time (daemon/main.cc needs only Main); cli.cc and the tests that walk the parser
// include <CLI/CLI.hpp> themselves.
namespace CLI {
class App;
}  // namespace CLI

namespace txn_recovery::daemon {

// What the command line said.
struct CliOptions {
  std::string config_path = kDefaultConfigPath;
  std::vector<std::string> watches;  // --watch NAME (repeatable): only these watches
  int verbosity = 0;
  bool inspect_json = false;
  bool rehearse_json = false;
  // check-config --probe N: parse N documents of each watch's collection with its profile.
  std::int64_t probe = 0;
  TransactionCommand transaction;  // explain, retry, release
  ProposeCommandOptions propose;
  SweepCommandOptions sweep;
  RunOptions run;
};

// "0.1.0 (revision v0.1.0-12-gabc1234)".
std::string VersionText();

// The parser, writing into *options (which must outlive it).
std::unique_ptr<CLI::App> BuildCli(CliOptions* options);

// Runs `command` and returns its exit code; an exception it lets escape is a bug, not
// something an operator can fix: said on stderr as an internal error, exit 70 (EX_SOFTWARE).
int GuardInternalErrors(const std::function<int()>& command);

// The whole program; returns the exit code.
int Main(int argc, char** argv);

}  // namespace txn_recovery::daemon
