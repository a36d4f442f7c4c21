#include "rules/estate.hpp"

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>
#include <unordered_map>

#include "model/namespace_rule.hpp"
#include "model/tier.hpp"
#include "util/text.hpp"

namespace ckptmon {

bool EstateCopy::restorable() const {
  return checkpoint->state == CkptState::kCommitted && !verify_failed && !deletion;
}

namespace {

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
  // One row per checkpoint with its job as a number (the rank of its name),
  // sorted as plain integers: sorting the checkpoints by their strings cost
  // twice the whole join at 400,000 checkpoints (docs/performance.md).
  struct Row {
    std::uint32_t job = 0;  // a job id, then the rank of its name
    std::int64_t step = -1;
    const Checkpoint* checkpoint = nullptr;
    const TierConfig* tier = nullptr;
  };
  std::vector<Row> rows;
  rows.reserve(checkpoints.size());
  std::unordered_map<std::string_view, std::uint32_t> job_ids;
  std::vector<std::string_view> job_names;
  const TierConfig* tier = nullptr;  // the last checkpoint's: a tier's are contiguous in a view
  const std::string* tier_name = nullptr;
  for (const Checkpoint& c : checkpoints) {
    if (tier_name == nullptr || *tier_name != c.tier) {
      auto t = tiers.find(c.tier);
      if (t == tiers.end()) continue;
      tier = &t->second.config;
      tier_name = &t->first;
    }
    auto [it, fresh] =
        job_ids.try_emplace(std::string_view(c.job), static_cast<std::uint32_t>(job_names.size()));
    if (fresh) job_names.emplace_back(c.job);
    rows.push_back({it->second, c.step, &c, tier});
  }
  std::vector<std::uint32_t> by_name(job_names.size());
  for (std::uint32_t i = 0; i < by_name.size(); ++i) by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(),
            [&](std::uint32_t a, std::uint32_t b) { return job_names[a] < job_names[b]; });
  std::vector<std::uint32_t> rank(job_names.size());
  for (std::uint32_t r = 0; r < by_name.size(); ++r) rank[by_name[r]] = r;
  for (Row& r : rows) r.job = rank[r.job];
  // (job, step), the path where there is no step, then the copies by tier.
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.job != b.job) return a.job < b.job;
    if (a.step != b.step) return a.step < b.step;
    if (a.step < 0 && a.checkpoint->path != b.checkpoint->path) {
      return a.checkpoint->path < b.checkpoint->path;
    }
    return std::tie(a.checkpoint->tier, a.checkpoint->path) <
           std::tie(b.checkpoint->tier, b.checkpoint->path);
  });
  const auto same_version = [](const Row& a, const Row& b) {
    return a.job == b.job && a.step == b.step &&
           (a.step >= 0 || a.checkpoint->path == b.checkpoint->path);
  };
  std::vector<Version> out;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t end = i + 1;
    while (end < rows.size() && same_version(rows[i], rows[end])) ++end;
    Version& v = out.emplace_back();
    const Checkpoint& first = *rows[i].checkpoint;
    v.job = first.job;
    v.step = first.step;
    if (first.step < 0) v.path = first.path;
    v.copies.reserve(end - i);
    for (; i < end; ++i) {
      const Checkpoint& c = *rows[i].checkpoint;
      const TierConfig& t = *rows[i].tier;
      EstateCopy copy;
      copy.checkpoint = &c;
      copy.deletion = t.role == TierRole::kDeletion;
      copy.source = !t.drains_to.empty();
      copy.durable = t.durable && !copy.deletion;
      if (!verified.empty()) {
        if (auto vf = verified.find(CheckpointKey{c.tier, c.path}); vf != verified.end()) {
          copy.verify_failed = !vf->second;
        }
      }
      v.copies.push_back(copy);
    }
    derive(v);
  }
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

namespace ckptmon {

std::vector<LifecycleFigures> evaluate_lifecycle(const std::vector<Version>& versions,
                                                 const std::map<std::string, TierState>& tiers,
                                                 const RulesPolicy& policy, double now) {
  // The tiers with a lifecycle rule whose target this instance watches.
  std::map<std::string_view, std::pair<const TierConfig*, double>> ruled;
  for (const auto& [name, t] : tiers) {
    const double after = policy.for_tier(name).drain.move_after_seconds;
    if (after <= 0 || t.config.drains_to.empty() || !tiers.contains(t.config.drains_to)) continue;
    ruled.emplace(name, std::make_pair(&t.config, after));
  }
  if (ruled.empty()) return {};
  std::map<std::pair<std::string_view, std::string_view>, LifecycleFigures> by;  // (tier, job)
  for (const Version& v : versions) {
    for (const EstateCopy& c : v.copies) {
      if (!c.restorable()) continue;
      auto r = ruled.find(c.checkpoint->tier);
      if (r == ruled.end()) continue;
      auto [it, fresh] = by.try_emplace({r->first, v.job});
      LifecycleFigures& f = it->second;
      if (fresh) {
        f.tier = r->first;
        f.job = v.job;
        f.drains_to = r->second.first->drains_to;
        f.move_after_seconds = r->second.second;
      }
      // A copy of unknown commit time has no age to be overdue by.
      const double t = commit_time(*c.checkpoint);
      if (t <= 0 || now - t <= f.move_after_seconds) continue;
      const bool moved = std::any_of(v.copies.begin(), v.copies.end(), [&](const EstateCopy& o) {
        return o.checkpoint->tier == f.drains_to && o.restorable() && !o.mismatched;
      });
      if (moved) continue;
      ++f.overdue;
      if (f.oldest_overdue_commit == 0 || t < f.oldest_overdue_commit) {
        f.oldest_overdue_commit = t;
        f.oldest_overdue_step = v.step;
      }
    }
  }
  std::vector<LifecycleFigures> out;
  out.reserve(by.size());
  for (auto& [key, f] : by) out.push_back(std::move(f));
  return out;
}

namespace {

// Whether the job's allowed set (an intersection of rules' lists: empty
// allows nothing) holds `residency`.
bool allows(const std::vector<std::string>& allowed, const std::string& residency) {
  return std::find(allowed.begin(), allowed.end(), residency) != allowed.end();
}

}  // namespace

ResidencyResult evaluate_residency(const std::vector<Version>& versions,
                                   const std::map<std::string, TierState>& tiers) {
  ResidencyResult out;
  const bool any_rule = std::any_of(tiers.begin(), tiers.end(), [](const auto& t) {
    return std::any_of(t.second.config.namespaces.begin(), t.second.config.namespaces.end(),
                       [](const NamespaceRule& ns) { return !ns.residency.empty(); });
  });
  if (!any_rule) return out;

  // The job's allowed residencies, once per job: nullopt when no rule
  // restricts it.
  std::map<std::string_view, std::optional<std::vector<std::string>>> jobs;
  auto allowed_for = [&](std::string_view job) -> const std::optional<std::vector<std::string>>& {
    if (auto it = jobs.find(job); it != jobs.end()) return it->second;
    auto list = allowed_residencies(
        tiers, [](const auto& entry) -> const TierConfig& { return entry.second.config; },
        std::string(job));
    return jobs.emplace(job, std::move(list)).first->second;
  };

  struct Entry {
    ResidencyFigures figures;
    bool own_rule_forbids = false;  // the tier's own access audit reports it
    bool allowed = false;           // the tier's residency is in the job's set
    std::size_t findings = 0;
  };
  std::map<std::pair<std::string_view, std::string_view>, Entry> by;  // (tier, job)
  // Newest versions first, so the findings kept under the cap are the newest.
  // Versions come grouped by job: the job's rule and its (tier, job) entries
  // are looked up once per job, not once per copy.
  std::string_view job;
  const std::optional<std::vector<std::string>>* allowed = nullptr;
  std::vector<Entry*> entries;  // this job's, one per tier seen
  for (auto v = versions.rbegin(); v != versions.rend(); ++v) {
    if (allowed == nullptr || v->job != job) {
      job = v->job;
      allowed = &allowed_for(job);
      entries.clear();
    }
    if (!*allowed) continue;
    for (const EstateCopy& c : v->copies) {
      const std::string& tier = c.checkpoint->tier;
      Entry* e = nullptr;
      for (Entry* x : entries) {
        if (x->figures.tier == tier) e = x;
      }
      if (e == nullptr) {
        auto t = tiers.find(tier);
        if (t == tiers.end()) continue;
        auto [it, fresh] = by.try_emplace({std::string_view(t->first), v->job});
        e = &it->second;
        entries.push_back(e);
        if (fresh) {
          e->figures.tier = tier;
          e->figures.job = v->job;
          e->figures.residency = t->second.config.residency;
          e->figures.allowed = **allowed;
          e->allowed = allows(**allowed, e->figures.residency);
          const NamespaceRule* own = first_namespace(t->second.config.namespaces, e->figures.job);
          e->own_rule_forbids = own != nullptr && !residency_allowed(*own, e->figures.residency);
        }
      }
      ++e->figures.copies;
      if (e->allowed) continue;
      ++e->figures.violations;
      if (e->own_rule_forbids || e->findings >= ResidencyResult::kMaxFindingsPerTierJob) continue;
      ++e->findings;
      const std::vector<std::string>& list = **allowed;
      std::string detail = "a copy of ";
      if (v->step >= 0) {
        detail += "step ";
        detail += std::to_string(v->step);
        detail += " of job ";
        detail += e->figures.job;
      } else {
        detail += "checkpoint ";
        detail += c.checkpoint->path;
      }
      detail += " is on tier ";
      detail += tier;
      detail += " (residency '";
      detail += e->figures.residency;
      detail += "'), outside the residencies the job's namespaces allow: ";
      if (list.empty()) detail += "none (its namespaces' lists have nothing in common)";
      detail += join(list, ", ");
      out.findings.push_back(
          {tier, e->figures.job, c.checkpoint->path, FindingKind::kResidency, std::move(detail)});
    }
  }
  out.figures.reserve(by.size());
  for (auto& [key, e] : by) out.figures.push_back(std::move(e.figures));
  return out;
}

}  // namespace ckptmon
