#include "txn_recovery/engine/membership.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <variant>

#include "engine/lease.h"
#include "engine/requests.h"

namespace txn_recovery {
namespace {

// FNV-1a 64: tiny, stable across platforms and releases, good enough to spread _ids over
// 256 buckets. Its bytes are fed little-endian whatever the host.
class Fnv1a {
 public:
  void Byte(std::uint8_t b) {
    h_ ^= b;
    h_ *= 0x100000001b3ULL;
  }
  void U64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void Bytes(std::string_view s) {
    U64(s.size());  // length first: "ab","c" and "a","bc" differ
    for (char c : s) Byte(static_cast<std::uint8_t>(c));
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

// Type tags are BSON's, so that the encoding reads like the value's BSON; every number
// that MongoDB would compare equal to an int64 is tagged and encoded as that int64.
constexpr std::uint8_t kTagDouble = 0x01, kTagString = 0x02, kTagDocument = 0x03, kTagArray = 0x04,
                       kTagObjectId = 0x07, kTagBool = 0x08, kTagDateTime = 0x09, kTagNull = 0x0A,
                       kTagInt64 = 0x12, kTagOther = 0x7F;

void HashDouble(double d, Fnv1a* h) {
  // [-2^63, 2^63): every integral double here converts to int64 exactly.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (std::isfinite(d) && d == std::trunc(d) && d >= -kTwo63 && d < kTwo63) {
    h->Byte(kTagInt64);
    h->U64(static_cast<std::uint64_t>(static_cast<std::int64_t>(d)));  // -0.0 is 0
    return;
  }
  if (std::isnan(d)) d = std::numeric_limits<double>::quiet_NaN();
  h->Byte(kTagDouble);
  h->U64(std::bit_cast<std::uint64_t>(d));
}

void HashValue(const Value& v, Fnv1a* h);

void HashDocument(const Document& d, Fnv1a* h) {
  h->Byte(kTagDocument);
  h->U64(d.size());
  for (const auto& [key, value] : d) {  // in order: {a,b} and {b,a} are two _ids
    h->Bytes(key);
    HashValue(value, h);
  }
}

void HashValue(const Value& v, Fnv1a* h) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Null>) {
          h->Byte(kTagNull);
        } else if constexpr (std::is_same_v<T, bool>) {
          h->Byte(kTagBool);
          h->Byte(x ? 1 : 0);
        } else if constexpr (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
          h->Byte(kTagInt64);
          h->U64(static_cast<std::uint64_t>(static_cast<std::int64_t>(x)));
        } else if constexpr (std::is_same_v<T, double>) {
          HashDouble(x, h);
        } else if constexpr (std::is_same_v<T, std::string>) {
          h->Byte(kTagString);
          h->Bytes(x);
        } else if constexpr (std::is_same_v<T, ObjectId>) {
          h->Byte(kTagObjectId);
          for (std::uint8_t b : x.bytes) h->Byte(b);
        } else if constexpr (std::is_same_v<T, DateTime>) {
          h->Byte(kTagDateTime);
          h->U64(static_cast<std::uint64_t>(x.millis));
        } else if constexpr (std::is_same_v<T, Array>) {
          h->Byte(kTagArray);
          h->U64(x.size());
          for (const Value& e : x) HashValue(e, h);
        } else if constexpr (std::is_same_v<T, Document>) {
          HashDocument(x, h);
        } else {
          static_assert(std::is_same_v<T, OtherValue>);
          // Decimal128, binary, regex...: by their exact encoding, as the server keeps them.
          h->Byte(kTagOther);
          h->Bytes(x.type_name);
          h->Bytes(x.raw);
        }
      },
      v.storage());
}

bool ParseMember(const Document& doc, MemberRecord* out) {
  const Value* id = doc.Get(requests::member_record::kId);
  const Value* heartbeat = doc.Get(requests::member_record::kHeartbeat);
  if (id == nullptr || !id->is_string() || heartbeat == nullptr || !heartbeat->is_datetime())
    return false;
  out->id = *id->as_string();
  out->heartbeat = *heartbeat->as_datetime();
  if (const Value* v = doc.Get(requests::member_record::kHost); v && v->is_string())
    out->host = *v->as_string();
  if (const Value* v = doc.Get(requests::member_record::kVersion); v && v->is_string())
    out->version = *v->as_string();
  if (const Value* v = doc.Get(requests::member_record::kFormat);
      v && v->is_number() && *v->as_double() >= 1 && *v->as_double() < 1e9)
    out->format = static_cast<std::int64_t>(*v->as_double());
  if (const Value* v = doc.Get(requests::member_record::kWatches); v && v->is_array())
    for (const Value& w : *v->as_array())
      if (w.is_string()) out->watches.push_back(*w.as_string());
  return true;
}

DateTime Cutoff(DateTime server_now, std::chrono::milliseconds expiry) {
  return DateTime{server_now.millis - expiry.count()};
}

}  // namespace

std::uint32_t BucketOf(const Value& id) {
  Fnv1a h;
  HashValue(id, &h);
  return static_cast<std::uint32_t>(h.value() % kFleetBuckets);
}

std::uint32_t Share::Buckets() const {
  if (count == 0 || self >= count) return 0;
  return (kFleetBuckets - self + count - 1) / count;
}

std::vector<MemberRecord> SweepersOf(const std::vector<MemberRecord>& live,
                                     const std::string& collection) {
  std::vector<MemberRecord> out;
  for (const MemberRecord& m : live)
    if (std::find(m.watches.begin(), m.watches.end(), collection) != m.watches.end())
      out.push_back(m);
  std::sort(out.begin(), out.end(),
            [](const MemberRecord& a, const MemberRecord& b) { return a.id < b.id; });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const MemberRecord& a, const MemberRecord& b) { return a.id == b.id; }),
            out.end());
  return out;
}

Status LiveSweepers(Store* store, const Namespace& members, const std::string& collection,
                    std::chrono::milliseconds expiry, std::vector<MemberRecord>* sweepers,
                    DateTime* server_now) {
  std::vector<MemberRecord> live;
  if (Status s = store->ServerTime(server_now); !s.ok()) return s;
  if (Status s = LiveMembers(store, members, expiry, *server_now, &live); !s.ok()) return s;
  *sweepers = SweepersOf(live, collection);
  return Status::Ok();
}

const MemberRecord* HolderOf(const std::vector<MemberRecord>& sweepers, const Value& id) {
  const auto count = static_cast<std::uint32_t>(sweepers.size());
  for (std::uint32_t position = 0; position < count; ++position)
    if (Share{position, count}.Owns(id)) return &sweepers[position];
  return nullptr;
}

Share ShareOf(const std::vector<MemberRecord>& live, const std::string& self_id,
              const std::string& collection) {
  std::vector<std::string> ids;
  for (const MemberRecord& m : SweepersOf(live, collection)) ids.push_back(m.id);
  ids.push_back(self_id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const auto self = std::find(ids.begin(), ids.end(), self_id) - ids.begin();
  return Share{static_cast<std::uint32_t>(self), static_cast<std::uint32_t>(ids.size())};
}

Status Heartbeat(Store* store, const Namespace& ns, const MemberRecord& self) {
  LeaseFreeWriter writer(store, LeaseFree::kMembership);
  const LabelledRequest beat{"heartbeat of " + self.id, requests::MemberHeartbeat(self)};
  // Create once, then update; the record may be removed between the two by a member that
  // found it expired (a fresh record carries the epoch), so the pair is tried again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    WriteResult r;
    if (Status s = writer.One(ns, beat, &r); !s.ok()) return s;
    if (r.matched > 0) return Status::Ok();
    // A concurrent creator (another thread of ours) may win: its duplicate key is harmless.
    (void)writer.Insert(ns, "create the member record", {requests::NewMember(self.id)});
  }
  return Status::ServerError("the member record " + self.id + " in " + ns.ToString() +
                             " could not be written");
}

namespace {

// The member records of `ns` that match `f`, sorted by id (what is not a member record,
// e.g. an orphan scan's, is skipped).
Status ReadMembers(Store* store, const Namespace& ns, const Filter& f,
                   std::vector<MemberRecord>* out) {
  out->clear();
  std::unique_ptr<Cursor> cursor;
  if (Status s = store->Find(ns, f, FindOptions{}, &cursor); !s.ok()) return s;
  Document doc;
  bool has = false;
  while (true) {
    if (Status s = cursor->Next(&doc, &has); !s.ok()) return s;
    if (!has) break;
    MemberRecord m;
    if (ParseMember(doc, &m)) out->push_back(std::move(m));
  }
  std::sort(out->begin(), out->end(),
            [](const MemberRecord& a, const MemberRecord& b) { return a.id < b.id; });
  return Status::Ok();
}

}  // namespace

Status LiveMembers(Store* store, const Namespace& ns, std::chrono::milliseconds expiry,
                   DateTime server_now, std::vector<MemberRecord>* live) {
  return ReadMembers(store, ns, requests::LiveMembers(Cutoff(server_now, expiry)), live);
}

Status ExpiredMembers(Store* store, const Namespace& ns, std::chrono::milliseconds expiry,
                      DateTime server_now, std::vector<MemberRecord>* expired) {
  return ReadMembers(store, ns, requests::ExpiredMembers(Cutoff(server_now, expiry)), expired);
}

Status RemoveExpired(Store* store, const Namespace& ns, std::chrono::milliseconds expiry,
                     DateTime server_now, std::int64_t* removed) {
  WriteResult r;
  Status s = LeaseFreeWriter(store, LeaseFree::kMembership)
                 .Many(ns, "remove expired members",
                       requests::ExpiredMembers(Cutoff(server_now, expiry)), nullptr, &r);
  if (removed) *removed = r.modified;
  return s;
}

Status ClaimOrphanScan(Store* store, const Namespace& ns, const std::string& collection,
                       const std::string& self_id, std::chrono::milliseconds period,
                       bool* claimed) {
  *claimed = false;
  DateTime now;
  if (Status s = store->ServerTime(&now); !s.ok()) return s;
  LeaseFreeWriter writer(store, LeaseFree::kMembership);
  const LabelledRequest claim{"claim the orphan scan of " + collection,
                              requests::OrphanScanClaim(collection, self_id, Cutoff(now, period))};
  // Claim, else create the record (a concurrent creator's duplicate key is harmless) and
  // claim once more: nothing matched either because a recent claim stands or because there
  // is no record yet.
  for (int attempt = 0; attempt < 2; ++attempt) {
    WriteResult r;
    if (Status s = writer.One(ns, claim, &r); !s.ok()) return s;
    if (r.matched > 0) {
      *claimed = true;
      return Status::Ok();
    }
    if (attempt == 0)
      (void)writer.Insert(ns, "create the orphan scan record of " + collection,
                          {requests::NewOrphanScan(collection)});
  }
  return Status::Ok();
}

Status Leave(Store* store, const Namespace& ns, const std::string& self_id) {
  WriteResult r;
  return LeaseFreeWriter(store, LeaseFree::kMembership)
      .Many(ns, "leave the fleet", requests::Member(self_id), nullptr, &r);
}

}  // namespace txn_recovery
