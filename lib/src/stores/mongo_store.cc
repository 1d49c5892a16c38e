#include "txn_recovery/stores/mongo_store.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "stores/mongo_handles.h"

namespace txn_recovery {

// ---- Errors ------------------------------------------------------------------------------

namespace mongo {

namespace {

// A login refused because the server behind the wire protocol is not ready, not because
// of the credentials: DocumentDB's gateway passes PostgreSQL's own words on when it cannot
// reach its database (restarting, in crash recovery, shutting down). Taken for refused
// credentials, it would make `sweep` exit 77 and `run` say "authentication failed" until
// the operator looked, for an outage that ends by itself.
// So are its words when PostgreSQL is gone altogether (killed in a failover, before the
// standby is promoted): code 1, "error connecting to server: Connection refused".
bool ServerNotReady(std::string_view message) {
  for (std::string_view says :
       {"the database system is in recovery mode", "the database system is starting up",
        "the database system is shutting down", "the database system is not yet accepting",
        "the database system is not accepting connections", "error connecting to server"})
    if (message.find(says) != std::string_view::npos) return true;
  return false;
}

}  // namespace

Status StatusFromBsonError(const bson_error_t& error, std::string_view what) {
  const std::string detail = RedactSecrets(error.message) + " (domain " +
                             std::to_string(error.domain) + ", code " + std::to_string(error.code) +
                             ")";
  const std::string msg = std::string(what) + " failed: " + detail;
  if (ServerNotReady(error.message)) return Status::Unavailable(msg);
  // The server's AuthenticationFailed (18) comes back as the client's "authenticate" error
  // when the driver logs in for a new connection, and as itself from a command.
  if ((error.domain == MONGOC_ERROR_CLIENT && error.code == MONGOC_ERROR_CLIENT_AUTHENTICATE) ||
      ((error.domain == MONGOC_ERROR_SERVER || error.domain == MONGOC_ERROR_QUERY) &&
       error.code == 18))
    return Status::Unauthenticated(std::string(what) + ": authentication failed: " + detail);
  // Unauthorized (13): logged in, but the user lacks a privilege the daemon needs. Like a
  // refused login, nothing a transaction did: counting it against each transaction would
  // quarantine well-formed ones for a missing role. Retried like an outage until an
  // operator grants it (README, "What the daemon requires of the deployment").
  if ((error.domain == MONGOC_ERROR_SERVER || error.domain == MONGOC_ERROR_QUERY) &&
      error.code == 13)
    return Status::PermissionDenied(std::string(what) + ": not authorized: " + detail);
  switch (error.domain) {
    case MONGOC_ERROR_SERVER_SELECTION:
    case MONGOC_ERROR_STREAM:
    case MONGOC_ERROR_CLIENT:
      return Status::Unavailable(msg);
    case MONGOC_ERROR_SERVER:
    case MONGOC_ERROR_WRITE_CONCERN:
      switch (error.code) {
        // WriteConcernFailed: not (yet) replicated to the members the write concern asks
        // for, within its timeout. Applied on the primary, not durable: retry later.
        case 64:
        // Not primary, node recovering, shutting down, host unreachable: a replica set in
        // the middle of an election. Worth retrying, not worth quarantining anything.
        case 6:
        case 7:
        case 89:
        case 91:
        case 189:
        case 10107:
        case 11600:
        case 11602:
        case 13435:
        case 13436:
          return Status::Unavailable(msg);
        // ExceededTimeLimit: DocumentDB's gateway answers a write that reached a standby
        // (a failover under way) with it, "waiting for a new primary to be elected".
        case 262:
          if (std::string_view(error.message).find("primary") != std::string_view::npos)
            return Status::Unavailable(msg);
          return Status::ServerError(msg);
        default:
          return Status::ServerError(msg);
      }
    default:
      return Status::ServerError(msg);
  }
}

}  // namespace mongo

// ---- Driver lifetime and logging ------------------------------------------------------

namespace {

std::mutex g_sink_mu;
DriverLogSink* g_sink = nullptr;  // guarded by g_sink_mu

// A C callback: must never let an exception escape into libmongoc.
extern "C" void LogTrampoline(mongoc_log_level_t level, const char* domain, const char* message,
                              void* /*user_data*/) noexcept {
  try {
    const mongo::DriverLogMode mode = mongo::CurrentDriverLogMode();
    if (mode == mongo::DriverLogMode::kDrop) return;
    std::string text = RedactSecrets(message ? message : "");
    if (mode == mongo::DriverLogMode::kMaskQuoted) text = MaskQuotedValues(text);
    std::lock_guard lock(g_sink_mu);
    if (g_sink == nullptr || !*g_sink) return;
    DriverLogLevel l = DriverLogLevel::kDebug;
    switch (level) {
      case MONGOC_LOG_LEVEL_ERROR:
        l = DriverLogLevel::kError;
        break;
      case MONGOC_LOG_LEVEL_CRITICAL:
        l = DriverLogLevel::kCritical;
        break;
      case MONGOC_LOG_LEVEL_WARNING:
        l = DriverLogLevel::kWarning;
        break;
      case MONGOC_LOG_LEVEL_MESSAGE:
        l = DriverLogLevel::kMessage;
        break;
      case MONGOC_LOG_LEVEL_INFO:
        l = DriverLogLevel::kInfo;
        break;
      case MONGOC_LOG_LEVEL_DEBUG:
        l = DriverLogLevel::kDebug;
        break;
      case MONGOC_LOG_LEVEL_TRACE:
        l = DriverLogLevel::kTrace;
        break;
    }
    (*g_sink)(l, domain ? domain : "", text);
  } catch (...) {
    // Dropping a log line is better than unwinding through C.
  }
}

}  // namespace

MongoDriver::MongoDriver(DriverLogSink sink) {
  mongoc_init();
  {
    std::lock_guard lock(g_sink_mu);
    g_sink = new DriverLogSink(std::move(sink));
  }
  mongoc_log_set_handler(&LogTrampoline, nullptr);
}

MongoDriver::~MongoDriver() {
  mongoc_log_set_handler(nullptr, nullptr);
  {
    std::lock_guard lock(g_sink_mu);
    delete g_sink;
    g_sink = nullptr;
  }
  mongoc_cleanup();
}

// ---- Store ---------------------------------------------------------------------------

struct MongoStore::Impl {
  mongo::UriPtr uri;
  std::uint32_t max_pool_size = 16;
  std::atomic<std::int64_t> round_trips{0};
  std::atomic<std::int64_t> documents_returned{0};

  // A client of the pool, creating the pool first if it does not exist yet: an SRV URI's
  // pool needs its DNS records, and a name that does not resolve at start (a DNS outage) is
  // an unreachable database, retried at the next call, not a bad configuration.
  Status Client(mongo::PooledClient* out) {
    mongoc_client_pool_t* pool = nullptr;
    {
      std::lock_guard lock(mu_);
      if (!pool_)
        if (Status s = CreatePool(); !s.ok()) return s;
      pool = pool_.get();
    }
    // Popped outside the lock: a pop waits while every client is out, and must not keep
    // the other workers from the pool meanwhile.
    *out = mongo::PooledClient(pool);
    return Status::Ok();
  }

  // Requires mu_ (or sole ownership). Unavailable for an SRV URI whose records cannot be
  // looked up now; InvalidArgument for anything else the driver refuses.
  Status CreatePool();

  // isMaster's (or serverStatus's) localTime, remembered with this host's monotonic time
  // of the reading for EstimatedServerNow.
  Status ReadServerTime(DateTime* now);
  // The query document of `filter`, its comparisons with the server's clock made by
  // whoever `server_clock` says (the server while it is kAuto).
  Status Query(const Filter& filter, bson_t* out);
  // After a refusal: true when the store is not forced to kServer and the server refused
  // $$NOW in a filter (DocumentDB: "$$NOW operator cannot be used within this specific
  // context", code 9). The store then compares on its estimate from now on, and the caller
  // sends the refused request again, once. (A server may accept $$NOW in a filter that matches no
  // document and refuse it once a document is evaluated, so asking it ahead of time proves
  // nothing.)
  bool SwitchToDaemonClock(const std::string& refusal);

  std::atomic<MongoOptions::ServerClock> server_clock{MongoOptions::ServerClock::kAuto};
  // Whether a server in kAuto takes $$NOW in a filter is known once a bulk that compares
  // with it has been refused for it (SwitchToDaemonClock) or has matched a document (one
  // evaluated it). Until then one such bulk asks at a time (UpdateEach): the sweep's
  // workers each sent their first bulk at once, and DocumentDB refused all of them (500
  // claims, sent again, at every start of a sweep with 4 workers).
  std::mutex now_probe_mu;
  std::atomic<bool> now_answered{false};
  // Held (owned) while this bulk is the one asking; not held when the answer is known, the
  // clock is not kAuto, or no request compares with the server's clock.
  std::unique_lock<std::mutex> AskWhetherNowIsTaken(const std::vector<UpdateRequest>& requests) {
    if (now_answered || server_clock != MongoOptions::ServerClock::kAuto ||
        std::none_of(requests.begin(), requests.end(),
                     [](const UpdateRequest& r) { return r.filter.UsesServerClock(); }))
      return {};
    std::unique_lock asking(now_probe_mu);
    if (now_answered) asking.unlock();
    return asking;
  }
  // The asking bulk's reply: `answers` when it was refused for $$NOW or matched a document
  // (one evaluated the filter). Lets the next bulk go either way.
  void Answered(std::unique_lock<std::mutex>* asking, bool answers) {
    if (!asking->owns_lock()) return;
    if (answers) now_answered = true;
    asking->unlock();
  }
  // Whether the server takes `enableOrderedIndex` in an index's options (IndexSpec::ordered):
  // unknown until an index asks for it, then what the server said. A server that refused
  // it (mongod) orders every compound index.
  enum class OrderedOption { kUnknown, kTaken, kRefused };
  std::atomic<OrderedOption> ordered_option{OrderedOption::kUnknown};

 private:
  // The last reading plus the monotonic time elapsed since. Never ahead of the server's
  // clock by more than its drift since the reading: the reading was taken before the reply
  // travelled back.
  Status EstimatedServerNow(DateTime* now);

  std::mutex reading_mu_;
  std::optional<std::pair<DateTime, std::chrono::steady_clock::time_point>> reading_;
  std::mutex mu_;
  mongo::PoolPtr pool_;  // guarded by mu_; once set, never reset before the store goes
};

namespace {

using mongo::CollectionPtr;
using mongo::PooledClient;
using mongo::Reply;

CollectionPtr GetCollection(const PooledClient& client, const Namespace& ns) {
  return CollectionPtr(
      mongoc_client_get_collection(client.get(), ns.database.c_str(), ns.collection.c_str()));
}

std::int64_t ReplyInt(bson_t* reply, const char* key) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, reply, key) && BSON_ITER_HOLDS_NUMBER(&it))
    return bson_iter_as_int64(&it);
  return 0;
}

// Owns everything a server-side cursor needs, destroyed cursor first, client last.
class MongoCursor final : public Cursor {
 public:
  MongoCursor(PooledClient client, CollectionPtr coll, mongo::CursorPtr cursor, std::string what)
      : client_(std::move(client)),
        coll_(std::move(coll)),
        cursor_(std::move(cursor)),
        what_(std::move(what)) {}
  ~MongoCursor() override {
    cursor_.reset();
    coll_.reset();
  }
  // Hands out `first` (a document already taken from the cursor) before the rest.
  void Peeked(Document first) { peeked_ = std::move(first); }
  // The cursor was found empty already (it must not be advanced again).
  void Exhausted() { exhausted_ = true; }
  Status Next(Document* doc, bool* has_doc) override {
    if (exhausted_) {
      *has_doc = false;
      return Status::Ok();
    }
    if (peeked_) {
      *doc = std::move(*peeked_);
      peeked_.reset();
      *has_doc = true;
      return Status::Ok();
    }
    const bson_t* b = nullptr;
    if (mongoc_cursor_next(cursor_.get(), &b)) {
      *doc = mongo::FromBson(b);
      *has_doc = true;
      return Status::Ok();
    }
    *has_doc = false;
    bson_error_t error;
    if (mongoc_cursor_error(cursor_.get(), &error)) return mongo::StatusFromBsonError(error, what_);
    return Status::Ok();
  }

 private:
  std::optional<Document> peeked_;
  bool exhausted_ = false;
  PooledClient client_;
  CollectionPtr coll_;
  mongo::CursorPtr cursor_;
  std::string what_;
};

}  // namespace

// ---- Command monitoring ------------------------------------------------------------------

namespace {

extern "C" void CommandStarted(const mongoc_apm_command_started_t* event) noexcept {
  auto* impl = static_cast<MongoStore::Impl*>(mongoc_apm_command_started_get_context(event));
  impl->round_trips.fetch_add(1, std::memory_order_relaxed);
}

std::int64_t ArrayLength(bson_iter_t* it) {
  bson_iter_t child;
  std::int64_t n = 0;
  if (BSON_ITER_HOLDS_ARRAY(it) && bson_iter_recurse(it, &child))
    while (bson_iter_next(&child)) ++n;
  return n;
}

// Documents in a reply: a cursor's batch (find, getMore, aggregate, listIndexes) or a
// findAndModify's value. Other replies (write results, isMaster) carry none.
extern "C" void CommandSucceeded(const mongoc_apm_command_succeeded_t* event) noexcept {
  auto* impl = static_cast<MongoStore::Impl*>(mongoc_apm_command_succeeded_get_context(event));
  const bson_t* reply = mongoc_apm_command_succeeded_get_reply(event);
  if (reply == nullptr) return;
  std::int64_t n = 0;
  bson_iter_t it, batch;
  for (const char* path : {"cursor.firstBatch", "cursor.nextBatch"})
    if (bson_iter_init(&it, reply) && bson_iter_find_descendant(&it, path, &batch))
      n += ArrayLength(&batch);
  if (bson_iter_init_find(&it, reply, "value") && BSON_ITER_HOLDS_DOCUMENT(&it)) n += 1;
  if (n > 0) impl->documents_returned.fetch_add(n, std::memory_order_relaxed);
}

struct ApmCallbacksDeleter {
  void operator()(mongoc_apm_callbacks_t* p) const noexcept { mongoc_apm_callbacks_destroy(p); }
};

}  // namespace

namespace {

// The write and read concerns of `options`, set on `uri` (every client of the pool, and
// every collection it opens, inherits them). Refuses a URI that asks for others.
Status SetConcerns(const MongoOptions& options, mongoc_uri_t* uri) {
  mongo::WriteConcernPtr wc(mongoc_write_concern_new());
  std::int32_t w = MONGOC_WRITE_CONCERN_W_MAJORITY;
  if (options.write_concern != "majority") {
    char* end = nullptr;
    const long n = std::strtol(options.write_concern.c_str(), &end, 10);
    if (options.write_concern.empty() || *end != '\0' || n < 1 || n > 50)
      return Status::InvalidArgument("write concern '" + options.write_concern +
                                     "' is neither \"majority\" nor a number of members (1-50)");
    w = static_cast<std::int32_t>(n);
  }
  const std::int32_t uri_w = mongoc_write_concern_get_w(mongoc_uri_get_write_concern(uri));
  if (uri_w != MONGOC_WRITE_CONCERN_W_DEFAULT && uri_w != w)
    return Status::InvalidArgument("the URI sets w=" +
                                   (uri_w == MONGOC_WRITE_CONCERN_W_MAJORITY
                                        ? std::string("majority")
                                        : std::to_string(uri_w)) +
                                   " but the write concern is " + options.write_concern +
                                   " (mongodb.write_concern): set one, not two that disagree");
  if (w == MONGOC_WRITE_CONCERN_W_MAJORITY) {
    mongoc_write_concern_set_wmajority(
        wc.get(), static_cast<std::int32_t>(options.write_concern_timeout.count()));
  } else {
    mongoc_write_concern_set_w(wc.get(), w);
    mongoc_write_concern_set_wtimeout_int64(wc.get(), options.write_concern_timeout.count());
  }
  mongoc_uri_set_write_concern(uri, wc.get());

  if (options.read_concern != "majority" && options.read_concern != "local")
    return Status::InvalidArgument("read concern '" + options.read_concern +
                                   "' is neither \"majority\" nor \"local\"");
  const char* uri_level = mongoc_read_concern_get_level(mongoc_uri_get_read_concern(uri));
  if (uri_level != nullptr && options.read_concern != uri_level)
    return Status::InvalidArgument("the URI sets readConcernLevel=" + std::string(uri_level) +
                                   " but the read concern is " + options.read_concern +
                                   " (mongodb.read_concern): set one, not two that disagree");
  mongo::ReadConcernPtr rc(mongoc_read_concern_new());
  mongoc_read_concern_set_level(rc.get(), options.read_concern.c_str());
  mongoc_uri_set_read_concern(uri, rc.get());
  return Status::Ok();
}

}  // namespace

MongoStore::MongoStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MongoStore::~MongoStore() = default;

Status MongoStore::Impl::CreatePool() {
  mongo::PoolPtr pool(mongoc_client_pool_new(uri.get()));
  if (!pool) {
    const std::string shown = RedactUri(mongoc_uri_get_string(uri.get()));
    if (mongoc_uri_get_srv_hostname(uri.get()) != nullptr)
      return Status::Unavailable("cannot look up the SRV records of " + shown +
                                 " (DNS): the database counts as unreachable until they resolve");
    return Status::InvalidArgument("cannot create a client pool for " + shown);
  }
  mongoc_client_pool_set_error_api(pool.get(), MONGOC_ERROR_API_VERSION_2);
  // The pool copies the callbacks; they must be set before the first client is popped.
  std::unique_ptr<mongoc_apm_callbacks_t, ApmCallbacksDeleter> callbacks(
      mongoc_apm_callbacks_new());
  mongoc_apm_set_command_started_cb(callbacks.get(), &CommandStarted);
  mongoc_apm_set_command_succeeded_cb(callbacks.get(), &CommandSucceeded);
  if (!mongoc_client_pool_set_apm_callbacks(pool.get(), callbacks.get(), this))
    return Status::InvalidArgument("cannot install command monitoring on the client pool");
  mongoc_client_pool_max_size(pool.get(), max_pool_size);
  pool_ = std::move(pool);
  return Status::Ok();
}

Status MongoStore::Open(const MongoOptions& options, std::unique_ptr<MongoStore>* store) {
  if (Status s = ValidateMongoUri(options.uri); !s.ok()) return s;
  bson_error_t error;
  mongo::UriPtr uri;
  {
    // Validated above; the driver's warnings about it were logged (masked) there.
    mongo::QuietDriverLog quiet;
    uri.reset(mongoc_uri_new_with_error(options.uri.c_str(), &error));
  }
  if (!uri) return Status::InvalidArgument("not a usable MongoDB URI (not shown)");
  // A timeout written in the URI wins over the options' (the configuration's defaults): the
  // URI is where drivers, and operators, expect to set it, and it names one deployment.
  // connectTimeoutMS has no option here: the URI's, else the driver's 10 s.
  if (!mongoc_uri_has_option(uri.get(), MONGOC_URI_SERVERSELECTIONTIMEOUTMS))
    mongoc_uri_set_option_as_int32(
        uri.get(), MONGOC_URI_SERVERSELECTIONTIMEOUTMS,
        static_cast<std::int32_t>(options.server_selection_timeout.count()));
  // Without a socket timeout a connection to a server that stopped answering (a network
  // partition without a reset) blocks its call for libmongoc's default of five minutes,
  // long past the watchdog.
  if (!mongoc_uri_has_option(uri.get(), MONGOC_URI_SOCKETTIMEOUTMS) &&
      options.socket_timeout.count() > 0)
    mongoc_uri_set_option_as_int32(uri.get(), MONGOC_URI_SOCKETTIMEOUTMS,
                                   static_cast<std::int32_t>(options.socket_timeout.count()));
  if (!options.app_name.empty()) mongoc_uri_set_appname(uri.get(), options.app_name.c_str());
  if (Status s = SetConcerns(options, uri.get()); !s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  impl->uri = std::move(uri);
  impl->max_pool_size = static_cast<std::uint32_t>(std::max(1, options.max_pool_size));
  impl->server_clock = options.server_clock;
  // Created now when it can be: a refusal that is not an SRV lookup is the configuration's.
  if (Status s = impl->CreatePool(); !s.ok() && !s.IsUnavailable()) return s;
  store->reset(new MongoStore(std::move(impl)));
  return Status::Ok();
}

Status MongoStore::Ping() {
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  auto cmd = mongo::NewBson();
  bson_append_int32(cmd.get(), "ping", -1, 1);
  Reply reply;
  bson_error_t error;
  if (!mongoc_client_command_simple(client.get(), "admin", cmd.get(), nullptr, reply.get(), &error))
    return mongo::StatusFromBsonError(error, "ping");
  return Status::Ok();
}

Status MongoStore::Impl::ReadServerTime(DateTime* now) {
  PooledClient client;
  if (Status s = Client(&client); !s.ok()) return s;
  // isMaster rather than hello: mongod still answers it, and so does mongo-java-server,
  // which does not implement hello. serverStatus is the fallback.
  for (const char* command : {"isMaster", "serverStatus"}) {
    auto cmd = mongo::NewBson();
    bson_append_int32(cmd.get(), command, -1, 1);
    Reply reply;
    bson_error_t error;
    if (!mongoc_client_command_simple(client.get(), "admin", cmd.get(), nullptr, reply.get(),
                                      &error)) {
      Status s = mongo::StatusFromBsonError(error, command);
      if (s.IsUnavailable()) return s;
      continue;
    }
    bson_iter_t it;
    if (!bson_iter_init_find(&it, reply.get(), "localTime")) continue;
    // A date as MongoDB sends it; DocumentDB's gateway sends milliseconds as an int64.
    if (BSON_ITER_HOLDS_DATE_TIME(&it)) {
      *now = DateTime{bson_iter_date_time(&it)};
    } else if (BSON_ITER_HOLDS_INT64(&it)) {
      *now = DateTime{bson_iter_int64(&it)};
    } else {
      continue;
    }
    std::lock_guard lock(reading_mu_);
    reading_ = std::make_pair(*now, std::chrono::steady_clock::now());
    return Status::Ok();
  }
  return Status::ServerError("the server reports no localTime in isMaster or serverStatus");
}

Status MongoStore::Impl::EstimatedServerNow(DateTime* now) {
  {
    std::lock_guard lock(reading_mu_);
    if (reading_) {
      const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - reading_->second);
      *now = DateTime{reading_->first.millis + elapsed.count()};
      return Status::Ok();
    }
  }
  return ReadServerTime(now);
}

bool MongoStore::Impl::SwitchToDaemonClock(const std::string& refusal) {
  // kDaemon too: other workers' requests built with $$NOW before the first refusal switched
  // the store come back refused after it, and are sent again like the first. (A request
  // built on the estimate holds no $$NOW to be refused for, so this cannot loop.)
  if (server_clock == MongoOptions::ServerClock::kServer) return false;
  if (refusal.find("$$NOW") == std::string::npos) return false;
  server_clock = MongoOptions::ServerClock::kDaemon;
  return true;
}

Status MongoStore::Impl::Query(const Filter& filter, bson_t* out) {
  if (!filter.UsesServerClock() || server_clock != MongoOptions::ServerClock::kDaemon)
    return mongo::FilterToBson(filter, out);
  DateTime now;
  if (Status s = EstimatedServerNow(&now); !s.ok()) return s;
  return mongo::FilterToBson(filter, out, &now);
}

Status MongoStore::ServerTime(DateTime* now) {
  return impl_->ReadServerTime(now);
}

MongoOptions::ServerClock MongoStore::server_clock() const {
  return impl_->server_clock;
}

namespace {

// A server that has no index for a read's hint: mongod's BadValue "hint provided does not
// correspond to an existing index" (DocumentDB's words too).
bool RefusesHint(const bson_error_t& error) {
  const std::string_view message(error.message);
  return message.find("hint") != std::string_view::npos &&
         message.find("index") != std::string_view::npos;
}

}  // namespace

Status MongoStore::Find(const Namespace& ns, const Filter& filter, const FindOptions& options,
                        std::unique_ptr<Cursor>* cursor) {
  auto query = mongo::NewBson();
  if (Status s = impl_->Query(filter, query.get()); !s.ok()) return s;
  auto opts = mongo::NewBson();
  mongo::AppendFindOptions(options, opts.get());
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  mongo::CursorPtr c(
      mongoc_collection_find_with_opts(coll.get(), query.get(), opts.get(), nullptr));
  // A server that may refuse $$NOW answers the first batch before anything is handed out:
  // a refusal then switches to the estimate and the find is sent again.
  std::optional<Document> first;
  bool empty = false;
  // So does a read that names an index: one that does not exist (created by hand without
  // it, sweep.manage_indexes off) is read without the hint, as the planner chooses, rather
  // than failing every sweep; the missing index is warned about at start and by inspect.
  if ((filter.UsesServerClock() && impl_->server_clock == MongoOptions::ServerClock::kAuto) ||
      !options.hint.empty()) {
    const bson_t* b = nullptr;
    bson_error_t error;
    if (mongoc_cursor_next(c.get(), &b)) {
      first = mongo::FromBson(b);
    } else if (!mongoc_cursor_error(c.get(), &error)) {
      empty = true;
    } else if (filter.UsesServerClock() && impl_->SwitchToDaemonClock(error.message)) {
      c.reset();
      coll.reset();
      client = PooledClient();  // back to the pool before the retry takes one
      return Find(ns, filter, options, cursor);
    } else if (!options.hint.empty() && RefusesHint(error)) {
      c.reset();
      coll.reset();
      client = PooledClient();
      FindOptions unhinted = options;
      unhinted.hint.clear();
      return Find(ns, filter, unhinted, cursor);
    }
  }
  auto mc = std::make_unique<MongoCursor>(std::move(client), std::move(coll), std::move(c),
                                          "find on " + ns.ToString());
  if (first) mc->Peeked(std::move(*first));
  if (empty) mc->Exhausted();
  *cursor = std::move(mc);
  return Status::Ok();
}

Status MongoStore::Count(const Namespace& ns, const Filter& filter, std::int64_t* count) {
  auto query = mongo::NewBson();
  if (Status s = impl_->Query(filter, query.get()); !s.ok()) return s;
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  std::int64_t n = mongoc_collection_count_documents(coll.get(), query.get(), nullptr, nullptr,
                                                     reply.get(), &error);
  if (n < 0 && impl_->SwitchToDaemonClock(error.message)) {
    coll.reset();
    client = PooledClient();  // back to the pool before the retry takes one
    return Count(ns, filter, count);
  }
  if (n < 0) return mongo::StatusFromBsonError(error, "count on " + ns.ToString());
  *count = n;
  return Status::Ok();
}

namespace {

using UpdateFn = bool (*)(mongoc_collection_t*, const bson_t*, const bson_t*, const bson_t*,
                          bson_t*, bson_error_t*);

// A write the server gave up as the loser of a lock conflict (WriteConflict, 112: DocumentDB
// answers so when PostgreSQL picks the command as a deadlock victim, possibly with part of
// it applied; docs/compatibility.md): every write of the engine is harmless to repeat, so
// it is sent again, up to three times, after a short random pause that lets the winner
// finish. A deadlock is the server's to break, not a failure of a transaction; a count
// that then says less than was changed makes the engine read back, as for any bulk.
bool WriteConflictToRetry(const bson_error_t& error, int attempt) {
  constexpr int kRetries = 3;
  if (attempt >= kRetries || error.code != 112 ||
      (error.domain != MONGOC_ERROR_SERVER && error.domain != MONGOC_ERROR_QUERY))
    return false;
  thread_local std::minstd_rand jitter(std::random_device{}());
  std::this_thread::sleep_for(std::chrono::milliseconds(1 + jitter() % (10U << attempt)));
  return true;
}

Status RunUpdate(MongoStore::Impl* impl, UpdateFn fn, const char* what, const Namespace& ns,
                 const Filter& filter, const Update& update, WriteResult* result) {
  auto query = mongo::NewBson();
  auto doc = mongo::NewBson();
  if (Status s = impl->Query(filter, query.get()); !s.ok()) return s;
  if (Status s = mongo::UpdateToBson(update, doc.get()); !s.ok()) return s;
  PooledClient client;
  if (Status s = impl->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  bool failed = false;
  for (int attempt = 0;; ++attempt) {
    bson_reinit(reply.get());
    failed = !fn(coll.get(), query.get(), doc.get(), nullptr, reply.get(), &error);
    if (!failed || !WriteConflictToRetry(error, attempt)) break;
  }
  if (failed) {
    if (impl->SwitchToDaemonClock(error.message)) {
      coll.reset();
      client = PooledClient();  // back to the pool before the retry takes one
      return RunUpdate(impl, fn, what, ns, filter, update, result);
    }
    return mongo::StatusFromBsonError(error, std::string(what) + " on " + ns.ToString());
  }
  result->matched = ReplyInt(reply.get(), "matchedCount");
  result->modified = ReplyInt(reply.get(), "modifiedCount");
  return Status::Ok();
}

}  // namespace

Status MongoStore::UpdateOne(const Namespace& ns, const Filter& filter, const Update& update,
                             WriteResult* result) {
  return RunUpdate(impl_.get(), &mongoc_collection_update_one, "updateOne", ns, filter, update,
                   result);
}

Status MongoStore::UpdateMany(const Namespace& ns, const Filter& filter, const Update& update,
                              WriteResult* result) {
  return RunUpdate(impl_.get(), &mongoc_collection_update_many, "updateMany", ns, filter, update,
                   result);
}

Status MongoStore::FindOneAndUpdate(const Namespace& ns, const Filter& filter, const Update& update,
                                    std::optional<Document>* after) {
  auto query = mongo::NewBson();
  auto doc = mongo::NewBson();
  if (Status s = impl_->Query(filter, query.get()); !s.ok()) return s;
  if (Status s = mongo::UpdateToBson(update, doc.get()); !s.ok()) return s;
  mongo::FindAndModifyOptsPtr opts(mongoc_find_and_modify_opts_new());
  mongoc_find_and_modify_opts_set_update(opts.get(), doc.get());
  mongoc_find_and_modify_opts_set_flags(opts.get(), MONGOC_FIND_AND_MODIFY_RETURN_NEW);
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  if (!mongoc_collection_find_and_modify_with_opts(coll.get(), query.get(), opts.get(), reply.get(),
                                                   &error)) {
    if (impl_->SwitchToDaemonClock(error.message)) {
      coll.reset();
      client = PooledClient();  // back to the pool before the retry takes one
      return FindOneAndUpdate(ns, filter, update, after);
    }
    return mongo::StatusFromBsonError(error, "findAndModify on " + ns.ToString());
  }
  after->reset();
  bson_iter_t it;
  if (bson_iter_init_find(&it, reply.get(), "value") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    Value v = mongo::ValueFromIter(&it);
    *after = std::move(*v.as_document());
  }
  return Status::Ok();
}

Status MongoStore::DeleteMany(const Namespace& ns, const Filter& filter, WriteResult* result) {
  auto query = mongo::NewBson();
  if (Status s = impl_->Query(filter, query.get()); !s.ok()) return s;
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  if (!mongoc_collection_delete_many(coll.get(), query.get(), nullptr, reply.get(), &error))
    return mongo::StatusFromBsonError(error, "deleteMany on " + ns.ToString());
  result->matched = result->modified = ReplyInt(reply.get(), "deletedCount");
  return Status::Ok();
}

Status MongoStore::InsertMany(const Namespace& ns, const std::vector<Document>& docs) {
  if (docs.empty()) return Status::Ok();
  std::vector<mongo::BsonPtr> owned;
  // A plain array: a vector<const bson_t*> would drop bson_t's alignment attribute.
  auto ptrs = std::make_unique<const bson_t*[]>(docs.size());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    owned.push_back(mongo::NewBson());
    if (Status s = mongo::ToBson(docs[i], owned.back().get()); !s.ok()) return s;
    ptrs[i] = owned.back().get();
  }
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  Reply reply;
  bson_error_t error;
  if (!mongoc_collection_insert_many(coll.get(), ptrs.get(), docs.size(), nullptr, reply.get(),
                                     &error))
    return mongo::StatusFromBsonError(error, "insertMany on " + ns.ToString());
  return Status::Ok();
}

namespace {

// The requests an unordered bulk write's reply says the server refused (writeErrors), each
// with its index and message. False when the reply carries none.
bool RefusedRequests(const bson_t* reply, const Namespace& ns,
                     std::vector<std::pair<std::size_t, Status>>* refused) {
  bson_iter_t it, errors;
  if (!bson_iter_init_find(&it, reply, "writeErrors") || !BSON_ITER_HOLDS_ARRAY(&it) ||
      !bson_iter_recurse(&it, &errors))
    return false;
  while (bson_iter_next(&errors)) {
    bson_iter_t e;
    if (!BSON_ITER_HOLDS_DOCUMENT(&errors) || !bson_iter_recurse(&errors, &e)) continue;
    std::int64_t index = -1, code = 0;
    std::string message = "refused";
    while (bson_iter_next(&e)) {
      const char* key = bson_iter_key(&e);
      if (std::strcmp(key, "index") == 0 && BSON_ITER_HOLDS_NUMBER(&e)) {
        index = bson_iter_as_int64(&e);
      } else if (std::strcmp(key, "code") == 0 && BSON_ITER_HOLDS_NUMBER(&e)) {
        code = bson_iter_as_int64(&e);
      } else if (std::strcmp(key, "errmsg") == 0 && BSON_ITER_HOLDS_UTF8(&e)) {
        message = bson_iter_utf8(&e, nullptr);
      }
    }
    if (index < 0) continue;
    refused->emplace_back(
        static_cast<std::size_t>(index),
        Status::ServerError("update on " + ns.ToString() + " refused: " + RedactSecrets(message) +
                            " (code " + std::to_string(code) + ")"));
  }
  return !refused->empty();
}

// The indexes of `requests` in the order of the documents they name (their first equality,
// _id above all): two daemons' bulks over the same documents then take the server's row
// locks in one order, and a server that locks per document (DocumentDB on PostgreSQL)
// cannot deadlock them against each other (it did: code 112 after 15-25 s).
std::vector<std::size_t> LockOrder(const std::vector<UpdateRequest>& requests) {
  std::vector<std::size_t> order(requests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](std::size_t i) -> const Predicate* {
    const Predicate* first = nullptr;
    for (const Predicate& p : requests[i].filter.all()) {
      if (p.op != Predicate::Op::kEq) continue;
      if (p.path == "_id") return &p;
      if (first == nullptr) first = &p;
    }
    return first;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Predicate* ka = key(a);
    const Predicate* kb = key(b);
    if (ka == nullptr || kb == nullptr) return ka != nullptr && kb == nullptr;
    if (ka->path != kb->path) return ka->path < kb->path;
    return ka->value.ToString() < kb->value.ToString();
  });
  return order;
}

}  // namespace

Status MongoStore::UpdateEach(const Namespace& ns, const std::vector<UpdateRequest>& requests,
                              BulkResult* result) {
  *result = BulkResult{};
  if (requests.empty()) return Status::Ok();
  // Sent in lock order, not the caller's: the contract lets a bulk apply its requests in
  // any order; refusals are mapped back.
  const std::vector<std::size_t> order = LockOrder(requests);
  // Taken before the filters are built, which then compare on the estimate where a bulk
  // before this one was refused.
  std::unique_lock<std::mutex> asking = impl_->AskWhetherNowIsTaken(requests);
  std::vector<std::pair<mongo::BsonPtr, mongo::BsonPtr>> owned;
  owned.reserve(requests.size());
  for (std::size_t i : order) {
    const UpdateRequest& r = requests[i];
    owned.emplace_back(mongo::NewBson(), mongo::NewBson());
    if (Status s = impl_->Query(r.filter, owned.back().first.get()); !s.ok()) return s;
    if (Status s = mongo::UpdateToBson(r.update, owned.back().second.get()); !s.ok()) return s;
  }
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  auto opts = mongo::NewBson();
  bson_append_bool(opts.get(), "ordered", -1, false);
  mongo::BulkPtr bulk;
  bson_error_t error;
  Reply reply;
  bool failed = false;
  for (int attempt = 0;; ++attempt) {
    bulk.reset(mongoc_collection_create_bulk_operation_with_opts(coll.get(), opts.get()));
    for (const auto& [query, update] : owned)
      if (!mongoc_bulk_operation_update_one_with_opts(bulk.get(), query.get(), update.get(),
                                                      nullptr, &error))
        return mongo::StatusFromBsonError(error, "bulk update on " + ns.ToString());
    bson_reinit(reply.get());
    failed = mongoc_bulk_operation_execute(bulk.get(), reply.get(), &error) == 0;
    if (!failed || !WriteConflictToRetry(error, attempt)) break;
  }
  if (failed) {
    Status s = mongo::StatusFromBsonError(error, "bulk update on " + ns.ToString());
    // Unordered: the server went on past a request it refused. Those are the caller's to
    // charge one by one; a failure of the bulk itself (the network, a write concern that
    // was not satisfied) is everybody's.
    bson_iter_t it;
    const bool wc_error = bson_iter_init_find(&it, reply.get(), "writeConcernErrors") &&
                          BSON_ITER_HOLDS_ARRAY(&it) && ArrayLength(&it) > 0;
    if (s.IsUnavailable() || wc_error || !RefusedRequests(reply.get(), ns, &result->refused)) {
      result->refused.clear();
      return s;
    }
    for (auto& [i, why] : result->refused) i = i < order.size() ? order[i] : i;
  }
  result->matched = ReplyInt(reply.get(), "nMatched");
  result->modified = ReplyInt(reply.get(), "nModified");
  // Requests refused only for comparing with $$NOW: sent again, once, on the estimate.
  std::vector<UpdateRequest> again;
  std::vector<std::size_t> index;
  for (const auto& [i, why] : result->refused)
    if (why.message().find("$$NOW") != std::string::npos) {
      again.push_back(requests[i]);
      index.push_back(i);
    }
  const bool switched = !again.empty() && impl_->SwitchToDaemonClock("$$NOW");
  impl_->Answered(&asking, switched || result->matched > 0);
  if (!switched) return Status::Ok();
  std::erase_if(result->refused, [](const auto& r) {
    return r.second.message().find("$$NOW") != std::string::npos;
  });
  bulk.reset();
  coll.reset();
  client = PooledClient();  // back to the pool before the retry takes one
  BulkResult retried;
  if (Status s = UpdateEach(ns, again, &retried); !s.ok()) return s;
  result->matched += retried.matched;
  result->modified += retried.modified;
  for (auto& [i, why] : retried.refused) result->refused.emplace_back(index[i], std::move(why));
  return Status::Ok();
}

Status MongoStore::ListIndexes(const Namespace& ns, std::vector<IndexSpec>* indexes) {
  indexes->clear();
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  mongo::CursorPtr cursor(mongoc_collection_find_indexes_with_opts(coll.get(), nullptr));
  const bson_t* b = nullptr;
  while (mongoc_cursor_next(cursor.get(), &b)) {
    IndexSpec spec;
    bson_iter_t it, key;
    if (bson_iter_init_find(&it, b, "name") && BSON_ITER_HOLDS_UTF8(&it))
      spec.name = bson_iter_utf8(&it, nullptr);
    if (bson_iter_init_find(&it, b, "key") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
        bson_iter_recurse(&it, &key)) {
      while (bson_iter_next(&key)) {
        // Text, hashed and other special indexes have a string here; they serve none of
        // the engine's queries, and 0 never matches a wanted direction.
        int dir = BSON_ITER_HOLDS_NUMBER(&key) ? (bson_iter_as_int64(&key) < 0 ? -1 : 1) : 0;
        spec.keys.emplace_back(bson_iter_key(&key), dir);
      }
    }
    // Created by CreateIndexes with only_where_present: {<first key>: {$exists: true}}.
    bson_iter_t partial, cond;
    if (bson_iter_init_find(&it, b, "partialFilterExpression") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
        bson_iter_recurse(&it, &partial) && !spec.keys.empty() &&
        bson_iter_find(&partial, spec.keys.front().first.c_str()) &&
        BSON_ITER_HOLDS_DOCUMENT(&partial) && bson_iter_recurse(&partial, &cond) &&
        bson_iter_find(&cond, "$exists"))
      spec.only_where_present = bson_iter_as_bool(&cond);
    // Listed by a server that orders compound keys only on request (DocumentDB); any other
    // compound index is ordered, unless this server is known to take the option.
    spec.ordered = impl_->ordered_option.load() != Impl::OrderedOption::kTaken;
    if (bson_iter_init_find(&it, b, "enableOrderedIndex")) spec.ordered = bson_iter_as_bool(&it);
    indexes->push_back(std::move(spec));
  }
  bson_error_t error;
  if (mongoc_cursor_error(cursor.get(), &error)) {
    // NamespaceNotFound: no collection, hence no index (mongod 3.0+; the driver hides it on
    // some versions).
    if (error.code == 26) {
      indexes->clear();
      return Status::Ok();
    }
    return mongo::StatusFromBsonError(error, "listIndexes on " + ns.ToString());
  }
  return Status::Ok();
}

namespace {

// The createIndexes command for `indexes`; `ordered_option`: ask for the ordered compound key
// where a spec needs it.
Status CreateIndexesCommand(const Namespace& ns, const std::vector<IndexSpec>& indexes,
                            bool ordered_option, bool* asked, bson_t* cmd) {
  *asked = false;
  bson_append_utf8(cmd, "createIndexes", -1, ns.collection.c_str(), -1);
  bson_t list;
  bson_append_array_begin(cmd, "indexes", -1, &list);
  for (std::size_t i = 0; i < indexes.size(); ++i) {
    const IndexSpec& spec = indexes[i];
    if (spec.keys.empty()) return Status::InvalidArgument("an index needs at least one key");
    std::string name = spec.name;
    bson_t index, key;
    const std::string pos = std::to_string(i);
    bson_append_document_begin(&list, pos.c_str(), -1, &index);
    bson_append_document_begin(&index, "key", -1, &key);
    for (const auto& [path, dir] : spec.keys) {
      if (dir != 1 && dir != -1) return Status::InvalidArgument("bad index key " + spec.ToString());
      bson_append_int32(&key, path.c_str(), -1, dir);
      if (spec.name.empty()) name += (name.empty() ? "" : "_") + path + "_" + std::to_string(dir);
    }
    bson_append_document_end(&index, &key);
    bson_append_utf8(&index, "name", -1, name.c_str(), -1);
    if (spec.only_where_present) {
      bson_t partial, cond;
      bson_append_document_begin(&index, "partialFilterExpression", -1, &partial);
      bson_append_document_begin(&partial, spec.keys.front().first.c_str(), -1, &cond);
      bson_append_bool(&cond, "$exists", -1, true);
      bson_append_document_end(&partial, &cond);
      bson_append_document_end(&index, &partial);
    }
    if (ordered_option && spec.ordered && spec.keys.size() > 1) {
      bson_append_bool(&index, "enableOrderedIndex", -1, true);
      *asked = true;
    }
    bson_append_document_end(&list, &index);
  }
  bson_append_array_end(cmd, &list);
  return Status::Ok();
}

// A server that does not know an index option: mongod's InvalidIndexSpecificationOption, or
// an error that names it.
bool RefusesOrderedOption(const bson_error_t& error) {
  return error.code == 197 ||
         std::string_view(error.message).find("enableOrderedIndex") != std::string_view::npos;
}

}  // namespace

Status MongoStore::CreateIndexes(const Namespace& ns, const std::vector<IndexSpec>& indexes) {
  if (indexes.empty()) return Status::Ok();
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  mongo::DatabasePtr db(mongoc_client_get_database(client.get(), ns.database.c_str()));
  for (;;) {
    const bool offer = impl_->ordered_option.load() != Impl::OrderedOption::kRefused;
    auto cmd = mongo::NewBson();
    bool asked = false;
    if (Status s = CreateIndexesCommand(ns, indexes, offer, &asked, cmd.get()); !s.ok()) return s;
    Reply reply;
    bson_error_t error;
    if (mongoc_database_write_command_with_opts(db.get(), cmd.get(), nullptr, reply.get(),
                                                &error)) {
      if (asked) impl_->ordered_option = Impl::OrderedOption::kTaken;
      return Status::Ok();
    }
    if (!asked || !RefusesOrderedOption(error))
      return mongo::StatusFromBsonError(error, "createIndexes on " + ns.ToString());
    impl_->ordered_option = Impl::OrderedOption::kRefused;  // then without it, once
  }
}

bool MongoStore::GetWireStats(WireStats* stats) const {
  stats->round_trips = impl_->round_trips.load(std::memory_order_relaxed);
  stats->documents_returned = impl_->documents_returned.load(std::memory_order_relaxed);
  return true;
}

Status MongoStore::ListCollections(const std::string& database, std::vector<std::string>* names) {
  names->clear();
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  mongo::DatabasePtr db(mongoc_client_get_database(client.get(), database.c_str()));
  mongo::CursorPtr cursor(mongoc_database_find_collections_with_opts(db.get(), nullptr));
  const bson_t* b = nullptr;
  while (mongoc_cursor_next(cursor.get(), &b)) {
    bson_iter_t it;
    // A view holds no documents of its own: nothing an application writes a transaction to.
    if (bson_iter_init_find(&it, b, "type") && BSON_ITER_HOLDS_UTF8(&it) &&
        std::string_view(bson_iter_utf8(&it, nullptr)) != "collection")
      continue;
    if (!bson_iter_init_find(&it, b, "name") || !BSON_ITER_HOLDS_UTF8(&it)) continue;
    std::string name = bson_iter_utf8(&it, nullptr);
    if (name.rfind("system.", 0) != 0) names->push_back(std::move(name));
  }
  bson_error_t error;
  if (mongoc_cursor_error(cursor.get(), &error))
    return mongo::StatusFromBsonError(error, "listCollections on " + database);
  std::sort(names->begin(), names->end());
  return Status::Ok();
}

Status MongoStore::Sample(const Namespace& ns, std::int64_t size, std::vector<Document>* docs) {
  // The embedded test server (mongo-java-server) picks its sample with a random comparator,
  // which Java's sort refuses now and then ("Comparison method violates its general
  // contract!"): a refusal of the server's own is asked again, twice at most.
  Status s = SampleOnce(ns, size, docs);
  for (int attempt = 1; attempt < 3 && s.IsServerError(); ++attempt) s = SampleOnce(ns, size, docs);
  return s;
}

Status MongoStore::SampleOnce(const Namespace& ns, std::int64_t size, std::vector<Document>* docs) {
  docs->clear();
  auto pipeline = mongo::NewBson();
  bson_t stages, stage, sample;
  bson_append_array_begin(pipeline.get(), "pipeline", -1, &stages);
  bson_append_document_begin(&stages, "0", -1, &stage);
  bson_append_document_begin(&stage, "$sample", -1, &sample);
  bson_append_int64(&sample, "size", -1, size);
  bson_append_document_end(&stage, &sample);
  bson_append_document_end(&stages, &stage);
  bson_append_array_end(pipeline.get(), &stages);
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  mongo::CursorPtr cursor(
      mongoc_collection_aggregate(coll.get(), MONGOC_QUERY_NONE, pipeline.get(), nullptr, nullptr));
  const bson_t* b = nullptr;
  while (mongoc_cursor_next(cursor.get(), &b)) docs->push_back(mongo::FromBson(b));
  bson_error_t error;
  if (mongoc_cursor_error(cursor.get(), &error))
    return mongo::StatusFromBsonError(error, "$sample on " + ns.ToString());
  return Status::Ok();
}

Status MongoStore::DropCollection(const Namespace& ns) {
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  CollectionPtr coll = GetCollection(client, ns);
  bson_error_t error;
  // NamespaceNotFound (26): nothing to drop, as wanted.
  if (!mongoc_collection_drop_with_opts(coll.get(), nullptr, &error) && error.code != 26 &&
      std::string_view(error.message).find("ns not found") == std::string_view::npos)
    return mongo::StatusFromBsonError(error, "drop " + ns.ToString());
  return Status::Ok();
}

Status MongoStore::RunReadCommand(const std::string& database, const Document& command,
                                  Document* reply) {
  auto cmd = mongo::NewBson();
  if (Status s = mongo::ToBson(command, cmd.get()); !s.ok()) return s;
  PooledClient client;
  if (Status s = impl_->Client(&client); !s.ok()) return s;
  Reply out;
  bson_error_t error;
  const bool ok = mongoc_client_command_simple(client.get(), database.c_str(), cmd.get(), nullptr,
                                               out.get(), &error);
  if (!ok) return mongo::StatusFromBsonError(error, "command on " + database);
  *reply = mongo::FromBson(out.get());
  return Status::Ok();
}

}  // namespace txn_recovery
