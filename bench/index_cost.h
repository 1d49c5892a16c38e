// What the daemon's indexes on an application's participant collections cost the
// application's own writes. On DocumentDB every index of a collection is maintained by every
// update of it (the document is one PostgreSQL column: no update is heap-only), so an index
// the daemon asks for is paid by the application's every debit and credit, not only by the
// daemon. Measured as the application writes: the MongoDB manual's transfer steps on the
// participants (a guarded $inc with the $push of its marker, then the $pull), in unordered
// bulks, with and without each index the daemon may ask for there (RequiredIndexes, with
// and without the watch's orphan_scan_indexes). The other side of the trade is measured in
// the same round: one orphan scan of the accounts (ScanOrphans), which reads them through
// those indexes, or whole without them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "child_process.h"
#include "txn_recovery/engine/watch.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery::bench {

struct IndexCostRow {
  std::string collection;  // the accounts' or the transactions' name
  std::string variant;     // "none", then each index alone, then all of them
  std::string indexes;     // the keys, as IndexSpec::ToString writes them
  std::int64_t writes = 0;
  double seconds = 0;                // the median round's wall time
  std::optional<double> server_cpu;  // the median round's server CPU seconds
  double overhead =
      0;  // seconds / the baseline row's seconds - 1 (transactions: the manual's index)
  // One orphan scan of the accounts after the writes (the median round's): nothing is left
  // to find, so this is what the daemon pays per orphan_scan_interval.
  std::optional<double> orphan_scan_seconds;  // the accounts' rows only
  std::optional<double> orphan_scan_server_cpu;
};

struct IndexCostOptions {
  std::int64_t accounts = 10'000;
  std::int64_t writes = 100'000;  // writes per round (accounts: half $push, half $pull;
                                  // transactions: a quarter inserts, the rest moves)
  std::int32_t bulk = 500;
  int rounds = 3;  // per variant, interleaved; the median is kept
};

// For the participants of `watch` (a transfer watch: its participants collection; the
// database is dropped and rebuilt for each round), one row per variant: "none" (the
// daemon's default unless the participants are found by another key than _id), each index
// alone, and all of them (orphan_scan_indexes = true); then the same for the application's
// own writes of its transactions (the manual's insert and three moves of its state, each
// setting its time) with none, each and all of the indexes the daemon needs there. `server`
// measures the server's CPU (may be empty).
std::vector<IndexCostRow> MeasureIndexCost(MongoStore* store, const WatchSpec& watch,
                                           const IndexCostOptions& options,
                                           const ProcessTreeCpu& server);

}  // namespace txn_recovery::bench
