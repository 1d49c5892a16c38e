#include "txn_recovery/engine/conformance_trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace txn_recovery::conformance {
namespace {

// The trace file's descriptor, or -1: opened once, kept for the life of the process.
int Fd() {
  static const int fd = [] {
    const char* path = std::getenv("TXN_RECOVERY_TRACE_FILE");
    if (path == nullptr || *path == '\0') return -1;
    return ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  }();
  return fd;
}

}  // namespace

bool On() {
  return Fd() >= 0;
}

void Write(std::string_view line) {
  if (!On()) return;
  std::string whole(line);
  whole += '\n';
  // One write per line: with O_APPEND, lines of several processes interleave whole.
  (void)!::write(Fd(), whole.data(), whole.size());
}

}  // namespace txn_recovery::conformance
