// Fleet membership (docs/fleet.md): every `run` instance keeps a record in a members
// collection, heartbeated on the server's clock, and divides the candidates with the other
// live members by bucket. A share is efficiency, never permission: whatever a member
// believes its share is, it still claims every transaction it drives.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "txn_recovery/base/document.h"
#include "txn_recovery/base/status.h"
#include "txn_recovery/stores/store.h"

namespace txn_recovery {

// The fleet constant the candidates are divided by: far more buckets than members, so that
// two shares differ by one bucket at most. Changing it (or BucketOf) is a protocol change.
inline constexpr std::uint32_t kFleetBuckets = 256;

struct MemberRecord {
  std::string id;  // the instance's lease owner id
  std::string host;
  std::string version;
  // The transactions collections (of the record's database) it sweeps and whose last sweep
  // did not fail: only these are shared with it.
  std::vector<std::string> watches;
  DateTime heartbeat;  // the server's clock at its last heartbeat
  // The format of what it writes (RecoveryRecord::kFormat of its version; absent: 1). A
  // member of another format is listed and shares like any other: a share only divides
  // the work, the lease decides, and each daemon leaves alone what it cannot read.
  std::int64_t format = 1;
};

// Stamps `self`'s record with the server's time ($currentDate), creating it first when it
// is absent (the Store algebra has no upsert). Its host, version and watches are rewritten.
Status Heartbeat(Store* store, const Namespace& ns, const MemberRecord& self);

// The records heartbeated within `expiry` of `server_now` (the server's clock), sorted by id.
Status LiveMembers(Store* store, const Namespace& ns, std::chrono::milliseconds expiry,
                   DateTime server_now, std::vector<MemberRecord>* live);

// The records not heartbeated within `expiry` of `server_now`, sorted by id: the members
// that stopped (killed, or their host gone) and that no live member has removed yet, as
// `inspect` shows them. A record created and never stamped yet is one too.
Status ExpiredMembers(Store* store, const Namespace& ns, std::chrono::milliseconds expiry,
                      DateTime server_now, std::vector<MemberRecord>* expired);
// Deletes the records not heartbeated within `expiry` of `server_now`. A member that
// heartbeats meanwhile is not removed (the delete compares the heartbeat it finds); one
// removed while alive creates its record again at its next heartbeat.
Status RemoveExpired(Store* store, const Namespace& ns, std::chrono::milliseconds expiry,
                     DateTime server_now, std::int64_t* removed);

// Deletes `self_id`'s record (a clean shutdown), so that the others need not wait for it
// to expire.
Status Leave(Store* store, const Namespace& ns, const std::string& self_id);

// The orphan scan reads every marked participant of a watch, whatever the share: one member
// of a fleet runs it per period, whichever claims it first once the last claim is older
// than `period` on the server's clock. A member that is live but does not scan (hung in a
// long batch, its scans failing) therefore holds the scan up for one period, not for as
// long as it lives. Two scans at once are harmless (every write of the scan is guarded),
// only wasted reads. The claim is recorded in the members collection `ns` beside the
// member records (never listed as one). *claimed: whether this member's claim landed and
// it runs the scan now.
Status ClaimOrphanScan(Store* store, const Namespace& ns, const std::string& collection,
                       const std::string& self_id, std::chrono::milliseconds period, bool* claimed);
// The bucket of a transaction's _id: FNV-1a 64 over a canonical, type-tagged encoding of
// the value, modulo kFleetBuckets. Numbers are hashed by value, as MongoDB compares _ids:
// an integral number that fits in 64 bits is hashed as that integer whatever its type (1,
// 1L and 1.0 are one _id and one bucket); any other double as its IEEE bits (-0.0 is 0,
// every NaN one NaN).
std::uint32_t BucketOf(const Value& id);

// One member's part of the buckets: with `count` live members, the member at position
// `self` (in the list sorted by id) holds the buckets b with b % count == self (stride).
struct Share {
  std::uint32_t self = 0;
  std::uint32_t count = 1;  // 1: everything

  bool Owns(const Value& id) const { return BucketOf(id) % count == self; }
  // How many of the kFleetBuckets buckets this share holds.
  std::uint32_t Buckets() const;
  friend bool operator==(const Share&, const Share&) = default;
};

// The members of `live` that list `collection` in their watches, sorted by id, each once:
// the members among which its candidates are divided.
std::vector<MemberRecord> SweepersOf(const std::vector<MemberRecord>& live,
                                     const std::string& collection);

// SweepersOf the members live now: the server's time is read (into `server_now`), then the
// records heartbeated within `expiry` of it. For the operator's commands (inspect, explain).
Status LiveSweepers(Store* store, const Namespace& members, const std::string& collection,
                    std::chrono::milliseconds expiry, std::vector<MemberRecord>* sweepers,
                    DateTime* server_now);

// Which of `sweepers` (as SweepersOf returns them) holds `id` in its share; null when there
// is none (then a member that starts, or a one-shot sweep, takes it). A share is not
// permission: the claim decides who drives it.
const MemberRecord* HolderOf(const std::vector<MemberRecord>& sweepers, const Value& id);

// `self_id`'s share of `collection` among the members of `live` that list it in their
// watches: a member that does not sweep a collection (another configuration, or its sweeps
// of it fail) holds none of it, so its buckets are never left to nobody. A member always
// counts itself, listed or not (it has just heartbeated, even if the list was read before
// its record existed).
Share ShareOf(const std::vector<MemberRecord>& live, const std::string& self_id,
              const std::string& collection);

}  // namespace txn_recovery
