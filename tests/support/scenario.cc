#include "scenario.h"

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>

#include "txn_recovery/engine/quarantine_records.h"
#include "txn_recovery/tools/retention.h"

namespace txn_recovery::testing {

void Must(const Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

std::optional<Document> FindById(Store* store, const Namespace& ns, const Value& id) {
  std::optional<Document> d;
  Must(store->FindOne(ns, Filter().Eq("_id", id), &d));
  return d;
}

std::string StateOf(const std::optional<Document>& txn, const std::string& state_field) {
  if (!txn) return "<missing>";
  const Value* s = txn->GetPath(state_field);
  return s && s->is_string() ? *s->as_string() : "<unreadable>";
}

std::vector<Document> AllDocs(Store* store, const Namespace& ns) {
  std::vector<Document> out;
  std::unique_ptr<Cursor> c;
  Must(store->Find(ns, Filter(), FindOptions{}, &c));
  if (!c) return out;
  // A scan may return a document twice when it is updated meanwhile (DocumentDB does so
  // readily): each _id once, as last read, or an invariant checker counts it twice.
  std::map<std::string, std::size_t> at;
  Document d;
  for (bool has = true;;) {
    Must(c->Next(&d, &has));
    if (!has) break;
    const Value* id = d.Get("_id");
    const std::string key = id ? id->ToString() : "";
    if (auto it = at.find(key); id && it != at.end()) {
      out[it->second] = d;
      continue;
    }
    if (id) at.emplace(key, out.size());
    out.push_back(d);
  }
  return out;
}

DateTime ServerNow(Store* store) {
  DateTime now;
  Must(store->ServerTime(&now));
  return now;
}

ObjectId NewObjectId(std::int64_t millis) {
  static std::atomic<std::uint32_t> counter{std::random_device{}()};
  static const std::uint64_t process_part = [] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) | rd();
  }();
  ObjectId oid = ObjectId::AtTime(millis);
  for (int i = 0; i < 5; ++i) oid.bytes[4 + i] = static_cast<std::uint8_t>(process_part >> (8 * i));
  std::uint32_t n = counter++;
  oid.bytes[9] = static_cast<std::uint8_t>(n >> 16);
  oid.bytes[10] = static_cast<std::uint8_t>(n >> 8);
  oid.bytes[11] = static_cast<std::uint8_t>(n);
  return oid;
}

ObjectId ObjectIdAged(Store* store, std::chrono::milliseconds age) {
  return NewObjectId(ServerNow(store).millis - age.count());
}

void AgeDocument(Store* store, const Namespace& ns, const Value& id, const std::string& field,
                 std::chrono::milliseconds age) {
  WriteResult r;
  Must(store->UpdateOne(ns, Filter().Eq("_id", id),
                        Update().Set(field, DateTime{ServerNow(store).millis - age.count()}), &r));
}

void ExpireLeases(Store* store, const Namespace& ns, const std::string& lease_field) {
  WriteResult r;
  Must(store->UpdateMany(ns, Filter().Exists(lease_field + ".lease"),
                         Update().Set(lease_field + ".lease.expires", DateTime{0}), &r));
}

void ExpireQuarantineRecords(Store* store, const Namespace& txn_ns) {
  WriteResult r;
  Must(store->UpdateMany(QuarantineRecordsOf(txn_ns), Filter().Exists("markBy"),
                         Update().Set("markBy", DateTime{0}), &r));
}

std::int64_t QuarantineRecords(Store* store, const WatchSpec& watch) {
  std::int64_t n = -1;
  Must(CountQuarantineRecords(store, watch, &n));
  return n;
}

bool HasQuarantineRecord(Store* store, const WatchSpec& watch, const Value& id) {
  return FindById(store, QuarantineRecordsOf(watch.ns), QuarantineRecordId(watch.ns, id))
      .has_value();
}

WatchSummary SweepOnce(Store* store, Clock* clock, const WatchSpec& watch, const std::string& owner,
                       std::vector<TxnReport>* reports, int workers, bool dry_run) {
  SweepOptions o;
  o.lease.owner = owner;
  o.workers = workers;
  o.dry_run = dry_run;
  o.batch_size = 64;
  Sweeper sweeper(store, clock, o);
  WatchSummary summary;
  std::mutex mu;
  // The status is in the summary too, where the scenarios look for it.
  (void)SweepAndRetain(
      &sweeper, watch,
      [&](const TxnReport& r) {
        std::lock_guard lock(mu);
        if (reports) reports->push_back(r);
      },
      &summary);
  return summary;
}

}  // namespace txn_recovery::testing
