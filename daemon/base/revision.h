// The source revision of this build: `git describe` at configure time, the value of
// -DTXN_RECOVERYD_REVISION, or "unknown" (CMakeLists.txt).
#pragma once

#include <string>

namespace txn_recovery::daemon {

const char* Revision();

// The version a fleet member's record carries: "txn-recoveryd VERSION (REVISION)", so that
// `inspect` can tell the members that run another build than its own.
std::string MemberVersion();

}  // namespace txn_recovery::daemon
