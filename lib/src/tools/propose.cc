#include "txn_recovery/tools/propose.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "txn_recovery/shapes/profile.h"

namespace txn_recovery {

std::string WithThousands(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

namespace {

using Verdict = CollectionProposal::Verdict;

// A string longer than this is no state, key or name: left out of the statistics, so that a
// huge document costs its reading and nothing more.
constexpr std::size_t kLongString = 256;
// A field with more distinct values than this in the sample is no state field.
constexpr std::size_t kMaxStates = 12;
constexpr int kMaxDepth = 3;

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Of(std::int64_t k, std::int64_t n) {
  return WithThousands(k) + " of " + WithThousands(n);
}

// Every leaf of `doc` (sub-documents descended into, up to kMaxDepth; arrays are leaves),
// without the daemon's own sub-document.
void Leaves(const Document& doc, const std::string& prefix, int depth, const std::string& lease,
            const std::function<void(const std::string&, const Value&)>& f) {
  for (const auto& [key, value] : doc) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (path == lease) continue;
    if (const Document* sub = value.as_document(); sub != nullptr && depth < kMaxDepth)
      Leaves(*sub, path, depth + 1, lease, f);
    else
      f(path, value);
  }
}

struct PathStats {
  std::size_t order = 0;  // first seen at this position of the documents' field order
  std::int64_t present = 0;
  std::int64_t strings = 0, numbers = 0, dates = 0, arrays = 0, keys = 0;
  std::map<std::string, std::int64_t> values;  // short strings, until more than kMaxStates
  bool many_values = false;
};

bool IsKeyLike(const Value& v) {
  return (v.is_string() && v.as_string()->size() <= kLongString) || v.is_object_id() ||
         std::holds_alternative<std::int32_t>(v.storage()) ||
         std::holds_alternative<std::int64_t>(v.storage());
}

std::map<std::string, PathStats> Statistics(const std::vector<const Document*>& docs,
                                            const std::string& lease) {
  std::map<std::string, PathStats> stats;
  for (const Document* d : docs)
    Leaves(*d, "", 1, lease, [&](const std::string& path, const Value& v) {
      auto [it, fresh] = stats.try_emplace(path);
      PathStats& s = it->second;
      if (fresh) s.order = stats.size();
      ++s.present;
      if (v.is_number()) ++s.numbers;
      if (v.is_datetime()) ++s.dates;
      if (v.is_array()) ++s.arrays;
      if (IsKeyLike(v)) ++s.keys;
      if (const std::string* str = v.as_string(); str != nullptr && str->size() <= kLongString) {
        ++s.strings;
        if (!s.many_values && ++s.values[*str] && s.values.size() > kMaxStates) {
          s.many_values = true;
          s.values.clear();
        }
      }
    });
  return stats;
}

bool Contains(const Value& holder, const Value& id) {
  if (const Array* a = holder.as_array())
    return std::any_of(a->begin(), a->end(), [&](const Value& e) { return e == id; });
  return holder == id;
}

// A reference from a path of the transactions to the documents of one collection.
struct Reference {
  std::string path;
  std::string collection;
  std::string key = "_id";
  std::int64_t values = 0, found = 0;
  std::map<std::string, Document> docs;  // by the value's ToString()
};

// The documents of `ns` whose `key` is one of `values`, by that value's ToString().
Status Lookup(Store* store, const Namespace& ns, const std::string& key,
              const std::vector<Value>& values, std::map<std::string, Document>* out) {
  out->clear();
  if (values.empty()) return Status::Ok();
  FindOptions o;
  o.limit = static_cast<std::int64_t>(values.size()) * 2;
  std::unique_ptr<Cursor> cursor;
  if (Status s = store->Find(ns, Filter().In(key, values), o, &cursor); !s.ok()) return s;
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) return Status::Ok();
    if (const Value* k = d.GetPath(key)) out->emplace(k->ToString(), d);
  }
}

// How many of a collection's sampled documents tell its key fields and its tags.
constexpr std::size_t kFew = 50;

// The fields of a collection that may name its documents: _id, and the top-level fields of
// a few of its documents (`sample`) whose values are key-like and all different.
void KeyCandidates(const std::vector<Document>* sample, std::vector<std::string>* keys) {
  keys->assign(1, "_id");
  std::map<std::string, std::set<std::string>> seen;
  std::map<std::string, std::int64_t> count;
  // A key other than _id is a name (a string or an ObjectId): a number of a participant is
  // a quantity, which an amount of a transaction may equal by chance.
  for (const Document& d : *sample)
    for (const auto& [k, v] : d)
      if (k != "_id" && IsKeyLike(v) && !v.is_number()) {
        seen[k].insert(v.ToString());
        ++count[k];
      }
  const auto n = static_cast<std::int64_t>(sample->size());
  for (const auto& [k, values] : seen)
    if (count[k] * 10 >= n * 9 && std::ssize(values) == count[k] && n > 1) keys->push_back(k);
}

// What the data shows of one value of the state field.
struct StateEvidence {
  std::string value;
  std::int64_t count = 0;
  std::int64_t followed = 0;  // of them, transactions whose participants were read
  std::int64_t marked = 0;    // holding a marker (or tagged documents) somewhere
  std::int64_t prefix = 0;    // an early step marked, a later one not: being applied
  std::int64_t suffix = 0;    // a later step marked, an early one not: being finished
  std::optional<TxnState> role;
  std::string why;
};

// The markers of one followed transaction, one per step in the steps' order.
using Marks = std::vector<bool>;

void AddMarks(StateEvidence* e, const Marks& marks) {
  ++e->followed;
  const auto n = std::count(marks.begin(), marks.end(), true);
  if (n == 0) return;
  ++e->marked;
  if (static_cast<std::size_t>(n) == marks.size()) return;
  // Marked steps forming a prefix (1..1 0..0) or a suffix (0..0 1..1) of the steps.
  const auto first_unmarked = std::find(marks.begin(), marks.end(), false);
  if (std::find(first_unmarked, marks.end(), true) == marks.end()) ++e->prefix;
  const auto first_marked = std::find(marks.begin(), marks.end(), true);
  if (std::find(first_marked, marks.end(), false) == marks.end()) ++e->suffix;
}

struct Inferred {
  CollectionProposal out;
  std::vector<std::string> keys;            // "key = value" lines of the watch
  std::vector<std::string> state_lines;     // lines of [watch.states]
  std::vector<std::string> undecided_keys;  // commented-out lines
};

using Tags = std::map<std::string, std::pair<std::string, std::set<std::string>>>;

// What one collection's inference has found so far.
struct Context {
  std::string collection;
  std::vector<const Document*> docs, follow;
  std::int64_t n = 0;
  std::map<std::string, PathStats> stats;
  bool object_ids = false;
  std::string ops_path;
  std::vector<Reference> refs;
  std::map<std::string, std::int64_t> marker_fields;
  std::vector<Marks> marks;
  std::int64_t participants_read = 0;
  Tags tags;
  std::string valid_field;
  std::string state_field;
  std::string kind;
  const Reference* source = nullptr;
  const Reference* destination = nullptr;
  std::vector<std::string> amount_paths;
  Profile documented;
  StateAliases recognised;
  std::string marker;
  Inferred* r = nullptr;
  CollectionProposal& out() { return r->out; }
  bool IsRef(const std::string& path) const {
    return std::any_of(refs.begin(), refs.end(),
                       [&path](const Reference& x) { return x.path == path; });
  }
};

// The top-level fields of `sample` that could tag a transaction whose _id is like `id`.
std::set<std::string> TagCandidates(const std::vector<Document>& sample, const Value& id) {
  std::set<std::string> fields;
  for (const Document& d : sample)
    for (const auto& [k, v] : d)
      if (k != "_id" && IsKeyLike(v) && v.storage().index() == id.storage().index())
        fields.insert(k);
  return fields;
}

// The transactions among `ids` that `field` of the documents of `ns` names.
Status NamedBy(Store* store, const Namespace& ns, const std::string& field,
               const std::vector<Value>& ids, std::set<std::string>* named) {
  FindOptions o;
  o.projection = {field};
  std::unique_ptr<Cursor> cursor;
  if (Status s = store->Find(ns, Filter().In(field, ids), o, &cursor); !s.ok()) return s;
  Document d;
  for (bool has = true;;) {
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    if (!has) return Status::Ok();
    if (const Value* v = d.Get(field)) named->insert(v->ToString());
  }
}

class Inferrer {
 public:
  Inferrer(Store* store, std::string database, const ProposeOptions& options,
           std::vector<std::string> others)
      : store_(store), db_(std::move(database)), o_(options), others_(std::move(others)) {}

  Status Run(const std::string& collection, const std::vector<const Document*>& docs, Inferred* r);

  // The sample of `collection` ($sample of the options' size), read once: the one read
  // ahead of its turn when another collection's references needed it, else a new one. Its
  // first documents are kept for the references of the collections after it.
  Status TakeSample(const std::string& collection, std::vector<Document>* docs);

 private:
  // The first documents of `collection`'s sample, reading the sample if it was not yet.
  Status Few(const std::string& collection, const std::vector<Document>** few);
  Status FindReferences(const std::string& collection, const std::vector<const Document*>& follow,
                        const std::map<std::string, PathStats>& stats,
                        std::vector<Reference>* refs);
  Status FindTags(const std::string& collection, const std::vector<const Document*>& follow,
                  Tags* tags, std::vector<std::string>* notes, std::string* valid_field);
  Status Structure(Context* c);
  Status Markers(Context* c);
  Status OperationMarkers(Context* c);

  Store* store_;
  std::string db_;
  const ProposeOptions& o_;
  std::vector<std::string> others_;
  std::map<std::string, std::vector<std::string>> keys_cache_;
  // One $sample per collection: on servers that answer it by reading the whole collection
  // (the embedded test server sorts it at random), each one more is a pass over it.
  std::map<std::string, std::vector<Document>> ahead_, few_;
};

Status Inferrer::TakeSample(const std::string& collection, std::vector<Document>* docs) {
  if (auto it = ahead_.find(collection); it != ahead_.end()) {
    *docs = std::move(it->second);
    ahead_.erase(it);
  } else if (Status s = store_->Sample({db_, collection}, o_.sample_size, docs); !s.ok()) {
    return s;
  }
  if (!few_.count(collection))
    few_[collection].assign(
        docs->begin(), docs->begin() + static_cast<std::ptrdiff_t>(std::min(kFew, docs->size())));
  return Status::Ok();
}

Status Inferrer::Few(const std::string& collection, const std::vector<Document>** few) {
  if (!few_.count(collection)) {
    std::vector<Document> docs;
    if (Status s = TakeSample(collection, &docs); !s.ok()) return s;
    ahead_[collection] = std::move(docs);
  }
  *few = &few_[collection];
  return Status::Ok();
}

Status Inferrer::FindReferences(const std::string& collection,
                                const std::vector<const Document*>& follow,
                                const std::map<std::string, PathStats>& stats,
                                std::vector<Reference>* refs) {
  const auto n = static_cast<std::int64_t>(follow.size());
  for (const auto& [path, s] : stats) {
    if (path == "_id" || s.keys * 2 < static_cast<std::int64_t>(s.present) || s.present * 2 < n)
      continue;
    std::vector<Value> values;
    std::set<std::string> distinct;
    for (const Document* d : follow)
      if (const Value* v = d->GetPath(path); v != nullptr && IsKeyLike(*v))
        if (distinct.insert(v->ToString()).second) values.push_back(*v);
    std::optional<Reference> best;
    for (const std::string& other : others_) {
      if (other == collection) continue;
      auto cached = keys_cache_.find(other);
      if (cached == keys_cache_.end()) {
        std::vector<std::string> keys;
        const std::vector<Document>* few = nullptr;
        if (Status st = Few(other, &few); !st.ok()) return st;
        KeyCandidates(few, &keys);
        cached = keys_cache_.emplace(other, std::move(keys)).first;
      }
      for (const std::string& key : cached->second) {
        Reference r{path, other, key, static_cast<std::int64_t>(values.size()), 0, {}};
        if (Status st = Lookup(store_, {db_, other}, key, values, &r.docs); !st.ok()) return st;
        r.found = static_cast<std::int64_t>(r.docs.size());
        if (r.found * 5 >= r.values * 4 && r.found > 0 && (!best || r.found > best->found))
          best = std::move(r);
      }
    }
    if (best) refs->push_back(std::move(*best));
  }
  std::sort(refs->begin(), refs->end(), [&](const Reference& a, const Reference& b) {
    return stats.at(a.path).order < stats.at(b.path).order;
  });
  return Status::Ok();
}

// The documents of other collections that carry a transaction's _id in a top-level field
// (tagged inserts): by collection, the tag field and the transactions that have some.
Status Inferrer::FindTags(const std::string& collection, const std::vector<const Document*>& follow,
                          Tags* tags, std::vector<std::string>* notes, std::string* valid_field) {
  std::vector<Value> ids;
  for (const Document* d : follow)
    if (const Value* id = d->Get("_id")) ids.push_back(*id);
  if (ids.empty()) return Status::Ok();
  // A tag names its transaction by an ObjectId or a string: numbers equal to numeric _ids
  // are too common by chance (a price, a quantity) to tell a tag.
  if (ids.front().is_number()) return Status::Ok();
  for (const std::string& other : others_) {
    if (other == collection) continue;
    const std::vector<Document>* few = nullptr;
    if (Status s = Few(other, &few); !s.ok()) return s;
    const std::vector<Document>& sample = *few;
    const std::set<std::string> fields = TagCandidates(sample, ids.front());
    // Each candidate field: the transactions it names. A tag is removed when its transaction
    // finishes; a field that keeps naming the transaction (a record of where a document came
    // from) names more of them.
    std::vector<std::pair<std::string, std::set<std::string>>> found;
    for (const std::string& f : fields) {
      std::set<std::string> named;
      if (Status s = NamedBy(store_, {db_, other}, f, ids, &named); !s.ok()) return s;
      if (!named.empty()) found.emplace_back(f, std::move(named));
    }
    if (found.empty()) continue;
    std::sort(found.begin(), found.end(),
              [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    if (found.size() > 1 && found[0].second.size() == found[1].second.size()) {
      notes->push_back("in '" + other + "', '" + found[0].first + "' and '" + found[1].first +
                       "' both carry the _ids of " + WithThousands(std::ssize(found[0].second)) +
                       " transactions: which one is the tag the transaction removes when it "
                       "finishes cannot be told");
      continue;
    }
    (*tags)[other] = found.front();
    if (found.size() > 1)
      notes->push_back("in '" + other + "', '" + found[1].first + "' names " +
                       WithThousands(std::ssize(found[1].second)) + " transactions and '" +
                       found[0].first + "' " + WithThousands(std::ssize(found[0].second)) +
                       ": the one removed when a transaction finishes is the tag");
    // The validity flag: a boolean set on the documents whose tag is gone.
    for (const Document& d : sample)
      if (d.Get(found.front().first) == nullptr)
        for (const auto& [k, v] : d)
          if (std::holds_alternative<bool>(v.storage()) && std::get<bool>(v.storage()))
            *valid_field = k;
  }
  return Status::Ok();
}

std::string StepsToml(const std::vector<std::string>& steps) {
  std::string out = "steps = [\n";
  for (const std::string& s : steps) out += "  " + s + ",\n";
  return out + "]";
}

bool IsOperation(const Value& op) {
  const Document* od = op.as_document();
  return od != nullptr && od->Get("collection") != nullptr && od->Get("collection")->is_string() &&
         od->Get("_id") != nullptr;
}

// The _id type, and the structure: a list of operations, or references to other collections.
Status Inferrer::Structure(Context* c) {
  std::map<std::string, std::int64_t> id_types;
  for (const Document* d : c->docs)
    if (const Value* id = d->Get("_id")) ++id_types[std::string(id->type_name())];
  c->object_ids = id_types.size() == 1 && id_types.begin()->first == "objectId";
  std::string line = "_id:";
  for (const auto& [t, k] : id_types) line += " " + t + " in " + Of(k, c->n);
  c->out().evidence.push_back(line);
  for (const auto& [path, s] : c->stats) {
    if (s.arrays * 2 < c->n) continue;
    std::int64_t lists = 0;
    for (const Document* d : c->docs)
      if (const Value* v = d->GetPath(path); v != nullptr && v->is_array() &&
                                             !v->as_array()->empty() &&
                                             IsOperation(v->as_array()->front()))
        ++lists;
    if (lists * 2 >= c->n) c->ops_path = path;
  }
  if (!c->ops_path.empty()) return Status::Ok();
  return FindReferences(c->collection, c->follow, c->stats, &c->refs);
}

// For each followed transaction, which of its operations' documents carry its _id.
Status Inferrer::OperationMarkers(Context* c) {
  std::map<std::string, std::vector<Value>> ids;  // by collection
  for (const Document* d : c->follow)
    if (const Array* ops = d->GetPath(c->ops_path)->as_array())
      for (const Value& op : *ops)
        if (IsOperation(op))
          ids[*op.as_document()->Get("collection")->as_string()].push_back(
              *op.as_document()->Get("_id"));
  std::map<std::string, std::map<std::string, Document>> found;
  for (const auto& [coll, values] : ids)
    if (Status s = Lookup(store_, {db_, coll}, "_id", values, &found[coll]); !s.ok()) return s;
  for (std::size_t i = 0; i < c->follow.size(); ++i)
    if (const Array* ops = c->follow[i]->GetPath(c->ops_path)->as_array())
      for (const Value& op : *ops) {
        if (!IsOperation(op)) continue;
        auto& by_id = found[*op.as_document()->Get("collection")->as_string()];
        auto it = by_id.find(op.as_document()->Get("_id")->ToString());
        c->marks[i].push_back(false);
        if (it == by_id.end()) continue;
        ++c->participants_read;
        for (const auto& [k, v] : it->second)
          if (k != "_id" && Contains(v, *c->follow[i]->Get("_id"))) {
            ++c->marker_fields[k];
            c->marks[i].back() = true;
          }
      }
  return Status::Ok();
}

// The markers: for each followed transaction, which of its steps' participants carry its
// _id (or, for tagged inserts, whether documents carry its tag).
Status Inferrer::Markers(Context* c) {
  c->marks.assign(c->follow.size(), Marks{});
  if (!c->ops_path.empty()) return OperationMarkers(c);
  if (!c->refs.empty()) {
    for (std::size_t i = 0; i < c->follow.size(); ++i)
      for (const Reference& ref : c->refs) {
        const Value* v = c->follow[i]->GetPath(ref.path);
        auto it = v ? ref.docs.find(v->ToString()) : ref.docs.end();
        c->marks[i].push_back(false);
        if (it == ref.docs.end()) continue;
        ++c->participants_read;
        for (const auto& [k, value] : it->second)
          if (k != "_id" && Contains(value, *c->follow[i]->Get("_id"))) {
            ++c->marker_fields[k];
            c->marks[i].back() = true;
          }
      }
    return Status::Ok();
  }
  std::vector<std::string> notes;
  if (Status s = FindTags(c->collection, c->follow, &c->tags, &notes, &c->valid_field); !s.ok())
    return s;
  for (const std::string& note : notes) c->out().unsure.push_back(note);
  for (std::size_t i = 0; i < c->follow.size(); ++i) {
    bool tagged = false;
    for (const auto& [coll, tag] : c->tags)
      tagged = tagged || tag.second.count(c->follow[i]->Get("_id")->ToString()) > 0;
    c->marks[i].push_back(tagged);
  }
  return Status::Ok();
}

// Whether the values of `path` tell the followed transactions holding markers from the others.
bool Separates(const Context& c, const std::string& path) {
  std::map<std::string, std::pair<bool, bool>> seen;  // value -> (marked, unmarked)
  for (std::size_t i = 0; i < c.follow.size(); ++i) {
    const Value* v = c.follow[i]->GetPath(path);
    if (v == nullptr || !v->is_string()) continue;
    const bool m = std::find(c.marks[i].begin(), c.marks[i].end(), true) != c.marks[i].end();
    (m ? seen[*v->as_string()].first : seen[*v->as_string()].second) = true;
  }
  return std::any_of(seen.begin(), seen.end(), [](const auto& e) { return e.second.first; });
}

constexpr const char* kNoStateField =
    "no field holds one of a few repeated strings in nearly every document (a state)";

// Whether `path` may be the state field: a string of few repeated values in nearly every
// document (a reference aside, which the caller excludes).
bool MayBeState(const Context& c, const std::string& path, const PathStats& s) {
  // A state repeats: some value is held by two documents at least.
  return path != "_id" && !s.many_values && !s.values.empty() && s.strings * 10 >= c.n * 9 &&
         static_cast<std::int64_t>(s.values.size()) < s.strings;
}

// The state field: a string of few repeated values in nearly every document, not a
// reference. False when the collection holds no transactions or the field is undecided.
bool ChooseStateField(Context* c) {
  std::vector<std::string> candidates;
  for (const auto& [path, s] : c->stats)
    if (MayBeState(*c, path, s) && !c->IsRef(path)) candidates.push_back(path);
  if (candidates.size() > 1) {
    std::vector<std::string> separating;
    for (const auto& k : candidates)
      if (Separates(*c, k)) separating.push_back(k);
    if (separating.size() == 1) candidates = separating;
  }
  CollectionProposal& out = c->out();
  const bool structured = !c->ops_path.empty() || !c->refs.empty() || !c->tags.empty();
  if (candidates.empty() || !structured) {
    out.verdict = Verdict::kNotTransactions;
    out.why = candidates.empty()
                  ? std::string(kNoStateField)
                  : "'" + candidates.front() +
                        "' could be a state, but no field names documents of another "
                        "collection, no field lists operations, and no document of another "
                        "collection carries these documents' _ids";
    return false;
  }
  if (candidates.size() > 1) {
    std::string names;
    for (const auto& k : candidates) names += (names.empty() ? "'" : ", '") + k + "'";
    out.unsure.push_back("state field: " + names +
                         " each hold a few repeated strings in nearly every document; the data "
                         "cannot tell which is the state");
    c->r->undecided_keys.push_back("# state_field = ?   (one of " + names + ")");
    out.verdict = Verdict::kUndecided;
    return false;
  }
  c->state_field = candidates.front();
  return true;
}

// The profile, from the structure; the spellings its states are recognised by.
void ChooseProfile(Context* c) {
  for (const auto& [path, s] : c->stats)
    if (!c->IsRef(path) && path != "_id" && s.numbers * 10 >= c->n * 9 && s.numbers == s.present)
      c->amount_paths.push_back(path);
  const auto& refs = c->refs;
  if (!c->ops_path.empty()) {
    c->kind = "operations";
  } else if (!c->tags.empty()) {
    c->kind = "tagged-insert";
  } else if (refs.size() == 2 && refs[0].collection == refs[1].collection &&
             refs[0].key == refs[1].key && c->amount_paths.size() == 1 &&
             refs[0].path.find('.') == std::string::npos &&
             refs[1].path.find('.') == std::string::npos) {
    c->kind = "transfer";
    c->source = &refs[0];
    c->destination = &refs[1];
  } else {
    c->kind = "steps";
  }
  c->out().profile = c->kind;
  c->documented = *Profile::Named(c->kind);
  // For steps (any application), the spellings of the transfer and of the operations
  // profiles, which the project documents, are recognised too.
  c->recognised = c->documented.states;
  const Profile operations = Profile::Operations();
  if (c->kind == "steps")
    for (const TxnState st : kAllTxnStates)
      for (const std::string& v : operations.states.For(st))
        if (!c->recognised.Parse(v)) c->recognised.For(st).push_back(v);
}

// The participants' marker field. False when references lead to documents that never carry
// a transaction's _id (no transactions).
bool ChooseMarker(Context* c) {
  if (c->kind == "tagged-insert") return true;
  const Profile& d = c->documented;
  const std::string default_marker = c->kind == "operations" ? d.operations()->marker_field
                                     : c->kind == "transfer" ? d.transfer()->marker_field
                                                             : d.steps()->marker_field;
  CollectionProposal& out = c->out();
  if (c->marker_fields.empty()) {
    c->marker = default_marker;
    out.unsure.push_back("no participant of the " + WithThousands(std::ssize(c->follow)) +
                         " transactions followed carries a marker (none in flight): the "
                         "marker field is the profile's, '" +
                         default_marker + "', not seen in the data");
  } else {
    c->marker = std::max_element(c->marker_fields.begin(), c->marker_fields.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; })
                    ->first;
    out.evidence.push_back("marker: '" + c->marker + "' carries the transaction's _id on " +
                           WithThousands(c->marker_fields[c->marker]) + " of the " +
                           WithThousands(c->participants_read) + " participants read");
    if (c->marker_fields.size() > 1)
      out.unsure.push_back(std::to_string(c->marker_fields.size()) +
                           " fields of the participants carry a transaction's _id; '" + c->marker +
                           "' most often");
  }
  if (c->kind == "steps" && c->marker_fields.empty()) {
    out.verdict = Verdict::kNotTransactions;
    out.why = "'" + c->state_field +
              "' could be a state and some fields name documents of other collections, but "
              "no document named carries a transaction's _id (a marker)";
    return false;
  }
  return true;
}

// The time field: a date in most documents; else what ages a transaction without one.
void ChooseTime(Context* c) {
  std::string time_field;
  std::int64_t present = 0;
  for (const auto& [path, s] : c->stats)
    if (s.dates > present && s.dates == s.present) {
      time_field = path;
      present = s.dates;
    }
  if (!time_field.empty() && present * 2 < c->n) time_field.clear();
  CollectionProposal& out = c->out();
  auto& keys = c->r->keys;
  if (!time_field.empty()) {
    out.evidence.push_back("time: '" + time_field + "' is a date in " + Of(present, c->n) +
                           " documents");
    const bool named = time_field != c->documented.time_field;
    if (named) keys.push_back("time_field = " + Quoted(time_field));
    if (present < c->n) {
      out.unsure.push_back(Of(c->n - present, c->n) + " documents had no " + time_field +
                           ": aged from the daemon's first sighting");
      if (named || c->kind == "tagged-insert") keys.push_back("missing_time = \"first_seen\"");
    }
  } else if (c->object_ids) {
    out.evidence.push_back("time: none; every _id is an ObjectId, whose creation time ages it");
    keys.push_back("missing_time = \"object_id\"");
  } else {
    out.evidence.push_back(
        "time: no field is a date in most documents: aged from the daemon's first sighting");
    if (c->documented.DefaultMissingTime(false) != MissingTime::kFirstSeen)
      keys.push_back("missing_time = \"first_seen\"");
  }
  if (c->state_field != c->documented.state_field)
    keys.push_back("state_field = " + Quoted(c->state_field));
}

// The numeric fields of nearly every participant `ref` read.
std::vector<std::string> ParticipantNumbers(const Reference& ref) {
  std::map<std::string, std::int64_t> numbers;
  for (const auto& [v, d] : ref.docs)
    for (const auto& [k, value] : d)
      if (k != "_id" && k != ref.key && value.is_number()) ++numbers[k];
  std::vector<std::string> out;
  for (const auto& [k, n] : numbers)
    if (n * 10 >= std::ssize(ref.docs) * 9) out.push_back(k);
  return out;
}

void OperationsAndTaggedKeys(Context* c) {
  CollectionProposal& out = c->out();
  auto& keys = c->r->keys;
  if (c->kind == "operations") {
    out.evidence.push_back("profile operations: '" + c->ops_path +
                           "' lists {collection, _id, ...} in most documents");
    if (c->ops_path != c->documented.operations()->operations_field)
      keys.push_back("operations_field = " + Quoted(c->ops_path));
    if (c->marker != c->documented.operations()->marker_field)
      keys.push_back("marker_field = " + Quoted(c->marker));
    return;
  }
  const TaggedInsertProfile& d = *c->documented.tagged_insert();
  std::string list, tag;
  for (const auto& [coll, t] : c->tags) {
    list += (list.empty() ? "" : ", ") + Quoted(coll);
    out.evidence.push_back("profile tagged-insert: documents of '" + coll + "' carry the _ids of " +
                           WithThousands(std::ssize(t.second)) + " transactions in '" + t.first +
                           "'");
    if (!tag.empty() && tag != t.first)
      out.unsure.push_back("the tagged collections use different tag fields");
    tag = t.first;
  }
  keys.push_back("tagged_collections = [" + list + "]");
  if (tag != d.tag_field) keys.push_back("tag_field = " + Quoted(tag));
  if (c->valid_field.empty())
    out.unsure.push_back(
        "no untagged document carries a true boolean: the validity flag is the profile's, '" +
        d.valid_field + "'");
  else if (c->valid_field != d.valid_field)
    keys.push_back("valid_field = " + Quoted(c->valid_field));
}

void TransferKeys(Context* c) {
  const TransferProfile& t = *c->documented.transfer();
  const Reference& src = *c->source;
  const Reference& dst = *c->destination;
  const std::string& amount = c->amount_paths[0];
  CollectionProposal& out = c->out();
  auto& keys = c->r->keys;
  out.evidence.push_back("profile transfer: '" + src.path + "' and '" + dst.path +
                         "' name documents of '" + src.collection + "' by " + src.key + " (" +
                         Of(src.found, src.values) + " and " + Of(dst.found, dst.values) +
                         " values found), '" + amount + "' is a number in " +
                         Of(c->stats.at(amount).numbers, c->n));
  if (src.path != t.source_field || dst.path != t.destination_field)
    out.unsure.push_back("which of '" + src.path + "' and '" + dst.path +
                         "' is debited cannot be seen in the documents: the first in their "
                         "field order, '" +
                         src.path + "', is proposed as the source");
  if (src.collection != t.participants_collection)
    keys.push_back("participants = " + Quoted(src.collection));
  if (src.path != t.source_field) keys.push_back("source_field = " + Quoted(src.path));
  if (dst.path != t.destination_field) keys.push_back("destination_field = " + Quoted(dst.path));
  if (amount != t.amount_field) keys.push_back("amount_field = " + Quoted(amount));
  if (src.key != t.participant_key) keys.push_back("participant_key = " + Quoted(src.key));
  const auto balances = ParticipantNumbers(src);
  if (balances.size() == 1) {
    out.evidence.push_back("balance: '" + balances[0] + "' is the only number of the " +
                           WithThousands(std::ssize(src.docs)) + " participants read");
    if (balances[0] != t.balance_field) keys.push_back("balance_field = " + Quoted(balances[0]));
  } else {
    out.unsure.push_back("the participants hold " + std::to_string(balances.size()) +
                         " numeric fields: which is the balance cannot be told");
    c->r->undecided_keys.push_back("# balance_field = ?");
  }
  if (c->marker != t.marker_field) keys.push_back("marker_field = " + Quoted(c->marker));
  out.unsure.push_back(
      "require_funds (debit only while the balance covers the amount) is the "
      "application's rule, not the data's: set it if the application has it");
}

void StepsKeys(Context* c) {
  CollectionProposal& out = c->out();
  const std::string amount = c->amount_paths.size() == 1 ? c->amount_paths[0] : "";
  if (amount.empty()) {
    out.unsure.push_back(std::to_string(c->amount_paths.size()) +
                         " numeric fields in the transactions: which is each step's amount "
                         "cannot be told");
    c->r->undecided_keys.push_back("# steps = ?   (each: collection, key_path, inc)");
  }
  std::vector<std::string> steps;
  for (const Reference& ref : c->refs) {
    const auto fields = ParticipantNumbers(ref);
    out.evidence.push_back("step: '" + ref.path + "' names documents of '" + ref.collection +
                           "' by " + ref.key + " (" + Of(ref.found, ref.values) + " found)");
    if (fields.size() != 1 || amount.empty()) {
      out.unsure.push_back("the documents of '" + ref.collection + "' hold " +
                           std::to_string(fields.size()) +
                           " numeric fields: which one the step changes cannot be told");
      if (fields.size() != 1) c->r->undecided_keys.push_back("# steps = ?");
      continue;
    }
    std::string step = "{collection = " + Quoted(ref.collection);
    if (ref.key != "_id") step += ", key = " + Quoted(ref.key);
    step += ", key_path = " + Quoted(ref.path) + ", inc = {" + fields[0] + " = " + Quoted(amount) +
            "}}";
    steps.push_back(step);
  }
  if (!steps.empty()) {
    out.unsure.push_back(
        "the direction of each change cannot be seen in the documents: each "
        "step is proposed as an increase by '" +
        amount + "'; write \"-" + amount + "\" for a step that takes the amount away");
    c->r->keys.push_back(StepsToml(steps));
  }
  if (c->marker != c->documented.steps()->marker_field)
    c->r->keys.push_back("marker_field = " + Quoted(c->marker));
}

// Every value of the state field, most frequent first, with what the data shows of it.
std::map<std::string, StateEvidence> StateValues(Context* c) {
  std::map<std::string, StateEvidence> by_value;
  std::int64_t without_state = 0;
  for (const Document* d : c->docs) {
    const Value* v = d->GetPath(c->state_field);
    if (v == nullptr || !v->is_string()) {
      ++without_state;
      continue;
    }
    StateEvidence& e = by_value[*v->as_string()];
    e.value = *v->as_string();
    ++e.count;
  }
  for (std::size_t i = 0; i < c->follow.size(); ++i)
    if (const Value* v = c->follow[i]->GetPath(c->state_field); v != nullptr && v->is_string())
      AddMarks(&by_value[*v->as_string()], c->marks[i]);
  if (without_state > 0)
    c->out().unsure.push_back(Of(without_state, c->n) + " documents had no string '" +
                              c->state_field + "': a sweep quarantines them");
  return by_value;
}

bool HoldsMarkers(TxnState s) {
  return s == TxnState::kPending || s == TxnState::kApplied || s == TxnState::kCanceling;
}

// A value not decided by its spelling, by its evidence.
void ByEvidence(const Context& c, StateEvidence* e, bool most_frequent, std::set<TxnState>* taken) {
  const std::string seen = Of(e->count, c.n) + " documents";
  const std::string markers = e->followed == 0
                                  ? "none of them followed"
                                  : Of(e->marked, e->followed) + " followed hold a marker";
  const bool steps = c.kind != "tagged-insert";
  if (e->count == 1) {
    e->why = "seen once (" + markers + "): too little to tell which state it is";
  } else if (steps && e->marked > 0 && e->prefix > 0 && e->suffix == 0 &&
             !taken->count(TxnState::kPending)) {
    e->role = TxnState::kPending;
    e->why = seen + ", " + markers + ", " + WithThousands(e->prefix) +
             " with an early step marked and a later one not: the steps are applied in it";
  } else if (steps && e->marked > 0 && e->suffix > 0 && e->prefix == 0 &&
             !taken->count(TxnState::kApplied)) {
    e->role = TxnState::kApplied;
    e->why = seen + ", " + markers + ", " + WithThousands(e->suffix) +
             " with a later step marked and an early one not: the markers are pulled in it";
  } else if (e->marked > 0) {
    e->why = seen + ", " + markers +
             ": in flight (pending, applied or canceling), but no transaction in it shows the "
             "order its markers come or go in";
  } else if (most_frequent && !taken->count(TxnState::kDone) && e->followed > 0) {
    e->role = TxnState::kDone;
    e->why = seen + ", the most frequent, " + markers + ": the finished state";
  } else {
    e->why = seen + ", " + markers +
             ": a transaction not started yet (initial) or one cancelled; nothing in the "
             "documents tells them apart";
  }
  if (e->role) taken->insert(*e->role);
}

// Each value's state: by a documented spelling the evidence agrees with, else by evidence.
std::vector<StateEvidence*> AssignStates(Context* c, std::map<std::string, StateEvidence>* all,
                                         std::set<TxnState>* taken) {
  std::vector<StateEvidence*> values;
  for (auto& [v, e] : *all) values.push_back(&e);
  std::stable_sort(
      values.begin(), values.end(),
      [](const StateEvidence* a, const StateEvidence* b) { return a->count > b->count; });
  for (StateEvidence* e : values) {
    std::optional<TxnState> s = c->recognised.Parse(e->value);
    if (!s) continue;
    if (e->marked > 0 && !HoldsMarkers(*s)) {
      e->why = "the profile's spelling of " + std::string(TxnStateName(*s)) + ", but " +
               Of(e->marked, e->followed) +
               " of its transactions followed hold a marker: not taken";
      continue;
    }
    e->role = s;
    e->why = "the profile's documented spelling";
    taken->insert(*s);
  }
  for (StateEvidence* e : values)
    if (!e->role && e->why.empty()) ByEvidence(*c, e, e == values.front(), taken);
  return values;
}

// The [watch.states] lines: each state whose spellings seen differ from the profile's.
void StateLines(Context* c, const std::vector<StateEvidence*>& values,
                const std::set<TxnState>& taken) {
  CollectionProposal& out = c->out();
  for (const StateEvidence* e : values) {
    const std::string role = e->role ? std::string(TxnStateName(*e->role)) : "?";
    out.evidence.push_back("state " + Quoted(e->value) + " -> " + role + ": " + e->why);
    if (e->role) continue;
    out.unsure.push_back("state " + Quoted(e->value) + ": " + e->why);
    c->r->undecided_keys.push_back("# ? = [" + Quoted(e->value) + "]   (" +
                                   WithThousands(e->count) + " documents; see above)");
  }
  for (const TxnState s : kAllTxnStates) {
    std::vector<std::string> seen;  // most frequent first: the one the daemon writes
    for (const StateEvidence* e : values)
      if (e->role == s) seen.push_back(e->value);
    const auto& defaults = c->documented.states.For(s);
    const bool same = !seen.empty() && !defaults.empty() && seen.front() == defaults.front() &&
                      std::all_of(seen.begin(), seen.end(), [&](const std::string& v) {
                        return std::find(defaults.begin(), defaults.end(), v) != defaults.end();
                      });
    if (seen.empty() || same) continue;
    std::string list;
    for (const auto& v : seen) list += (list.empty() ? "" : ", ") + Quoted(v);
    c->r->state_lines.push_back(std::string(TxnStateName(s)) + " = [" + list + "]");
  }
  const bool foreign = std::any_of(values.begin(), values.end(), [&](const StateEvidence* e) {
    return !c->recognised.Parse(e->value);
  });
  for (const TxnState s : kAllTxnStates)
    if (!taken.count(s) && !c->documented.states.For(s).empty() && foreign)
      out.unsure.push_back(
          std::string(TxnStateName(s)) + ": not seen in the sample; the profile's spelling " +
          Quoted(c->documented.states.Written(s)) + " is what the daemon writes there");
  if (!taken.count(TxnState::kPending) && c->kind != "tagged-insert")
    out.unsure.push_back("no value is known to be the state the steps are applied in (pending)");
}

Status Inferrer::Run(const std::string& collection, const std::vector<const Document*>& docs,
                     Inferred* r) {
  Context c;
  c.r = r;
  c.collection = collection;
  c.docs = docs;
  c.n = std::ssize(docs);
  c.stats = Statistics(docs, o_.lease_field);
  c.follow.assign(docs.begin(), docs.begin() + std::min<std::int64_t>(c.n, o_.follow));
  // Without a field that may be a state, the collection holds no transactions whatever its
  // references: said before they are followed, which reads other collections by fields they
  // may have no index on (the participants of a million transactions scanned the
  // transactions collection once per key-like field of theirs, then once per field that
  // might tag them).
  if (std::none_of(c.stats.begin(), c.stats.end(),
                   [&c](const auto& e) { return MayBeState(c, e.first, e.second); })) {
    r->out.verdict = Verdict::kNotTransactions;
    r->out.why = kNoStateField;
    return Status::Ok();
  }
  if (Status s = Structure(&c); !s.ok()) return s;
  if (Status s = Markers(&c); !s.ok()) return s;
  if (!ChooseStateField(&c)) return Status::Ok();
  ChooseProfile(&c);
  if (!ChooseMarker(&c)) return Status::Ok();
  ChooseTime(&c);
  if (c.kind == "transfer")
    TransferKeys(&c);
  else if (c.kind == "steps")
    StepsKeys(&c);
  else
    OperationsAndTaggedKeys(&c);
  std::map<std::string, StateEvidence> all = StateValues(&c);
  std::set<TxnState> taken;
  const std::vector<StateEvidence*> values = AssignStates(&c, &all, &taken);
  StateLines(&c, values, taken);
  r->out.verdict = r->undecided_keys.empty() ? Verdict::kProposed : Verdict::kUndecided;
  return Status::Ok();
}

// Groups of documents of different shapes: by their top-level keys, a set that is a subset of
// another's (an optional field) counted with it. Two groups that share less than half of their
// keys are two shapes.
std::vector<std::vector<const Document*>> Shapes(const std::vector<Document>& docs,
                                                 const std::string& lease) {
  std::map<std::set<std::string>, std::vector<const Document*>> by_keys;
  for (const Document& d : docs) {
    std::set<std::string> keys;
    for (const auto& [k, v] : d)
      if (k != "_id" && k != lease) keys.insert(k);
    by_keys[keys].push_back(&d);
  }
  std::vector<std::pair<std::set<std::string>, std::vector<const Document*>>> groups;
  for (auto& [keys, members] : by_keys) {
    bool merged = false;
    for (auto& [gkeys, gmembers] : groups) {
      std::set<std::string> both;
      std::set_intersection(keys.begin(), keys.end(), gkeys.begin(), gkeys.end(),
                            std::inserter(both, both.end()));
      if (both.size() * 2 > std::min(keys.size(), gkeys.size())) {
        gkeys.insert(keys.begin(), keys.end());
        gmembers.insert(gmembers.end(), members.begin(), members.end());
        merged = true;
        break;
      }
    }
    if (!merged) groups.emplace_back(keys, members);
  }
  std::vector<std::vector<const Document*>> out;
  const std::size_t least = std::max<std::size_t>(2, docs.size() / 20);
  for (auto& [keys, members] : groups)
    if (members.size() >= least) out.push_back(std::move(members));
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return out;
}

std::string WatchToml(const std::string& database, const std::string& collection,
                      const Inferred& r) {
  std::ostringstream os;
  os << "[[watch]]\nname = " << Quoted(database + "-" + collection)
     << "\ndatabase = " << Quoted(database) << "\ncollection = " << Quoted(collection)
     << "\nprofile = " << Quoted(r.out.profile) << "\n";
  for (const auto& k : r.keys) os << k << "\n";
  for (const auto& k : r.undecided_keys)
    if (k.rfind("# ?", 0) != 0) os << k << "\n";
  if (!r.state_lines.empty() ||
      std::any_of(r.undecided_keys.begin(), r.undecided_keys.end(),
                  [](const std::string& k) { return k.rfind("# ?", 0) == 0; })) {
    os << "[watch.states]\n";
    for (const auto& l : r.state_lines) os << l << "\n";
    for (const auto& k : r.undecided_keys)
      if (k.rfind("# ?", 0) == 0) os << k << "\n";
  }
  return os.str();
}

}  // namespace

namespace {

// A collection of several shapes of document (`shapes`): each one's proposal shown, the
// choice left to the operator.
Status ProposeMixed(Inferrer* inferrer, const std::string& database,
                    const std::vector<std::vector<const Document*>>& shapes,
                    CollectionProposal* c) {
  c->verdict = Verdict::kMixed;
  c->why = std::to_string(shapes.size()) +
           " shapes of document in one collection; a watch reads one: each is shown, "
           "choose (or separate the collections)";
  for (const auto& group : shapes) {
    Inferred part;
    if (Status s = inferrer->Run(c->collection, group, &part); !s.ok()) return s;
    std::string block = "shape of " + Of(std::ssize(group), c->sampled) + " documents: ";
    if (part.out.verdict == Verdict::kNotTransactions) {
      c->evidence.push_back(block + "no transaction: " + part.out.why);
      continue;
    }
    c->evidence.push_back(block + "profile " + part.out.profile);
    for (const auto& e : part.out.evidence) c->evidence.push_back("  " + e);
    std::istringstream lines(WatchToml(database, c->collection, part));
    for (std::string line; std::getline(lines, line);) c->watch_toml += "# " + line + "\n";
  }
  return Status::Ok();
}

}  // namespace

Status Propose(Store* store, const std::string& database, const ProposeOptions& options,
               Proposal* proposal) {
  proposal->database = database;
  proposal->sample_size = options.sample_size;
  proposal->collections.clear();
  std::vector<std::string> names;
  if (Status s = store->ListCollections(database, &names); !s.ok()) return s;
  std::vector<std::string> others;
  for (const auto& name : names)
    if (std::find(options.own_collections.begin(), options.own_collections.end(), name) ==
        options.own_collections.end())
      others.push_back(name);
  Inferrer inferrer(store, database, options, others);
  for (const auto& name : names) {
    CollectionProposal c;
    c.collection = name;
    if (std::find(others.begin(), others.end(), name) == others.end()) {
      c.verdict = Verdict::kOwn;
      c.why = "the daemon's own collection";
      proposal->collections.push_back(std::move(c));
      continue;
    }
    std::vector<Document> docs;
    if (Status s = inferrer.TakeSample(name, &docs); !s.ok()) return s;
    c.sampled = static_cast<std::int64_t>(docs.size());
    if (docs.empty()) {
      c.verdict = Verdict::kEmpty;
      c.why = "empty: no document to read";
      proposal->collections.push_back(std::move(c));
      continue;
    }
    const auto shapes = Shapes(docs, options.lease_field);
    if (shapes.size() > 1) {
      if (Status s = ProposeMixed(&inferrer, database, shapes, &c); !s.ok()) return s;
      proposal->collections.push_back(std::move(c));
      continue;
    }
    std::vector<const Document*> all;
    for (const Document& d : docs) all.push_back(&d);
    Inferred r;
    r.out.collection = name;
    r.out.sampled = c.sampled;
    if (Status s = inferrer.Run(name, all, &r); !s.ok()) return s;
    if (r.out.verdict == Verdict::kProposed || r.out.verdict == Verdict::kUndecided)
      r.out.watch_toml = WatchToml(database, name, r);
    proposal->collections.push_back(std::move(r.out));
  }
  return Status::Ok();
}

std::string ProposalText(const Proposal& p) {
  std::ostringstream os;
  os << "# txn-recoveryd propose: database " << Quoted(p.database) << ", "
     << WithThousands(static_cast<std::int64_t>(p.collections.size())) << " collections, up to "
     << WithThousands(p.sample_size)
     << " documents sampled of each ($sample); nothing was written.\n"
     << "# Check it with `txn-recoveryd check-config --probe`, then `txn-recoveryd rehearse`.\n";
  for (const CollectionProposal& c : p.collections) {
    os << "\n# " << p.database << "." << c.collection;
    if (c.sampled > 0) os << " (" << WithThousands(c.sampled) << " sampled)";
    switch (c.verdict) {
      case Verdict::kProposed:
        os << ": profile " << c.profile << "\n";
        break;
      case Verdict::kUndecided:
        os << ": profile " << c.profile
           << ", UNDECIDED: the data cannot decide the keys left as '?' below\n";
        break;
      case Verdict::kMixed:
        os << ": MIXED, no watch: " << c.why << "\n";
        break;
      case Verdict::kNotTransactions:
      case Verdict::kEmpty:
      case Verdict::kOwn:
        os << ": no watch: " << c.why << "\n";
        continue;
    }
    for (const auto& e : c.evidence) os << "#   " << e << "\n";
    for (const auto& u : c.unsure) os << "#   UNSURE: " << u << "\n";
    os << c.watch_toml;
  }
  return os.str();
}

}  // namespace txn_recovery
