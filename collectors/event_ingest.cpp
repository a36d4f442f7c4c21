#include "collectors/event_ingest.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "util/log.hpp"

namespace ckptmon {

namespace {

// Runs `fn` on the journal's writer thread and waits for its result
// (rethrowing what it threw). Worker threads only.
template <typename T>
T call(EventJournal& journal, std::function<T(EventJournal::Writer&)> fn) {
  auto promise = std::make_shared<std::promise<T>>();
  auto fut = promise->get_future();
  journal.post([fn = std::move(fn), promise](EventJournal::Writer& w) {
    try {
      promise->set_value(fn(w));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  return fut.get();
}

}  // namespace

EventIngest::EventIngest(std::shared_ptr<EventJournal> journal, std::size_t steps_per_job)
    : journal_(std::move(journal)), steps_per_job_(steps_per_job) {}

void EventIngest::ensure_loaded() {
  {
    std::lock_guard lock(mu_);
    if (loaded_) return;
  }
  // Loaded on the journal's thread under mu_: nothing here ever waits for
  // the journal while holding mu_, because commits take mu_ on that thread.
  call<bool>(*journal_, [this](EventJournal::Writer& w) {
    std::lock_guard lock(mu_);
    if (!loaded_) load_from(w);
    return true;
  });
}

void EventIngest::load_from(EventJournal::Writer& w) {
  auto loaded = w.load();
  const auto tails = std::move(catalog_.tails);
  const std::uint64_t version = catalog_.version;
  catalog_ = std::move(loaded.catalog);
  catalog_.tails = tails;
  catalog_.version = version + 1;
  cursors_.clear();
  for (auto& c : loaded.cursors) cursors_[FileId{c.dev, c.ino}] = std::move(c);
  loaded_ = true;
}

std::optional<EventIngest::CursorRow> EventIngest::cursor(FileId id) const {
  std::lock_guard lock(mu_);
  auto it = cursors_.find(id);
  if (it == cursors_.end()) return std::nullopt;
  return it->second;
}

std::optional<EventIngest::CursorRow> EventIngest::cursor_by_path(const std::string& path,
                                                                  std::uint64_t ino) const {
  std::lock_guard lock(mu_);
  for (const auto& [id, c] : cursors_) {
    if (id.ino == ino && c.path == path) return c;
  }
  return std::nullopt;
}

std::vector<EventIngest::CursorRow> EventIngest::cursors_of(const std::string& glob) const {
  std::lock_guard lock(mu_);
  std::vector<CursorRow> out;
  for (const auto& [_, c] : cursors_) {
    if (c.glob == glob) out.push_back(c);
  }
  return out;
}

bool EventIngest::commit(const CursorRow* from, const CursorRow& to,
                         std::span<const LineResult> lines, std::string_view tier,
                         std::optional<FileChange> change, std::uint64_t consumed) {
  return commit_async(from != nullptr ? std::optional<CursorRow>(*from) : std::nullopt, to, lines,
                      std::string(tier), change, consumed)
             .get() >= 0;
}

std::future<std::int64_t> EventIngest::commit_async(std::optional<CursorRow> from, CursorRow to,
                                                    std::span<const LineResult> lines,
                                                    std::string tier,
                                                    std::optional<FileChange> change,
                                                    std::uint64_t consumed) {
  auto promise = std::make_shared<std::promise<std::int64_t>>();
  auto done = promise->get_future();
  // Folding the lines in and writing them happen on the journal's thread, so
  // the caller can read and parse the next batch meanwhile.
  journal_->post([this, promise, from = std::move(from), to = std::move(to), lines,
                  tier = std::move(tier), change, consumed](EventJournal::Writer& w) {
    try {
      promise->set_value(apply(w, from ? &*from : nullptr, to, lines, tier, change, consumed));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  return done;
}

std::int64_t EventIngest::apply(EventJournal::Writer& w, const CursorRow* from, const CursorRow& to,
                                std::span<const LineResult> lines, std::string_view tier,
                                std::optional<FileChange> change, std::uint64_t consumed) {
  std::lock_guard lock(mu_);
  if (!loaded_) load_from(w);
  // Exactly once hinges on this: a batch applies only on top of the position
  // it was read from.
  const FileId from_id = from != nullptr ? FileId{from->dev, from->ino} : FileId{to.dev, to.ino};
  auto it = cursors_.find(from_id);
  if (from == nullptr) {
    if (it != cursors_.end()) return -1;
  } else if (it == cursors_.end() || it->second.parse != from->parse ||
             it->second.fp_len != from->fp_len || it->second.fp_hash != from->fp_hash) {
    return -1;
  }
  const FileId to_id{to.dev, to.ino};
  const std::uint64_t rejected_before =
      catalog_.totals.lines[static_cast<std::size_t>(LineStatus::kRejected)];
  EventAggregator agg(catalog_, steps_per_job_, limits_ ? &*limits_ : nullptr);
  for (const LineResult& l : lines) agg.add(l, tier);
  log_refusals(agg.refusals());
  if (change) agg.count_change(*change);
  agg.count_bytes(consumed);
  try {
    // One transaction: the position and what was read up to it.
    w.commit_batch(from_id != to_id ? std::optional(from_id) : std::nullopt, to, catalog_, agg);
  } catch (...) {
    // The catalog holds the batch already: the journal is the truth, read it back.
    try {
      load_from(w);
    } catch (...) {
      loaded_ = false;
    }
    throw;
  }
  if (from_id != to_id) cursors_.erase(from_id);
  cursors_[to_id] = to;
  ++catalog_.version;
  ++commits_;
  return static_cast<std::int64_t>(
      catalog_.totals.lines[static_cast<std::size_t>(LineStatus::kRejected)] - rejected_before);
}

void EventIngest::set_limits(EventLimits limits) {
  std::lock_guard lock(mu_);
  limits_ = std::move(limits);
}

void EventIngest::log_refusals(const std::vector<EventRefusal>& refusals) {
  for (const EventRefusal& r : refusals) {
    if (logged_refusals_.size() >= kLoggedRefusals) return;
    if (!logged_refusals_.emplace(r.reason, r.tier).second) continue;
    if (r.reason == RejectReason::kTooManyJobs) {
      log::warn(
          "events of new jobs refused: the tier has global.max_jobs_per_tier jobs; counted as "
          "ckptmon_manifest_errors_total{reason=\"too_many_jobs\"}, logged once per tier",
          {{"tier", r.tier},
           {"max_jobs_per_tier", static_cast<std::uint64_t>(limits_->max_jobs_per_tier)},
           {"job", r.job}});
    } else {
      log::warn(
          "events naming a tier that is not configured refused; counted as "
          "ckptmon_manifest_errors_total{reason=\"unconfigured_tier\"}, logged once per tier",
          {{"tier", r.tier}, {"job", r.job}});
    }
  }
}

void EventIngest::forget_before(double cutoff) {
  call<bool>(*journal_, [this, cutoff](EventJournal::Writer& w) {
    std::lock_guard lock(mu_);
    w.forget_before(cutoff);
    std::erase_if(cursors_, [&](const auto& kv) { return kv.second.last_seen < cutoff; });
    return true;
  });
}

void EventIngest::collect_garbage(double now, double forget_after) {
  double last = last_gc_.load();
  if (now - last <= 3600 || !last_gc_.compare_exchange_strong(last, now)) return;
  forget_before(now - forget_after);
  fold_idle_jobs(now - forget_after);
}

std::size_t EventIngest::fold_idle_jobs(double cutoff) {
  return call<std::size_t>(*journal_, [this, cutoff](EventJournal::Writer& w) {
    std::lock_guard lock(mu_);
    if (!loaded_) load_from(w);
    std::vector<StepKey> folded;
    for (auto& [key, job] : catalog_.jobs) {
      if (job.last_event_ts >= cutoff) continue;
      auto lo = catalog_.steps.lower_bound(
          StepKeyLess::View{key.first, key.second, std::numeric_limits<std::int64_t>::min()});
      while (lo != catalog_.steps.end() && lo->first.tier == key.first &&
             lo->first.job == key.second) {
        if (lo->second.last_rank >= 0) ++job.slow_ranks[lo->second.last_rank];
        job.evicted_through = std::max(job.evicted_through, lo->first.step);
        folded.push_back(lo->first);
        lo = catalog_.steps.erase(lo);
      }
    }
    if (folded.empty()) return std::size_t{0};
    try {
      w.fold_steps(folded, catalog_);
    } catch (...) {
      load_from(w);
      throw;
    }
    ++catalog_.version;
    return folded.size();
  });
}

void EventIngest::set_tail_status(const std::string& glob, TailStatus status) {
  std::lock_guard lock(mu_);
  auto it = catalog_.tails.find(glob);
  if (it != catalog_.tails.end() && it->second == status) return;
  catalog_.tails[glob] = std::move(status);
  ++catalog_.version;
}

std::shared_ptr<const EventCatalog> EventIngest::snapshot() {
  std::lock_guard lock(mu_);
  if (!loaded_) return nullptr;
  if (!snapshot_ || snapshot_->version != catalog_.version) {
    snapshot_ = std::make_shared<const EventCatalog>(catalog_);
  }
  return snapshot_;
}

}  // namespace ckptmon
