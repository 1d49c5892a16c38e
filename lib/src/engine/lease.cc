#include "engine/lease.h"

namespace txn_recovery {

std::string_view LeaseFreeName(LeaseFree why) {
  switch (why) {
    case LeaseFree::kUntrace:
      return "untrace";
    case LeaseFree::kLateWrite:
      return "late write";
    case LeaseFree::kFirstSighting:
      return "first sighting";
    case LeaseFree::kFailureCount:
      return "failure count";
    case LeaseFree::kQuarantine:
      return "quarantine";
    case LeaseFree::kMembership:
      return "membership";
    case LeaseFree::kOrphanScan:
      return "orphan scan";
    case LeaseFree::kRetention:
      return "retention";
    case LeaseFree::kOperator:
      return "operator";
  }
  return "?";
}

void LeaseKeeper::SetExpiry(requests::LeaseTerms* terms, DateTime now) const {
  terms->expires = Expiry(now);
  terms->fence = DateTime{terms->expires.millis - options_.margin.count() / 2};
}

requests::LeaseTerms LeaseKeeper::Offer(const std::string& claim, DateTime now) const {
  requests::LeaseTerms terms;
  terms.owner = options_.owner;
  terms.claim = claim;
  SetExpiry(&terms, now);
  return terms;
}

Lease LeaseKeeper::Take(const requests::LeaseTerms& terms,
                        std::chrono::steady_clock::time_point start) const {
  return Lease(terms, start + options_.duration - options_.margin);
}

void LeaseKeeper::Renew(Lease* lease, DateTime now,
                        std::chrono::steady_clock::time_point start) const {
  SetExpiry(&lease->terms_, now);
  lease->deadline_ = start + options_.duration - options_.margin;
}

}  // namespace txn_recovery
