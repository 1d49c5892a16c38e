#include "daemon/commands/sweep_textfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "daemon/serving/metrics.h"

namespace txn_recovery::daemon {

using txn_recovery::Status;

std::string RenderSweepTextfile(const SweepFigures& figures, int exit_code, double ended_unix,
                                double duration_seconds) {
  // The daemon's registry renders it: the same format, escaping and ordering as /metrics.
  Metrics m;
  using T = Metrics::Type;
  m.Describe("txn_recoveryd_oneshot_sweep_last_run_timestamp_seconds", T::kGauge,
             "Unix time at which the last one-shot sweep (txn-recoveryd sweep) ended.");
  m.Describe("txn_recoveryd_oneshot_sweep_success", T::kGauge,
             "1 if the last one-shot sweep exited 0, 0 otherwise (see its exit code).");
  m.Describe("txn_recoveryd_oneshot_sweep_exit_code", T::kGauge,
             "Exit code of the last one-shot sweep (txn-recoveryd(8), EXIT STATUS).");
  m.Describe("txn_recoveryd_oneshot_sweep_duration_seconds", T::kGauge,
             "How long the last one-shot sweep ran.");
  m.Describe("txn_recoveryd_oneshot_sweep_watch_success", T::kGauge,
             "1 if the last one-shot sweep of the watch ended without an error.");
  m.Describe("txn_recoveryd_oneshot_sweep_transactions", T::kGauge,
             "Transactions of the watch the last one-shot sweep resolved, quarantined, failed "
             "to drive (retried at the next) or left to another instance (busy).");
  m.Set("txn_recoveryd_oneshot_sweep_last_run_timestamp_seconds", {}, ended_unix);
  m.Set("txn_recoveryd_oneshot_sweep_success", {}, exit_code == 0 ? 1 : 0);
  m.Set("txn_recoveryd_oneshot_sweep_exit_code", {}, exit_code);
  m.Set("txn_recoveryd_oneshot_sweep_duration_seconds", {}, duration_seconds);
  for (const auto& w : figures.watches) {
    m.Set("txn_recoveryd_oneshot_sweep_watch_success", {{"watch", w.name}}, w.ok ? 1 : 0);
    const std::pair<const char*, std::int64_t> outcomes[] = {{"resolved", w.resolved},
                                                             {"quarantined", w.quarantined},
                                                             {"failed", w.failed},
                                                             {"busy", w.busy}};
    for (const auto& [outcome, n] : outcomes)
      m.Set("txn_recoveryd_oneshot_sweep_transactions", {{"watch", w.name}, {"outcome", outcome}},
            static_cast<double>(n));
  }
  return m.Render();
}

Status WriteSweepTextfile(const std::string& dir, const std::string& content) {
  const std::string target = dir + "/" + kSweepTextfileName;
  // A dot and no .prom suffix: the collector skips it while it is being written.
  std::string temp = dir + "/." + kSweepTextfileName + ".XXXXXX";
  const int fd = mkstemp(temp.data());
  if (fd < 0)
    return Status::InvalidArgument("--textfile-dir: cannot create a file in " + dir + ": " +
                                   std::strerror(errno));
  auto fail = [&](const std::string& what) {
    const int e = errno;
    close(fd);
    unlink(temp.c_str());
    return Status::InvalidArgument("--textfile-dir: " + what + " " + temp + ": " +
                                   std::strerror(e));
  };
  // mkstemp creates it 0600, and the service's UMask is 0077: node_exporter runs as another
  // user and must read it.
  if (fchmod(fd, 0644) != 0) return fail("cannot chmod");
  for (std::size_t done = 0; done < content.size();) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write");
    done += static_cast<std::size_t>(n);
  }
  // Synced before the rename, so that a crash cannot leave the new name on an empty file.
  if (fsync(fd) != 0) return fail("cannot sync");
  if (close(fd) != 0) {
    const int e = errno;
    unlink(temp.c_str());
    return Status::InvalidArgument("--textfile-dir: cannot close " + temp + ": " +
                                   std::strerror(e));
  }
  if (std::rename(temp.c_str(), target.c_str()) != 0) {
    const int e = errno;
    unlink(temp.c_str());
    return Status::InvalidArgument("--textfile-dir: cannot rename " + temp + " to " + target +
                                   ": " + std::strerror(e));
  }
  return Status::Ok();
}

}  // namespace txn_recovery::daemon
