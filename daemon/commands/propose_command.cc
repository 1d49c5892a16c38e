#include "daemon/commands/propose_command.h"

#include <sys/stat.h>

#include "daemon/base/exit_codes.h"
#include "txn_recovery/tools/propose.h"

namespace txn_recovery::daemon {

using txn_recovery::CollectionProposal;

int RunPropose(txn_recovery::Store* store, const ProposeCommandOptions& options,
               std::ostream& out) {
  txn_recovery::ProposeOptions po;
  po.sample_size = options.sample_size;
  txn_recovery::Proposal p;
  if (txn_recovery::Status s = txn_recovery::Propose(store, options.database, po, &p); !s.ok()) {
    out << "# txn-recoveryd propose: database " << options.database
        << " could not be read: " << s.ToString() << "\n";
    return ExitForStatus(s);
  }
  out << txn_recovery::ProposalText(p);
  int proposed = 0;
  bool doubt = false;
  for (const CollectionProposal& c : p.collections) {
    if (c.verdict == CollectionProposal::Verdict::kProposed) ++proposed;
    if (c.verdict == CollectionProposal::Verdict::kUndecided ||
        c.verdict == CollectionProposal::Verdict::kMixed)
      doubt = true;
  }
  if (proposed == 0 && !doubt)
    out << "\n# No collection of " << options.database
        << " holds two-phase-commit transactions: nothing to propose.\n";
  return proposed > 0 && !doubt ? kExitOk : kExitIncomplete;
}

int ConnectionConfig(const std::string& config_path, bool path_given, Config* config,
                     std::ostream& err) {
  struct stat st {};
  const bool file = stat(config_path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (file) {
    if (txn_recovery::Status s = LoadConfig(config_path, ProcessEnv(), config); !s.ok()) {
      err << "txn-recoveryd: bad configuration: " << s.message() << "\n";
      return kExitConfig;
    }
    return kExitOk;
  }
  if (path_given) {
    err << "txn-recoveryd: no configuration file at " << config_path
        << ": pass --config with the path of a readable TOML file, or none and set "
           "TXN_RECOVERYD_MONGODB_URI.\n";
    return kExitUsage;
  }
  std::optional<std::string> uri = ProcessEnv()("TXN_RECOVERYD_MONGODB_URI");
  if (!uri || uri->empty()) {
    err << "txn-recoveryd: no database to read: set TXN_RECOVERYD_MONGODB_URI (never in argv), "
           "or pass --config with a file whose [mongodb] names it.\n";
    return kExitUsage;
  }
  config->mongodb.uri = *uri;
  config->mongodb.uri_source = "environment TXN_RECOVERYD_MONGODB_URI";
  return kExitOk;
}

}  // namespace txn_recovery::daemon
