#include "rules/alerts.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "util/duration.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

// "1h30m", "45s", "never" (+Inf).
std::string human_seconds(double s) {
  if (std::isinf(s)) return s > 0 ? "never" : "-inf";
  if (std::isnan(s)) return "unknown";
  if (s < 0) s = 0;
  if (s < 10) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, std::round(s * 10) / 10);
    return std::string(buf, r.ptr) + "s";
  }
  constexpr double kCap = 100.0 * 365 * 86400;
  return format_duration(
      std::chrono::seconds(static_cast<std::int64_t>(std::llround(std::min(s, kCap)))));
}

std::string bytes(double b) { return human_bytes(b); }

// At most `max` bytes of `s` (valid UTF-8, as the event parser hands it on),
// cut at a character boundary, "..." appended when cut.
std::string clip_utf8(std::string_view s, std::size_t max) {
  if (s.size() <= max) return std::string(s);
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + "...";
}

std::string rate(const std::optional<double>& r) {
  return r ? human_bytes(*r) + "/s" : std::string("unknown");
}

struct Texts {
  std::string summary;
  std::string description;
};

// Builds conditions with the shared fields filled in.
class Conditions {
 public:
  explicit Conditions(const AlertingConfig& config) : config_(config) {}

  // `texts()` returns the summary and description; it runs only when the
  // signal is not kClear: the evaluator never reads a cleared condition's
  // texts, and most conditions are clear most of the time.
  template <typename MakeTexts>
  void add(AlertId id, const std::string& tier, const std::string& job, Signal signal, double value,
           MakeTexts&& texts) {
    last_added_ = false;
    const AlertRuleCommon& rule = *alert_rule(config_.rules, id);
    const std::string_view name = alert_name(id);
    if (!rule.enabled) return;
    AlertCondition c;
    c.labels = {std::string(name), std::string(to_string(rule.severity)), tier, job};
    c.signal = signal;
    c.for_seconds = rule.for_seconds;
    c.value = value;
    if (signal != Signal::kClear) {
      Texts t = std::forward<MakeTexts>(texts)();
      c.summary = std::move(t.summary);
      c.description = std::move(t.description);
      c.runbook_url = runbook_url(config_.runbook_url, name);
    }
    out_.push_back(std::move(c));
    last_added_ = true;
  }
  // Adds an annotation to the condition the last add() made, unless that
  // add() made none (rule disabled) or it is clear (nothing reads its texts).
  void annotate(std::string key, std::string value) {
    if (!last_added_ || out_.empty() || out_.back().signal == Signal::kClear) return;
    out_.back().annotations.emplace_back(std::move(key), std::move(value));
  }
  std::vector<AlertCondition> take() { return std::move(out_); }

 private:
  const AlertingConfig& config_;
  std::vector<AlertCondition> out_;
  bool last_added_ = false;
};

// Fire above `fire`, clear at or below `clear`, hold between.
Signal above(double v, double fire, double clear) {
  if (v > fire) return Signal::kFire;
  if (v <= clear) return Signal::kClear;
  return Signal::kHold;
}

// Fire below `fire`, clear at or above `clear`, hold between.
Signal below(double v, double fire, double clear) {
  if (v < fire) return Signal::kFire;
  if (v >= clear) return Signal::kClear;
  return Signal::kHold;
}

// A count: fire at `min` or more, clear at none, hold between.
Signal at_least(double n, double min) {
  if (n >= min) return Signal::kFire;
  if (n <= 0) return Signal::kClear;
  return Signal::kHold;
}

// A signal with the value it was taken from.
struct Reading {
  Signal signal = Signal::kHold;
  double value = std::numeric_limits<double>::infinity();
};

// below() of a figure that may be unknown this cycle: unknown holds, with +Inf.
Reading below_if_known(const std::optional<double>& v, double fire, double clear) {
  if (!v) return {};
  return {below(*v, fire, clear), *v};
}

}  // namespace

std::string_view to_string(AlertState s) {
  switch (s) {
    case AlertState::kInactive:
      return "inactive";
    case AlertState::kPending:
      return "pending";
    case AlertState::kFiring:
      return "firing";
  }
  return "unknown";
}

std::vector<AlertCondition> alert_conditions(const RuleFigures& figures,
                                             const std::map<std::string, TierState>& tiers,
                                             const AlertingConfig& config, const SelfHealth& self) {
  const AlertRules& r = config.rules;
  const double now = figures.now;
  Conditions out(config);

  for (const DrainFigures& d : figures.drain) {
    const double overlap = static_cast<double>(d.overlapping_checkpoints);
    const Signal s =
        at_least(overlap, static_cast<double>(r.drain_backlog_growing.min_overlapping));
    out.add(AlertId::kDrainBacklogGrowing, d.tier, d.job, s, overlap, [&] {
      return Texts{
          "Drain backlog of job " + d.job + " on tier " + d.tier + " is growing",
          std::to_string(d.pending_checkpoints) + " committed checkpoints of job " + d.job +
              " on tier " + d.tier + " wait to drain to " + d.to_tier + " (" +
              bytes(static_cast<double>(d.backlog_bytes)) + " still to copy, oldest waiting " +
              human_seconds(d.oldest_pending_age) +
              "): a new checkpoint arrived before the previous one finished draining. Drain "
              "rate " +
              rate(d.rate_bytes_per_second) + "."};
    });

    const bool too_old = d.oldest_pending_age > r.drain_too_slow.max_pending_age_seconds;
    const bool too_long = d.time_to_empty_seconds &&
                          *d.time_to_empty_seconds > r.drain_too_slow.max_time_to_empty_seconds;
    out.add(AlertId::kDrainTooSlow, d.tier, d.job,
            too_old || too_long ? Signal::kFire : Signal::kClear, d.oldest_pending_age, [&] {
              return Texts{
                  "Drain of job " + d.job + " from " + d.tier + " to " + d.to_tier + " is too slow",
                  "The oldest pending checkpoint of job " + d.job + " on tier " + d.tier +
                      " has waited " + human_seconds(d.oldest_pending_age) + " (limit " +
                      human_seconds(r.drain_too_slow.max_pending_age_seconds) + "); " +
                      bytes(static_cast<double>(d.backlog_bytes)) + " still to copy to " +
                      d.to_tier + " at " + rate(d.rate_bytes_per_second) + ", time to empty " +
                      (d.time_to_empty_seconds ? human_seconds(*d.time_to_empty_seconds)
                                               : std::string("unknown")) +
                      " (limit " + human_seconds(r.drain_too_slow.max_time_to_empty_seconds) +
                      ")."};
            });
  }

  for (const CapacityFigures& c : figures.capacity) {
    {
      const Reading full = below_if_known(c.time_to_full_seconds, r.tier_filling_up.horizon_seconds,
                                          r.tier_filling_up.clear_horizon_seconds);
      const double v = full.value;
      out.add(AlertId::kTierFillingUp, c.tier, "", full.signal, v, [&] {
        return Texts{"Tier " + c.tier + " is predicted to be full in " + human_seconds(v),
                     "At the linear trend of its available space, tier " + c.tier + " (" +
                         bytes(c.avail_bytes) + " available of " + bytes(c.size_bytes) +
                         ") fills up in " + human_seconds(v) + ", within the horizon of " +
                         human_seconds(r.tier_filling_up.horizon_seconds) +
                         ". Required by the sizing "
                         "rule: " +
                         bytes(c.required_bytes) + "."};
      });
    }
    if (c.used_ratio) {
      const double v = *c.used_ratio;
      out.add(AlertId::kTierAlmostFull, c.tier, "",
              above(v, r.tier_almost_full.used_ratio, r.tier_almost_full.clear_used_ratio), v, [&] {
                return Texts{
                    "Tier " + c.tier + " is " + alert_percent(v) + " full",
                    "Tier " + c.tier + " has " + bytes(c.avail_bytes) + " available of " +
                        bytes(c.size_bytes) + " (" + alert_percent(v) + " used, threshold " +
                        alert_percent(r.tier_almost_full.used_ratio) +
                        "). Checkpoints still needed: " + bytes(c.still_needed_bytes) + "."};
              });
    }
    if (c.has_stats) {
      const double margin = 1.0 + r.next_wont_fit.clear_margin_ratio;
      for (const JobCapacity& j : c.jobs) {
        out.add(AlertId::kNextWontFit, c.tier, j.job,
                below(c.avail_bytes, j.next_checkpoint_bytes, j.next_checkpoint_bytes * margin),
                j.next_checkpoint_bytes, [&] {
                  return Texts{
                      "Next checkpoint of job " + j.job + " will not fit on tier " + c.tier,
                      "The next checkpoint of job " + j.job + " needs " +
                          bytes(j.next_checkpoint_bytes) + " more on tier " + c.tier +
                          " (latest checkpoint " + bytes(static_cast<double>(j.latest_bytes)) +
                          "), but only " + bytes(c.avail_bytes) + " is available."};
                });
      }
      if (c.concurrent_jobs > 1 && c.jobs.size() > 1) {
        out.add(AlertId::kNextWontFit, c.tier, "",
                below(c.avail_bytes, c.next_checkpoint_bytes, c.next_checkpoint_bytes * margin),
                c.next_checkpoint_bytes, [&] {
                  return Texts{"Next checkpoints of concurrent jobs will not fit on tier " + c.tier,
                               "The next checkpoints of the " + std::to_string(c.concurrent_jobs) +
                                   " jobs that checkpoint at the same time need " +
                                   bytes(c.next_checkpoint_bytes) + " on tier " + c.tier +
                                   ", but only " + bytes(c.avail_bytes) + " is available."};
                });
      }
    }
  }

  for (const JobTierFigures& j : figures.job_tiers) {
    const double n = static_cast<double>(j.partial_checkpoints);
    out.add(AlertId::kPartial, j.tier, j.job,
            at_least(n, static_cast<double>(r.partial.min_partial)), n, [&] {
              return Texts{"Job " + j.job + " left partial checkpoints on tier " + j.tier,
                           std::to_string(j.partial_checkpoints) + " partial checkpoints of job " +
                               j.job + " on tier " + j.tier + " (" +
                               bytes(static_cast<double>(j.partial_bytes)) +
                               ") cannot be restored: a save was interrupted or is broken."};
            });
    if (j.has_committed) {
      const double v = j.last_completion_skew_seconds;
      const auto& rule = r.completion_skew_high;
      out.add(AlertId::kCompletionSkewHigh, j.tier, j.job,
              above(v, rule.max_skew_seconds, rule.clear_skew_seconds), v, [&] {
                return Texts{
                    "Checkpoint shards of job " + j.job + " on tier " + j.tier + " land " +
                        human_seconds(v) + " apart",
                    "The latest committed checkpoint of job " + j.job + " on tier " + j.tier +
                        " (step " + std::to_string(j.last_step) + ") took " + human_seconds(v) +
                        " from its first to its last shard (threshold " +
                        human_seconds(rule.max_skew_seconds) +
                        "): some ranks write much later than others and the whole job waits for "
                        "them."};
              });
    }
  }

  for (const auto& entry : figures.cleanup_oldest_age_seconds) {
    // Named, not structured bindings: clang (clang-tidy) 14 cannot capture those in a lambda.
    const auto& tier = entry.first;
    const auto& age = entry.second;
    std::uint64_t count = 0;
    std::uint64_t queued = 0;
    for (const RetentionFigures& f : figures.retention) {
      if (f.tier != tier) continue;
      count += f.pending_checkpoints();
      queued += f.pending_bytes();
    }
    out.add(AlertId::kCleanupStalled, tier, "",
            age > r.cleanup_stalled.max_age_seconds ? Signal::kFire : Signal::kClear, age, [&] {
              return Texts{"Cleanup of tier " + tier + " is stalled",
                           std::to_string(count) + " checkpoints (" +
                               bytes(static_cast<double>(queued)) + ") on tier " + tier +
                               " should be gone by the retention policy; the oldest has waited " +
                               human_seconds(age) + " (threshold " +
                               human_seconds(r.cleanup_stalled.max_age_seconds) + ")."};
            });
  }

  for (const DeletionQueueFigures& d : figures.deletion_queue) {
    const double within = r.deletion_stalled.deletion_within_seconds;
    out.add(AlertId::kDeletionStalled, d.tier, "",
            d.oldest_age_seconds > within ? Signal::kFire : Signal::kClear, d.oldest_age_seconds,
            [&] {
              return Texts{"Deletion queue on tier " + d.tier + " is not draining",
                           std::to_string(d.checkpoints) + " checkpoints (" +
                               bytes(static_cast<double>(d.bytes)) + ") wait on deletion tier " +
                               d.tier + "; the oldest has been there " +
                               human_seconds(d.oldest_age_seconds) + " (deletion_within " +
                               human_seconds(within) + ")."};
            });
  }

  for (const RecoveryPoint& p : figures.recovery) {
    const auto& rule = r.recovery_point_stale;
    const bool active = p.last_activity > 0 && now - p.last_activity <= rule.active_window_seconds;
    const double since = p.restorable ? p.timestamp : p.first_activity;
    const double age = since > 0 ? std::max(0.0, now - since) : 0;
    out.add(AlertId::kRecoveryPointStale, "", p.job,
            active && age > rule.max_age_seconds ? Signal::kFire : Signal::kClear, age, [&] {
              std::string what = p.restorable
                                     ? "The newest restorable checkpoint of job " + p.job +
                                           " (step " + std::to_string(p.step) + " on tier " +
                                           p.tier + ") is " + human_seconds(age) + " old"
                                     : "Job " + p.job + " has no restorable checkpoint after " +
                                           human_seconds(age) + " of checkpoint activity";
              return Texts{"Recovery point of job " + p.job + " is " + human_seconds(age) + " old",
                           what + " (threshold " + human_seconds(rule.max_age_seconds) +
                               "), yet the job wrote checkpoint data " +
                               human_seconds(std::max(0.0, now - p.last_activity)) +
                               " ago: a failure now loses that much training."};
            });
  }

  for (const DurabilityFigures& d : figures.durability) {
    // Unknown (no durable tier watched here) is no condition, not a clear one.
    if (!d.durable_known) continue;
    const double within = d.policy.durable_within_seconds;
    out.add(AlertId::kRecoveryPointNotDurable, "", d.job,
            d.durable_lag_seconds > within ? Signal::kFire : Signal::kClear, d.durable_lag_seconds,
            [&] {
              const std::string risk = d.steps_at_risk ? std::to_string(*d.steps_at_risk) + " steps"
                                                       : "its newest steps";
              const std::string durable =
                  d.durable.restorable
                      ? "step " + std::to_string(d.durable.step) + " on tier " + d.durable.tier
                      : "none yet";
              std::string text = "The oldest checkpoint of job " + d.job +
                                 " newer than its durable recovery point (" + durable +
                                 ") has waited " + human_seconds(d.durable_lag_seconds) +
                                 " for a copy on a durable tier (durable_within " +
                                 human_seconds(within) + "). A node loss now costs ";
              text += risk;
              text += ".";
              return Texts{"Job " + d.job + "'s newest checkpoints are only on node-local tiers",
                           std::move(text)};
            });
    out.add(AlertId::kUnderCopied, "", d.job,
            d.versions_under_copied > 0 ? Signal::kFire : Signal::kClear,
            static_cast<double>(d.versions_under_copied), [&] {
              return Texts{"Job " + d.job + " has checkpoints with too few durable copies",
                           std::to_string(d.versions_under_copied) + " of the " +
                               std::to_string(d.versions) + " restorable checkpoint(s) of job " +
                               d.job + " older than " +
                               human_seconds(d.policy.durable_within_seconds) +
                               " have fewer than " + std::to_string(d.policy.copies_required) +
                               " complete copies on durable tiers."};
            });
  }

  for (const EncryptionFigures& e : figures.encryption) {
    if (!e.required || !e.known) continue;  // unknown holds what it was
    out.add(AlertId::kTierNotEncrypted, e.tier, "", e.violation ? Signal::kFire : Signal::kClear,
            e.violation ? 1 : 0, [&] {
              return Texts{"Tier " + e.tier + " requires encryption but is not encrypted",
                           "Tier " + e.tier + " has encryption_required; at rest: " + e.at_rest +
                               ", in transit: " + e.in_transit + " (" + e.detail + ")."};
            });
  }

  for (const DrillRecord& d : figures.drills) {
    out.add(AlertId::kRestoreDrillFailed, d.tier, d.job, d.ok() ? Signal::kClear : Signal::kFire,
            d.ok() ? 0 : 1, [&] {
              std::string why = !d.read_ok() ? "could not read it back: " + d.failure
                                             : "took " + human_seconds(d.total_seconds()) +
                                                   ", over the recovery_time_objective of " +
                                                   human_seconds(d.objective_seconds.value_or(0));
              return Texts{"A restore drill of job " + d.job + " on " + d.tier + " failed",
                           "The last restore drill of job " + d.job + " on " + d.tier + " (step " +
                               std::to_string(d.step) + ", " + d.path + ") " + why + "."};
            });
  }

  for (const ResidencyFigures& f : figures.residency) {
    out.add(AlertId::kOutsideAllowedResidency, f.tier, f.job,
            f.violations > 0 ? Signal::kFire : Signal::kClear, static_cast<double>(f.violations),
            [&] {
              const std::string allowed = join(f.allowed, ", ");
              return Texts{"Checkpoints of job " + f.job + " are on " + f.tier +
                               ", outside their allowed residency",
                           std::to_string(f.violations) + " of the " + std::to_string(f.copies) +
                               " copies of job " + f.job + "'s checkpoints on tier " + f.tier +
                               " lie in residency '" + f.residency +
                               "', which the job's namespaces do not allow (allowed: " +
                               (allowed.empty() ? std::string("none") : allowed) + ")."};
            });
  }

  if (figures.integrity_known) {
    for (const JobTierFigures& j : figures.job_tiers) {
      const double n = static_cast<double>(j.integrity_failed);
      out.add(
          AlertId::kIntegrityFailed, j.tier, j.job, n > 0 ? Signal::kFire : Signal::kClear, n, [&] {
            std::string text = std::to_string(j.integrity_failed) +
                               " committed checkpoint(s) of job " + j.job + " on tier " + j.tier +
                               " failed integrity verification (a checksum mismatch or a "
                               "missing shard)";
            if (j.integrity_failed_step >= 0) {
              text += ", the newest at step " + std::to_string(j.integrity_failed_step);
            }
            text +=
                ": they no longer count as restorable, and the recovery point stepped back "
                "past them.";
            return Texts{"A checkpoint of job " + j.job + " on tier " + j.tier + " is corrupt",
                         std::move(text)};
          });
    }
  }

  for (const CapacityFigures& c : figures.capacity) {
    const auto& rule = r.tier_inodes_low;
    Reading low;  // unknown (no fixed inode count, no stats) holds
    if (c.files_known) {
      const double free = c.files_free;
      const bool fire = free < c.still_needed_files || free < c.files_total * rule.min_free_ratio;
      const bool clear = free >= c.still_needed_files * (1 + rule.clear_margin_ratio) &&
                         free >= c.files_total * rule.clear_free_ratio;
      low = {fire ? Signal::kFire : (clear ? Signal::kClear : Signal::kHold), free};
    }
    out.add(AlertId::kTierInodesLow, c.tier, "", low.signal, low.value, [&] {
      const auto count = [](double v) {
        return std::to_string(static_cast<std::uint64_t>(std::max(0.0, std::ceil(v))));
      };
      return Texts{"Tier " + c.tier + " is running out of inodes",
                   "Tier " + c.tier + " has " + count(c.files_free) + " free inodes of " +
                       count(c.files_total) + "; its checkpoints still need " +
                       count(c.still_needed_files) +
                       " by the sizing rule (files per checkpoint x retained versions, plus the "
                       "next checkpoints), and the floor is " +
                       alert_percent(rule.min_free_ratio) +
                       " of the inodes. Saves fail with ENOSPC while bytes are still free."};
    });
  }

  for (const SaveFailureFigures& f : figures.save_failures) {
    const auto& rule = r.saves_failing;
    const double n = static_cast<double>(f.recent);
    out.add(AlertId::kSavesFailing, f.tier, f.job,
            at_least(n, static_cast<double>(rule.min_failures)), n, [&] {
              std::string text = std::to_string(f.recent) + " save(s) of job " + f.job +
                                 " on tier " + f.tier + " failed within the last " +
                                 human_seconds(rule.window_seconds);
              if (!f.last_reason.empty()) {
                text += "; the last one: ";
                text += clip_utf8(f.last_reason, 200);
              }
              text += ". The recovery point does not move while saves fail.";
              return Texts{
                  "Checkpoint saves of job " + f.job + " on tier " + f.tier + " are failing",
                  std::move(text)};
            });
  }

  for (const AccessFigures& a : figures.access) {
    const auto& rule = r.access_finding;
    std::uint64_t n = 0;
    std::string kinds;
    for (FindingKind k : rule.kinds) {
      const std::uint64_t c = a.by_kind[static_cast<std::size_t>(k)];
      if (c == 0) continue;
      n += c;
      if (!kinds.empty()) kinds += ", ";
      kinds += std::to_string(c) + " " + std::string(to_string(k));
    }
    const double v = static_cast<double>(n);
    const Signal s = !a.known ? Signal::kHold : (n > 0 ? Signal::kFire : Signal::kClear);
    out.add(AlertId::kAccessFinding, a.tier, "", s, v, [&] {
      return Texts{"Checkpoints on tier " + a.tier + " can be read or written by the wrong people",
                   "The access audit of tier " + a.tier + " found " + kinds +
                       "; /api/v1/findings?tier=" + a.tier +
                       " lists the paths and who can read "
                       "them."};
    });
  }

  for (const auto& entry : tiers) {
    // Named, not structured bindings: clang (clang-tidy) 14 cannot capture those in a lambda.
    const auto& name = entry.first;
    const auto& t = entry.second;
    out.add(AlertId::kTierDown, name, "", t.up ? Signal::kClear : Signal::kFire, t.up ? 1 : 0, [&] {
      return Texts{"Tier " + name + " is down",
                   "Tier " + name + " (" + t.config.path + ") cannot be probed: " + t.down_reason +
                       ". Its figures are stale and checkpoints written there may fail."};
    });
  }

  for (const BandwidthFigures& b : figures.bandwidth) {
    const auto& rule = r.bandwidth_shortfall;
    std::optional<double> known;
    if (b.observed_bytes_per_second && b.required_bytes_per_second > 0) {
      known = *b.observed_bytes_per_second / b.required_bytes_per_second;
    }
    const Reading shortfall = below_if_known(known, rule.min_ratio, rule.clear_ratio);
    const double ratio = shortfall.value;
    out.add(AlertId::kBandwidthShortfall, b.tier, "", shortfall.signal, ratio, [&] {
      return Texts{
          "Write bandwidth of tier " + b.tier + " falls short of what checkpoints need",
          "Checkpoints on tier " + b.tier + " were written at " +
              rate(b.observed_bytes_per_second) + ", but " + std::to_string(b.concurrent_writers) +
              " concurrent writers of " + bytes(b.bytes_per_checkpoint) + " each need " +
              rate(b.required_bytes_per_second) + " to finish within the allowed window (ratio " +
              alert_number(ratio) + ", threshold " + alert_number(rule.min_ratio) + ")."};
    });
  }

  {
    const double n = static_cast<double>(self.store_consecutive_errors);
    out.add(AlertId::kStateWriteFailing, "", "",
            at_least(n, static_cast<double>(self.store_failing_after)), n, [&] {
              return Texts{"ckptmon cannot write its state database",
                           "The last " + std::to_string(self.store_consecutive_errors) +
                               " writes to " + self.store_path + " failed (" +
                               self.store_last_error +
                               "): catalog changes, event-log positions and history are not "
                               "kept, and a restart would lose them. /-/ready fails meanwhile."};
            });
  }
  for (const GpuJobFigures& g : figures.gpu_jobs) {
    {
      const auto& rule = r.stalling_gpus;
      const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(1, rule.consecutive));
      Signal s = Signal::kHold;  // no known checkpoint yet: nothing to judge
      double v = 0;
      const std::size_t known = std::min(g.drops.size(), g.losses.size());
      double lost = 0;
      if (known > 0) {
        v = g.drops[known - 1];
        lost = g.losses[known - 1];
        if (v <= rule.clear_drop_ratio || lost <= rule.clear_lost_gpu_seconds) {
          s = Signal::kClear;
        } else if (stalled_streak(g.drops, g.losses, rule) >= n) {
          s = Signal::kFire;
        }
      }
      out.add(AlertId::kStallingGpus, "", g.job, s, v, [&] {
        return Texts{"Checkpoints of job " + g.job + " stall its GPUs",
                     "GPU utilisation of job " + g.job + " (" + std::to_string(g.gpus) +
                         " GPUs) dropped by " + alert_percent(v) +
                         " of its baseline during its last checkpoint (" +
                         alert_number(std::round(lost)) + " GPU-seconds lost), and by more than " +
                         alert_percent(rule.min_drop_ratio) + " with at least " +
                         alert_number(rule.min_lost_gpu_seconds) +
                         " GPU-seconds lost in each of the last " + std::to_string(n) +
                         " checkpoints: the ranks wait on the save instead of training."};
      });
    }
    {
      const auto& rule = r.goodput_low;
      if (g.gpu_seconds_in_window <= 0) continue;
      const double v = g.lost_in_window / g.gpu_seconds_in_window;
      out.add(AlertId::kGoodputLow, "", g.job, above(v, rule.max_lost_ratio, rule.clear_lost_ratio),
              v, [&] {
                return Texts{
                    "Checkpoints cost job " + g.job + " " + alert_percent(v) + " of its GPU time",
                    "Checkpoints of job " + g.job + " left its " + std::to_string(g.gpus) +
                        " GPUs idle for " + alert_number(std::round(g.lost_in_window)) +
                        " GPU-seconds over the last " + human_seconds(rule.window_seconds) + " (" +
                        alert_percent(v) + " of " +
                        alert_number(std::round(g.gpu_seconds_in_window)) +
                        " GPU-seconds, threshold " + alert_percent(rule.max_lost_ratio) + ")."};
              });
    }
  }
  for (const LastSlowFigures& l : figures.storage_path.last_slow) {
    const SlowVerdict& v = l.verdict;
    const double limit = v.missed == "median_multiple" ? v.median_limit_seconds : v.window_seconds;
    out.add(AlertId::kWindowMissed, l.tier, l.job, v.slow ? Signal::kFire : Signal::kClear,
            v.duration_seconds, [&] {
              return Texts{"Checkpoint of job " + l.job + " on tier " + l.tier + " took " +
                               human_seconds(v.duration_seconds) +
                               " (cause: " + std::string(to_string(v.cause)) + ")",
                           "The latest committed checkpoint of job " + l.job + " on tier " +
                               l.tier + " (step " + std::to_string(l.step) + ") took " +
                               human_seconds(v.duration_seconds) + ", over its " + v.missed +
                               " limit of " + human_seconds(limit) + ". Cause: " +
                               std::string(to_string(v.cause)) + " (" + v.evidence + ")."};
            });
    out.annotate("cause", std::string(to_string(v.cause)));
    out.annotate("evidence", v.evidence);
  }
  for (const RestoreFigures& f : figures.storage_path.restore) {
    if (f.objective_seconds <= 0) continue;
    const auto& rule = r.rto_at_risk;
    Reading risk;
    if (f.estimate) {
      risk = {
          above(f.estimate->seconds, f.objective_seconds, rule.clear_ratio * f.objective_seconds),
          f.estimate->seconds};
    }
    out.add(AlertId::kRtoAtRisk, f.tier, f.job, risk.signal, risk.value, [&] {
      if (!f.estimate) {  // held while the estimate is unknown
        return Texts{"Restore time of job " + f.job + " from tier " + f.tier + " is unknown",
                     "No read throughput of tier " + f.tier +
                         " is known this cycle; the alert holds its state."};
      }
      const RestoreEstimate& e = *f.estimate;
      return Texts{"Restoring job " + f.job + " from tier " + f.tier + " would take " +
                       human_seconds(e.seconds) + ", over its objective of " +
                       human_seconds(f.objective_seconds),
                   "The newest restorable checkpoint of job " + f.job + " on tier " + f.tier +
                       " (step " + std::to_string(f.step) + ", " + bytes(f.bytes) + " in " +
                       alert_number(f.files) + " files) is estimated to restore in " +
                       human_seconds(e.seconds) + ": " + human_seconds(e.transfer_seconds) +
                       " reading at " + human_bytes(e.read_bytes_per_second) + "/s (" +
                       std::string(to_string(e.read_source)) + ") plus " +
                       human_seconds(e.metadata_seconds) +
                       " of metadata operations, over the recovery_time_objective of " +
                       human_seconds(f.objective_seconds) + "."};
    });
  }
  return out.take();
}

std::vector<AlertTransition> AlertEvaluator::evaluate(std::span<const AlertCondition> conditions,
                                                      double now, double mono) {
  double dt = 0;
  if (!std::isnan(last_mono_)) dt = std::clamp(mono - last_mono_, 0.0, max_step_);
  last_mono_ = mono;
  // A reported moment: wall time now minus the monotonic time since it. A
  // restored instance has only its wall time: the time since is taken from
  // it once (at least 0) and measured on the monotonic clock from then on.
  auto report = [&](double& at, double& at_mono) {
    if (std::isnan(at_mono)) at_mono = mono - std::max(0.0, now - at);
    at = now - std::max(0.0, mono - at_mono);
  };
  resolved_.clear();
  std::vector<AlertTransition> out;
  auto transition = [&](const AlertInstance& a, AlertState from, AlertState to) {
    out.push_back({a.labels, from, to, now, a.value, a.summary, a.description});
  };

  std::map<AlertLabels, const AlertCondition*> seen;
  for (const AlertCondition& c : conditions) seen[c.labels] = &c;

  // Instances that are active and have no condition this cycle: cleared.
  for (auto it = instances_.begin(); it != instances_.end();) {
    if (seen.contains(it->first)) {
      ++it;
      continue;
    }
    AlertInstance& a = it->second;
    if (a.state == AlertState::kFiring) {
      a.resolved_at = now;
      resolved_.push_back(a);
    }
    transition(a, a.state, AlertState::kInactive);
    it = instances_.erase(it);
  }

  for (const auto& [labels, c] : seen) {
    auto it = instances_.find(labels);
    const bool is_new = it == instances_.end();
    if (is_new) {
      if (c->signal != Signal::kFire) continue;
      AlertInstance a;
      a.labels = labels;
      a.active_at = now;
      a.active_mono = mono;
      a.state = AlertState::kPending;
      it = instances_.emplace(labels, std::move(a)).first;
    } else if (c->signal == Signal::kClear) {
      AlertInstance& a = it->second;
      a.value = c->value;
      if (a.state == AlertState::kFiring) {
        a.resolved_at = now;
        resolved_.push_back(a);
      }
      transition(a, a.state, AlertState::kInactive);
      instances_.erase(it);
      continue;
    } else {
      it->second.active_for += dt;
    }
    AlertInstance& a = it->second;
    report(a.active_at, a.active_mono);
    if (a.state == AlertState::kFiring) report(a.fired_at, a.fired_mono);
    a.for_seconds = c->for_seconds;
    a.value = c->value;
    a.summary = c->summary;
    a.description = c->description;
    a.runbook_url = c->runbook_url;
    a.annotations = c->annotations;
    if (a.state == AlertState::kPending && a.active_for >= a.for_seconds) {
      a.state = AlertState::kFiring;
      a.fired_at = now;
      a.fired_mono = mono;
      transition(a, is_new ? AlertState::kInactive : AlertState::kPending, AlertState::kFiring);
    } else if (is_new) {
      transition(a, AlertState::kInactive, AlertState::kPending);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const AlertTransition& a, const AlertTransition& b) { return a.labels < b.labels; });
  return out;
}

void AlertEvaluator::restore(std::span<const AlertInstance> saved) {
  instances_.clear();
  resolved_.clear();
  last_mono_ = std::numeric_limits<double>::quiet_NaN();
  for (const AlertInstance& a : saved) {
    if (a.state == AlertState::kInactive) continue;
    AlertInstance copy = a;
    copy.resolved_at = 0;
    // Another process's monotonic readings mean nothing here.
    copy.active_mono = std::numeric_limits<double>::quiet_NaN();
    copy.fired_mono = std::numeric_limits<double>::quiet_NaN();
    instances_[copy.labels] = std::move(copy);
  }
}

std::vector<AlertInstance> AlertEvaluator::active() const {
  std::vector<AlertInstance> out;
  for (const auto& [labels, a] : instances_) out.push_back(a);
  return out;
}

std::vector<AlertInstance> AlertEvaluator::firing() const {
  std::vector<AlertInstance> out;
  for (const auto& [labels, a] : instances_) {
    if (a.state == AlertState::kFiring) out.push_back(a);
  }
  return out;
}

}  // namespace ckptmon
