#include "txn_recovery/base/recovery_record.h"

namespace txn_recovery {
namespace {

Status Wrong(const std::string& path, const Value& v, std::string_view expected) {
  return Status::Malformed("field '" + path + "' has type " + std::string(v.type_name()) +
                           ", expected " + std::string(expected) +
                           " (the daemon's own sub-document holds something it never writes)");
}

// The lease {owner, expires, claim}, as the claim writes it.
Status ReadLease(const Value& lease, const RecoveryPaths& paths, RecoveryRecord::Lease* out) {
  const Document* l = lease.as_document();
  if (l == nullptr) return Wrong(paths.Lease(), lease, "object");
  const Value* owner = l->Get(RecoveryPaths::kLeaseOwner);
  const Value* expires = l->Get(RecoveryPaths::kLeaseExpires);
  if (owner == nullptr) return Status::Malformed("field '" + paths.LeaseOwner() + "' is missing");
  if (!owner->is_string() || owner->as_string()->empty())
    return Wrong(paths.LeaseOwner(), *owner, "non-empty string");
  if (expires == nullptr)
    return Status::Malformed("field '" + paths.LeaseExpires() + "' is missing");
  if (!expires->is_datetime()) return Wrong(paths.LeaseExpires(), *expires, "date");
  *out = RecoveryRecord::Lease{*owner->as_string(), *expires->as_datetime(), std::nullopt};
  if (const Value* claim = l->Get(RecoveryPaths::kLeaseClaim)) {
    if (!claim->is_string()) return Wrong(paths.LeaseClaim(), *claim, "string");
    out->claim = *claim->as_string();
  }
  return Status::Ok();
}

// How the daemon ended the transaction: the outcome is one of the two it writes; the rest
// is read where it has the type written and left out otherwise.
Status ReadEnd(const Document& d, const RecoveryPaths& paths, RecoveryRecord* out) {
  if (const Value* o = d.Get(RecoveryPaths::kOutcome)) {
    if (!o->is_string() || (*o->as_string() != RecoveryPaths::kCommitted &&
                            *o->as_string() != RecoveryPaths::kRolledBack))
      return Status::Malformed("field '" + paths.Outcome() + "' is " + o->ToString() +
                               ", expected \"committed\" or \"rolled back\"");
    out->outcome = *o->as_string();
  }
  if (const Value* b = d.Get(RecoveryPaths::kResolvedBy); b && b->is_string())
    out->resolved_by = *b->as_string();
  if (const Value* a = d.Get(RecoveryPaths::kResolvedAction); a && a->is_string())
    out->resolved_action = *a->as_string();
  if (const Value* t = d.Get(RecoveryPaths::kResolvedAt); t && t->is_datetime())
    out->resolved_at = *t->as_datetime();
  return Status::Ok();
}

}  // namespace

std::optional<RecoveryRecord::QuarantineRecord> RecoveryRecord::ReadQuarantine(
    const Document& txn, const RecoveryPaths& paths) {
  const Value* q = txn.GetPath(paths.Quarantine());
  if (q == nullptr) return std::nullopt;
  QuarantineRecord record;
  const Document* qd = q->as_document();
  const Value* reason = qd ? qd->Get(RecoveryPaths::kQuarantineReason) : nullptr;
  record.reason = reason && reason->is_string() ? *reason->as_string() : q->ToString();
  if (const Value* by = qd ? qd->Get(RecoveryPaths::kQuarantineBy) : nullptr; by && by->is_string())
    record.by = *by->as_string();
  if (const Value* at = txn.GetPath(paths.QuarantinedAt()); at && at->is_datetime())
    record.at = *at->as_datetime();
  return record;
}

Status RecoveryRecord::Read(const Document& txn, const RecoveryPaths& paths, RecoveryRecord* out) {
  *out = RecoveryRecord{};
  const Value* own = txn.GetPath(paths.field());
  if (own == nullptr) return Status::Ok();
  const Document* d = own->as_document();
  if (d == nullptr) return Wrong(paths.field(), *own, "object");
  if (const Value* f = d->Get(RecoveryPaths::kFormat)) {
    const std::optional<double> n = f->is_number() ? f->as_double() : std::nullopt;
    if (!n || *n < 1 || *n > 1e9 || *n != static_cast<double>(static_cast<std::int64_t>(*n)))
      return Wrong(paths.Format(), *f, "positive integer");
    out->format = static_cast<std::int64_t>(*n);
    if (out->Newer()) return Status::Ok();
  }

  if (const Value* lease = d->Get(RecoveryPaths::kLease)) {
    Lease parsed;
    if (Status s = ReadLease(*lease, paths, &parsed); !s.ok()) return s;
    out->lease = std::move(parsed);
  }

  out->quarantine = ReadQuarantine(txn, paths);

  if (const Value* seen = d->Get(RecoveryPaths::kFirstSeen)) {
    if (!seen->is_datetime()) return Wrong(paths.FirstSeen(), *seen, "date");
    out->first_seen = *seen->as_datetime();
  }

  if (const Value* f = d->Get(RecoveryPaths::kFailures); f && f->is_number()) {
    const double n = *f->as_double();
    out->failures = n > 0 && n < 1e15 ? static_cast<std::int64_t>(n) : 0;
  }
  if (const Value* e = d->Get(RecoveryPaths::kLastError); e && e->is_string())
    out->last_error = *e->as_string();
  return ReadEnd(*d, paths, out);
}

}  // namespace txn_recovery
