#include "txn_recovery/sweeper.h"

#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace txn_recovery {
namespace {

// A bounded queue between the cursor reader and the workers: memory stays proportional to
// the batch size however many transactions are stuck.
class WorkQueue {
 public:
  explicit WorkQueue(std::size_t capacity) : capacity_(capacity) {}

  void Push(Document doc) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    items_.push_back(std::move(doc));
    not_empty_.notify_one();
  }
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
  }
  // Waits for `max` documents (fewer once the queue is closed) and takes them: a worker
  // woken by the first document of a batch would otherwise take it alone. `max` must not
  // exceed the capacity. False once closed and empty.
  bool PopSome(std::vector<Document>* docs, std::size_t max) {
    docs->clear();
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return items_.size() >= max || closed_; });
    if (items_.empty()) return false;
    while (!items_.empty() && docs->size() < max) {
      docs->push_back(std::move(items_.front()));
      items_.pop_front();
    }
    not_full_.notify_all();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<Document> items_;
  std::size_t capacity_;
  bool closed_ = false;
};

DateTime Minus(DateTime t, std::chrono::milliseconds d) {
  return DateTime{t.millis - d.count()};
}

}  // namespace

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

// Every failure is counted on the document; at max_failures it is set aside with the
// last error instead of failing every sweep forever.
void Sweeper::CountFailure(StateMachine& machine, TxnReport* r) {
  std::int64_t failures = 0;
  if (!machine.RecordFailure(r->id, r->result.status.ToString(), &failures).ok()) return;
  if (failures < options_.max_failures) return;
  std::string reason = "failed " + std::to_string(failures) +
                       " times in a row; last error: " + r->result.status.ToString();
  if (machine.Quarantine(r->id, reason).ok()) {
    r->result.outcome = Outcome::kQuarantined;
    r->result.detail = reason;
  }
}

Sweeper::Sweeper(Store* store, Clock* clock, SweepOptions options)
    : store_(store), clock_(clock), options_(std::move(options)) {}

Filter Sweeper::CandidateFilter(const WatchSpec& w, DateTime now) {
  const Profile& p = w.profile;
  const Thresholds& t = w.thresholds;
  const StateAliases& s = p.states;
  const bool id_time = p.missing_time == MissingTime::kObjectIdTime;
  std::vector<Filter> alternatives;
  // Documents in one of `states` at least `min_age` old (and younger than `max_age`): by
  // their time field, or, when the profile allows it, by their ObjectId when it is absent.
  auto aged = [&](std::vector<Value> states, std::chrono::milliseconds min_age,
                  std::optional<std::chrono::milliseconds> max_age) {
    if (states.empty()) return;
    Filter by_time;
    by_time.In(p.state_field, states).Lt(p.time_field, Minus(now, min_age));
    if (max_age) by_time.Gte(p.time_field, Minus(now, *max_age));
    alternatives.push_back(std::move(by_time));
    if (!id_time) return;
    Filter by_id;
    by_id.In(p.state_field, std::move(states))
        .NotExists(p.time_field)
        .Lt("_id", ObjectId::AtTime(Minus(now, min_age).millis));
    if (max_age) by_id.Gte("_id", ObjectId::AtTime(Minus(now, *max_age).millis));
    alternatives.push_back(std::move(by_id));
  };
  aged(s.SpellingsOf({TxnState::kInitial}), t.initial_timeout, std::nullopt);
  if (p.ResumesPending()) {
    aged(s.SpellingsOf({TxnState::kPending, TxnState::kApplied, TxnState::kCanceling}),
         t.resume_after, std::nullopt);
  } else {
    // Pending ones are only ever rolled back: reading them sooner would be wasted.
    aged(s.SpellingsOf({TxnState::kPending}), t.rollback_after, std::nullopt);
    aged(s.SpellingsOf({TxnState::kApplied, TxnState::kCanceling}), t.resume_after, std::nullopt);
  }
  if (t.late_write_window > t.resume_after)
    aged(s.TerminalSpellings(), t.resume_after, t.late_write_window);
  // Documents that can never match the alternatives above must still be found, or they
  // would stay stuck without anyone knowing: unknown states and unreadable times.
  alternatives.push_back(Filter().Nin(p.state_field, s.AllSpellings()));
  if (id_time) {
    alternatives.push_back(Filter().NotExists(p.time_field).NotObjectId("_id"));
  } else {
    alternatives.push_back(Filter().NotExists(p.time_field));
  }
  alternatives.push_back(Filter().NotDateTime(p.time_field));
  Filter f;
  f.NotExists(w.lease_field + ".quarantine")
      .And(p.owner.Condition())
      .AnyOf(std::move(alternatives));
  return f;
}

Status Sweeper::IsPaused(Store* store, const WatchSpec& watch, bool* paused) {
  std::optional<Document> doc;
  if (Status s = store->FindOne(watch.control_ns(), Filter().Eq("_id", "pause"), &doc); !s.ok())
    return s;
  const Value* v = doc ? doc->Get("paused") : nullptr;
  *paused = v != nullptr && *v == Value(true);
  return Status::Ok();
}

Status Sweeper::SetPaused(Store* store, const WatchSpec& watch, bool paused,
                          const std::string& by) {
  const Namespace ns = watch.control_ns();
  std::optional<Document> existing;
  if (Status s = store->FindOne(ns, Filter().Eq("_id", "pause"), &existing); !s.ok()) return s;
  // There is no upsert in the Store algebra: create the document once (a concurrent
  // creator may win; its duplicate-key error is harmless), then update it.
  if (!existing) (void)store->InsertMany(ns, {Document{{"_id", "pause"}}});
  WriteResult r;
  Update u;
  u.Set("paused", paused).Set("by", by).CurrentDate("at");
  if (Status s = store->UpdateOne(ns, Filter().Eq("_id", "pause"), u, &r); !s.ok()) return s;
  if (r.matched == 0)
    return Status::ServerError("the pause switch of " + ns.ToString() + " could not be written");
  return Status::Ok();
}

Status Sweeper::Inspect(const WatchSpec& watch, StuckReport* report) {
  *report = StuckReport{};
  DateTime now;
  if (Status s = store_->ServerTime(&now); !s.ok()) return s;
  const Profile& p = watch.profile;
  const bool id_time = p.missing_time == MissingTime::kObjectIdTime;
  const DateTime stale = Minus(now, watch.thresholds.resume_after);
  const std::string quarantine = watch.lease_field + ".quarantine";
  Filter base;
  base.NotExists(quarantine).And(p.owner.Condition());
  // Stuck: older than resume_after by the time field, or by the ObjectId when it is absent.
  auto by_time = [&](std::vector<Value> states, DateTime cutoff = {}) {
    if (cutoff.millis == 0) cutoff = stale;
    return Filter(base).In(p.state_field, std::move(states)).Lt(p.time_field, cutoff);
  };
  auto by_id = [&](std::vector<Value> states, DateTime cutoff = {}) {
    if (cutoff.millis == 0) cutoff = stale;
    return Filter(base)
        .In(p.state_field, std::move(states))
        .NotExists(p.time_field)
        .Lt("_id", ObjectId::AtTime(cutoff.millis));
  };
  for (TxnState st :
       {TxnState::kInitial, TxnState::kPending, TxnState::kApplied, TxnState::kCanceling}) {
    if (p.states.For(st).empty()) continue;
    // A pending transaction the daemon cannot resume is the application's until it
    // expires: younger than rollback_after it is not stuck.
    DateTime cutoff = st == TxnState::kPending && !p.ResumesPending()
                          ? Minus(now, watch.thresholds.rollback_after)
                          : stale;
    std::int64_t n = 0, m = 0;
    if (Status s = store_->Count(watch.ns, by_time(p.states.SpellingsOf({st}), cutoff), &n);
        !s.ok())
      return s;
    if (id_time)
      if (Status s = store_->Count(watch.ns, by_id(p.states.SpellingsOf({st}), cutoff), &m);
          !s.ok())
        return s;
    if (n + m > 0) report->stuck[st] = n + m;
  }
  // The oldest: the first by time, and (ObjectId time) the first by _id among those without.
  auto first = [&](const Filter& f, const std::string& sort_by, std::optional<Document>* out) {
    FindOptions o;
    o.sort_ascending_by = sort_by;
    o.limit = 1;
    std::unique_ptr<Cursor> cursor;
    if (Status s = store_->Find(watch.ns, f, o, &cursor); !s.ok()) return s;
    Document d;
    bool has = false;
    if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
    *out = has ? std::optional<Document>(std::move(d)) : std::nullopt;
    return Status::Ok();
  };
  // Every stuck state, a pending one the daemon cannot resume only once it has expired.
  auto every_stuck = [&](const auto& by) {
    if (p.ResumesPending()) return by(p.states.NonTerminalSpellings(), stale);
    Filter f;
    f.AnyOf(
        {by(p.states.SpellingsOf({TxnState::kInitial, TxnState::kApplied, TxnState::kCanceling}),
            stale),
         by(p.states.SpellingsOf({TxnState::kPending}),
            Minus(now, watch.thresholds.rollback_after))});
    return f;
  };
  std::optional<Document> oldest;
  if (Status s = first(every_stuck(by_time), p.time_field, &oldest); !s.ok()) return s;
  if (oldest)
    if (const Value* t = oldest->GetPath(p.time_field); t && t->is_datetime())
      report->oldest_age = std::chrono::milliseconds(now.millis - t->as_datetime()->millis);
  if (id_time) {
    if (Status s = first(every_stuck(by_id), "_id", &oldest); !s.ok()) return s;
    if (oldest)
      if (const Value* id = oldest->Get("_id"); id && id->is_object_id()) {
        std::chrono::milliseconds age(now.millis - id->as_object_id()->CreationMillis());
        if (!report->oldest_age || age > *report->oldest_age) report->oldest_age = age;
      }
  }
  return store_->Count(watch.ns, Filter().Exists(quarantine), &report->quarantined);
}

Status Sweeper::SweepWatch(const WatchSpec& watch,
                           const std::function<void(const TxnReport&)>& on_txn,
                           WatchSummary* summary) {
  *summary = WatchSummary{};
  summary->watch = watch.name;

  bool paused = false;
  if (Status s = IsPaused(store_, watch, &paused); !s.ok()) {
    summary->status = s;
    return s;
  }
  if (paused) {
    summary->paused = true;
    return Status::Ok();
  }

  // One server-time query per sweep; later "now"s extrapolate with our monotonic clock so
  // that ages stay on the server's clock without a round trip per transaction.
  DateTime server_start;
  if (Status s = store_->ServerTime(&server_start); !s.ok()) {
    summary->status = s;
    return s;
  }
  const std::function<DateTime()> server_now = ServerNowFrom(clock_, server_start);

  StateMachine machine(store_, clock_, watch.ns, &watch.profile, watch.lease_field, options_.lease,
                       server_now);

  std::mutex report_mu;  // serializes on_txn and the summary counters
  auto report = [&](TxnReport&& r) {
    std::lock_guard lock(report_mu);
    const ExecuteResult& e = r.result;
    summary->counts[e.action][e.outcome]++;
    summary->late_writes_undone += e.late_writes_undone;
    switch (e.outcome) {
      case Outcome::kResolved:
        summary->resolved++;
        break;
      case Outcome::kBusy:
        summary->busy++;
        break;
      case Outcome::kFailed:
        summary->failed++;
        break;
      case Outcome::kQuarantined:
        summary->quarantined++;
        break;
      default:
        break;
    }
    if (on_txn && (e.outcome != Outcome::kUntouched || e.action != Action::kNone)) on_txn(r);
  };

  // Parses and decides one document. Returns true when it is to be executed (then *txn,
  // *action and *r are ready for it); otherwise it has been dealt with (set aside, planned
  // in a dry run, or left alone).
  auto prepare = [&](const Document& doc, Transaction* txn, Action* action, TxnReport* r) {
    r->watch = watch.name;
    if (const Value* id = doc.Get("_id")) r->id = *id;
    Status parsed = watch.profile.Parse(doc, watch.ns, watch.lease_field, txn);
    if (!parsed.ok()) {
      if (const Value* st = doc.GetPath(watch.profile.state_field); st && st->is_string())
        r->state_before = watch.profile.states.Parse(*st->as_string());
      r->result.action = Action::kQuarantine;
      r->result.detail = parsed.message();
      if (options_.dry_run) {
        r->result.outcome = Outcome::kPlanned;
        r->result.detail = "would quarantine: " + parsed.message();
      } else if (Status q = machine.Quarantine(r->id, parsed.message()); q.ok()) {
        r->result.outcome = Outcome::kQuarantined;
      } else {
        r->result.outcome = Outcome::kFailed;
        r->result.status = q;
        r->result.detail = "could not quarantine (" + q.ToString() + "): " + parsed.message();
      }
      report(std::move(*r));
      return false;
    }
    r->state_before = txn->state;
    *action = Decide(*txn, server_now(), watch.thresholds);
    if (*action == Action::kNone) return false;
    if (options_.dry_run) {
      r->result.action = *action;
      r->result.outcome = Outcome::kPlanned;
      r->result.final_state = txn->state;
      report(std::move(*r));
      return false;
    }
    return true;
  };
  auto conclude = [&](TxnReport&& r) {
    if (r.result.outcome == Outcome::kUntouched && r.result.late_writes_undone == 0) return;
    if (r.result.outcome == Outcome::kFailed && !r.result.status.IsUnavailable() &&
        !r.result.status.IsAborted())
      CountFailure(machine, &r);
    report(std::move(r));
  };
  // A chunk of documents at once: the transactions to act on go through ExecuteBatch, a
  // few round trips for the whole chunk instead of several per transaction.
  auto process = [&](std::vector<Document>& docs) {
    std::vector<Transaction> txns(docs.size());
    std::vector<TxnReport> reports(docs.size());
    std::vector<const Transaction*> batch;
    std::vector<Action> actions;
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      Action action = Action::kNone;
      if (!prepare(docs[i], &txns[i], &action, &reports[i])) continue;
      batch.push_back(&txns[i]);
      actions.push_back(action);
      index.push_back(i);
    }
    if (batch.empty()) return;
    std::vector<ExecuteResult> results = machine.ExecuteBatch(batch, actions);
    for (std::size_t k = 0; k < results.size(); ++k) {
      TxnReport& r = reports[index[k]];
      r.result = std::move(results[k]);
      conclude(std::move(r));
    }
  };

  auto stopping = [&] { return options_.stop && options_.stop->load(); };

  FindOptions find_options;
  find_options.batch_size = options_.batch_size;
  std::unique_ptr<Cursor> cursor;
  Status status =
      store_->Find(watch.ns, CandidateFilter(watch, server_start), find_options, &cursor);
  if (status.ok()) {
    const int workers = std::max(1, options_.workers);
    const std::size_t batch =
        static_cast<std::size_t>(std::max<std::int32_t>(1, options_.batch_size));
    // Each worker takes its share of a cursor batch as one chunk, so that the workers
    // share the batch the cursor just fetched rather than one takes all of it.
    const std::size_t chunk = std::max<std::size_t>(1, batch / static_cast<std::size_t>(workers));
    WorkQueue queue(batch);
    std::vector<std::thread> threads;
    if (workers > 1) {
      for (int i = 0; i < workers; ++i) {
        threads.emplace_back([&] {
          std::vector<Document> docs;
          while (queue.PopSome(&docs, chunk))
            if (!stopping()) process(docs);
        });
      }
    }
    Document doc;
    std::vector<Document> pending;
    while (true) {
      if (stopping()) {
        status = Status::Aborted("sweep stopped before it was complete");
        break;
      }
      bool has = false;
      if (Status s = cursor->Next(&doc, &has); !s.ok()) {
        status = s;
        break;
      }
      if (!has) break;
      summary->examined++;
      if (workers > 1) {
        queue.Push(std::move(doc));
      } else {
        pending.push_back(std::move(doc));
        if (pending.size() >= chunk) {
          process(pending);
          pending.clear();
        }
      }
    }
    if (!pending.empty() && !stopping()) process(pending);
    queue.Close();
    for (auto& t : threads) t.join();
    cursor.reset();
  }

  // Retention runs after the pass, so a transaction resolved just now is never a
  // candidate (it is younger than the late-write window anyway).
  if (status.ok() && !options_.dry_run && watch.retention.enabled()) {
    RetentionTarget target;
    target.transactions = watch.ns;
    target.finished.In(watch.profile.state_field, watch.profile.states.TerminalSpellings());
    target.time_field = watch.profile.time_field;
    target.lease_field = watch.lease_field;
    target.late_write_window = watch.thresholds.late_write_window;
    RetentionResult removed;
    status = RemoveFinished(store_, clock_, target, watch.retention, server_now(), options_.stop,
                            &removed);
    summary->finished_deleted = removed.deleted;
    summary->finished_archived = removed.archived;
    if (!status.ok() && !status.IsAborted()) status = status.WithContext("retention");
  }

  if (status.ok() || status.IsAborted()) {
    Filter quarantined;
    quarantined.Exists(watch.lease_field + ".quarantine");
    if (Status s = store_->Count(watch.ns, quarantined, &summary->quarantined_total);
        !s.ok() && status.ok())
      status = s;
  }
  summary->status = status;
  return status;
}

}  // namespace txn_recovery
