#include "rules/evaluate.hpp"

#include <algorithm>
#include <set>

#include "model/checkpoint_skew.hpp"
#include "model/events.hpp"
#include "util/duration.hpp"
#include "util/saturating.hpp"
#include "util/text.hpp"
#include "util/time_format.hpp"

namespace ckptmon {

RuleFigures evaluate_rules(const std::map<std::string, TierState>& tiers,
                           const CheckpointView& checkpoints, const RulesHistory& history,
                           const Verifications& verified, const RulesPolicy& policy, double now,
                           const std::map<DrainKey, double>& drained_totals,
                           const EventCatalog* events) {
  RuleFigures out;
  out.now = now;
  std::set<std::string> deletion_tiers;
  static const std::vector<TierSample> kNoSamples;
  for (const auto& [name, tier] : tiers) {
    const TierPolicy& p = policy.for_tier(name);
    const bool deletion = tier.config.role == TierRole::kDeletion;
    if (deletion) deletion_tiers.insert(name);

    if (!tier.config.drains_to.empty()) {
      auto d = evaluate_drain(checkpoints, DrainRoute{tier.config.name, tier.config.drains_to},
                              history.drain, p.drain, now, drained_totals);
      for (auto& f : d) out.drain.push_back(std::move(f));
    }
    auto h = history.tiers.find(name);
    // A deletion queue holds no versions: the sizing rule asks nothing of it
    // (its statfs figures and trend stay), and no retention policy applies.
    static const CheckpointView kNone;
    out.capacity.push_back(evaluate_capacity(deletion ? kNone : checkpoints, tier,
                                             h == history.tiers.end() ? kNoSamples : h->second, p,
                                             now));
    out.bandwidth.push_back(evaluate_bandwidth(checkpoints, name, p.bandwidth, now));

    if (deletion) {
      out.deletion_queue.push_back(evaluate_deletion_queue(checkpoints, name, now));
    } else {
      auto r = evaluate_retention(checkpoints, name, p.retention, now);
      out.cleanup_oldest_age_seconds[name] = cleanup_oldest_age(r, now);
      for (auto& f : r) out.retention.push_back(std::move(f));
    }

    for (const auto& [job, mine] : group_by_job(checkpoints, name)) {
      JobTierFigures j;
      j.tier = name;
      j.job = job;
      for (const Checkpoint* c : mine) {
        if (c->state != CkptState::kPartial) continue;
        ++j.partial_checkpoints;
        sat_add_to(j.partial_bytes, c->bytes);
      }
      auto committed = committed_oldest_first(mine);
      for (const Checkpoint* c : committed) {
        auto v = verified.find(CheckpointKey{c->tier, c->path});
        if (v == verified.end() || v->second) continue;
        ++j.integrity_failed;
        j.integrity_failed_step = std::max(j.integrity_failed_step, c->step);
      }
      if (!committed.empty()) {
        const Checkpoint& last = *committed.back();
        j.has_committed = true;
        j.last_step = last.step;
        j.last_commit_time = commit_time(last);
        j.last_completion_skew_seconds = completion_skew(last, events);
      }
      out.job_tiers.push_back(std::move(j));
    }
  }

  if (events != nullptr) {
    const double window = policy.alerting.rules.saves_failing.window_seconds;
    for (const auto& [key, job] : events->jobs) {
      if (!tiers.contains(key.first)) continue;
      SaveFailureFigures f;
      f.tier = key.first;
      f.job = key.second;
      for (const EventFailure& e : job.recent_failures) {
        if (e.ts < now - window) continue;
        ++f.recent;
        if (e.ts >= f.last_ts) {
          f.last_ts = e.ts;
          f.last_reason = e.reason;
        }
      }
      out.save_failures.push_back(std::move(f));
    }
  }

  std::vector<Checkpoint> known;
  bool all_known = true;
  for (const Checkpoint& c : checkpoints) {
    if (!tiers.contains(c.tier)) {
      all_known = false;
      break;
    }
  }
  const CheckpointView* view = &checkpoints;
  CheckpointView known_view;
  if (!all_known) {
    for (const Checkpoint& c : checkpoints) {
      if (tiers.contains(c.tier)) known.push_back(c);
    }
    known_view = CheckpointView(known);
    view = &known_view;
  }
  out.unverified_cleanups = evaluate_cleanup_verification(
      *view, events,
      [&](const std::string& tier) {
        // rules_policy resolved it against the scan interval; a policy built
        // by hand gets the one-minute floor.
        return policy.for_tier(tier).retention.cleanup_verify_after(0);
      },
      now);
  out.recovery = evaluate_recovery(*view, verified, deletion_tiers);
  for (const auto& [name, tier] : tiers) {
    EncryptionFigures e;
    e.tier = name;
    e.required = tier.config.encryption_required;
    e.known = tier.up && tier.has_stats;
    if (e.known) {
      e.at_rest = tier.stats.encryption_at_rest;
      e.in_transit = tier.stats.encryption_in_transit;
      e.detail = tier.stats.encryption_detail;
      e.violation = e.required && (e.at_rest == "none" || e.in_transit == "none");
    }
    if (e.violation) {
      std::string detail = "tier " + name + " requires encryption (encryption_required) but is ";
      if (e.at_rest == "none") detail += "not encrypted at rest";
      if (e.at_rest == "none" && e.in_transit == "none") detail += " and ";
      if (e.in_transit == "none") detail += "sent in the clear over the network";
      detail += ": ";
      detail += e.detail;
      out.estate_findings.push_back({name, "", "", FindingKind::kNotEncrypted, std::move(detail)});
    }
    out.encryption.push_back(std::move(e));
  }

  const std::vector<Version> versions = join_versions(*view, tiers, verified);
  out.durability =
      evaluate_durability(versions, out.recovery, *view, tiers, verified, policy.estate, now);
  out.lifecycle = evaluate_lifecycle(versions, tiers, policy, now);
  ResidencyResult residency = evaluate_residency(versions, tiers);
  out.residency = std::move(residency.figures);
  for (AccessFinding& f : residency.findings) out.estate_findings.push_back(std::move(f));
  for (const UnverifiedCleanupFigures& u : out.unverified_cleanups) {
    std::size_t n = 0;
    for (const UnverifiedCleanup& e : u.entries) {
      if (n++ == RuleFigures::kMaxCleanupFindingsPerTierJob) break;
      std::string detail = "a cleanup event said step ";
      detail += std::to_string(e.step);
      detail += " of job ";
      detail += u.job;
      detail += " was removed from tier ";
      detail += u.tier;
      detail += " (the step's last event: ";
      detail += format_rfc3339(e.cleaned_at);
      detail += "), but the walk still finds it (";
      detail += human_bytes(static_cast<double>(e.bytes));
      detail += ") ";
      detail += format_duration(
          std::chrono::seconds(static_cast<std::int64_t>(std::max(0.0, now - e.cleaned_at))));
      detail += " later";
      out.estate_findings.push_back(
          {u.tier, u.job, e.path, FindingKind::kCleanupUnverified, std::move(detail)});
    }
  }
  return out;
}

}  // namespace ckptmon
