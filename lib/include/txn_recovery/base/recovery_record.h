// The daemon's own sub-document of a transaction (`lease_field`, "recovery" by default):
// the lease it holds while driving the transaction, the record of how it resolved it, the
// count of failed attempts and the quarantine record. Applications never write it.
//
// Every path into the sub-document is spelled by RecoveryPaths and nowhere else; every
// reading of it goes through RecoveryRecord::Read, which refuses what the daemon would
// never have written (a lease whose owner is not a string, an expiry that is not a date):
// such a transaction is quarantined rather than taken as "leased by someone" forever.
//
// Thread-safety: both types are values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "txn_recovery/base/document.h"
#include "txn_recovery/base/status.h"

namespace txn_recovery {

class RecoveryPaths {
 public:
  // The keys of the sub-document, each spelled here and nowhere else: the paths below, the
  // engine's writes (engine/requests.cc) and RecoveryRecord::Read are built from them.
  static constexpr const char* kLease = "lease";
  static constexpr const char* kLeaseOwner = "owner";
  static constexpr const char* kLeaseExpires = "expires";
  static constexpr const char* kLeaseClaim = "claim";
  static constexpr const char* kQuarantine = "quarantine";
  static constexpr const char* kQuarantineReason = "reason";
  static constexpr const char* kQuarantineBy = "by";
  static constexpr const char* kQuarantinedAt = "quarantinedAt";
  // What a quarantine found in place of the sub-document (not a document), kept for the
  // operator beside the quarantine record that replaced it.
  static constexpr const char* kReplacedValue = "replacedValue";
  static constexpr const char* kFirstSeen = "firstSeen";
  static constexpr const char* kFailures = "failures";
  static constexpr const char* kLastError = "lastError";
  static constexpr const char* kResolvedBy = "resolvedBy";
  static constexpr const char* kResolvedAction = "resolvedAction";
  static constexpr const char* kOutcome = "outcome";
  static constexpr const char* kResolvedAt = "resolvedAt";
  static constexpr const char* kResolvedClaim = "resolvedClaim";
  static constexpr const char* kFinished = "finished";
  static constexpr const char* kFormat = "format";

  explicit RecoveryPaths(std::string field) : field_(std::move(field)) {}

  const std::string& field() const noexcept { return field_; }
  // {owner, expires, claim}: who drives the transaction, until when (server time), and
  // the nonce of the bulk claim that took it.
  std::string Lease() const { return Path(kLease); }
  std::string LeaseOwner() const { return Path(kLease, kLeaseOwner); }
  std::string LeaseExpires() const { return Path(kLease, kLeaseExpires); }
  std::string LeaseClaim() const { return Path(kLease, kLeaseClaim); }
  // {reason, by}, and when: set aside for an operator.
  std::string Quarantine() const { return Path(kQuarantine); }
  std::string QuarantineReason() const { return Path(kQuarantine, kQuarantineReason); }
  std::string QuarantinedAt() const { return Path(kQuarantinedAt); }
  // The server's time when a sweep first saw a transaction that carries no time of its own
  // (MissingTime::kFirstSeen): written once, never changed.
  std::string FirstSeen() const { return Path(kFirstSeen); }
  // Failed attempts in a row, and the last error.
  std::string Failures() const { return Path(kFailures); }
  std::string LastError() const { return Path(kLastError); }
  // How the daemon ended the transaction.
  std::string ResolvedBy() const { return Path(kResolvedBy); }
  std::string ResolvedAction() const { return Path(kResolvedAction); }
  std::string Outcome() const { return Path(kOutcome); }
  std::string ResolvedAt() const { return Path(kResolvedAt); }
  // The nonce of the claim under which it was ended: a bulk whose counts disagree finds
  // its own terminal moves by it (a cancel takes no lease to find them by).
  std::string ResolvedClaim() const { return Path(kResolvedClaim); }
  // On a participant (not a transaction): the transactions whose marker the daemon pulled
  // from it while finishing them. A marker found next to its transaction's id here was
  // pushed after the pull: a late duplicate, undone rather than pulled. Removed by the
  // late-write check (or the orphan scan) once the transaction is terminal.
  std::string Finished() const { return Path(kFinished); }
  // The format of the sub-document (RecoveryRecord::kFormat), written with its first write.
  std::string Format() const { return Path(kFormat); }

  // The values of Outcome().
  static constexpr std::string_view kCommitted = "committed";
  static constexpr std::string_view kRolledBack = "rolled back";

 private:
  std::string Path(std::string_view key) const {
    std::string path = field_;
    path.append(".").append(key);
    return path;
  }
  std::string Path(std::string_view key, std::string_view sub) const {
    std::string path = Path(key);
    path.append(".").append(sub);
    return path;
  }

  std::string field_;
};

struct RecoveryRecord {
  // The format of what the daemon writes into an application's database: this sub-document
  // on transactions, the traces on participants, the member records and the control
  // collection's documents, each carrying it as `format` from its first write. Absent reads
  // as 1, what every version before the field wrote. A daemon leaves alone (and reports)
  // a transaction whose sub-document carries a format newer than this one, and lists a
  // member of a newer format like any other (docs/upgrading.md).
  static constexpr std::int64_t kFormat = 1;

  struct Lease {
    std::string owner;
    DateTime expires;
    std::optional<std::string> claim;
  };
  struct QuarantineRecord {
    std::string reason;  // the reason written, or a rendering of whatever is there
    std::optional<std::string> by;
    std::optional<DateTime> at;
  };

  std::optional<Lease> lease;
  std::optional<QuarantineRecord> quarantine;
  std::int64_t failures = 0;
  std::optional<std::string> last_error;
  std::optional<std::string> outcome;  // RecoveryPaths::kCommitted / kRolledBack
  std::optional<std::string> resolved_by;
  std::optional<std::string> resolved_action;
  std::optional<DateTime> resolved_at;
  std::optional<DateTime> first_seen;
  std::int64_t format = 1;  // of the sub-document as read

  // Whether a newer daemon wrote the sub-document in a format this one does not know.
  bool Newer() const noexcept { return format > kFormat; }

  // Reads the sub-document of the transaction document `txn`. Absent: an empty record.
  // Malformed, naming the path, when it is not what the daemon writes: the sub-document or
  // its lease not a document, a lease owner that is not a non-empty string, an expiry or
  // claim of the wrong type, an outcome other than the two the daemon writes, a first
  // sighting that is not a date, a format that is not a positive integer. Of a newer
  // format, only the format is read (the rest may mean something else there). A quarantine
  // record of any shape still counts as a quarantine (an operator may have written it by
  // hand), its reason rendered as read.
  static Status Read(const Document& txn, const RecoveryPaths& paths, RecoveryRecord* out);
  // Only the quarantine record, whatever else the sub-document holds (an operator listing
  // quarantined transactions must see the one quarantined for a malformed lease too).
  static std::optional<QuarantineRecord> ReadQuarantine(const Document& txn,
                                                        const RecoveryPaths& paths);
};

}  // namespace txn_recovery
