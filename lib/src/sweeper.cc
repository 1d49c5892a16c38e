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
  bool Pop(Document* doc) {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return false;
    *doc = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
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
  const TransferProfile& p = w.profile;
  const Thresholds& t = w.thresholds;
  const StateAliases& s = p.states;
  auto spellings = [&](std::initializer_list<TxnState> states) {
    std::vector<Value> out;
    for (TxnState st : states)
      for (const auto& name : s.For(st)) out.emplace_back(name);
    return out;
  };
  const DateTime stale = Minus(now, t.resume_after);
  std::vector<Filter> alternatives;
  alternatives.push_back(Filter()
                             .In(p.state_field, spellings({TxnState::kInitial}))
                             .Lt(p.time_field, Minus(now, t.initial_timeout)));
  alternatives.push_back(Filter()
                             .In(p.state_field, spellings({TxnState::kPending, TxnState::kApplied,
                                                           TxnState::kCanceling}))
                             .Lt(p.time_field, stale));
  if (t.late_write_window > t.resume_after) {
    alternatives.push_back(Filter()
                               .In(p.state_field, s.TerminalSpellings())
                               .Lt(p.time_field, stale)
                               .Gte(p.time_field, Minus(now, t.late_write_window)));
  }
  // Documents that can never match the alternatives above must still be found, or they
  // would stay stuck without anyone knowing: unknown states and unreadable times.
  alternatives.push_back(Filter().Nin(p.state_field, s.AllSpellings()));
  alternatives.push_back(Filter().NotExists(p.time_field));
  alternatives.push_back(Filter().NotDateTime(p.time_field));
  Filter f;
  f.NotExists(w.lease_field + ".quarantine").AnyOf(std::move(alternatives));
  return f;
}

Status Sweeper::Inspect(const WatchSpec& watch, StuckReport* report) {
  *report = StuckReport{};
  DateTime now;
  if (Status s = store_->ServerTime(&now); !s.ok()) return s;
  const TransferProfile& p = watch.profile;
  const DateTime stale = Minus(now, watch.thresholds.resume_after);
  const std::string quarantine = watch.lease_field + ".quarantine";
  for (TxnState st :
       {TxnState::kInitial, TxnState::kPending, TxnState::kApplied, TxnState::kCanceling}) {
    std::vector<Value> names(p.states.For(st).begin(), p.states.For(st).end());
    Filter f;
    f.NotExists(quarantine).In(p.state_field, std::move(names)).Lt(p.time_field, stale);
    std::int64_t n = 0;
    if (Status s = store_->Count(watch.ns, f, &n); !s.ok()) return s;
    if (n > 0) report->stuck[st] = n;
  }
  Filter oldest;
  oldest.NotExists(quarantine)
      .In(p.state_field, p.states.NonTerminalSpellings())
      .Lt(p.time_field, stale);
  FindOptions first;
  first.sort_ascending_by = p.time_field;
  first.limit = 1;
  std::unique_ptr<Cursor> cursor;
  if (Status s = store_->Find(watch.ns, oldest, first, &cursor); !s.ok()) return s;
  Document d;
  bool has = false;
  if (Status s = cursor->Next(&d, &has); !s.ok()) return s;
  if (has) {
    if (const Value* t = d.GetPath(p.time_field); t && t->is_datetime())
      report->oldest_age = std::chrono::milliseconds(now.millis - t->as_datetime()->millis);
  }
  return store_->Count(watch.ns, Filter().Exists(quarantine), &report->quarantined);
}

Status Sweeper::SweepWatch(const WatchSpec& watch,
                           const std::function<void(const TxnReport&)>& on_txn,
                           WatchSummary* summary) {
  *summary = WatchSummary{};
  summary->watch = watch.name;

  // One server-time query per sweep; later "now"s extrapolate with our monotonic clock so
  // that ages stay on the server's clock without a round trip per transaction.
  DateTime server_start;
  if (Status s = store_->ServerTime(&server_start); !s.ok()) {
    summary->status = s;
    return s;
  }
  const auto mono_start = clock_->MonotonicNow();
  auto server_now = [this, server_start, mono_start] {
    auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_->MonotonicNow() - mono_start);
    return DateTime{server_start.millis + elapsed.count()};
  };

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

  auto process = [&](const Document& doc) {
    TxnReport r;
    r.watch = watch.name;
    if (const Value* id = doc.Get("_id")) r.id = *id;
    Transaction txn;
    Status parsed = ParseTransfer(doc, watch.profile, watch.ns, watch.lease_field, &txn);
    if (!parsed.ok()) {
      if (const Value* st = doc.GetPath(watch.profile.state_field); st && st->is_string())
        r.state_before = watch.profile.states.Parse(*st->as_string());
      r.result.action = Action::kQuarantine;
      r.result.detail = parsed.message();
      if (options_.dry_run) {
        r.result.outcome = Outcome::kPlanned;
        r.result.detail = "would quarantine: " + parsed.message();
      } else if (Status q = machine.Quarantine(r.id, parsed.message()); q.ok()) {
        r.result.outcome = Outcome::kQuarantined;
      } else {
        r.result.outcome = Outcome::kFailed;
        r.result.status = q;
        r.result.detail = "could not quarantine (" + q.ToString() + "): " + parsed.message();
      }
      report(std::move(r));
      return;
    }
    r.state_before = txn.state;
    Action action = Decide(txn, server_now(), watch.thresholds);
    if (action == Action::kNone) return;
    if (options_.dry_run) {
      r.result.action = action;
      r.result.outcome = Outcome::kPlanned;
      r.result.final_state = txn.state;
      report(std::move(r));
      return;
    }
    r.result = machine.Execute(txn, action);
    if (r.result.outcome == Outcome::kUntouched && r.result.late_writes_undone == 0) return;
    if (r.result.outcome == Outcome::kFailed && !r.result.status.IsUnavailable() &&
        !r.result.status.IsAborted())
      CountFailure(machine, &r);
    report(std::move(r));
  };

  auto stopping = [&] { return options_.stop && options_.stop->load(); };

  FindOptions find_options;
  find_options.batch_size = options_.batch_size;
  std::unique_ptr<Cursor> cursor;
  Status status =
      store_->Find(watch.ns, CandidateFilter(watch, server_start), find_options, &cursor);
  if (status.ok()) {
    const int workers = std::max(1, options_.workers);
    WorkQueue queue(static_cast<std::size_t>(std::max<std::int32_t>(1, options_.batch_size)));
    std::vector<std::thread> threads;
    if (workers > 1) {
      for (int i = 0; i < workers; ++i) {
        threads.emplace_back([&] {
          Document d;
          while (queue.Pop(&d))
            if (!stopping()) process(d);
        });
      }
    }
    Document doc;
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
        process(doc);
      }
    }
    queue.Close();
    for (auto& t : threads) t.join();
    cursor.reset();
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
