// Whether stderr is the journal stream, which decides log.format's default: a fact about the
// process's systemd environment, which the configuration asks without reaching the logging.
#pragma once

#include <string_view>

namespace txn_recovery::daemon {

// Whether `journal_stream` (the JOURNAL_STREAM variable, "DEVICE:INODE") names the file
// open as `fd`: systemd.exec(5)'s test that stderr really is the journal stream, and not
// a pipe or file some process that inherited the variable redirected it to.
bool StreamIsJournal(std::string_view journal_stream, int fd);

}  // namespace txn_recovery::daemon
