// The parts of the engine that are not the execution itself (execution.cc): names, the
// server clock's extrapolation, and the bookkeeping writes the sweeper makes outside any
// lease (stamping first sightings, counting failures, quarantining).
#include "txn_recovery/engine/state_machine.h"

#include <unistd.h>

#include <cstdio>
#include <random>
#include <utility>

#include "engine/lease.h"
#include "engine/quarantine_write.h"
#include "engine/requests.h"

namespace txn_recovery {

std::string MakeOwnerId() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device rd;
  std::uniform_int_distribution<std::uint32_t> dist;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", dist(rd));
  return std::string(host[0] ? host : "unknown-host") + ":" + std::to_string(getpid()) + ":" +
         suffix;
}

std::string_view OutcomeName(Outcome o) noexcept {
  switch (o) {
    case Outcome::kUntouched:
      return "untouched";
    case Outcome::kResolved:
      return "resolved";
    case Outcome::kBusy:
      return "busy";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kQuarantined:
      return "quarantined";
    case Outcome::kPlanned:
      return "planned";
  }
  return "?";
}

std::function<DateTime()> ServerNowFrom(Clock* clock, DateTime server_reading) {
  const auto mono_start = clock->MonotonicNow();
  return [clock, server_reading, mono_start] {
    auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock->MonotonicNow() - mono_start);
    return DateTime{server_reading.millis + elapsed.count()};
  };
}

StateMachine::StateMachine(Store* store, Clock* clock, Namespace txn_ns, const Profile* profile,
                           std::string lease_field, LeaseOptions lease,
                           std::function<DateTime()> server_now)
    : store_(store),
      clock_(clock),
      txn_ns_(std::move(txn_ns)),
      profile_(profile),
      paths_(std::move(lease_field)),
      lease_(std::move(lease)),
      server_now_(std::move(server_now)) {}

ExecuteResult StateMachine::Execute(const Transaction& txn, Action action) {
  return ExecuteBatch({&txn}, {action}).front();
}

Status StateMachine::RecordFailure(const Value& id, std::string_view error,
                                   std::int64_t* failures) {
  std::optional<Document> after;
  LeaseFreeWriter writer(store_, LeaseFree::kFailureCount);
  if (Status s = writer.OneAndRead(
          txn_ns_, {"count the failure", requests::RecordFailure(id, error, paths_)}, &after);
      !s.ok())
    return s;
  *failures = 0;
  if (after)
    if (const Value* n = after->GetPath(paths_.Failures()); n && n->is_number())
      *failures = static_cast<std::int64_t>(*n->as_double());
  return Status::Ok();
}

Status StateMachine::StampFirstSeen(const std::vector<Value>& ids, BulkResult* result) {
  *result = BulkResult{};
  if (ids.empty()) return Status::Ok();
  std::vector<LabelledRequest> stamps;
  stamps.reserve(ids.size());
  for (const Value& id : ids)
    stamps.push_back({"stamp the first sighting", requests::StampFirstSeen(id, *profile_, paths_)});
  return LeaseFreeWriter(store_, LeaseFree::kFirstSighting)
      .Each(txn_ns_, std::move(stamps), result);
}

Status StateMachine::Quarantine(const Value& id, std::string_view reason) {
  LeaseFreeWriter writer(store_, LeaseFree::kQuarantine);
  return QuarantineThrough(&writer, id, reason);
}

Status StateMachine::QuarantineThrough(LeaseFreeWriter* writer, const Value& id,
                                       std::string_view reason) {
  const Document record{{RecoveryPaths::kQuarantineReason, std::string(reason)},
                        {RecoveryPaths::kQuarantineBy, lease_.owner}};
  const std::string what = "quarantine: " + std::string(reason);
  // The record in the daemon's own collection first, then the mark, which lands only
  // before the record's markBy: a repair deletes a record without a mark only once that
  // has passed, so that the count from the records never misses a mark
  // (quarantine_records.h; model/recovery.pml, -DQUAR_RECORD).
  const DateTime mark_by{server_now_().millis + lease_.duration.count()};
  if (Status s = WriteQuarantineRecord(store_, writer, txn_ns_, id, record, mark_by); !s.ok())
    return s;
  auto fenced = [&](UpdateRequest request) {
    request.filter.ServerNowBefore(mark_by);
    return request;
  };
  WriteResult r;
  Status s = writer->One(txn_ns_, {what, fenced(requests::Quarantine(id, record, paths_))}, &r);
  if (s.ok()) return Marked(*writer, r);
  if (s.IsUnavailable()) return s;
  // The server refuses a path below a field that is not a document: our sub-document holds
  // something else (written by someone else). Replace it, keeping what it held for the
  // operator, or the document would fail every sweep without ever being set aside.
  std::optional<Document> doc;
  if (Status f = store_->FindOne(txn_ns_, Filter().Eq("_id", id), &doc); !f.ok()) return f;
  const Value* held = doc ? doc->GetPath(paths_.field()) : nullptr;
  if (held == nullptr || held->as_document() != nullptr) return s;
  if (Status w = writer->One(
          txn_ns_, {what, fenced(requests::QuarantineReplacing(id, *held, record, paths_))}, &r);
      !w.ok())
    return w;
  if (Status m = Marked(*writer, r); !m.ok()) return m;
  return writer->One(txn_ns_, {"record when", requests::QuarantinedNow(id, paths_)}, &r);
}

Status StateMachine::Marked(const LeaseFreeWriter& writer, const WriteResult& mark) {
  if (writer.recording() || mark.matched > 0) return Status::Ok();
  // The transaction is gone, or the mark reached the server after its record's markBy (a
  // stall): not quarantined; its record goes at the next sweep's repair, and the next
  // sweep that finds the transaction unfit quarantines it again.
  return Status::Conflict("not quarantined: the mark matched nothing before its deadline");
}

}  // namespace txn_recovery
