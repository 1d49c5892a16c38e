#include "daemon/base/journal_stream.h"

#include <sys/stat.h>

namespace txn_recovery::daemon {

bool StreamIsJournal(std::string_view journal_stream, int fd) {
  std::size_t colon = journal_stream.find(':');
  if (colon == std::string_view::npos) return false;
  auto number = [](std::string_view digits, unsigned long long* out) {
    if (digits.empty() || digits.size() > 20) return false;
    unsigned long long v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      if (__builtin_mul_overflow(v, 10ULL, &v) ||
          __builtin_add_overflow(v, static_cast<unsigned long long>(c - '0'), &v))
        return false;
    }
    *out = v;
    return true;
  };
  unsigned long long dev = 0, ino = 0;
  if (!number(journal_stream.substr(0, colon), &dev) ||
      !number(journal_stream.substr(colon + 1), &ino))
    return false;
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

}  // namespace txn_recovery::daemon
