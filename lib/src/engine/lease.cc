#include "engine/lease.h"

namespace txn_recovery {

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
