// MongoStore's insides, shared by the files that implement it, one job each:
// mongo_store.cc (the driver, the pool, the server's clock), mongo_reads.cc,
// mongo_writes.cc and mongo_collections.cc (collections and their indexes); the driver's
// errors become ours in mongo_errors.cc.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stores/mongo_handles.h"
#include "txn_recovery/stores/mongo_store.h"

namespace txn_recovery {

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

namespace mongo {

inline CollectionPtr GetCollection(const PooledClient& client, const Namespace& ns) {
  return CollectionPtr(
      mongoc_client_get_collection(client.get(), ns.database.c_str(), ns.collection.c_str()));
}

// The number `key` of a reply, 0 when it holds none.
inline std::int64_t ReplyInt(bson_t* reply, const char* key) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, reply, key) && BSON_ITER_HOLDS_NUMBER(&it))
    return bson_iter_as_int64(&it);
  return 0;
}

// The length of the array `it` is at; 0 if it is at no array.
inline std::int64_t ArrayLength(bson_iter_t* it) {
  bson_iter_t child;
  std::int64_t n = 0;
  if (BSON_ITER_HOLDS_ARRAY(it) && bson_iter_recurse(it, &child))
    while (bson_iter_next(&child)) ++n;
  return n;
}

}  // namespace mongo
}  // namespace txn_recovery
