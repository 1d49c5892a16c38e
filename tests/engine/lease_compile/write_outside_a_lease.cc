// Compiled by ctest, once per CASE (tests/CMakeLists.txt, LeaseAsAType.*Compile*): each
// case but 0 is a way to write outside a live lease, and must fail to compile with the
// error that says why; case 0, the same write under a lease, must compile, so that the
// failures cannot come from a broken command line.
#include "engine/batch_item.h"
#include "engine/lease.h"
#include "engine/phases.h"

namespace txn_recovery {

void WriteFromAPhase(const PhaseKit& kit, Item* it, Store* store, UpdateRequest request) {
  std::vector<Write> writes;
#if CASE == 0
  // Under the lease the item holds: the only way to a write of an action.
  writes.push_back(
      {it, nullptr, kit.txn_ns, std::move(request), Under::TheLease(*it->lease), false, "set v"});
  (void)kit.send.Send(writes);
  (void)store;
#elif CASE == 1
  // Around the sender, straight to the writer: its sends are private.
  WriteResult r;
  (void)Writer(store).One(kit.txn_ns, {"set v", request}, &r);
#elif CASE == 2
  // A write that names nothing it goes under.
  Write w{it, nullptr, kit.txn_ns, std::move(request), false, "set v"};
  writes.push_back(std::move(w));
  (void)store;
#elif CASE == 3
  // A lease made up by a phase: only the LeaseKeeper makes one.
  it->lease = Lease(requests::LeaseTerms{}, std::chrono::steady_clock::time_point::max());
  (void)store;
  (void)request;
#elif CASE == 4
  // A lease-free write that does not say why.
  WriteResult r;
  (void)LeaseFreeWriter(store).One(kit.txn_ns, {"set v", request}, &r);
#endif
  (void)writes;
}

}  // namespace txn_recovery
