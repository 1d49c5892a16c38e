// The reads of an execution: participants many at a time, and its writes read back where a
// bulk's count does not say which of them matched. The only part of an execution that holds
// the Store, and it only reads through it. Private to the engine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/batch_item.h"

namespace txn_recovery {

class ParticipantReads {
 public:
  // Everything given must outlive the reads.
  ParticipantReads(Store* store, const Profile& profile, const RecoveryPaths& paths,
                   const Namespace& txn_ns)
      : store_(store), profile_(profile), paths_(paths), txn_ns_(txn_ns) {}

  // Reads the participants of `steps`, many at a time: one {key: {$in: [...]}} query per
  // collection and key. A read that fails fails the items it was for, unless `best_effort`
  // (a clean-up's read, of transactions already ended): then their documents are left
  // unread (empty).
  std::vector<Found> Participants(const std::vector<StepRef>& steps, bool best_effort = false);

  // The participants of `steps` whose marker field does not fit fail their item.
  static void CheckAll(const std::vector<StepRef>& steps, const std::vector<Found>& found);

  // The participant steps of the writes the server accepted, read back.
  std::vector<Found> Back(const std::vector<Write>& writes, const Sent& sent,
                          std::vector<StepRef>* refs);

  // The transactions of the accepted `writes`, read back by _id into `docs`. False (and the
  // items failed) when the read fails.
  bool Transactions(const std::vector<Write>& writes, const Sent& sent,
                    std::map<std::string, Document>* docs);

  // Whether the transaction read back shows our move to the state spelled `state`: and, for
  // a terminal move, resolved by us under this batch's claim, otherwise our lease still on it
  // (another worker of this process, or an earlier sweep, has the same owner).
  bool Moved(const std::map<std::string, Document>& docs, const Item& it, const Value& state,
             bool terminal) const;

  // Whether the transaction read back was ended by this process (the owner id is one per
  // process): by this batch or, its candidate read having returned it twice, by another.
  bool EndedBySelf(const std::map<std::string, Document>& docs, const Item& it) const;

  // How many documents of `ns` match `filter`.
  Status Count(const Namespace& ns, const Filter& filter, std::int64_t* n) {
    return store_->Count(ns, filter, n);
  }

 private:
  // Each document once, as last read: a scan may return a document twice when it is updated
  // meanwhile (DocumentDB does so readily), and two readings of one participant must not
  // look like a key naming two documents.
  Status ReadAll(const Namespace& ns, const Filter& f, std::vector<Document>* out);

  Store* store_;
  const Profile& profile_;
  const RecoveryPaths& paths_;
  const Namespace& txn_ns_;
};

}  // namespace txn_recovery
