// Process exit codes, following sysexits(3) where one fits, so that systemd units
// (RestartPreventExitStatus=64 78: a usage or configuration error is not retried) and
// scripts can tell a bad configuration from an outage.
#pragma once

#include "txn_recovery/base/status.h"

namespace txn_recovery::daemon {

inline constexpr int kExitOk = 0;
// Some transaction was quarantined or could not be finished.
inline constexpr int kExitIncomplete = 1;
// `rehearse`: an invariant did not hold on the scratch transactions (the engine, or this
// deployment, does not recover the watch's shape as the tests prove it does).
inline constexpr int kExitRehearsalFailed = 2;
inline constexpr int kExitUsage = 64;        // EX_USAGE
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: database unreachable
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE: a bug
// EX_NOPERM: the database refused the credentials ("authentication failed"). Apart from 69
// because waiting does not fix it: someone has to fix the password or the user.
inline constexpr int kExitAuthentication = 77;
inline constexpr int kExitConfig = 78;  // EX_CONFIG
// Logged in, but the database refused a request for a privilege the user lacks ("not
// authorized"): a role to grant, not a password to fix. Beyond sysexits(3), whose EX_NOPERM
// (77) this daemon gave refused credentials first.
inline constexpr int kExitPermission = 79;

// The exit code a command ends with when `s` stopped it: refused credentials, a missing
// privilege, the database unreachable, or else something an operator must look at.
inline int ExitForStatus(const txn_recovery::Status& s) {
  if (s.IsUnauthenticated()) return kExitAuthentication;
  if (s.IsPermissionDenied()) return kExitPermission;
  if (s.IsUnavailable()) return kExitUnavailable;
  return kExitIncomplete;
}

}  // namespace txn_recovery::daemon
