#include "tagged_insert_app.h"

#include <set>
#include <stdexcept>

namespace txn_recovery::testing {

TaggedInsertApp::TaggedInsertApp(Store* store, const std::string& database, Profile profile,
                                 int per_collection, const std::string& transactions)
    : store_(store),
      profile_(std::move(profile)),
      tp_(profile_.tagged_insert() ? *profile_.tagged_insert() : TaggedInsertProfile{}),
      per_collection_(per_collection),
      txns_{database, transactions} {
  if (!profile_.tagged_insert())
    throw std::invalid_argument("TaggedInsertApp needs a tagged-insert profile");
}

WatchSpec TaggedInsertApp::Watch() const {
  WatchSpec w;
  w.name = "tagged";
  w.ns = txns_;
  w.profile = profile_;
  return w;
}

Value TaggedInsertApp::InsertTransaction() {
  Value tx = NewObjectId(ServerNow(store_).millis);
  Document doc{{"_id", tx}};
  doc.SetPath(profile_.state_field, profile_.states.Written(TxnState::kPending));
  doc.SetPath(profile_.time_field, ServerNow(store_));
  Must(store_->InsertMany(txns_, {doc}));
  return tx;
}

Status TaggedInsertApp::InsertTagged(const Value& tx, std::size_t collections) {
  const int of = DocsPerTransaction();
  int part = 0;
  for (std::size_t c = 0; c < tp_.tagged_collections.size() && c < collections; ++c) {
    std::vector<Document> docs;
    for (int i = 0; i < per_collection_; ++i) {
      Document d{{"_id", NewObjectId(ServerNow(store_).millis)},
                 {"origin", tx},
                 {"part", std::int32_t{part++}},
                 {"of", std::int32_t{of}}};
      d.SetPath(tp_.tag_field, tx);
      docs.push_back(std::move(d));
    }
    if (Status s = store_->InsertMany(Collection(tp_.tagged_collections[c]), docs); !s.ok())
      return s;
  }
  return Status::Ok();
}

Status TaggedInsertApp::SetStatus(const Value& tx, TxnState to, std::optional<TxnState> unless) {
  Filter f = Filter().Eq("_id", tx);
  if (unless) f.Ne(profile_.state_field, profile_.states.Written(*unless));
  WriteResult r;
  return store_->UpdateOne(txns_, f,
                           Update()
                               .Set(profile_.state_field, profile_.states.Written(to))
                               .CurrentDate(profile_.time_field),
                           &r);
}

Status TaggedInsertApp::MarkFinishing(const Value& tx) {
  if (!checked_finishing_) return SetStatus(tx, TxnState::kApplied);
  WriteResult r;
  if (Status s = store_->UpdateOne(
          txns_,
          Filter().Eq("_id", tx).Eq(profile_.state_field,
                                    profile_.states.Written(TxnState::kPending)),
          Update()
              .Set(profile_.state_field, profile_.states.Written(TxnState::kApplied))
              .CurrentDate(profile_.time_field),
          &r);
      !s.ok())
    return s;
  if (r.matched == 0)
    return Status::Conflict("transaction " + tx.ToString() +
                            " is no longer started: the application stops");
  return Status::Ok();
}

Status TaggedInsertApp::Untag(const Value& tx, std::size_t collections) {
  for (std::size_t c = 0; c < tp_.tagged_collections.size() && c < collections; ++c) {
    WriteResult r;
    if (Status s = store_->UpdateMany(Collection(tp_.tagged_collections[c]),
                                      Filter().Eq(tp_.tag_field, tx),
                                      Update().Unset(tp_.tag_field).Set(tp_.valid_field, true), &r);
        !s.ok())
      return s;
  }
  return Status::Ok();
}

Status TaggedInsertApp::MarkDone(const Value& tx) {
  return SetStatus(tx, TxnState::kDone);
}

Status TaggedInsertApp::MarkRollback(const Value& tx) {
  return SetStatus(tx, TxnState::kCanceling, TxnState::kCanceling);
}

Status TaggedInsertApp::DeleteTagged(const Value& tx, std::size_t collections) {
  for (std::size_t c = 0; c < tp_.tagged_collections.size() && c < collections; ++c) {
    WriteResult r;
    if (Status s = store_->DeleteMany(Collection(tp_.tagged_collections[c]),
                                      Filter().Eq(tp_.tag_field, tx), &r);
        !s.ok())
      return s;
  }
  return Status::Ok();
}

// The tagged inserts write "done" here ("// or canceled?"): the profile's cancelled spelling, which
// is `done` unless the watch configures one.
Status TaggedInsertApp::MarkRolledBackDone(const Value& tx) {
  return SetStatus(tx, TxnState::kCancelled);
}

Status TaggedInsertApp::RunStep(const Value& tx, int step, std::size_t collections) {
  switch (step) {
    case 2:
      return InsertTagged(tx, collections);
    case 3:
      return MarkFinishing(tx);
    case 4:
      return Untag(tx, collections);
    case 5:
      return MarkDone(tx);
    case 6:
      return MarkRollback(tx);
    case 7:
      return DeleteTagged(tx, collections);
    case 8:
      return MarkRolledBackDone(tx);
    default:
      return Status::InvalidArgument("the tagged inserts have no application step " +
                                     std::to_string(step));
  }
}

Value TaggedInsertApp::Commit() {
  Value tx = InsertTransaction();
  for (int step = 2; step <= 5; ++step) Must(RunStep(tx, step));
  return tx;
}

Status TaggedInsertApp::RollBack(const Value& tx) {
  for (int step = 6; step <= 8; ++step)
    if (Status s = RunStep(tx, step); !s.ok()) return s;
  return Status::Ok();
}

void TaggedInsertApp::AddBystanders() {
  for (const auto& c : tp_.tagged_collections) {
    Document d{{"_id", "bystander-" + c}, {"note", "inserted outside any transaction"}};
    d.SetPath(tp_.valid_field, true);
    Must(store_->InsertMany(Collection(c), {d}));
  }
}

void TaggedInsertApp::Age(const Value& tx, std::chrono::milliseconds age) {
  AgeDocument(store_, txns_, tx, profile_.time_field, age);
}

std::optional<Document> TaggedInsertApp::Txn(const Value& tx) {
  return FindById(store_, txns_, tx);
}

std::string TaggedInsertApp::State(const Value& tx) {
  return StateOf(Txn(tx), profile_.state_field);
}

TaggedInsertApp::Docs TaggedInsertApp::DocsOf(const Value& tx) {
  Docs out;
  for (const auto& c : tp_.tagged_collections)
    for (const auto& d : AllDocs(store_, Collection(c))) {
      const Value* origin = d.Get("origin");
      if (origin == nullptr || !(*origin == tx)) continue;
      ++out.present;
      if (d.GetPath(tp_.tag_field)) ++out.tagged;
      if (const Value* v = d.GetPath(tp_.valid_field); v && *v == Value(true)) ++out.valid;
    }
  return out;
}

TaggedSnapshot TaggedInsertApp::Take() {
  TaggedSnapshot s;
  for (const auto& c : tp_.tagged_collections)
    for (const auto& d : AllDocs(store_, Collection(c)))
      if (d.Get("origin") == nullptr) s.bystanders[c][d.Get("_id")->ToString()] = d;
  return s;
}

std::vector<std::string> TaggedInsertApp::Violations(const TaggedSnapshot& before,
                                                     bool all_terminal) {
  std::vector<std::string> v;
  struct Seen {
    int present = 0, tagged = 0, valid = 0, of = -1;
  };
  std::map<std::string, Seen> by_txn;
  std::map<std::string, std::string> tags;  // tag value -> one collection carrying it
  for (const auto& c : tp_.tagged_collections) {
    std::map<std::string, Document> bystanders;
    for (const auto& d : AllDocs(store_, Collection(c))) {
      if (const Value* tag = d.GetPath(tp_.tag_field)) tags.emplace(tag->ToString(), c);
      const Value* origin = d.Get("origin");
      if (origin == nullptr) {
        bystanders[d.Get("_id")->ToString()] = d;
        continue;
      }
      Seen& s = by_txn[origin->ToString()];
      ++s.present;
      if (d.GetPath(tp_.tag_field)) ++s.tagged;
      if (const Value* ok = d.GetPath(tp_.valid_field); ok && *ok == Value(true)) ++s.valid;
      if (const Value* of = d.Get("of")) s.of = static_cast<int>(of->as_double().value_or(-1));
    }
    auto want = before.bystanders.find(c);
    std::map<std::string, Document> expected;
    if (want != before.bystanders.end()) expected = want->second;
    if (bystanders != expected)
      v.push_back("nothing else touched: the documents of " + c +
                  " outside any transaction changed");
  }

  for (const auto& t : AllDocs(store_, txns_)) {
    const std::string id = t.Get("_id")->ToString();
    const bool quarantined = t.GetPath("recovery.quarantine") != nullptr;
    Transaction txn;
    Status s = profile_.Parse(t, txns_, "recovery", &txn);
    if (!s.ok()) {
      if (!quarantined)
        v.push_back("transaction " + id + " is malformed but not quarantined: " + s.message());
      continue;
    }
    if (!IsTerminal(txn.state)) {
      if (all_terminal && !quarantined)
        v.push_back("no leftovers: transaction " + id + " is still " +
                    std::string(TxnStateName(txn.state)));
      continue;
    }
    Seen seen;
    if (auto it = by_txn.find(id); it != by_txn.end()) seen = it->second;
    if (tags.count(id))
      v.push_back("no leftovers: a document of " + tags[id] + " still carries the tag of " +
                  "terminal transaction " + id);
    if (seen.present != 0 && seen.present != seen.of)
      v.push_back("atomicity: terminal transaction " + id + " kept " +
                  std::to_string(seen.present) + " of its " + std::to_string(seen.of) +
                  " documents");
    if (seen.valid != seen.present)
      v.push_back("atomicity: " + std::to_string(seen.present - seen.valid) + " documents of " +
                  "terminal transaction " + id + " are not valid");
    const Value* outcome = t.GetPath("recovery.outcome");
    if (outcome && *outcome == Value("rolled back") && seen.present != 0)
      v.push_back("atomicity: transaction " + id + " was rolled back but " +
                  std::to_string(seen.present) + " of its documents remain");
    if (outcome && *outcome == Value("committed") && seen.present == 0)
      v.push_back("atomicity: transaction " + id + " was committed but none of its " +
                  "documents remain");
  }
  return v;
}

}  // namespace txn_recovery::testing
