// Logging for the daemon: spdlog on stderr, with libmongoc's own messages routed through
// the same logger. Nothing logged may contain a password: URIs go through RedactUri.
#pragma once

#include "txn_recovery/mongo_store.h"

namespace txn_recoveryd {

// verbosity: 0 = warnings and errors, 1 = info, 2 = debug (driver messages included).
void SetupLogging(int verbosity);

// The sink to hand to txn_recovery::MongoDriver: forwards driver messages to spdlog.
txn_recovery::DriverLogSink DriverLogToSpdlog();

}  // namespace txn_recoveryd
