// MongoStore: the Store implementation over the official MongoDB C driver (libmongoc).
//
// libmongoc is confined to lib/src/stores/mongo_handles.h and its users; this header exposes no
// driver type. One MongoStore owns one mongoc client pool; every call checks a client out
// for its duration, so a MongoStore may be shared by any number of threads.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "txn_recovery/stores/store.h"
#include "txn_recovery/stores/uri_redaction.h"  // RedactUri, for every caller that shows a URI

namespace txn_recovery {

enum class DriverLogLevel { kError, kCritical, kWarning, kMessage, kInfo, kDebug, kTrace };
using DriverLogSink =
    std::function<void(DriverLogLevel level, std::string_view domain, std::string_view message)>;

// Initializes libmongoc for the life of the object (mongoc_init / mongoc_cleanup). Create
// exactly one, in main() or a test's global environment, before any MongoStore. The sink
// receives the driver's own log messages (URIs in them already redacted); a null sink
// silences the driver. The sink must be callable from any thread and must not throw.
class MongoDriver {
 public:
  explicit MongoDriver(DriverLogSink sink = nullptr);
  ~MongoDriver();
  MongoDriver(const MongoDriver&) = delete;
  MongoDriver& operator=(const MongoDriver&) = delete;
};

struct MongoOptions {
  std::string uri;  // a mongodb:// or mongodb+srv:// URI; may carry credentials
  std::string app_name = "txn-recoveryd";
  int max_pool_size = 16;
  // How long a call waits for a usable server before failing with Unavailable, unless the
  // URI sets serverSelectionTimeoutMS (which wins; so do its socketTimeoutMS and
  // connectTimeoutMS).
  std::chrono::milliseconds server_selection_timeout{5000};
  // How long one operation may wait on a connected server's reply (socketTimeoutMS, unless
  // the URI sets it). 0 leaves the driver's default.
  std::chrono::milliseconds socket_timeout{30000};
  // Durability on a replica set. A write acknowledged by the primary alone can be rolled
  // back by a failover: a lost claim, transition or participant write could then let two
  // daemons, or a daemon and the application, act on a version of the transaction that no
  // longer exists. "majority" (the default) makes every acknowledged write one that
  // survives any failover; a number N waits for N members. Reads default to "majority" so
  // that the daemon never decides on a write that may still be rolled back ("local" reads
  // the primary's latest). A URI that sets `w` or `readConcernLevel` differently is refused:
  // a silent downgrade of durability is not a choice to leave to a connection string.
  std::string write_concern = "majority";
  std::chrono::milliseconds write_concern_timeout{10000};  // wtimeout; 0 waits forever
  std::string read_concern = "majority";
  // Who compares with the server's clock in a filter (a lease's fence, a lease's expiry;
  // docs/state-machine.md, "The lease-deadline rule"). kServer: the server, with `$$NOW`,
  // as it applies the write (MongoDB 4.2+). kDaemon: the store, on its estimate of the
  // server's clock (the last server-time reading plus the time elapsed since on this host's
  // monotonic clock), for servers that refuse `$$NOW` in a filter (DocumentDB): weaker,
  // see docs/compatibility.md. kAuto (the default): the server, until it refuses $$NOW in
  // a filter; then the store switches to kDaemon for good and sends the refused request
  // again, once.
  enum class ServerClock { kAuto, kServer, kDaemon };
  ServerClock server_clock = ServerClock::kAuto;
};

class MongoStore final : public Store {
 public:
  // Parses the URI and builds the client pool. Does not contact the server: a store
  // opened while the database is down works once it is back. InvalidArgument for an
  // unparseable URI (the message never contains the URI or any part of it). The URI's
  // credentials are remembered for RedactSecrets.
  static Status Open(const MongoOptions& options, std::unique_ptr<MongoStore>* store);
  ~MongoStore() override;

  // Round trip to the server; Unavailable if it cannot be reached.
  Status Ping();

  Status ServerTime(DateTime* now) override;
  // The cursor keeps a pooled client checked out until it is destroyed; destroy cursors
  // before the store.
  Status Find(const Namespace& ns, const Filter& filter, const FindOptions& options,
              std::unique_ptr<Cursor>* cursor) override;
  Status Count(const Namespace& ns, const Filter& filter, std::int64_t* count) override;
  Status UpdateOne(const Namespace& ns, const Filter& filter, const Update& update,
                   WriteResult* result) override;
  Status UpdateMany(const Namespace& ns, const Filter& filter, const Update& update,
                    WriteResult* result) override;
  Status FindOneAndUpdate(const Namespace& ns, const Filter& filter, const Update& update,
                          std::optional<Document>* after) override;
  Status DeleteMany(const Namespace& ns, const Filter& filter, WriteResult* result) override;
  Status InsertMany(const Namespace& ns, const std::vector<Document>& docs) override;
  // One unordered bulk write (the driver splits it only past the server's batch limits);
  // the reply's writeErrors become result->refused.
  Status UpdateEach(const Namespace& ns, const std::vector<UpdateRequest>& requests,
                    BulkResult* result) override;
  // The listIndexes and createIndexes commands.
  Status ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) override;
  Status CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) override;
  // The listCollections command (views left out); the aggregate command with `$sample`.
  Status ListCollections(const std::string& database, std::vector<std::string>* names) override;
  Status Sample(const Namespace& ns, std::int64_t size, std::vector<Document>* docs) override;
  // The drop command; a collection that does not exist is not an error.
  Status DropCollection(const Namespace& ns) override;
  // Counted by the driver's command-monitoring callbacks: every command this store's pool
  // sent (server monitoring heartbeats excluded), and the documents in every reply's
  // cursor batch or findAndModify value.
  bool GetWireStats(WireStats* stats) const override;

  // Runs a command that only reads (buildInfo, hello, connectionStatus) against `database`
  // and returns its reply: what `rehearse` reports of the server and checks of the user's
  // privileges before it creates anything.
  Status RunReadCommand(const std::string& database, const Document& command, Document* reply);

  // Who compares with the server's clock in filters: kAuto until the server has refused
  // $$NOW (then kDaemon), or what the options said.
  MongoOptions::ServerClock server_clock() const;

  struct Impl;

 private:
  explicit MongoStore(std::unique_ptr<Impl> impl);
  Status SampleOnce(const Namespace& ns, std::int64_t size, std::vector<Document>* docs);
  std::unique_ptr<Impl> impl_;
};

}  // namespace txn_recovery
