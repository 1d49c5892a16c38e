#include "txn_recovery/engine/sweeper.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/seen_ids.h"
#include "txn_recovery/base/duration.h"
#include "txn_recovery/engine/candidates.h"
#include "txn_recovery/engine/quarantine_records.h"

namespace txn_recovery {

namespace {
// A paced sweep's bulks: at least this many a second (Pass::Stream).
constexpr double kBurstsPerSecond = 20;
}  // namespace
namespace {

// A bounded queue between the cursor reader and the workers: the documents held stay
// proportional to the batch size however many transactions are stuck.
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
  // woken by the first document of a chunk would otherwise take it alone. `max` must not
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

// The reads of CandidateReads one after the other, each sent when the one before is done.
// A whole document that an earlier read also matches is skipped (a state that is an array
// can match two); projected reads (ids only) cannot be matched again, and their reader
// drops repeats itself (ShareCursor's SeenIds).
class CandidateCursor final : public Cursor {
 public:
  CandidateCursor(Store* store, Namespace ns, std::vector<CandidateRead> reads, FindOptions options)
      : store_(store), ns_(std::move(ns)), reads_(std::move(reads)), options_(std::move(options)) {}

  Status Next(Document* doc, bool* has_doc) override {
    while (true) {
      if (!current_) {
        if (next_ == reads_.size()) {
          *has_doc = false;
          return Status::Ok();
        }
        FindOptions o = options_;
        o.hint = reads_[next_].hint;
        if (Status s = store_->Find(ns_, reads_[next_].filter, o, &current_); !s.ok()) return s;
        ++next_;
      }
      if (Status s = current_->Next(doc, has_doc); !s.ok()) return s;
      if (!*has_doc) {
        current_.reset();
        continue;
      }
      if (!options_.projection.empty() || !ReadBefore(*doc)) return Status::Ok();
    }
  }

 private:
  bool ReadBefore(const Document& doc) const {
    for (std::size_t k = 0; k + 1 < next_; ++k)
      if (reads_[k].filter.Matches(doc)) return true;
    return false;
  }

  Store* store_;
  Namespace ns_;
  std::vector<CandidateRead> reads_;
  FindOptions options_;
  std::size_t next_ = 0;
  std::unique_ptr<Cursor> current_;
};

}  // namespace

void SweepMemory::BeginSightings(const Namespace& ns) {
  std::lock_guard lock(mu_);
  sightings_[ns.ToString()].sweep++;
}

DateTime SweepMemory::SightedOutsideShare(const Namespace& ns, const std::string& id,
                                          DateTime now) {
  std::lock_guard lock(mu_);
  Sightings& s = sightings_[ns.ToString()];
  // What the last complete sweep did not sight is gone (EndSightings): an entry found here
  // was sighted by every complete sweep since its first, and by none that read everything
  // without it. Sweeps cut short in between neither start nor break a run.
  auto [it, added] = s.first.try_emplace(id, now, s.sweep);
  it->second.second = s.sweep;
  return it->second.first;
}

void SweepMemory::EndSightings(const Namespace& ns) {
  std::lock_guard lock(mu_);
  Sightings& s = sightings_[ns.ToString()];
  std::erase_if(s.first, [&](const auto& entry) { return entry.second.second != s.sweep; });
}

std::optional<bool> SweepMemory::FinishedCarryTimes(const Namespace& ns) const {
  std::lock_guard lock(mu_);
  auto it = finished_carry_times_.find(ns.ToString());
  if (it == finished_carry_times_.end()) return std::nullopt;
  return it->second;
}

void SweepMemory::SetFinishedCarryTimes(const Namespace& ns, bool carry) {
  std::lock_guard lock(mu_);
  finished_carry_times_[ns.ToString()] = carry;
}

// The state of one sweep of one watch, shared by its reader and its workers.
class Sweeper::Pass {
 public:
  Pass(Sweeper* s, const WatchSpec& watch, DateTime server_start,
       const std::function<void(const TxnReport&)>& on_txn, WatchSummary* summary)
      : s_(s),
        watch_(watch),
        server_start_(server_start),
        server_now_(s->server_now_),
        machine_(s->store_, s->clock_, watch.ns, &watch.profile, watch.lease_field,
                 s->options_.lease, server_now_),
        on_txn_(on_txn),
        summary_(summary),
        members_(s->options_.share ? s->options_.share->count : 1) {}

  // Streams the candidates to the workers (or, with one worker, processes them here).
  Status Stream() {
    // The pace bound (pace.h) holds back the reading of the candidates, a chunk at a time,
    // never a dry run, which writes nothing: a candidate waits before it is read, not
    // between its read and its claim, so that what the claim and the conformance trace's
    // read rest on is as fresh as unpaced. Each server batch is then one chunk.
    const std::shared_ptr<Pace> pace = s_->options_.dry_run ? nullptr : s_->options_.pace;
    const std::size_t chunk = ChunkSize(pace.get());
    FindOptions find_options;
    find_options.batch_size = pace ? static_cast<std::int32_t>(chunk) : s_->options_.batch_size;
    if (s_->options_.share) find_options.projection = {"_id"};
    std::unique_ptr<Cursor> cursor;
    if (Status st = OpenCandidates(find_options, &cursor); !st.ok()) return st;
    const int workers = std::max(1, s_->options_.workers);
    WorkQueue queue(Capacity());
    std::vector<std::thread> threads;
    if (workers > 1) {
      for (int i = 0; i < workers; ++i) {
        threads.emplace_back([&] {
          std::vector<Document> docs;
          while (queue.PopSome(&docs, chunk))
            if (!Stopping()) Process(docs);
        });
      }
    }
    Status status = Drain(cursor.get(), pace.get(), chunk, workers > 1 ? &queue : nullptr);
    queue.Close();
    for (auto& t : threads) t.join();
    return status;
  }

  std::size_t Capacity() const {
    return static_cast<std::size_t>(std::max<std::int32_t>(1, s_->options_.batch_size));
  }

  // The candidates driven together: a bulk, or paced, at most a twentieth of a second's
  // worth of this member's part of the bound: the same pace in short bursts, so that the
  // application's writes that meet one wait less (docs/benchmarks.md, "Live traffic while a
  // backlog drains").
  std::size_t ChunkSize(const Pace* pace) const {
    std::size_t chunk = std::clamp<std::size_t>(
        static_cast<std::size_t>(std::max<std::int32_t>(1, s_->options_.bulk_size)), 1, Capacity());
    if (pace && pace->rate() > 0) {
      const double per_second = pace->rate() / std::max<std::uint32_t>(1, members_.load());
      chunk = std::clamp<std::size_t>(static_cast<std::size_t>(per_second / kBurstsPerSecond), 1,
                                      chunk);
    }
    return chunk;
  }

  // The cursor over the watch's candidates (this member's share of them, in a fleet).
  Status OpenCandidates(const FindOptions& find_options, std::unique_ptr<Cursor>* cursor) {
    // Without a memory (a one-shot sweep) the probe is not sent: it is the walk the daemon
    // asks once; the finished transactions are taken to carry times, as most applications
    // write them (SweepMemory).
    bool finished_carry_times = true;
    if (watch_.profile.missing_time == MissingTime::kFirstSeen && s_->options_.memory) {
      if (Status st = FinishedCarryTimes(&finished_carry_times); !st.ok()) return st;
    }
    auto candidates = [this, finished_carry_times, find_options]() -> std::unique_ptr<Cursor> {
      return std::make_unique<CandidateCursor>(
          s_->store_, watch_.ns, CandidateReads(watch_, server_start_, finished_carry_times),
          find_options);
    };
    *cursor = s_->options_.share ? std::make_unique<ShareCursor>(this, candidates) : candidates();
    return Status::Ok();
  }

  // Reads the candidates, a chunk at a time under the pace, into `queue` (workers) or
  // processing each chunk here (`queue` null).
  Status Drain(Cursor* cursor, Pace* pace, std::size_t chunk, WorkQueue* queue) {
    Document doc;
    std::vector<Document> pending;
    std::size_t paced = 0;  // candidates the pace has let through and not yet read
    Status status = Status::Ok();
    while (true) {
      if (Stopping()) {
        status = Status::Aborted("sweep stopped before it was complete");
        break;
      }
      if (pace && paced == 0) {
        if (!pace->Take(static_cast<std::int64_t>(chunk), members_.load(), s_->options_.stop))
          continue;  // stopped while waiting: Stopping() ends the loop
        paced = chunk;
      }
      bool has = false;
      if (status = cursor->Next(&doc, &has); !status.ok() || !has) break;
      if (pace) --paced;
      summary_->examined++;
      if (queue) {
        queue->Push(std::move(doc));
        continue;
      }
      pending.push_back(std::move(doc));
      if (pending.size() >= chunk) {
        Process(pending);
        pending.clear();
      }
    }
    if (!pending.empty() && !Stopping()) Process(pending);
    return status;
  }

  // FinishedTimesProbe: one document at most, its _id alone; asked once per memory. Where no
  // finished transaction carries a time, FinishedProbe tells whether any has finished yet:
  // if none has, nothing is known of what the application writes (a collection that a new
  // application has just begun), "no time" on {state, time} is the few in flight, and the
  // question is asked again by the next sweep rather than answered "no" for good, which
  // would send the read of the not-yet-seen to the first sightings' index: deferred (not
  // there) for an application that writes times, walked whole where it is.
  Status FinishedCarryTimes(bool* carry) {
    const std::shared_ptr<SweepMemory>& memory = s_->options_.memory;
    if (std::optional<bool> known = memory->FinishedCarryTimes(watch_.ns)) {
      *carry = *known;
      return Status::Ok();
    }
    if (Status s = AnyMatches(s_->store_, watch_.ns, FinishedTimesProbe(watch_), carry); !s.ok())
      return s;
    if (!*carry) {
      bool any_finished = false;
      if (Status s = AnyMatches(s_->store_, watch_.ns, FinishedProbe(watch_), &any_finished);
          !s.ok())
        return s;
      if (!any_finished) {
        *carry = true;
        return Status::Ok();
      }
    }
    memory->SetFinishedCarryTimes(watch_.ns, *carry);
    return Status::Ok();
  }

  // With a share: the candidates' ids (a projected read) are filtered by the share, and
  // the documents of those in it fetched `bulk_size` at a time, by _id and the candidate
  // filter again (a transaction that moved on since its id was read is not fetched). Before
  // each batch the share may change (SweepOptions::refresh_share); overdue candidates
  // outside it are taken too (SweepOptions::overdue_after).
  class ShareCursor final : public Cursor {
   public:
    ShareCursor(Pass* pass, std::function<std::unique_ptr<Cursor>()> read_ids)
        : pass_(pass),
          read_ids_(std::move(read_ids)),
          ids_(read_ids_()),
          share_(*pass->s_->options_.share) {
      if (pass_->s_->options_.memory && pass_->s_->options_.overdue_after) {
        sightings_ = pass_->s_->options_.memory.get();
        sightings_->BeginSightings(pass_->watch_.ns);
      }
    }
    Status Next(Document* doc, bool* has_doc) override {
      while (true) {
        if (fetched_) {
          if (Status s = fetched_->Next(doc, has_doc); !s.ok() || *has_doc) return s;
          fetched_.reset();
        }
        if (ids_done_) {
          *has_doc = false;
          return Status::Ok();
        }
        if (Status s = FetchNext(); !s.ok()) return s;
      }
    }

   private:
    Status FetchNext() {
      if (const auto& refresh = pass_->s_->options_.refresh_share) {
        const Share next = refresh();
        // A member left (or expired): ids passed over may be this member's now. Read the
        // candidates' ids again rather than leave those to the next sweep, which after a
        // backlog is a whole sweep away; what was driven is no candidate any more, and what
        // was fetched is not read twice (seen_). A few times per sweep at most: a view that
        // flaps must not make a sweep read its candidates again at every batch.
        if (next.count < share_.count && !passed_over_.empty() && rereads_ < kMaxRereads) {
          ++rereads_;
          for (const std::string& id : passed_over_) seen_.Forget(id);
          {
            std::lock_guard lock(pass_->report_mu_);
            pass_->summary_->outside_share -= static_cast<std::int64_t>(passed_over_.size());
          }
          passed_over_.clear();
          ids_ = read_ids_();
          ids_done_ = false;
        }
        share_ = next;
        pass_->members_ = std::max<std::uint32_t>(1, next.count);
      }
      const std::size_t bulk =
          static_cast<std::size_t>(std::max<std::int32_t>(1, pass_->s_->options_.bulk_size));
      std::vector<Value> mine;
      Document d;
      while (mine.size() < bulk) {
        bool has = false;
        if (Status s = ids_->Next(&d, &has); !s.ok()) return s;
        if (!has) {
          ids_done_ = true;
          // Every candidate was read: what was not sighted outside the share is forgotten.
          if (sightings_ != nullptr) sightings_->EndSightings(pass_->watch_.ns);
          break;
        }
        const Value* id = d.Get("_id");
        if (id == nullptr || !seen_.First(*id)) continue;  // engine/seen_ids.h
        if (share_.Owns(*id)) {
          mine.push_back(*id);
        } else if (Overdue(*id)) {
          pass_->NoteOverdue(*id, BucketOf(*id) % share_.count);
          mine.push_back(*id);
        } else {
          passed_over_.insert(id->ToString());
          std::lock_guard lock(pass_->report_mu_);
          pass_->summary_->outside_share++;
        }
      }
      if (mine.empty()) return Status::Ok();
      Filter f = CandidateFilter(pass_->watch_, pass_->server_start_);
      f.In("_id", std::move(mine));
      FindOptions options;
      options.batch_size = pass_->s_->options_.batch_size;
      return pass_->s_->store_->Find(pass_->watch_.ns, f, options, &fetched_);
    }

    // A candidate outside the share: overdue once this member has found it so for
    // overdue_after (SweepMemory's sightings).
    bool Overdue(const Value& id) {
      if (sightings_ == nullptr) return false;
      const DateTime now = pass_->server_now_();
      const DateTime first = sightings_->SightedOutsideShare(pass_->watch_.ns, id.ToString(), now);
      return AgeOf(now, first) >= *pass_->s_->options_.overdue_after;
    }

    Pass* pass_;
    std::function<std::unique_ptr<Cursor>()> read_ids_;  // the candidates' ids, from the start
    std::unique_ptr<Cursor> ids_;
    std::unique_ptr<Cursor> fetched_;
    bool ids_done_ = false;
    SeenIds seen_;                       // the ids read so far: as many as the candidates, no more
    std::set<std::string> passed_over_;  // outside the share since the view last changed
    static constexpr int kMaxRereads = 4;
    int rereads_ = 0;
    Share share_;
    SweepMemory* sightings_ = nullptr;  // with the overdue rule
  };

  // An overdue candidate of another member's share, taken: counted, and remembered until its
  // report (a few batches at most: it is driven in this sweep).
  void NoteOverdue(const Value& id, std::uint32_t holder) {
    std::lock_guard lock(report_mu_);
    summary_->overdue_taken++;
    overdue_holders_.emplace(id.ToString(), holder);
  }

 private:
  bool Stopping() const { return s_->options_.stop && s_->options_.stop->load(); }

  // A chunk of documents at once: the transactions to act on go through ExecuteBatch, a
  // few round trips for the whole chunk instead of several per transaction.
  void Process(std::vector<Document>& docs) {
    DropRepeats(&docs);
    std::vector<Transaction> txns(docs.size());
    std::vector<TxnReport> reports(docs.size());
    std::vector<const Transaction*> batch;
    std::vector<Action> actions;
    std::vector<std::size_t> index;
    std::vector<Value> unseen;  // no time and no first-sighting stamp yet
    for (std::size_t i = 0; i < docs.size(); ++i) {
      Action action = Action::kNone;
      bool stamp = false;
      if (!Prepare(docs[i], &txns[i], &action, &reports[i], &stamp)) {
        if (stamp) unseen.push_back(txns[i].id);
        continue;
      }
      batch.push_back(&txns[i]);
      actions.push_back(action);
      index.push_back(i);
    }
    // Counted once per chunk: in a collection without times every document is one.
    const auto without_time = std::count_if(txns.begin(), txns.end(), [](const Transaction& t) {
      return t.age_source != AgeSource::kTimeField;
    });
    if (without_time > 0) {
      std::lock_guard lock(report_mu_);
      summary_->without_time += without_time;
    }
    StampFirstSightings(unseen);
    if (batch.empty()) return;
    // A dry run is the same execution, rehearsed: it reads what a sweep reads and writes
    // nothing (StateMachine::RehearseBatch).
    std::vector<ExecuteResult> results = s_->options_.dry_run
                                             ? machine_.RehearseBatch(batch, actions, nullptr)
                                             : machine_.ExecuteBatch(batch, actions);
    for (std::size_t k = 0; k < results.size(); ++k) {
      TxnReport& r = reports[index[k]];
      r.result = std::move(results[k]);
      Conclude(std::move(r));
    }
  }

  // Within one chunk, a document read twice is kept once (engine/seen_ids.h).
  static void DropRepeats(std::vector<Document>* docs) {
    std::vector<Document> kept;
    kept.reserve(docs->size());
    SeenIds seen;
    for (Document& d : *docs) {
      const Value* id = d.Get("_id");
      if (id == nullptr || seen.First(*id)) kept.push_back(std::move(d));
    }
    *docs = std::move(kept);
  }

  // Parses and decides one document. True when it is to be executed (then *txn, *action
  // and *r are ready for it); otherwise it has been dealt with (set aside, or left alone),
  // or, with *stamp set, its first sighting is to be stamped.
  bool Prepare(const Document& doc, Transaction* txn, Action* action, TxnReport* r, bool* stamp) {
    r->watch = watch_.name;
    if (const Value* id = doc.Get("_id")) r->id = *id;
    if (Status parsed = watch_.profile.Parse(doc, watch_.ns, watch_.lease_field, txn);
        !parsed.ok()) {
      SetAside(doc, parsed, r);
      return false;
    }
    r->state_before = txn->state;
    // Its age starts now: stamped (by the caller, with the chunk's others), nothing else.
    if (txn->age_source == AgeSource::kNotYetSeen) {
      *stamp = true;
      return false;
    }
    if (txn->record.Newer()) {
      // Nothing tried, nothing written: what a newer format means is not this daemon's to
      // guess. Reported on every sweep, so that a daemon left behind by an upgrade shows.
      r->result.outcome = Outcome::kFailed;
      r->result.status = Status::InvalidArgument(NewerFormat(txn->record));
      r->result.detail = r->result.status.message();
      Report(std::move(*r));
      return false;
    }
    const DateTime now = server_now_();
    if (AheadOfTheClock(*txn, now, watch_.thresholds)) {
      // Not counted as a failure: nothing was tried, and nothing is wrong with the
      // transaction once the server's clock reaches its time.
      r->result.outcome = Outcome::kFailed;
      r->result.status = Status::InvalidArgument(
          "its " + watch_.profile.time_field + " " + Value(txn->last_modified).ToString() + " is " +
          FormatDuration(AgeOf(txn->last_modified, now)) +
          " ahead of the server's clock, more than max_clock_skew (" +
          FormatDuration(watch_.thresholds.max_clock_skew) +
          "): not acted on until the server's clock reaches it");
      r->result.detail = r->result.status.message();
      Report(std::move(*r));
      return false;
    }
    *action = Decide(*txn, now, watch_.thresholds);
    return *action != Action::kNone;
  }

  // Transactions without a time seen for the first time: their first sighting stamped, one
  // bulk for the chunk. A stamp the server refuses (or a bulk that fails) is reported as a
  // failure of that transaction; it is tried again by the next sweep.
  void StampFirstSightings(const std::vector<Value>& ids) {
    if (ids.empty()) return;
    if (s_->options_.dry_run) {
      std::lock_guard lock(report_mu_);
      summary_->first_sightings += static_cast<std::int64_t>(ids.size());
      return;
    }
    BulkResult r;
    const Status s = machine_.StampFirstSeen(ids, &r);
    {
      std::lock_guard lock(report_mu_);
      summary_->first_sightings += r.modified;
    }
    auto fail = [&](const Value& id, const Status& why) {
      TxnReport report;
      report.watch = watch_.name;
      report.id = id;
      report.result.outcome = Outcome::kFailed;
      report.result.status = why;
      report.result.detail = "could not stamp its first sighting: " + why.ToString();
      // Counted like any failure: a stamp the server always refuses ends in quarantine.
      Conclude(std::move(report));
    };
    if (!s.ok()) {
      for (const Value& id : ids) fail(id, s);
      return;
    }
    for (const auto& [i, why] : r.refused) fail(ids[i], why);
  }

  // A document that does not fit the profile: quarantined (planned, in a dry run).
  void SetAside(const Document& doc, const Status& why, TxnReport* r) {
    if (const Value* st = doc.GetPath(watch_.profile.state_field); st && st->is_string())
      r->state_before = watch_.profile.states.Parse(*st->as_string());
    r->result.action = Action::kQuarantine;
    r->result.detail = why.message();
    if (s_->options_.dry_run) {
      r->result.outcome = Outcome::kPlanned;
      r->result.detail = "would quarantine: " + why.message();
    } else if (Status q = machine_.Quarantine(r->id, why.message()); q.ok()) {
      r->result.outcome = Outcome::kQuarantined;
    } else {
      r->result.outcome = Outcome::kFailed;
      r->result.status = q;
      r->result.detail = "could not quarantine (" + q.ToString() + "): " + why.message();
    }
    Report(std::move(*r));
  }

  void Conclude(TxnReport&& r) {
    if (r.result.outcome == Outcome::kUntouched && r.result.late_writes_undone == 0) return;
    if (r.result.outcome == Outcome::kFailed && !r.result.status.IsUnavailable() &&
        !r.result.status.IsAborted() && !s_->options_.dry_run)
      CountFailure(&r);
    Report(std::move(r));
  }

  // Every failure is counted on the document; at max_failures it is set aside with the
  // last error instead of failing every sweep forever.
  void CountFailure(TxnReport* r) {
    std::int64_t failures = 0;
    if (!machine_.RecordFailure(r->id, r->result.status.ToString(), &failures).ok()) return;
    if (failures < s_->options_.max_failures) return;
    std::string reason = "failed " + std::to_string(failures) +
                         " times in a row; last error: " + r->result.status.ToString();
    if (machine_.Quarantine(r->id, reason).ok()) {
      r->result.outcome = Outcome::kQuarantined;
      r->result.detail = reason;
    }
  }

  // Counts the outcome and hands the report to the caller, one at a time.
  void Report(TxnReport&& r) {
    std::lock_guard lock(report_mu_);
    if (!overdue_holders_.empty()) {
      if (auto it = overdue_holders_.find(r.id.ToString()); it != overdue_holders_.end()) {
        r.overdue_in_share_of = it->second;
        overdue_holders_.erase(it);
      }
    }
    const ExecuteResult& e = r.result;
    summary_->counts[e.action][e.outcome]++;
    summary_->late_writes_undone += e.late_writes_undone;
    switch (e.outcome) {
      case Outcome::kResolved:
        summary_->resolved++;
        break;
      case Outcome::kBusy:
        summary_->busy++;
        break;
      case Outcome::kFailed:
        summary_->failed++;
        break;
      case Outcome::kQuarantined:
        summary_->quarantined++;
        break;
      default:
        break;
    }
    if (on_txn_ && (e.outcome != Outcome::kUntouched || e.action != Action::kNone)) on_txn_(r);
  }

  Sweeper* s_;
  const WatchSpec& watch_;
  const DateTime server_start_;
  const std::function<DateTime()> server_now_;
  StateMachine machine_;
  const std::function<void(const TxnReport&)>& on_txn_;
  WatchSummary* summary_;
  std::mutex report_mu_;  // serializes on_txn and the summary counters
  // The members the candidates are divided among, as the share last said: each
  // transaction costs the fleet's pace bound that many units (pace.h).
  std::atomic<std::uint32_t> members_;
  // Overdue candidates taken and not reported yet, by _id (Value::ToString, as SeenIds
  // keys them): the position of the member whose share holds each. Under report_mu_.
  std::map<std::string, std::uint32_t> overdue_holders_;
};

Sweeper::Sweeper(Store* store, Clock* clock, SweepOptions options)
    : store_(store), clock_(clock), options_(std::move(options)) {}

namespace {
constexpr std::chrono::milliseconds kNoWait{0};
}  // namespace

Status Sweeper::SweepWatch(const WatchSpec& watch,
                           const std::function<void(const TxnReport&)>& on_txn,
                           WatchSummary* summary) {
  *summary = WatchSummary{};
  summary->watch = watch.name;
  server_now_ = {};
  auto finish = [&](Status s) {
    summary->status = s;
    return s;
  };
  // What is quarantined, counted from the daemon's records after every sweep, a paused one
  // included: it waits for an operator whether or not the watch is paused, and the gauge
  // (and the alert on it) must not drop to zero while it does. Before counting, the records
  // of an earlier build's quarantines are made (once per watch) and the records left
  // without a mark are removed (quarantine_records.h); a dry run writes neither.
  auto count_quarantined = [&] {
    if (!options_.dry_run) {
      std::int64_t n = 0;
      if (Status s = RecordEarlierQuarantines(store_, watch, &n); !s.ok()) return s;
      if (Status s = RepairQuarantineRecords(store_, watch, &n); !s.ok()) return s;
    }
    return CountQuarantineRecords(store_, watch, &summary->quarantined_total);
  };
  if (Status s = IsPaused(store_, watch, &summary->paused); !s.ok()) return finish(s);
  if (summary->paused) return finish(count_quarantined());
  // One server-time query per sweep; later "now"s extrapolate with our monotonic clock so
  // that ages stay on the server's clock without a round trip per transaction.
  DateTime server_start;
  if (Status s = store_->ServerTime(&server_start); !s.ok()) return finish(s);

  server_now_ = ServerNowFrom(clock_, server_start);

  Pass pass(this, watch, server_start, on_txn, summary);
  const std::chrono::milliseconds waited = options_.pace ? options_.pace->waited() : kNoWait;
  Status status = pass.Stream();
  if (options_.pace) summary->pace_waited = options_.pace->waited() - waited;
  if (status.ok() || status.IsAborted()) {
    if (Status s = count_quarantined(); !s.ok() && status.ok()) status = s;
  }
  return finish(status);
}

}  // namespace txn_recovery
