#include "config/rules_config.hpp"

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

// Reads `text` as the mapping at `path` with `reader`; returns the errors.
template <typename Reader, typename Out>
std::vector<std::string> read(const std::string& text, const std::string& path, Reader reader,
                              Out& out) {
  ErrorSink sink("r.yml");
  YAML::Node root = YAML::Load(text);
  YamlMap m(root, path, sink);
  if (m.ok()) reader(m, out, sink);
  std::vector<std::string> errors;
  for (const auto& e : sink.errors()) errors.push_back(e.to_string());
  return errors;
}

std::vector<std::string> tier_errors(const std::string& text, TierPolicy* out = nullptr) {
  TierPolicy p;
  auto e = read(text, "tiers[0]", read_tier_policy, p);
  if (out) *out = p;
  return e;
}

std::vector<std::string> alerting_errors(const std::string& text, AlertingConfig* out = nullptr) {
  AlertingConfig a;
  auto e = read(text, "alerting", read_alerting, a);
  if (out) *out = a;
  return e;
}

std::vector<std::string> history_errors(const std::string& text, HistoryPolicy* out = nullptr) {
  HistoryPolicy h;
  auto e = read(text, "history", read_history, h);
  if (out) *out = h;
  return e;
}

TEST(RulesConfig, DefaultsWhenNothingIsGiven) {
  TierPolicy p;
  EXPECT_TRUE(tier_errors("{}", &p).empty());
  EXPECT_EQ(p.retention.keep_last, 3);
  EXPECT_EQ(p.retention.keep_every, 0);
  EXPECT_EQ(p.retention.max_age_seconds, 0);
  EXPECT_EQ(p.sizing.replicas, 1);
  EXPECT_EQ(p.bandwidth.allowed_window_seconds, 120);
  EXPECT_EQ(p.drain.rate_window_seconds, 900);
  AlertingConfig a;
  EXPECT_TRUE(alerting_errors("{}", &a).empty());
  EXPECT_EQ(a.alertmanager_url, "");
  EXPECT_EQ(a.rules.tier_almost_full.used_ratio, 0.95);
  EXPECT_EQ(a.rules.tier_almost_full.clear_used_ratio, 0.93);
  EXPECT_EQ(a.rules.tier_almost_full.severity, Severity::kCritical);
}

TEST(RulesConfig, ReadsEveryTierKey) {
  TierPolicy p;
  auto e = tier_errors(R"(
retention: {keep_last: 5, keep_every: 1000, max_age: 14d, partial_window: 2h}
sizing: {replicas: 1.25, temp_write_allowance_ratio: 0.5, growth_headroom_ratio: 0.3,
         concurrent_jobs: 4, trend_window: 12h}
bandwidth: {allowed_window: 90s, concurrent_writers: 2, overhead_ratio: 0.15, observe_window: 2h}
drain: {rate_window: 5m, move_after: 7d}
)",
                       &p);
  EXPECT_TRUE(e.empty()) << e[0];
  EXPECT_EQ(p.retention.keep_last, 5);
  EXPECT_EQ(p.retention.keep_every, 1000);
  EXPECT_EQ(p.retention.max_age_seconds, 14 * 86400);
  EXPECT_EQ(p.retention.partial_window_seconds, 7200);
  EXPECT_EQ(p.sizing.replicas, 1.25);
  EXPECT_EQ(p.sizing.temp_write_allowance_ratio, 0.5);
  EXPECT_EQ(p.sizing.growth_headroom_ratio, 0.3);
  EXPECT_EQ(p.sizing.concurrent_jobs, 4);
  EXPECT_EQ(p.sizing.trend_window_seconds, 12 * 3600);
  EXPECT_EQ(p.bandwidth.allowed_window_seconds, 90);
  EXPECT_EQ(p.bandwidth.concurrent_writers, 2);
  EXPECT_EQ(p.bandwidth.overhead_ratio, 0.15);
  EXPECT_EQ(p.bandwidth.observe_window_seconds, 7200);
  EXPECT_EQ(p.drain.rate_window_seconds, 300);
  EXPECT_EQ(p.drain.move_after_seconds, 7 * 86400);
}

TEST(RulesConfig, ReadsRestoreDrill) {
  TierPolicy p;
  EXPECT_FALSE(p.restore_drill.enabled());  // opt-in
  EXPECT_EQ(p.restore_drill.rate_bytes_per_second, 500.0 * 1024 * 1024);
  EXPECT_TRUE(p.restore_drill.cold);
  auto e = tier_errors(R"(
restore_drill: {every: 7d, window: "22:30-04:00", rate: 200MiB, ranks: 8, cold: false,
                deadline: 2h}
)",
                       &p);
  EXPECT_TRUE(e.empty()) << e[0];
  EXPECT_EQ(p.restore_drill.every_seconds, 7 * 86400);
  EXPECT_EQ(p.restore_drill.window_start_minute, 22 * 60 + 30);
  EXPECT_EQ(p.restore_drill.window_end_minute, 4 * 60);
  EXPECT_EQ(p.restore_drill.rate_bytes_per_second, 200.0 * 1024 * 1024);
  EXPECT_EQ(p.restore_drill.ranks, 8);
  EXPECT_FALSE(p.restore_drill.cold);
  EXPECT_EQ(p.restore_drill.deadline_seconds, 7200);
  e = tier_errors("restore_drill: {every: 1d, ranks: auto, window: \"00:00-24:00\"}\n", &p);
  EXPECT_TRUE(e.empty()) << e[0];
  EXPECT_EQ(p.restore_drill.ranks, 0);
  EXPECT_EQ(p.restore_drill.window_start_minute, 0);
  EXPECT_FALSE(p.restore_drill.has_window()) << "00:00-24:00 is the whole day";
  e = tier_errors("restore_drill: {every: 1d, window: \"\"}\n", &p);
  EXPECT_TRUE(e.empty()) << e[0];
  EXPECT_FALSE(p.restore_drill.has_window()) << "empty: any time of day";
}

TEST(RulesConfig, ReadsStoragePathWithPerJobOverrides) {
  TierPolicy p;
  auto e = tier_errors(R"(
storage_path:
  checkpoint_window: 2m
  median_multiple: 2.5
  write_bandwidth: 10GiB
  read_bandwidth: 2GiB
  saturation_ratio: 0.75
  metadata_ops_per_second: 5000
  metadata_multiple: 4
  straggler_skew_ratio: 0.4
  node_pressure_ratio: 0.25
  recovery_time_objective: 10m
  restore_metadata_ops_per_second: 2000
  jobs:
    llama-70b: {checkpoint_window: 5m, recovery_time_objective: 15m}
)",
                       &p);
  ASSERT_TRUE(e.empty()) << e[0];
  const StoragePathPolicy& t = p.storage_path;
  EXPECT_EQ(t.checkpoint_window_seconds, 120);
  EXPECT_EQ(t.median_multiple, 2.5);
  EXPECT_EQ(t.write_bandwidth, 10.0 * (1ull << 30));
  EXPECT_EQ(t.read_bandwidth, 2.0 * (1ull << 30));
  EXPECT_EQ(t.saturation_ratio, 0.75);
  EXPECT_EQ(t.metadata_ops_per_second, 5000);
  EXPECT_EQ(t.metadata_multiple, 4);
  EXPECT_EQ(t.straggler_skew_ratio, 0.4);
  EXPECT_EQ(t.node_pressure_ratio, 0.25);
  EXPECT_EQ(t.recovery_time_objective_seconds, 600);
  EXPECT_EQ(t.restore_metadata_ops_per_second, 2000);
  // The job: its keys over the tier's.
  const StoragePathPolicy& j = p.storage_path_for("llama-70b");
  EXPECT_EQ(j.checkpoint_window_seconds, 300);
  EXPECT_EQ(j.recovery_time_objective_seconds, 900);
  EXPECT_EQ(j.read_bandwidth, 2.0 * (1ull << 30));
  EXPECT_EQ(&p.storage_path_for("other"), &p.storage_path);
  // Defaults: no window, no objective.
  TierPolicy d;
  EXPECT_TRUE(tier_errors("{}", &d).empty());
  EXPECT_EQ(d.storage_path.checkpoint_window_seconds, 0);
  EXPECT_EQ(d.storage_path.recovery_time_objective_seconds, 0);
  EXPECT_EQ(d.storage_path.restore_metadata_ops_per_second, 1000);
}

TEST(RulesConfig, StoragePathBadValuesNameTheKey) {
  auto e = tier_errors("storage_path: {checkpoint_window: -1m}");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("tiers[0].storage_path.checkpoint_window"), std::string::npos) << e[0];
  e = tier_errors("storage_path: {saturation_ratio: 0}");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("saturation_ratio"), std::string::npos) << e[0];
  e = tier_errors("storage_path: {jobs: {llama: {recovery_time_objectiv: 1m}}}");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("tiers[0].storage_path.jobs.llama.recovery_time_objectiv"), std::string::npos)
      << e[0];
  e = tier_errors("storage_path: {jobs: [a, b]}");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("expected a mapping of job name"), std::string::npos) << e[0];
  e = tier_errors("storage_path: {write_bandwidth: fast}");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("write_bandwidth"), std::string::npos) << e[0];
}

TEST(RulesConfig, ReadsAlerting) {
  AlertingConfig a;
  auto e = alerting_errors(R"(
alertmanager_url: http://127.0.0.1:9093
resend_interval: 2m
timeout: 500ms
external_url: http://node1:10025
runbook_url: https://wiki.example/ckptmon/runbook
rules:
  CheckpointTierAlmostFull: {for: 1m, used_ratio: 0.9, clear_used_ratio: 0.85, severity: warning}
  CheckpointTierDown: {enabled: false}
  CheckpointDrainBacklogGrowing: {for: 0s, min_overlapping: 2}
  CheckpointRecoveryPointStale: {max_age: 4h, active_window: 1d}
  CheckpointBandwidthShortfall: {min_ratio: 0.8, clear_ratio: 0.9}
  CheckpointAccessFinding: {kinds: [acl_invalid, world_writable, acl_invalid]}
  CheckpointSavesFailing: {window: 30m, min_failures: 3}
  CheckpointTierInodesLow: {min_free_ratio: 0.02, clear_free_ratio: 0.03}
)",
                           &a);
  EXPECT_TRUE(e.empty()) << e[0];
  EXPECT_EQ(a.alertmanager_url, "http://127.0.0.1:9093");
  EXPECT_EQ(a.resend_interval_seconds, 120);
  EXPECT_EQ(a.timeout_seconds, 0.5);
  EXPECT_EQ(a.external_url, "http://node1:10025");
  EXPECT_EQ(a.runbook_url, "https://wiki.example/ckptmon/runbook");
  EXPECT_EQ(a.rules.tier_almost_full.for_seconds, 60);
  EXPECT_EQ(a.rules.tier_almost_full.used_ratio, 0.9);
  EXPECT_EQ(a.rules.tier_almost_full.clear_used_ratio, 0.85);
  EXPECT_EQ(a.rules.tier_almost_full.severity, Severity::kWarning);
  EXPECT_FALSE(a.rules.tier_down.enabled);
  EXPECT_EQ(a.rules.drain_backlog_growing.for_seconds, 0);
  EXPECT_EQ(a.rules.drain_backlog_growing.min_overlapping, 2);
  EXPECT_EQ(a.rules.recovery_point_stale.max_age_seconds, 4 * 3600);
  EXPECT_EQ(a.rules.recovery_point_stale.active_window_seconds, 86400);
  EXPECT_EQ(a.rules.bandwidth_shortfall.min_ratio, 0.8);
  EXPECT_EQ(a.rules.access_finding.kinds,
            (std::vector<FindingKind>{FindingKind::kAclInvalid, FindingKind::kWorldWritable}));
  EXPECT_EQ(a.rules.saves_failing.window_seconds, 1800);
  EXPECT_EQ(a.rules.saves_failing.min_failures, 3);
  EXPECT_EQ(a.rules.tier_inodes_low.min_free_ratio, 0.02);
  EXPECT_EQ(a.rules.tier_inodes_low.clear_free_ratio, 0.03);
  // Untouched rules keep their defaults.
  EXPECT_EQ(a.rules.partial.for_seconds, 300);
  EXPECT_EQ(a.rules.tier_inodes_low.clear_margin_ratio, 0.05);
}

TEST(RulesConfig, ReadsHistory) {
  HistoryPolicy h;
  auto e = history_errors(R"(
raw_retention: 2d
downsample:
  - {resolution: 1m, retention: 7d}
  - {resolution: 10m, retention: 90d}
  - {resolution: 1h, retention: 2y}
)",
                          &h);
  EXPECT_TRUE(e.empty()) << e[0];
  EXPECT_EQ(h.raw_retention_seconds, 2 * 86400);
  ASSERT_EQ(h.levels.size(), 3u);
  EXPECT_EQ(h.levels[1].resolution_seconds, 600);
  EXPECT_EQ(h.levels[2].retention_seconds, 2 * 365 * 86400.0);
}

struct Bad {
  const char* name;
  const char* yaml;
  std::vector<std::string> errors;
};

class TierPolicyRejects : public ::testing::TestWithParam<Bad> {};
TEST_P(TierPolicyRejects, Exactly) { EXPECT_EQ(tier_errors(GetParam().yaml), GetParam().errors); }
INSTANTIATE_TEST_SUITE_P(
    Table, TierPolicyRejects,
    ::testing::Values(
        Bad{"keep_last_zero",
            "retention:\n  keep_last: 0\n",
            {"r.yml:2:14: tiers[0].retention.keep_last: expected an integer from 1 to 1000000, "
             "got \"0\""}},
        Bad{"unknown_retention_key",
            "retention:\n  keep_lats: 3\n",
            {"r.yml:2:3: tiers[0].retention.keep_lats: unknown key (expected one of: keep_last, "
             "keep_every, max_age, partial_window, cleanup_verify_after)"}},
        Bad{"fractional_duration",
            "retention:\n  max_age: 1.5h\n",
            {"r.yml:2:12: tiers[0].retention.max_age: expected a duration such as 500ms, 15s, "
             "5m, 2h or 14d, got \"1.5h\""}},
        Bad{"retention_is_a_list",
            "retention: [1]\n",
            {"r.yml:1:12: tiers[0].retention: expected a mapping, got a list"}},
        Bad{"replicas_below_one",
            "sizing:\n  replicas: 0.5\n",
            {"r.yml:2:13: tiers[0].sizing.replicas: expected a number from 1 to 100, got "
             "\"0.5\""}},
        Bad{"trend_window_too_short",
            "sizing: {trend_window: 10s}\n",
            {"r.yml:1:24: tiers[0].sizing.trend_window: must be at least 1m, got \"10s\""}},
        Bad{"zero_allowed_window",
            "bandwidth:\n  allowed_window: 0s\n",
            {"r.yml:2:19: tiers[0].bandwidth.allowed_window: must be at least 1s, got \"0s\""}},
        Bad{"negative_concurrency",
            "bandwidth:\n  concurrent_writers: -1\n",
            {"r.yml:2:23: tiers[0].bandwidth.concurrent_writers: expected an integer from 0 to "
             "1000000, got \"-1\""}},
        Bad{"drill_window_not_a_window",
            "restore_drill: {every: 1d, window: \"2am-5am\"}\n",
            {"r.yml:1:36: tiers[0].restore_drill.window: expected a daily window in UTC such as "
             "\"02:00-05:00\" (HH:MM-HH:MM, may wrap past midnight), got \"2am-5am\""}},
        Bad{"drill_window_hour_25",
            "restore_drill: {every: 1d, window: \"02:00-25:00\"}\n",
            {"r.yml:1:36: tiers[0].restore_drill.window: expected a daily window in UTC such as "
             "\"02:00-05:00\" (HH:MM-HH:MM, may wrap past midnight), got \"02:00-25:00\""}},
        Bad{"drill_window_empty",
            "restore_drill: {every: 1d, window: \"03:00-03:00\"}\n",
            {"r.yml:1:36: tiers[0].restore_drill.window: the window \"03:00-03:00\" starts where "
             "it ends; leave `window` out for any time of day"}},
        Bad{"drill_every_too_often",
            "restore_drill: {every: 10s}\n",
            {"r.yml:1:24: tiers[0].restore_drill.every: must be at least 1m, got \"10s\""}},
        Bad{"drill_ranks_zero",
            "restore_drill: {every: 1d, ranks: 0}\n",
            {"r.yml:1:35: tiers[0].restore_drill.ranks: expected an integer from 1 to 65536, "
             "got \"0\""}},
        Bad{"drill_unknown_key",
            "restore_drill: {every: 1d, ranks: all, often: 1}\n",
            {"r.yml:1:35: tiers[0].restore_drill.ranks: expected an integer from 1 to 65536, "
             "got \"all\"",
             "r.yml:1:40: tiers[0].restore_drill.often: unknown key (expected one of: every, "
             "window, rate, ranks, cold, deadline)"}},
        Bad{"unknown_drain_key",
            "drain: {window: 5m}\n",
            {"r.yml:1:9: tiers[0].drain.window: unknown key (expected one of: rate_window, "
             "move_after)"}}));

class AlertingRejects : public ::testing::TestWithParam<Bad> {};
TEST_P(AlertingRejects, Exactly) { EXPECT_EQ(alerting_errors(GetParam().yaml), GetParam().errors); }
INSTANTIATE_TEST_SUITE_P(
    Table, AlertingRejects,
    ::testing::Values(
        Bad{"ftp_url",
            "alertmanager_url: ftp://am:9093\n",
            {"r.yml:1:19: alerting.alertmanager_url: expected an http:// or https:// URL such as "
             "http://127.0.0.1:9093, got \"ftp://am:9093\""}},
        Bad{"bad_port",
            "alertmanager_url: http://am:99999\n",
            {"r.yml:1:19: alerting.alertmanager_url: invalid port in URL (expected an http:// or "
             "https:// URL such as http://127.0.0.1:9093), got \"http://am:99999\""}},
        Bad{"tls_config_without_https",
            "alertmanager_url: http://am:9093\ntls_config: {ca_file: /ca.pem}\n",
            {"r.yml:2:13: alerting.tls_config: needs an https:// alertmanager_url"}},
        Bad{"cert_without_key",
            "alertmanager_url: https://am:9093\ntls_config: {cert_file: /c.pem}\n",
            {"r.yml:2:13: alerting.tls_config: cert_file and key_file go together"}},
        Bad{"relative_ca_file_and_unknown_tls_key",
            "alertmanager_url: https://am:9093\ntls_config: {ca_file: ca.pem, ca: x}\n",
            {"r.yml:2:23: alerting.tls_config.ca_file: expected an absolute path, got \"ca.pem\"",
             "r.yml:2:31: alerting.tls_config.ca: unknown key (expected one of: ca_file, "
             "cert_file, key_file, server_name, insecure_skip_verify)"}},
        Bad{"basic_auth_and_authorization",
            "alertmanager_url: https://am:9093\nbasic_auth: {username: u, password: p}\n"
            "authorization: {credentials: t}\n",
            {"r.yml:3:16: alerting.authorization: at most one of basic_auth and authorization"}},
        Bad{"password_and_password_file",
            "basic_auth: {username: u, password: p, password_file: /p}\n",
            {"r.yml:1:13: alerting.basic_auth: at most one of password and password_file"}},
        Bad{"basic_auth_without_username",
            "basic_auth: {password: p}\n",
            {"r.yml:1:13: alerting.basic_auth.username: required key is missing"}},
        Bad{"authorization_without_credentials",
            "authorization: {type: Bearer}\n",
            {"r.yml:1:16: alerting.authorization: exactly one of credentials and "
             "credentials_file"}},
        Bad{"zero_resend",
            "resend_interval: 0s\n",
            {"r.yml:1:18: alerting.resend_interval: must be at least 1s, got \"0s\""}},
        Bad{"unknown_alert",
            "rules:\n  CheckpointTierFull: {}\n",
            {"r.yml:2:3: alerting.rules.CheckpointTierFull: unknown key (expected one of: "
             "CheckpointDrainBacklogGrowing, CheckpointDrainTooSlow, CheckpointTierFillingUp, "
             "CheckpointTierAlmostFull, CheckpointNextWontFit, CheckpointPartial, "
             "CheckpointCleanupStalled, CheckpointRecoveryPointStale, "
             "CheckpointCompletionSkewHigh, CheckpointTierDown, CheckpointBandwidthShortfall, "
             "CkptmonStateWriteFailing, CheckpointStallingGPUs, CheckpointGoodputLow, "
             "CheckpointWindowMissed, CheckpointRecoveryTimeObjectiveAtRisk, "
             "CheckpointRecoveryPointNotDurable, CheckpointUnderCopied, CheckpointIntegrityFailed, "
             "CheckpointTierInodesLow, CheckpointSavesFailing, CheckpointAccessFinding, "
             "CheckpointDeletionStalled, CheckpointOutsideAllowedResidency, "
             "CheckpointTierNotEncrypted, CheckpointRestoreDrillFailed)"}},
        Bad{"unknown_finding_kind",
            "rules:\n  CheckpointAccessFinding: {kinds: [world_writable, world_peekable]}\n",
            {"r.yml:2:53: alerting.rules.CheckpointAccessFinding.kinds[1]: unknown finding kind "
             "\"world_peekable\" (expected one of: world_readable, world_writable, "
             "foreign_owner, outside_namespace, residency, unreadable, too_deep, "
             "readable_outside_project, acl_invalid)"}},
        Bad{"empty_finding_kinds",
            "rules:\n  CheckpointAccessFinding: {kinds: []}\n",
            {"r.yml:2:36: alerting.rules.CheckpointAccessFinding.kinds: expected a list of at "
             "least one finding kind (world_readable, world_writable, foreign_owner, "
             "outside_namespace, residency, unreadable, too_deep, readable_outside_project, "
             "acl_invalid); to turn the alert off, set enabled: false"}},
        Bad{"inode_clear_below_fire",
            "rules:\n  CheckpointTierInodesLow: {min_free_ratio: 0.1, clear_free_ratio: 0.05}\n",
            {"r.yml:2:68: alerting.rules.CheckpointTierInodesLow.clear_free_ratio: must be at "
             "least min_free_ratio (0.1), got \"0.05\""}},
        Bad{"unknown_rule_key",
            "rules:\n  CheckpointTierAlmostFull: {used: 0.9}\n",
            {"r.yml:2:30: alerting.rules.CheckpointTierAlmostFull.used: unknown key (expected one "
             "of: enabled, for, severity, used_ratio, clear_used_ratio)"}},
        Bad{"fire_threshold_below_default_clear",
            "rules:\n  CheckpointTierAlmostFull:\n    used_ratio: 0.9\n",
            {"r.yml:3:17: alerting.rules.CheckpointTierAlmostFull.used_ratio: must be at least "
             "clear_used_ratio (0.93), got \"0.9\""}},
        Bad{"thresholds_crossed",
            "rules:\n  CheckpointTierAlmostFull: {used_ratio: 0.9, clear_used_ratio: 0.95}\n",
            {"r.yml:2:42: alerting.rules.CheckpointTierAlmostFull.used_ratio: must be at least "
             "clear_used_ratio (0.95), got \"0.9\""}},
        Bad{"filling_horizons_crossed",
            "rules:\n  CheckpointTierFillingUp: {horizon: 2d}\n",
            {"r.yml:2:38: alerting.rules.CheckpointTierFillingUp.horizon: must be at most "
             "clear_horizon (1d6h), got \"2d\""}},
        Bad{"ratio_above_one",
            "rules:\n  CheckpointTierAlmostFull: {used_ratio: 1.5}\n",
            {"r.yml:2:42: alerting.rules.CheckpointTierAlmostFull.used_ratio: expected a number "
             "from 0 to 1, got \"1.5\""}},
        Bad{"bad_severity",
            "rules:\n  CheckpointPartial: {severity: page}\n",
            {"r.yml:2:33: alerting.rules.CheckpointPartial.severity: expected one of info, "
             "warning, critical, got \"page\""}},
        Bad{"negative_for",
            "rules:\n  CheckpointPartial: {for: -5m}\n",
            {"r.yml:2:28: alerting.rules.CheckpointPartial.for: expected a duration such as "
             "500ms, 15s, 5m, 2h or 14d, got \"-5m\""}},
        Bad{"enabled_not_bool",
            "rules:\n  CheckpointTierDown: {enabled: no}\n",
            {"r.yml:2:33: alerting.rules.CheckpointTierDown.enabled: expected true or false, got "
             "\"no\""}}));

class HistoryRejects : public ::testing::TestWithParam<Bad> {};
TEST_P(HistoryRejects, Exactly) { EXPECT_EQ(history_errors(GetParam().yaml), GetParam().errors); }
INSTANTIATE_TEST_SUITE_P(
    Table, HistoryRejects,
    ::testing::Values(
        Bad{"not_a_multiple",
            "downsample:\n  - {resolution: 5m, retention: 30d}\n  - {resolution: 7m, retention: "
            "1y}\n",
            {"r.yml:3:18: history.downsample[1].resolution: must be a whole multiple of the "
             "previous resolution (5m), got \"7m\""}},
        Bad{"retention_not_longer",
            "downsample:\n  - {resolution: 5m, retention: 12h}\n",
            {"r.yml:2:33: history.downsample[0].retention: must be longer than the previous "
             "retention (1d), got \"12h\""}},
        Bad{"missing_retention",
            "downsample:\n  - {resolution: 5m}\n",
            {"r.yml:2:5: history.downsample[0].retention: required key is missing"}},
        Bad{"not_a_list",
            "downsample: 5m\n",
            {"r.yml:1:13: history.downsample: expected a list of {resolution, retention}, got "
             "\"5m\""}}));

TEST(RulesConfig, ReadsAlertmanagerTlsAndAuth) {
  AlertingConfig a;
  ASSERT_EQ(alerting_errors("alertmanager_url: https://am:9093\n"
                            "tls_config: {ca_file: /ca.pem, cert_file: /c.pem, key_file: /k.pem, "
                            "server_name: am.example, insecure_skip_verify: true}\n"
                            "basic_auth: {username: ckptmon, password_file: /etc/pw}\n",
                            &a),
            std::vector<std::string>{});
  EXPECT_EQ(a.client.tls.ca_file, "/ca.pem");
  EXPECT_EQ(a.client.tls.cert_file, "/c.pem");
  EXPECT_EQ(a.client.tls.key_file, "/k.pem");
  EXPECT_EQ(a.client.tls.server_name, "am.example");
  EXPECT_TRUE(a.client.tls.insecure_skip_verify);
  EXPECT_EQ(a.client.auth.username, "ckptmon");
  EXPECT_EQ(a.client.auth.password_file, "/etc/pw");
  EXPECT_EQ(a.client.auth.type, "");
  AlertingConfig b;
  ASSERT_EQ(alerting_errors("authorization: {credentials_file: /etc/token}\n", &b),
            std::vector<std::string>{});
  EXPECT_EQ(b.client.auth.type, "Bearer");  // Prometheus' default
  EXPECT_EQ(b.client.auth.credentials_file, "/etc/token");
  EXPECT_EQ(b.client.auth.username, "");
}

TEST(RulesConfig, ParsesHttpUrls) {
  std::string err;
  auto u = parse_http_url("http://127.0.0.1:9093", &err);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 9093);
  EXPECT_EQ(u->path, "");
  u = parse_http_url("http://am.example/prefix/", &err);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "am.example");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->path, "/prefix");
  u = parse_http_url("http://[::1]:9093/", &err);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->path, "");
  u = parse_http_url("https://am.example", &err);
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 443);
  u = parse_http_url("https://127.0.0.1:9443/am", &err);
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 9443);
  EXPECT_EQ(u->path, "/am");
  EXPECT_FALSE(parse_http_url("http://h", &err)->tls);
  for (const char* bad :
       {"ftp://x", "http://", "https://", "https//h", "http://u@h:1", "http://h:", "http://h:0",
        "http://h/x?y", "http://[::1", "http://::1:9093", "127.0.0.1:9093", "http://h:12ab"}) {
    EXPECT_FALSE(parse_http_url(bad, &err)) << bad;
    EXPECT_FALSE(err.empty());
  }
}

}  // namespace
}  // namespace ckptmon
