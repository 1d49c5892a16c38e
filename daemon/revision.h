// The source revision of this build: `git describe` at configure time, the value of
// -DTXN_RECOVERYD_REVISION, or "unknown" (CMakeLists.txt).
#pragma once

namespace txn_recoveryd {

const char* Revision();

}  // namespace txn_recoveryd
