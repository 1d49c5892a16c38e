// Process exit codes, following sysexits(3) where one fits, so that systemd units
// (RestartPreventExitStatus=78) and scripts can tell a bad configuration from an outage.
#pragma once

namespace txn_recoveryd {

inline constexpr int kExitOk = 0;
// Some transaction was quarantined or could not be finished.
inline constexpr int kExitIncomplete = 1;
inline constexpr int kExitUsage = 64;        // EX_USAGE
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: database unreachable
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE: a bug
// EX_NOPERM: the database refused the credentials ("authentication failed"). Apart from 69
// because waiting does not fix it: someone has to fix the password or the user.
inline constexpr int kExitAuthentication = 77;
inline constexpr int kExitConfig = 78;  // EX_CONFIG

}  // namespace txn_recoveryd
