#include "config/rules_config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "config/http_client_config.hpp"
#include "model/access.hpp"
#include "model/alert_id.hpp"
#include "model/events.hpp"

namespace ckptmon {
namespace {

// Checks lo <= hi for two keys of `m` already read. The error points at
// `hi` when the file sets it, else at `lo`: always at a key the user wrote.
void require_order(YamlMap& m, ErrorSink& sink, std::string_view lo_key, double lo,
                   std::string_view hi_key, double hi, std::string (*show)(double)) {
  if (lo <= hi) return;
  YamlField lo_f = m.get(lo_key);
  YamlField hi_f = m.get(hi_key);
  if (hi_f.present()) {
    sink.add(hi_f.mark(), hi_f.path,
             "must be at least " + std::string(lo_key) + " (" + show(lo) + "), got " +
                 describe(hi_f.value));
  } else {
    sink.add(lo_f.mark(), lo_f.path,
             "must be at most " + std::string(hi_key) + " (" + show(hi) + "), got " +
                 describe(lo_f.value));
  }
}

void read_common(YamlMap& m, AlertRuleCommon& out, ErrorSink& sink) {
  if (auto f = m.get("enabled"); f.present()) {
    if (auto v = read_bool(f, sink)) out.enabled = *v;
  }
  seconds_key(m, "for", out.for_seconds, sink, 0);
  if (auto f = m.get("severity"); f.present()) {
    if (auto v = read_enum(f, sink, {"info", "warning", "critical"})) {
      out.severity = *v == "info"      ? Severity::kInfo
                     : *v == "warning" ? Severity::kWarning
                                       : Severity::kCritical;
    }
  }
}

// Reads alerting.rules.<name> when present, with `specific` reading the
// rule's own keys; finish() reports the rest.
template <typename Rule, typename Specific>
void read_rule(YamlMap& rules, std::string_view name, Rule& out, ErrorSink& sink,
               Specific specific) {
  YamlField f = rules.get(name);
  if (!f.present()) return;
  YamlMap m(f.value, f.path, sink);
  if (!m.ok()) return;
  read_common(m, out, sink);
  const std::size_t before = sink.errors().size();
  specific(m, out, before);
  m.finish();
}

// kinds: a list of the kinds a tier's walk reports (model/access.hpp), at
// least one. not_encrypted has its own alert (CheckpointTierNotEncrypted).
void read_finding_kinds(YamlMap& m, std::vector<FindingKind>& out, ErrorSink& sink) {
  YamlField f = m.get("kinds");
  if (!f.present()) return;
  std::string known;
  for (int k = 0; k < kFindingKindCount; ++k) {
    if (!walk_finding_kind(static_cast<FindingKind>(k))) continue;
    if (!known.empty()) known += ", ";
    known += to_string(static_cast<FindingKind>(k));
  }
  if (!f.value.IsSequence() || f.value.size() == 0) {
    sink.add(f.mark(), f.path,
             "expected a list of at least one finding kind (" + known +
                 "); to turn the alert off, set enabled: false");
    return;
  }
  std::vector<FindingKind> kinds;
  for (std::size_t i = 0; i < f.value.size(); ++i) {
    const YamlField item{f.value[i], f.value[i].Mark(), f.path + "[" + std::to_string(i) + "]"};
    auto v = read_string(item, sink);
    if (!v) continue;
    auto k = finding_kind_from(*v);
    if (!k || !walk_finding_kind(*k)) {
      sink.add(item.mark(), item.path,
               "unknown finding kind \"" + *v + "\" (expected one of: " + known + ")");
      continue;
    }
    if (std::find(kinds.begin(), kinds.end(), *k) == kinds.end()) kinds.push_back(*k);
  }
  if (!kinds.empty()) out = std::move(kinds);
}

void read_rules(YamlMap& m, AlertRules& r, ErrorSink& sink) {
  read_rule(m, alert_name(AlertId::kDrainBacklogGrowing), r.drain_backlog_growing, sink,
            [&](YamlMap& rm, auto& o, std::size_t) {
              int_key(rm, "min_overlapping", o.min_overlapping, sink, 1, 1'000'000);
            });
  read_rule(m, alert_name(AlertId::kDrainTooSlow), r.drain_too_slow, sink,
            [&](YamlMap& rm, auto& o, std::size_t) {
              seconds_key(rm, "max_pending_age", o.max_pending_age_seconds, sink, 1);
              seconds_key(rm, "max_time_to_empty", o.max_time_to_empty_seconds, sink, 1);
            });
  read_rule(m, alert_name(AlertId::kTierFillingUp), r.tier_filling_up, sink,
            [&](YamlMap& rm, auto& o, std::size_t before) {
              seconds_key(rm, "horizon", o.horizon_seconds, sink, 1);
              seconds_key(rm, "clear_horizon", o.clear_horizon_seconds, sink, 1);
              if (sink.errors().size() == before) {
                require_order(rm, sink, "horizon", o.horizon_seconds, "clear_horizon",
                              o.clear_horizon_seconds, fmt_seconds);
              }
            });
  read_rule(m, alert_name(AlertId::kTierAlmostFull), r.tier_almost_full, sink,
            [&](YamlMap& rm, auto& o, std::size_t before) {
              double_key(rm, "used_ratio", o.used_ratio, sink, 0, 1);
              double_key(rm, "clear_used_ratio", o.clear_used_ratio, sink, 0, 1);
              if (sink.errors().size() == before) {
                require_order(rm, sink, "clear_used_ratio", o.clear_used_ratio, "used_ratio",
                              o.used_ratio, fmt_number);
              }
            });
  read_rule(m, alert_name(AlertId::kNextWontFit), r.next_wont_fit, sink,
            [&](YamlMap& rm, auto& o, std::size_t) {
              double_key(rm, "clear_margin_ratio", o.clear_margin_ratio, sink, 0, 10);
            });
  read_rule(m, alert_name(AlertId::kPartial), r.partial, sink,
            [&](YamlMap& rm, auto& o, std::size_t) {
              int_key(rm, "min_partial", o.min_partial, sink, 1, 1'000'000);
            });
  read_rule(m, alert_name(AlertId::kCleanupStalled), r.cleanup_stalled, sink,
            [&](YamlMap& rm, auto& o, std::size_t) {
              seconds_key(rm, "max_age", o.max_age_seconds, sink, 1);
            });
  read_rule(m, alert_name(AlertId::kRecoveryPointStale), r.recovery_point_stale, sink,
            [&](YamlMap& rm, auto& o, std::size_t) {
              seconds_key(rm, "max_age", o.max_age_seconds, sink, 1);
              seconds_key(rm, "active_window", o.active_window_seconds, sink, 1);
            });
  read_rule(m, alert_name(AlertId::kCompletionSkewHigh), r.completion_skew_high, sink,
            [&](YamlMap& rm, auto& o, std::size_t before) {
              seconds_key(rm, "max_skew", o.max_skew_seconds, sink, 0);
              seconds_key(rm, "clear_skew", o.clear_skew_seconds, sink, 0);
              if (sink.errors().size() == before) {
                require_order(rm, sink, "clear_skew", o.clear_skew_seconds, "max_skew",
                              o.max_skew_seconds, fmt_seconds);
              }
            });
  read_rule(m, alert_name(AlertId::kTierDown), r.tier_down, sink,
            [](YamlMap&, auto&, std::size_t) {});
  read_rule(m, alert_name(AlertId::kBandwidthShortfall), r.bandwidth_shortfall, sink,
            [&](YamlMap& rm, auto& o, std::size_t before) {
              double_key(rm, "min_ratio", o.min_ratio, sink, 0, 1000);
              double_key(rm, "clear_ratio", o.clear_ratio, sink, 0, 1000);
              if (sink.errors().size() == before) {
                require_order(rm, sink, "min_ratio", o.min_ratio, "clear_ratio", o.clear_ratio,
                              fmt_number);
              }
            });
  read_rule(m, alert_name(AlertId::kStateWriteFailing), r.state_write_failing, sink,
            [](YamlMap&, auto&, std::size_t) {});
  read_rule(m, alert_name(AlertId::kStallingGpus), r.stalling_gpus, sink,
            [&](YamlMap& rm, auto& o, std::size_t before) {
              double_key(rm, "min_drop_ratio", o.min_drop_ratio, sink, 0, 1);
              double_key(rm, "clear_drop_ratio", o.clear_drop_ratio, sink, 0, 1);
              double_key(rm, "min_lost_gpu_seconds", o.min_lost_gpu_seconds, sink, 0, 1e12);
              double_key(rm, "clear_lost_gpu_seconds", o.clear_lost_gpu_seconds, sink, 0, 1e12);
              int_key(rm, "consecutive", o.consecutive, sink, 1, 64);
              if (sink.errors().size() == before) {
                require_order(rm, sink, "clear_drop_ratio", o.clear_drop_ratio, "min_drop_ratio",
                              o.min_drop_ratio, fmt_number);
                require_order(rm, sink, "clear_lost_gpu_seconds", o.clear_lost_gpu_seconds,
                              "min_lost_gpu_seconds", o.min_lost_gpu_seconds, fmt_number);
              }
            });
  read_rule(m, alert_name(AlertId::kGoodputLow), r.goodput_low, sink,
            [&](YamlMap& rm, auto& o, std::size_t before) {
              seconds_key(rm, "window", o.window_seconds, sink, 60);
              double_key(rm, "max_lost_ratio", o.max_lost_ratio, sink, 0, 1);
              double_key(rm, "clear_lost_ratio", o.clear_lost_ratio, sink, 0, 1);
              if (sink.errors().size() == before) {
                require_order(rm, sink, "clear_lost_ratio", o.clear_lost_ratio, "max_lost_ratio",
                              o.max_lost_ratio, fmt_number);
              }
            });
  read_rule(m, alert_name(AlertId::kWindowMissed), r.window_missed, sink,
            [](YamlMap&, auto&, std::size_t) {});
  read_rule(m, alert_name(AlertId::kRtoAtRisk), r.rto_at_risk, sink,
            [&](YamlMap& rm, auto& o, std::size_t) {
              double_key(rm, "clear_ratio", o.clear_ratio, sink, 0, 1);
            });
  // Their thresholds are the jobs' (top-level estate:).
  read_rule(m, alert_name(AlertId::kRecoveryPointNotDurable), r.recovery_point_not_durable, sink,
            [](YamlMap&, auto&, std::size_t) {});
  read_rule(m, alert_name(AlertId::kUnderCopied), r.under_copied, sink,
            [](YamlMap&, auto&, std::size_t) {});
  read_rule(m, alert_name(AlertId::kIntegrityFailed), r.integrity_failed, sink,
            [](YamlMap&, auto&, std::size_t) {});
  read_rule(m, alert_name(AlertId::kTierInodesLow), r.tier_inodes_low, sink,
            [&](YamlMap& rm, auto& o, std::size_t before) {
              double_key(rm, "min_free_ratio", o.min_free_ratio, sink, 0, 1);
              double_key(rm, "clear_free_ratio", o.clear_free_ratio, sink, 0, 1);
              double_key(rm, "clear_margin_ratio", o.clear_margin_ratio, sink, 0, 10);
              if (sink.errors().size() == before) {
                require_order(rm, sink, "min_free_ratio", o.min_free_ratio, "clear_free_ratio",
                              o.clear_free_ratio, fmt_number);
              }
            });
  read_rule(m, alert_name(AlertId::kSavesFailing), r.saves_failing, sink,
            [&](YamlMap& rm, auto& o, std::size_t) {
              seconds_key(rm, "window", o.window_seconds, sink, 60);
              int_key(rm, "min_failures", o.min_failures, sink, 1,
                      static_cast<std::int64_t>(kRecentFailures));
            });
  read_rule(m, alert_name(AlertId::kAccessFinding), r.access_finding, sink,
            [&](YamlMap& rm, auto& o, std::size_t) { read_finding_kinds(rm, o.kinds, sink); });
  read_rule(m, alert_name(AlertId::kDeletionStalled), r.deletion_stalled, sink,
            [&](YamlMap& rm, auto& o, std::size_t) {
              seconds_key(rm, "deletion_within", o.deletion_within_seconds, sink, 1);
            });
  read_rule(m, alert_name(AlertId::kOutsideAllowedResidency), r.outside_allowed_residency, sink,
            [](YamlMap&, auto&, std::size_t) {});
  read_rule(m, alert_name(AlertId::kTierNotEncrypted), r.tier_not_encrypted, sink,
            [](YamlMap&, auto&, std::size_t) {});
  read_rule(m, alert_name(AlertId::kRestoreDrillFailed), r.restore_drill_failed, sink,
            [](YamlMap&, auto&, std::size_t) {});
  m.finish();
}

}  // namespace

void read_retention(YamlMap& m, RetentionPolicy& out, ErrorSink& sink) {
  int_key(m, "keep_last", out.keep_last, sink, 1, 1'000'000);
  int_key(m, "keep_every", out.keep_every, sink, 0, 1'000'000'000'000);
  seconds_key(m, "max_age", out.max_age_seconds, sink, 0);
  seconds_key(m, "partial_window", out.partial_window_seconds, sink, 0);
  seconds_key(m, "cleanup_verify_after", out.cleanup_verify_after_seconds, sink, 1);
  m.finish();
}

void read_sizing(YamlMap& m, SizingPolicy& out, ErrorSink& sink) {
  double_key(m, "replicas", out.replicas, sink, 1, 100);
  double_key(m, "temp_write_allowance_ratio", out.temp_write_allowance_ratio, sink, 0, 100);
  double_key(m, "growth_headroom_ratio", out.growth_headroom_ratio, sink, 0, 100);
  int_key(m, "concurrent_jobs", out.concurrent_jobs, sink, 0, 1'000'000);
  seconds_key(m, "trend_window", out.trend_window_seconds, sink, 60);
  seconds_key(m, "min_trend_span", out.min_trend_span_seconds, sink, 0);
  m.finish();
}

void read_bandwidth(YamlMap& m, BandwidthPolicy& out, ErrorSink& sink) {
  seconds_key(m, "allowed_window", out.allowed_window_seconds, sink, 1);
  int_key(m, "concurrent_writers", out.concurrent_writers, sink, 0, 1'000'000);
  double_key(m, "overhead_ratio", out.overhead_ratio, sink, 0, 100);
  seconds_key(m, "observe_window", out.observe_window_seconds, sink, 60);
  m.finish();
}

namespace {

// A bandwidth in bytes per second, written as a size ("2GiB" = 2 GiB/s); 0 = not stated.
void bandwidth_key(YamlMap& m, std::string_view key, double& out, ErrorSink& sink) {
  YamlField f = m.get(key);
  if (!f.present()) return;
  if (auto v = read_byte_size(f, sink, 0, std::uint64_t{1} << 60)) out = static_cast<double>(*v);
}

// The keys of one storage_path mapping (tier or job), without finish().
void read_storage_path_keys(YamlMap& m, StoragePathPolicy& out, ErrorSink& sink) {
  seconds_key(m, "checkpoint_window", out.checkpoint_window_seconds, sink, 0);
  double_key(m, "median_multiple", out.median_multiple, sink, 0, 1000);
  bandwidth_key(m, "write_bandwidth", out.write_bandwidth, sink);
  bandwidth_key(m, "read_bandwidth", out.read_bandwidth, sink);
  double_key(m, "saturation_ratio", out.saturation_ratio, sink, 0.01, 10);
  double_key(m, "metadata_ops_per_second", out.metadata_ops_per_second, sink, 0, 1e12);
  double_key(m, "metadata_multiple", out.metadata_multiple, sink, 1, 1000);
  double_key(m, "straggler_skew_ratio", out.straggler_skew_ratio, sink, 0.01, 1);
  double_key(m, "node_pressure_ratio", out.node_pressure_ratio, sink, 0.01, 1);
  seconds_key(m, "recovery_time_objective", out.recovery_time_objective_seconds, sink, 0);
  double_key(m, "restore_metadata_ops_per_second", out.restore_metadata_ops_per_second, sink, 1,
             1e12);
}

}  // namespace

void read_storage_path(YamlMap& m, StoragePathPolicy& out,
                       std::map<std::string, StoragePathPolicy>& jobs, ErrorSink& sink) {
  read_storage_path_keys(m, out, sink);
  if (YamlField f = m.get("jobs"); f.present()) {
    if (!f.value.IsMap()) {
      sink.add(f.mark(), f.path,
               "expected a mapping of job name to storage_path keys, got " + describe(f.value));
    } else {
      for (YAML::const_iterator it = f.value.begin(); it != f.value.end(); ++it) {
        const YAML::detail::iterator_value kv = *it;
        const YAML::Node k = kv.first;
        if (!k.IsScalar() || k.Scalar().empty()) {
          sink.add(k.Mark(), f.path, "expected a job name as key, got " + describe(k));
          continue;
        }
        YamlMap jm(kv.second, f.path + "." + k.Scalar(), sink);
        if (!jm.ok()) continue;
        StoragePathPolicy job = out;  // the tier's, with the job's keys over it
        read_storage_path_keys(jm, job, sink);
        jm.finish();
        jobs[k.Scalar()] = job;
      }
    }
  }
  m.finish();
}

namespace {

// "HH:MM" -> minutes after midnight, or nullopt.
std::optional<int> clock_minutes(std::string_view t) {
  if (t.size() != 5 || t[2] != ':') return std::nullopt;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!digit(t[0]) || !digit(t[1]) || !digit(t[3]) || !digit(t[4])) return std::nullopt;
  const int h = (t[0] - '0') * 10 + (t[1] - '0');
  const int m = (t[3] - '0') * 10 + (t[4] - '0');
  if (h > 24 || m > 59 || (h == 24 && m != 0)) return std::nullopt;
  return h * 60 + m;
}

}  // namespace

void read_restore_drill(YamlMap& m, RestoreDrillPolicy& out, ErrorSink& sink) {
  seconds_key(m, "every", out.every_seconds, sink, 60);
  if (YamlField f = m.get("window"); f.present()) {
    if (auto text = read_string(f, sink); text && text->empty()) {
      out.window_start_minute = out.window_end_minute = 0;  // any time of day
    } else if (text) {
      const auto dash = text->find('-');
      std::optional<int> start, end;
      if (dash != std::string::npos) {
        start = clock_minutes(std::string_view(*text).substr(0, dash));
        end = clock_minutes(std::string_view(*text).substr(dash + 1));
      }
      if (!start || !end) {
        sink.add(f.mark(), f.path,
                 "expected a daily window in UTC such as \"02:00-05:00\" (HH:MM-HH:MM, may wrap "
                 "past midnight), got \"" +
                     *text + "\"");
      } else if (*start == 0 && *end == 1440) {
        out.window_start_minute = out.window_end_minute = 0;  // the whole day: any time
      } else if (*start % 1440 == *end % 1440) {
        sink.add(f.mark(), f.path,
                 "the window \"" + *text +
                     "\" starts where it ends; leave `window` out for any time of day");
      } else {
        out.window_start_minute = *start % 1440;
        out.window_end_minute = *end % 1440;
      }
    }
  }
  if (YamlField f = m.get("rate"); f.present()) {
    // A size per second ("500MiB" = 500 MiB/s), like storage_path's bandwidths.
    if (auto v = read_byte_size(f, sink, 0, std::uint64_t{1} << 60)) {
      out.rate_bytes_per_second = static_cast<double>(*v);
    }
  }
  if (YamlField f = m.get("ranks"); f.present()) {
    if (f.value.IsScalar() && f.value.Scalar() == "auto") {
      out.ranks = 0;
    } else if (auto v = read_int(f, sink, 1, 65536)) {
      out.ranks = *v;
    }
  }
  if (YamlField f = m.get("cold"); f.present()) {
    if (auto v = read_bool(f, sink)) out.cold = *v;
  }
  seconds_key(m, "deadline", out.deadline_seconds, sink, 1);
  m.finish();
}

void read_drain(YamlMap& m, DrainPolicy& out, ErrorSink& sink) {
  seconds_key(m, "rate_window", out.rate_window_seconds, sink, 1);
  seconds_key(m, "move_after", out.move_after_seconds, sink, 0);
  m.finish();
}

namespace {

void read_estate_job(YamlMap& m, EstateJobPolicy& out, ErrorSink& sink) {
  int_key(m, "copies_required", out.copies_required, sink, 1, 64);
  seconds_key(m, "durable_within", out.durable_within_seconds, sink, 1);
}

}  // namespace

void read_estate(YamlMap& m, EstatePolicy& out, ErrorSink& sink) {
  read_estate_job(m, out.defaults, sink);
  if (YamlField f = m.get("jobs"); f.present()) {
    read_job_regex_map(
        f, "copies_required, durable_within", sink,
        [&](const std::string& key, std::shared_ptr<const std::regex> regex, YamlMap& jm) {
          EstateJobRule rule;
          rule.job_regex = key;
          rule.regex = std::move(regex);
          rule.policy = out.defaults;  // what the rule does not say, the defaults do
          read_estate_job(jm, rule.policy, sink);
          out.jobs.push_back(std::move(rule));
        });
  }
  m.finish();
}

void read_history(YamlMap& m, HistoryPolicy& out, ErrorSink& sink) {
  seconds_key(m, "raw_retention", out.raw_retention_seconds, sink, 60);
  YamlField f = m.get("downsample");
  if (f.present()) {
    if (!f.value.IsSequence()) {
      sink.add(f.mark(), f.path,
               "expected a list of {resolution, retention}, got " + describe(f.value));
    } else {
      std::vector<DownsampleLevel> levels;
      bool ok = true;
      for (std::size_t i = 0; i < f.value.size(); ++i) {
        const std::string path = f.path + "[" + std::to_string(i) + "]";
        YamlMap lm(f.value[i], path, sink);
        if (!lm.ok()) {
          ok = false;
          continue;
        }
        const std::size_t before = sink.errors().size();
        DownsampleLevel level;
        YamlField res = lm.require("resolution");
        if (res.present()) {
          if (auto v = read_seconds(res, sink, 1)) level.resolution_seconds = *v;
        }
        YamlField ret = lm.require("retention");
        if (ret.present()) {
          if (auto v = read_seconds(ret, sink, 60)) level.retention_seconds = *v;
        }
        lm.finish();
        if (sink.errors().size() != before) {
          ok = false;
          continue;
        }
        // Each level must keep samples longer and coarser than the one before,
        // and its buckets must be whole multiples of the previous ones, or a
        // second pruning pass would delete what the first kept.
        const double prev_retention =
            levels.empty() ? out.raw_retention_seconds : levels.back().retention_seconds;
        if (level.retention_seconds <= prev_retention) {
          sink.add(ret.mark(), ret.path,
                   "must be longer than the previous retention (" + fmt_seconds(prev_retention) +
                       "), got " + describe(ret.value));
          ok = false;
        } else if (!levels.empty()) {
          const double prev = levels.back().resolution_seconds;
          const double ratio = level.resolution_seconds / prev;
          if (level.resolution_seconds <= prev || std::fabs(ratio - std::round(ratio)) > 1e-9) {
            sink.add(res.mark(), res.path,
                     "must be a whole multiple of the previous resolution (" + fmt_seconds(prev) +
                         "), got " + describe(res.value));
            ok = false;
          }
        }
        levels.push_back(level);
      }
      if (ok) out.levels = std::move(levels);
    }
  }
  m.finish();
}

void read_alerting(YamlMap& m, AlertingConfig& out, ErrorSink& sink) {
  if (auto f = m.get("alertmanager_url"); f.present()) {
    if (auto v = read_string(f, sink)) {
      std::string error;
      if (v->empty() || parse_http_url(*v, &error)) {
        out.alertmanager_url = *v;
      } else {
        sink.add(f.mark(), f.path, error + ", got " + describe(f.value));
      }
    }
  }
  read_http_client(m, out.alertmanager_url.starts_with("https://"), "alertmanager_url", out.client,
                   sink);
  seconds_key(m, "resend_interval", out.resend_interval_seconds, sink, 1);
  seconds_key(m, "timeout", out.timeout_seconds, sink, 0.1);
  string_key(m, "external_url", out.external_url, sink);
  string_key(m, "runbook_url", out.runbook_url, sink);
  YamlField rules = m.get("rules");
  if (rules.present()) {
    YamlMap rm(rules.value, rules.path, sink);
    if (rm.ok()) read_rules(rm, out.rules, sink);
  }
  m.finish();
}

void read_tier_policy(YamlMap& tier, TierPolicy& out, ErrorSink& sink) {
  auto section = [&](std::string_view key, auto reader, auto& target) {
    YamlField f = tier.get(key);
    if (!f.present()) return;
    YamlMap m(f.value, f.path, sink);
    if (m.ok()) reader(m, target, sink);
  };
  section("retention", read_retention, out.retention);
  section("sizing", read_sizing, out.sizing);
  section("bandwidth", read_bandwidth, out.bandwidth);
  section("drain", read_drain, out.drain);
  section("restore_drill", read_restore_drill, out.restore_drill);
  if (YamlField f = tier.get("storage_path"); f.present()) {
    YamlMap m(f.value, f.path, sink);
    if (m.ok()) read_storage_path(m, out.storage_path, out.job_storage_path, sink);
  }
}

std::optional<HttpUrl> parse_http_url(std::string_view url, std::string* error) {
  const std::string expected = "expected an http:// or https:// URL such as http://127.0.0.1:9093";
  const bool tls = url.starts_with("https://");
  if (!tls && !url.starts_with("http://")) {
    *error = expected;
    return std::nullopt;
  }
  std::string_view rest = url.substr(tls ? 8 : 7);
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.empty() || authority.find('@') != std::string_view::npos ||
      path.find_first_of("?#") != std::string_view::npos ||
      url.find_first_of(" \t\r\n") != std::string_view::npos) {
    *error = expected;
    return std::nullopt;
  }
  HttpUrl out;
  out.tls = tls;
  out.port = tls ? 443 : 80;
  std::string_view port;
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos || close == 1) {
      *error = expected;
      return std::nullopt;
    }
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        *error = expected;
        return std::nullopt;
      }
      port = after.substr(1);
      if (port.empty()) {
        *error = expected;
        return std::nullopt;
      }
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) {
        *error = expected;
        return std::nullopt;
      }
    }
    if (out.host.empty() || out.host.find(':') != std::string::npos) {
      *error = expected;
      return std::nullopt;
    }
  }
  if (!port.empty()) {
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || ptr != port.data() + port.size() || v == 0 || v > 65535) {
      *error = "invalid port in URL (" + expected + ")";
      return std::nullopt;
    }
    out.port = static_cast<std::uint16_t>(v);
  }
  while (path.size() > 0 && path.back() == '/') path.remove_suffix(1);
  out.path = std::string(path);
  return out;
}

}  // namespace ckptmon
