#include "rules/storage_path.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

namespace ckptmon {
namespace {

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const TierIo* tier_io(const IoState* io, const std::string& tier) {
  if (io == nullptr) return nullptr;
  auto it = io->tiers.find(tier);
  return it == io->tiers.end() ? nullptr : &it->second;
}

}  // namespace

StoragePathFigures StoragePathTracker::update(const CheckpointView& checkpoints,
                                              const std::set<std::string>& tiers,
                                              const std::set<std::string>& deletion_tiers,
                                              const EventCatalog* events, const IoState* io,
                                              const Verifications& verified,
                                              const RulesPolicy& policy, double now,
                                              const DrillState* drills) {
  static const std::map<std::string, NetInterfaceIo> kNoInterfaces;
  const auto& interfaces = io != nullptr ? io->interfaces : kNoInterfaces;
  // The settled entries by (tier, job): the job's median duration and usual
  // metadata rate come from its other checkpoints. Built when first needed:
  // in the steady state every entry is settled and nothing needs it. It
  // points into *entries_: rebuilt after writable() copied the map.
  using Settled =
      std::map<std::pair<std::string, std::string>, std::vector<const CheckpointStoragePath*>>;
  std::optional<Settled> settled_index;
  auto settled = [&]() -> Settled& {
    if (!settled_index) {
      settled_index.emplace();
      for (const auto& [k, e] : *entries_) {
        if (e.io) (*settled_index)[{k.tier, e.job}].push_back(&e);
      }
    }
    return *settled_index;
  };
  // The entry at `it`, to change (the iterator follows a copy of the map).
  auto change = [&](Entries::iterator& it) -> CheckpointStoragePath& {
    if (published_) {
      const CheckpointKey key = it->first;
      writable();
      settled_index.reset();
      it = entries_->find(key);
    }
    return it->second;
  };
  auto tracked = [&](const Checkpoint& c) {
    return c.state == CkptState::kCommitted && tiers.contains(c.tier) &&
           !deletion_tiers.contains(c.tier);
  };

  std::size_t visited = 0;
  for (const Checkpoint& c : checkpoints) {
    if (!tracked(c)) continue;
    ++visited;
    auto it = entries_->find(CheckpointKey{c.tier, c.path});
    if (it == entries_->end()) {
      // A new entry: the map's other entries (and the index's pointers) stay
      // where they are, unless a snapshot shares the map.
      if (published_) {
        writable();
        settled_index.reset();
      }
      it = entries_->try_emplace(CheckpointKey{c.tier, c.path}).first;
    }
    const CheckpointStoragePath& e = it->second;
    if (e.io && e.io->window.source == WindowSource::kEvents) continue;  // settled for good
    const EventStep* ev =
        events != nullptr && c.step >= 0 ? events->find(c.tier, c.job, c.step) : nullptr;
    if (e.io) {
      // Settled. A window from a manifest or shard mtimes gives way to the
      // event log's once it arrives (the tailer may lag the walk).
      const bool dated_by_events =
          ev != nullptr && ev->start_ts > 0 && ev->commit_ts >= ev->start_ts;
      if (!dated_by_events) continue;
      CheckpointStoragePath& w = change(it);
      std::erase(settled()[{c.tier, w.job}], &w);
      w.io.reset();
      w.verdict.reset();
    }
    const auto w = save_window(c, ev);
    if (!w) continue;
    const TierIo* tio = tier_io(io, c.tier);
    const NodeIo* node = io != nullptr ? &io->node : nullptr;
    WindowIo wio = window_io(*w, static_cast<double>(c.bytes), tio, interfaces, node);
    // Settled once the tier's counters and the node's samples cover the
    // window, or can no longer, or the grace has passed.
    const bool tier_done =
        wio.device_write_bytes_per_second.has_value() || !window_io_coverable(*w, tio);
    const bool node_done =
        node == nullptr || node_window_covered(*w, *node) || !node_window_coverable(*w, *node);
    const bool done = (tier_done && node_done) || now - w->end > kWindowIoGraceSeconds;
    if (!done) continue;

    CheckpointStoragePath& entry = change(it);
    // The job's other settled checkpoints on the tier: its median duration
    // and usual metadata rate.
    std::vector<double> durations, metadata;
    auto& job_settled = settled()[{c.tier, c.job}];
    for (const CheckpointStoragePath* other : job_settled) {
      durations.push_back(other->io->window.duration());
      if (other->io->metadata_ops_per_second) {
        metadata.push_back(*other->io->metadata_ops_per_second);
      }
    }
    const StoragePathPolicy& p = policy.for_tier(c.tier).storage_path_for(c.job);
    SlowInputs in;
    in.io = wio;
    if (durations.size() >= kSlowMedianMinCheckpoints) in.job_median_seconds = median(durations);
    in.job_usual_metadata_ops_per_second = median(metadata);
    if (p.write_bandwidth > 0) {
      in.reference_write_bytes_per_second = p.write_bandwidth;
      in.reference_configured = true;
    } else if (tio != nullptr) {
      in.reference_write_bytes_per_second = tio->best_written_bytes_per_second;
    }
    if (ev != nullptr && ev->completion_skew()) {
      in.completion_skew_seconds = ev->completion_skew();
    } else if (c.last_write > 0 && c.first_write > 0) {
      in.completion_skew_seconds = c.completion_skew();
    }
    if (ev != nullptr && ev->last_rank >= 0) in.slowest_ranks.push_back(ev->last_rank);
    if (events != nullptr) {
      for (const auto& [rank, n] : events->slow_ranks(c.tier, c.job, 3)) {
        if (std::find(in.slowest_ranks.begin(), in.slowest_ranks.end(), rank) ==
            in.slowest_ranks.end()) {
          in.slowest_ranks.push_back(rank);
        }
      }
    }
    entry.job = c.job;
    entry.verdict = classify_slow(in, p);
    entry.io = std::move(wio);
    job_settled.push_back(&entry);
    if (entry.verdict->slow && !entry.counted && commit_time(c) >= count_from_) {
      ++counts_[SlowCountKey{c.tier, c.job, entry.verdict->cause}];
      entry.counted = true;
    }
  }
  // Entries of checkpoints no longer committed (or gone). The catalog holds
  // each (tier, path) once, so every entry was visited when the counts agree.
  if (visited != entries_->size()) {
    std::set<std::pair<std::string_view, std::string_view>> live;
    for (const Checkpoint& c : checkpoints) {
      if (tracked(c)) live.emplace(c.tier, c.path);
    }
    if (live.size() != entries_->size()) {
      std::erase_if(writable(), [&](const auto& kv) {
        return !live.contains({std::string_view(kv.first.tier), std::string_view(kv.first.path)});
      });
    }
  }

  StoragePathFigures out;
  out.slow_counts = counts_;
  {
    std::map<std::string, std::pair<double, double>> sums;  // tier -> (bytes, seconds)
    for (const auto& [k, e] : *entries_) {
      // Only the counters' own measure: the checkpoints' bytes over their
      // windows are not what the tier carried.
      if (!e.io || !e.io->write_bytes_per_second || e.io->write_measure != WriteMeasure::kDevice) {
        continue;
      }
      const SaveWindow& w = e.io->window;
      const double observe = policy.for_tier(k.tier).bandwidth.observe_window_seconds;
      if (w.duration() <= 0 || w.end > now || w.end < now - observe) continue;
      auto& [b, secs] = sums[k.tier];
      b += *e.io->write_bytes_per_second * w.duration();
      secs += w.duration();
    }
    for (const auto& [tier, bs] : sums) {
      out.measured_write_bytes_per_second[tier] = bs.first / bs.second;
    }
  }

  // Measured restores: each job's last successful one with a duration.
  if (events != nullptr) {
    for (const auto& [job, r] : events->restores) {
      if (!r.last || !r.last->ok || !r.last->duration || *r.last->duration <= 0 ||
          r.last->bytes == 0 || r.last->tier.empty()) {
        continue;
      }
      const double rate = static_cast<double>(r.last->bytes) / *r.last->duration;
      out.measured_restores.push_back({r.last->tier, job, r.last->step, rate});
      double& best = best_restore_read_[r.last->tier];
      best = std::max(best, rate);
    }
  }

  for (const std::string& tier : tiers) {
    if (deletion_tiers.contains(tier)) continue;
    const TierIo* tio = tier_io(io, tier);
    const std::optional<double> best_meta =
        tio != nullptr ? best_metadata_rate(tio->history) : std::nullopt;
    std::optional<double> mean_latency;
    if (tio != nullptr && tio->has_metadata_seconds && tio->has_totals) {
      double ops = 0, seconds = 0;
      for (std::size_t i = 0; i < kMetaOpCount; ++i) {
        ops += tio->totals.metadata_ops[i];
        seconds += tio->totals.metadata_seconds[i];
      }
      if (ops > 0) mean_latency = seconds / ops;
    }
    for (const auto& [job, mine] : group_by_job(checkpoints, tier)) {
      const std::vector<const Checkpoint*> committed = committed_oldest_first(mine);
      // Newest first: the last slow verdict, then the newest restorable one.
      for (auto it = committed.rbegin(); it != committed.rend(); ++it) {
        auto e = entries_->find(CheckpointKey{tier, (*it)->path});
        if (e == entries_->end() || !e->second.verdict || !e->second.verdict->judged) continue;
        out.last_slow.push_back({tier, job, (*it)->step, (*it)->path, *e->second.verdict});
        break;
      }
      const Checkpoint* newest = nullptr;
      for (auto it = committed.rbegin(); it != committed.rend(); ++it) {
        auto v = verified.find(CheckpointKey{tier, (*it)->path});
        if (v != verified.end() && !v->second) continue;  // failed verification
        newest = *it;
        break;
      }
      if (newest == nullptr) continue;
      const StoragePathPolicy& p = policy.for_tier(tier).storage_path_for(job);
      RestoreFigures f;
      f.tier = tier;
      f.job = job;
      f.step = newest->step;
      f.path = newest->path;
      f.bytes = static_cast<double>(newest->bytes);
      f.files = static_cast<double>(newest->files);
      f.objective_seconds = p.recovery_time_objective_seconds;
      RestoreInputs in;
      in.bytes = f.bytes;
      in.files = f.files;
      if (auto b = best_restore_read_.find(tier); b != best_restore_read_.end()) {
        in.measured_read_bytes_per_second = b->second;
      }
      if (tio != nullptr && tio->best_read_bytes_per_second > 0) {
        in.counter_read_bytes_per_second = tio->best_read_bytes_per_second;
      }
      in.configured_read_bytes_per_second = p.read_bandwidth;
      in.counter_metadata_ops_per_second = best_meta;
      in.metadata_latency_seconds = mean_latency;
      in.configured_metadata_ops_per_second = p.restore_metadata_ops_per_second;
      if (drills != nullptr) {
        const RestoreDrillPolicy& dp = policy.for_tier(tier).restore_drill;
        auto d = drills->last.find({tier, job});
        if (dp.enabled() && d != drills->last.end() && d->second.read_ok() && d->second.files > 0 &&
            d->second.read_bytes_per_second() &&
            now - d->second.finished_at <= 2 * dp.every_seconds) {
          in.drill_read_bytes_per_second = d->second.read_bytes_per_second();
          in.drill_metadata_seconds_per_file =
              (d->second.locate_seconds + d->second.metadata_seconds) /
              static_cast<double>(d->second.files);
        }
      }
      f.estimate = estimate_restore(in);
      out.restore.push_back(std::move(f));
    }
  }
  return out;
}

StoragePathTracker::Entries& StoragePathTracker::writable() {
  if (published_) {
    entries_ = std::make_shared<Entries>(*entries_);
    published_ = false;
  }
  return *entries_;
}

std::shared_ptr<const StoragePathTracker::Entries> StoragePathTracker::snapshot() {
  published_ = true;
  return entries_;
}

}  // namespace ckptmon
