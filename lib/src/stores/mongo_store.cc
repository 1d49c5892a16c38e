#include "txn_recovery/stores/mongo_store.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>

#include "stores/mongo_impl.h"

namespace txn_recovery {
namespace {

using mongo::PooledClient;
using mongo::Reply;

}  // namespace

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

// ---- Command monitoring ------------------------------------------------------------------

namespace {

extern "C" void CommandStarted(const mongoc_apm_command_started_t* event) noexcept {
  auto* impl = static_cast<MongoStore::Impl*>(mongoc_apm_command_started_get_context(event));
  impl->round_trips.fetch_add(1, std::memory_order_relaxed);
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
      n += mongo::ArrayLength(&batch);
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

namespace {

// The URI of `options` as the pool is built from it: its own timeouts and concerns, the
// options' where it sets none.
Status UriOf(const MongoOptions& options, mongo::UriPtr* out) {
  bson_error_t error;
  {
    // Validated by Open first; the driver's warnings about it were logged (masked) there.
    mongo::QuietDriverLog quiet;
    out->reset(mongoc_uri_new_with_error(options.uri.c_str(), &error));
  }
  if (!*out) return Status::InvalidArgument("not a usable MongoDB URI (not shown)");
  // A timeout written in the URI wins over the options' (the configuration's defaults): the
  // URI is where drivers, and operators, expect to set it, and it names one deployment.
  // connectTimeoutMS has no option here: the URI's, else the driver's 10 s.
  if (!mongoc_uri_has_option(out->get(), MONGOC_URI_SERVERSELECTIONTIMEOUTMS))
    mongoc_uri_set_option_as_int32(
        out->get(), MONGOC_URI_SERVERSELECTIONTIMEOUTMS,
        static_cast<std::int32_t>(options.server_selection_timeout.count()));
  // Without a socket timeout a connection to a server that stopped answering (a network
  // partition without a reset) blocks its call for libmongoc's default of five minutes,
  // long past the watchdog.
  if (!mongoc_uri_has_option(out->get(), MONGOC_URI_SOCKETTIMEOUTMS) &&
      options.socket_timeout.count() > 0)
    mongoc_uri_set_option_as_int32(out->get(), MONGOC_URI_SOCKETTIMEOUTMS,
                                   static_cast<std::int32_t>(options.socket_timeout.count()));
  if (!options.app_name.empty()) mongoc_uri_set_appname(out->get(), options.app_name.c_str());
  return SetConcerns(options, out->get());
}

}  // namespace

Status MongoStore::Open(const MongoOptions& options, std::unique_ptr<MongoStore>* store) {
  if (Status s = ValidateMongoUri(options.uri); !s.ok()) return s;
  mongo::UriPtr uri;
  if (Status s = UriOf(options, &uri); !s.ok()) return s;
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

bool MongoStore::GetWireStats(WireStats* stats) const {
  stats->round_trips = impl_->round_trips.load(std::memory_order_relaxed);
  stats->documents_returned = impl_->documents_returned.load(std::memory_order_relaxed);
  return true;
}

}  // namespace txn_recovery
