// txn-recoveryd: drives stuck MongoDB two-phase-commit transactions to a terminal state.
// The program itself is Main() (cli.cc), in the library the tests link.
#include "daemon/cli.h"

int main(int argc, char** argv) {
  return txn_recovery::daemon::Main(argc, argv);
}
