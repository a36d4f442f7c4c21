#include "rules/estate.hpp"

#include <algorithm>
#include <set>
#include <tuple>

namespace ckptmon {

bool EstateCopy::restorable() const {
  return checkpoint->state == CkptState::kCommitted && !verify_failed && !deletion;
}

namespace {

// A version's identity: (job, step), or (job, path) where the layout gives
// no step (two such checkpoints are two versions, wherever they lie).
auto version_key(const Checkpoint& c) {
  return std::make_tuple(std::string_view(c.job), c.step,
                         c.step < 0 ? std::string_view(c.path) : std::string_view());
}

void derive(Version& v) {
  const EstateCopy* reference = nullptr;  // the first complete copy to land
  for (const EstateCopy& c : v.copies) {
    if (!c.restorable()) continue;
    const double t = commit_time(*c.checkpoint);
    if (!reference) {
      reference = &c;
      continue;
    }
    const double r = commit_time(*reference->checkpoint);
    // Earliest known commit first; a drain that keeps times ties with its
    // source, and the source is the original.
    if ((t > 0 && (r <= 0 || t < r)) || (t == r && c.source && !reference->source)) {
      reference = &c;
    }
  }
  if (!reference) return;
  v.restorable = true;
  v.commit_time = commit_time(*reference->checkpoint);
  for (EstateCopy& c : v.copies) {
    if (!c.restorable()) continue;
    c.mismatched = c.checkpoint->bytes != reference->checkpoint->bytes;
    if (c.durable && !c.mismatched) ++v.durable_copies;
  }
}

}  // namespace

std::vector<Version> join_versions(const CheckpointView& checkpoints,
                                   const std::map<std::string, TierState>& tiers,
                                   const Verifications& verified) {
  std::vector<const Checkpoint*> order;
  order.reserve(checkpoints.size());
  for (const Checkpoint& c : checkpoints) {
    if (tiers.contains(c.tier)) order.push_back(&c);
  }
  std::sort(order.begin(), order.end(), [](const Checkpoint* a, const Checkpoint* b) {
    return std::tie(a->job, a->step, a->path, a->tier) <
           std::tie(b->job, b->step, b->path, b->tier);
  });
  std::vector<Version> out;
  for (const Checkpoint* c : order) {
    if (out.empty() ||
        version_key(*c) != std::make_tuple(out.back().job, out.back().step, out.back().path)) {
      if (!out.empty()) derive(out.back());
      Version v;
      v.job = c->job;
      v.step = c->step;
      if (c->step < 0) v.path = c->path;
      out.push_back(std::move(v));
    }
    const TierConfig& tier = tiers.at(c->tier).config;
    EstateCopy copy;
    copy.checkpoint = c;
    copy.deletion = tier.role == TierRole::kDeletion;
    copy.source = !tier.drains_to.empty();
    copy.durable = tier.durable && !copy.deletion;
    if (auto it = verified.find(CheckpointKey{c->tier, c->path}); it != verified.end()) {
      copy.verify_failed = !it->second;
    }
    out.back().copies.push_back(copy);
  }
  if (!out.empty()) derive(out.back());
  return out;
}

std::vector<DurabilityFigures> evaluate_durability(const std::vector<Version>& versions,
                                                   const std::vector<RecoveryPoint>& recovery,
                                                   const CheckpointView& checkpoints,
                                                   const std::map<std::string, TierState>& tiers,
                                                   const Verifications& verified,
                                                   const EstatePolicy& policy, double now) {
  // The durable recovery point is the recovery point over durable tiers
  // only: every other tier is skipped.
  std::set<std::string> not_durable;
  bool durable_known = false;
  for (const auto& [name, t] : tiers) {
    if (t.config.role == TierRole::kDeletion || !t.config.durable) {
      not_durable.insert(name);
    } else {
      durable_known = true;
    }
  }
  // A copy that disagrees with its version's first complete copy is not
  // restorable there: the durable point skips it as it skips a failed
  // verification (a drain that lost a shard still has a commit marker).
  const Verifications* durable_verified = &verified;
  Verifications with_mismatches;
  for (const Version& x : versions) {
    for (const EstateCopy& c : x.copies) {
      if (!c.mismatched) continue;
      if (durable_verified == &verified) {
        with_mismatches = verified;
        durable_verified = &with_mismatches;
      }
      with_mismatches[CheckpointKey{c.checkpoint->tier, c.checkpoint->path}] = false;
    }
  }
  std::map<std::string, RecoveryPoint> durable;
  if (durable_known) {
    for (RecoveryPoint& p : evaluate_recovery(checkpoints, *durable_verified, not_durable)) {
      std::string job = p.job;
      durable.emplace(std::move(job), std::move(p));
    }
  }

  std::vector<DurabilityFigures> out;
  out.reserve(recovery.size());
  auto v = versions.begin();
  for (const RecoveryPoint& point : recovery) {
    DurabilityFigures f;
    f.job = point.job;
    f.policy = policy.for_job(point.job);
    f.durable_known = durable_known;
    if (auto it = durable.find(point.job); it != durable.end()) f.durable = it->second;
    f.durable.job = point.job;

    // This job's versions (both lists are sorted by job).
    while (v != versions.end() && v->job < point.job) ++v;
    auto end = v;
    while (end != versions.end() && end->job == point.job) ++end;
    const bool by_step =
        std::all_of(v, end, [](const Version& x) { return !x.restorable || x.step >= 0; });
    // Without steps, versions are ordered by commit time: the durable
    // version's is that of its first copy (the one drained later would make
    // versions committed meanwhile look older than it).
    double durable_time = f.durable.timestamp;
    if (!by_step && f.durable.restorable) {
      for (auto it = v; it != end; ++it) {
        if (it->step < 0 && it->path == f.durable.path && it->commit_time > 0) {
          durable_time = it->commit_time;
        }
      }
    }
    double oldest_waiting = 0;
    for (auto it = v; it != end; ++it) {
      const Version& x = *it;
      for (const EstateCopy& c : x.copies) f.mismatched_copies += c.mismatched ? 1 : 0;
      if (!x.restorable) continue;
      ++f.versions;
      if (!durable_known) continue;
      const double t = x.commit_time;
      if (t > 0 && now - t > f.policy.durable_within_seconds &&
          x.durable_copies < static_cast<std::uint64_t>(f.policy.copies_required)) {
        ++f.versions_under_copied;
      }
      const bool newer =
          !f.durable.restorable || (by_step ? x.step > f.durable.step : t > durable_time);
      if (newer && x.durable_copies == 0 && t > 0 && (oldest_waiting == 0 || t < oldest_waiting)) {
        oldest_waiting = t;
      }
    }
    v = end;
    if (!durable_known) {
      f.versions_under_copied = 0;
    } else {
      if (oldest_waiting > 0) f.durable_lag_seconds = std::max(0.0, now - oldest_waiting);
      if (point.restorable && point.step >= 0) {
        if (!f.durable.restorable) {
          f.steps_at_risk = point.step;
        } else if (f.durable.step >= 0) {
          f.steps_at_risk = std::max<std::int64_t>(0, point.step - f.durable.step);
        }
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ckptmon
