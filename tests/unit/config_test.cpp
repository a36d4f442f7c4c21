#include "config/config.hpp"

#include "util/text.hpp"

#include <fstream>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "config/web_config.hpp"
#include "tests/unit/temp_dir.hpp"

namespace ckptmon {
namespace {

std::vector<std::string> errors_of(const std::string& text) {
  LoadResult r = parse_config(text, "bad.yml");
  std::vector<std::string> out;
  for (const auto& e : r.errors) out.push_back(e.to_string());
  EXPECT_EQ(r.config.has_value(), out.empty());
  return out;
}

TEST(Config, ReadsTheDocumentedExample) {
  LoadResult r = parse_config(R"(global: {state_dir: /var/lib/ckptmon, scan_interval: 15s}
tiers:
  - {name: staging, path: /mnt/nvme/ckpt, role: staging, drains_to: rapid}
  - {name: rapid,   path: /lustre/ckpt,   role: rapid}
)",
                              "ok.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  const Config& c = *r.config;
  EXPECT_EQ(c.global.state_dir, "/var/lib/ckptmon");
  EXPECT_EQ(c.global.scan_interval, std::chrono::seconds(15));
  ASSERT_EQ(c.tiers.size(), 2u);
  EXPECT_EQ(c.tiers[0].name, "staging");
  EXPECT_EQ(c.tiers[0].path, "/mnt/nvme/ckpt");
  EXPECT_EQ(c.tiers[0].role, TierRole::kStaging);
  EXPECT_EQ(c.tiers[0].drains_to, "rapid");
  EXPECT_EQ(c.tiers[1].role, TierRole::kRapid);
  EXPECT_EQ(c.tiers[1].drains_to, "");
  EXPECT_EQ(c.find_tier("rapid"), &c.tiers[1]);
  EXPECT_EQ(c.find_tier("nope"), nullptr);
}

TEST(Config, DefaultsWhenGlobalIsAbsent) {
  LoadResult r = parse_config("tiers:\n  - {name: a, path: /a, role: capacity}\n", "ok.yml");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->global.state_dir, "/var/lib/ckptmon");
  EXPECT_EQ(r.config->global.scan_interval, std::chrono::seconds(15));
  EXPECT_EQ(r.config->global.probe_timeout, std::chrono::seconds(10));
  EXPECT_EQ(r.config->global.proc_path, "/proc");
}

TEST(Config, ReadsManifestsAndTailerKnobs) {
  LoadResult r =
      parse_config(R"(global: {tail_interval: 250ms, tail_timeout: 2m, max_line_bytes: 1MiB,
  max_jobs_per_tier: 20}
tiers:
  - {name: staging, path: /nvme, role: staging}
  - {name: rapid, path: /lustre/ckpt, role: rapid}
manifests:
  - {glob: "/lustre/ckpt/*/events*.jsonl", tier: rapid}
  - glob: /nvme/*/events.jsonl
integrity: {bytes_per_second: 1.5GiB, enabled: false, interval: 1m, read_deadline: 90s}
)",
                   "ok.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  const Config& c = *r.config;
  EXPECT_EQ(c.global.tail_interval, std::chrono::milliseconds(250));
  EXPECT_EQ(c.global.tail_timeout, std::chrono::minutes(2));
  EXPECT_EQ(c.global.max_line_bytes, 1024u * 1024u);
  EXPECT_EQ(c.global.max_jobs_per_tier, 20u);
  ASSERT_EQ(c.manifests.size(), 2u);
  EXPECT_EQ(c.manifests[0].glob, "/lustre/ckpt/*/events*.jsonl");
  EXPECT_EQ(c.manifests[0].tier, "rapid");
  EXPECT_EQ(c.manifests[1].glob, "/nvme/*/events.jsonl");
  EXPECT_EQ(c.manifests[1].tier, "");
  EXPECT_FALSE(c.integrity.enabled);
  EXPECT_EQ(c.integrity.bytes_per_second, 1610612736u);  // 1.5 * 2^30
  EXPECT_EQ(c.integrity.interval, std::chrono::minutes(1));
  EXPECT_EQ(c.integrity.read_deadline, std::chrono::seconds(90));
}

TEST(Config, TailerDefaults) {
  LoadResult r = parse_config("tiers:\n  - {name: a, path: /a, role: capacity}\n", "ok.yml");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->global.tail_interval, std::chrono::seconds(1));
  EXPECT_EQ(r.config->global.tail_timeout, std::chrono::minutes(5));
  EXPECT_EQ(r.config->global.max_line_bytes, 65536u);
  EXPECT_EQ(r.config->global.max_jobs_per_tier, 1000u);
  EXPECT_TRUE(r.config->manifests.empty());
  EXPECT_TRUE(r.config->integrity.enabled);
  EXPECT_EQ(r.config->integrity.bytes_per_second, 50u * 1024 * 1024);
  EXPECT_EQ(r.config->integrity.interval, std::chrono::seconds(30));
  EXPECT_EQ(r.config->integrity.read_deadline, std::chrono::hours(1));
}

TEST(ByteSize, ParsesUnitsAndRejectsTheRest) {
  EXPECT_EQ(parse_byte_size("65536"), 65536u);
  EXPECT_EQ(parse_byte_size("64KiB"), 65536u);
  EXPECT_EQ(parse_byte_size("50MiB"), 52428800u);
  EXPECT_EQ(parse_byte_size("2GB"), 2000000000u);
  EXPECT_EQ(parse_byte_size("1kB"), 1000u);
  EXPECT_EQ(parse_byte_size("0.5KiB"), 512u);
  EXPECT_EQ(parse_byte_size("16EiB"), std::nullopt);  // unknown unit
  EXPECT_EQ(parse_byte_size("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_byte_size("17179869184GiB"), std::nullopt);  // 2^64 bytes
  for (const char* bad : {"", "MiB", "-1", "1.", ".5", "1..2KiB", "1 MiB", "1mib", "0x10"}) {
    EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(format_byte_size(65536), "64KiB");
  EXPECT_EQ(format_byte_size(1536), "1536B");
  EXPECT_EQ(format_byte_size(64ull << 20), "64MiB");
}

TEST(Config, EveryRoleIsAccepted) {
  for (const char* role : {"staging", "rapid", "milestone", "capacity", "deletion"}) {
    LoadResult r = parse_config(
        std::string("tiers:\n  - {name: a, path: /a, role: ") + role + "}\n", "ok.yml");
    ASSERT_TRUE(r.config) << role;
    EXPECT_EQ(to_string(r.config->tiers[0].role), role);
  }
}

struct BadCase {
  const char* name;
  const char* yaml;
  std::vector<std::string> errors;
};

class ConfigRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigRejects, WithFileLineColumnKeyAndExpectation) {
  EXPECT_EQ(errors_of(GetParam().yaml), GetParam().errors);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ConfigRejects,
    ::testing::Values(
        BadCase{
            "unknown_top_level_key",
            "tierz: []\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
            {"bad.yml:1:1: tierz: unknown key (expected one of: global, tiers, history, estate, "
             "alerting, manifests, integrity, gpu, network, audit)"}},
        BadCase{"unknown_global_key",
                "global:\n  scan_intervall: 15s\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:2:3: global.scan_intervall: unknown key (expected one of: state_dir, "
                 "scan_interval, probe_timeout, scan_timeout, procfs, proc_path, sysfs, "
                 "worker_threads, "
                 "tail_interval, tail_timeout, max_line_bytes, max_jobs_per_tier)"}},
        BadCase{"unknown_tier_key",
                "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    drain_to: b\n",
                {"bad.yml:5:5: tiers[0].drain_to: unknown key (expected one of: name, path, role, "
                 "durable, "
                 "drains_to, partial_after, jobs, shard, watch, walk_concurrency, walk_max_depth, "
                 "residency, encryption_required, "
                 "namespaces, layout, retention, sizing, bandwidth, drain, restore_drill, "
                 "storage_path)"}},
        BadCase{"walk_max_depth_zero",
                "tiers:\n  - {name: a, path: /a, role: rapid, walk_max_depth: 0}\n",
                {"bad.yml:2:54: tiers[0].walk_max_depth: expected an integer from 1 to 1024, "
                 "got \"0\""}},
        BadCase{"bad_duration",
                "global: {scan_interval: fifteen}\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:1:25: global.scan_interval: expected a duration such as 500ms, 15s, 5m, "
                 "2h or 14d, got \"fifteen\""}},
        BadCase{"duration_is_a_list",
                "global:\n  scan_interval: [1, 2]\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:2:18: global.scan_interval: expected a duration such as 500ms, 15s, 5m, "
                 "2h or 14d, got a list"}},
        BadCase{"bare_number_duration",
                "global:\n  probe_timeout: 10\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:2:18: global.probe_timeout: expected a duration such as 500ms, 15s, 5m, "
                 "2h or 14d, got \"10\""}},
        BadCase{"relative_state_dir",
                "global:\n  state_dir: var/lib\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:2:14: global.state_dir: expected an absolute path, got \"var/lib\""}},
        BadCase{"worker_threads_not_int",
                "global:\n  worker_threads: many\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:2:19: global.worker_threads: expected an integer from 1 to 1024, got "
                 "\"many\""}},
        BadCase{"wrong_role",
                "tiers:\n  - {name: a, path: /a, role: fast}\n",
                {"bad.yml:2:31: tiers[0].role: expected one of staging, rapid, milestone, "
                 "capacity, deletion, got \"fast\""}},
        BadCase{"missing_path",
                "tiers:\n  - name: a\n    role: rapid\n",
                {"bad.yml:2:5: tiers[0].path: required key is missing"}},
        BadCase{"null_path",
                "tiers:\n  - name: a\n    path:\n    role: rapid\n",
                {"bad.yml:3:5: tiers[0].path: expected an absolute path, got null"}},
        BadCase{"duplicate_tier_names",
                "tiers:\n  - {name: a, path: /a, role: rapid}\n  - {name: a, path: /b, role: "
                "capacity}\n",
                {"bad.yml:3:12: tiers[1].name: duplicate tier name \"a\" (first defined at line "
                 "2)"}},
        BadCase{"drains_to_unknown_tier",
                "tiers:\n  - {name: s, path: /s, role: staging, drains_to: rapidd}\n  - {name: "
                "rapid, path: /r, role: rapid}\n",
                {"bad.yml:2:51: tiers[0].drains_to: names no tier: \"rapidd\" (tiers are: rapid, "
                 "s)"}},
        BadCase{"drains_to_itself",
                "tiers:\n  - {name: s, path: /s, role: staging, drains_to: s}\n",
                {"bad.yml:2:51: tiers[0].drains_to: a tier cannot drain to itself"}},
        BadCase{"drains_to_a_deletion_tier",
                "tiers:\n  - {name: s, path: /s, role: staging, drains_to: trash}\n  - {name: "
                "trash, path: /t, role: deletion}\n",
                {"bad.yml:2:51: tiers[0].drains_to: tier \"s\" drains to \"trash\", a role: "
                 "deletion tier; drain to a tier that keeps copies"}},
        BadCase{"move_after_without_drains_to",
                "tiers:\n  - name: r\n    path: /r\n    role: rapid\n    drain: {move_after: "
                "7d}\n",
                {"bad.yml:5:12: tiers[0].drain.move_after: tier \"r\" has a move_after but no "
                 "drains_to: name the tier its versions move to"}},
        BadCase{"two_tiers_on_one_path",
                "tiers:\n  - {name: a, path: /ckpt, role: rapid}\n  - {name: b, path: /ckpt, "
                "role: capacity}\n",
                {"bad.yml:3:21: tiers[1].path: tiers \"a\" and \"b\" have the same path "
                 "\"/ckpt\""}},
        BadCase{"durable_not_a_bool",
                "tiers:\n  - {name: a, path: /a, role: rapid, durable: maybe}\n",
                {"bad.yml:2:47: tiers[0].durable: expected true or false, got \"maybe\""}},
        BadCase{
            "estate_copies_out_of_range",
            "tiers:\n  - {name: a, path: /a, role: rapid}\nestate:\n  copies_required: 0\n",
            {"bad.yml:4:20: estate.copies_required: expected an integer from 1 to 64, got \"0\""}},
        BadCase{"tiers_not_a_list",
                "tiers: {name: a}\n",
                {"bad.yml:1:8: tiers: expected a list of tiers, got a mapping"}},
        BadCase{"tiers_missing", "global: {}\n", {"bad.yml:1:1: tiers: required key is missing"}},
        BadCase{"empty_tiers", "tiers: []\n", {"bad.yml:1:8: tiers: expected at least one tier"}},
        BadCase{"top_level_not_a_mapping",
                "- a\n- b\n",
                {"bad.yml:1:1: (top level): expected a mapping, got a list"}},
        BadCase{"duplicate_key",
                "tiers:\n  - {name: a, path: /a, path: /b, role: rapid}\n",
                {"bad.yml:2:25: tiers[0].path: duplicate key (first given at line 2)"}},
        BadCase{"bad_tier_name",
                "tiers:\n  - {name: 'has space', path: /a, role: rapid}\n",
                {"bad.yml:2:12: tiers[0].name: expected 1-64 characters of letters, digits, "
                 "'_', '.' or '-' starting with a letter or digit, got \"has space\""}},
        BadCase{"shard_out_of_range",
                "tiers:\n  - {name: a, path: /a, role: rapid, shard: 4/4}\n",
                {"bad.yml:2:45: tiers[0].shard: expected i/n with 0 <= i < n, such as 0/4, got "
                 "\"4/4\""}},
        BadCase{"job_regex_without_group",
                "tiers:\n  - {name: a, path: /a, role: rapid, jobs: {regex: 'team-.*'}}\n",
                {"bad.yml:2:52: tiers[0].jobs.regex: expected a regex with a group (?<job>...) "
                 "naming the job"}},
        BadCase{"job_depth_and_regex",
                "tiers:\n  - {name: a, path: /a, role: rapid, jobs: {depth: 2, regex: '(x)'}}\n",
                {"bad.yml:2:55: tiers[0].jobs.regex: give either depth or regex, not both"}},
        BadCase{"bad_watch_mode",
                "tiers:\n  - {name: a, path: /a, role: rapid, watch: fanotify}\n",
                {"bad.yml:2:45: tiers[0].watch: expected one of auto, inotify, poll, got "
                 "\"fanotify\""}},
        BadCase{"layout_missing_marker",
                "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    layout: {shard_glob: "
                "'*.bin', step_regex: 'ckpt_(\\d+)'}\n",
                {"bad.yml:5:13: tiers[0].layout.marker: required key is missing"}},
        BadCase{"namespace_bad_regex",
                "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    namespaces:\n      "
                "'(': {owner: x}\n",
                {"bad.yml:6:7: tiers[0].namespaces.(: invalid regex: Mismatched '(' and ')' in "
                 "regular expression"}},
        BadCase{"namespace_unknown_key",
                "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    namespaces:\n      "
                "x: {user: bob}\n",
                {"bad.yml:6:11: tiers[0].namespaces.x.user: unknown key (expected one of: "
                 "owner, group, residency, project_groups)"}},
        BadCase{"retention_keep_last_zero",
                "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    retention: "
                "{keep_last: 0}\n",
                {"bad.yml:5:28: tiers[0].retention.keep_last: expected an integer from 1 to "
                 "1000000, got \"0\""}},
        BadCase{"sizing_unknown_key",
                "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    sizing: {replica: 2}\n",
                {"bad.yml:5:14: tiers[0].sizing.replica: unknown key (expected one of: replicas, "
                 "temp_write_allowance_ratio, growth_headroom_ratio, concurrent_jobs, "
                 "trend_window, min_trend_span)"}},
        BadCase{"drain_rate_window_too_short",
                "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    drain: {rate_window: "
                "100ms}\n",
                {"bad.yml:5:26: tiers[0].drain.rate_window: must be at least 1s, got \"100ms\""}},
        BadCase{"alert_clear_threshold_on_the_wrong_side",
                "alerting:\n  rules:\n    CheckpointTierAlmostFull: {used_ratio: 0.9, "
                "clear_used_ratio: 0.95}\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:3:44: alerting.rules.CheckpointTierAlmostFull.used_ratio: must be at "
                 "least clear_used_ratio (0.95), got \"0.9\""}},
        BadCase{"alertmanager_ftp",
                "alerting: {alertmanager_url: 'ftp://am:9093'}\ntiers:\n  - {name: a, path: /a, "
                "role: rapid}\n",
                {"bad.yml:1:30: alerting.alertmanager_url: expected an http:// or https:// URL "
                 "such as http://127.0.0.1:9093, got \"ftp://am:9093\""}},
        BadCase{"history_resolution_not_a_multiple",
                "history:\n  downsample:\n    - {resolution: 5m, retention: 30d}\n    - "
                "{resolution: 7m, retention: 365d}\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:4:20: history.downsample[1].resolution: must be a whole multiple of "
                 "the previous resolution (5m), got \"7m\""}},
        BadCase{"unknown_alert_rule",
                "alerting:\n  rules:\n    CheckpointTierFull: {for: 1m}\ntiers:\n  - {name: a, "
                "path: /a, role: rapid}\n",
                {"bad.yml:3:5: alerting.rules.CheckpointTierFull: unknown key (expected one of: "
                 "CheckpointDrainBacklogGrowing, CheckpointDrainTooSlow, CheckpointTierFillingUp, "
                 "CheckpointTierAlmostFull, CheckpointNextWontFit, CheckpointPartial, "
                 "CheckpointCleanupStalled, CheckpointRecoveryPointStale, "
                 "CheckpointCompletionSkewHigh, CheckpointTierDown, "
                 "CheckpointBandwidthShortfall, CkptmonStateWriteFailing, CheckpointStallingGPUs, "
                 "CheckpointGoodputLow, CheckpointWindowMissed, "
                 "CheckpointRecoveryTimeObjectiveAtRisk, CheckpointRecoveryPointNotDurable, "
                 "CheckpointUnderCopied, CheckpointIntegrityFailed, CheckpointTierInodesLow, "
                 "CheckpointSavesFailing, CheckpointAccessFinding, CheckpointDeletionStalled, "
                 "CheckpointOutsideAllowedResidency, CheckpointTierNotEncrypted, "
                 "CheckpointRestoreDrillFailed)"}},
        BadCase{"invalid_yaml",
                "tiers:\n  - {name: a, path: /a\n",
                {"bad.yml:3:1: invalid YAML: end of map flow not found"}},
        BadCase{"manifests_not_a_list",
                "tiers:\n  - {name: a, path: /a, role: rapid}\nmanifests: {glob: /x}\n",
                {"bad.yml:3:12: manifests: expected a list of {glob, tier} entries, got a "
                 "mapping"}},
        BadCase{"manifest_relative_glob",
                "tiers:\n  - {name: a, path: /a, role: rapid}\nmanifests:\n  - {glob: "
                "'ckpt/*.jsonl'}\n",
                {"bad.yml:4:12: manifests[0].glob: expected an absolute path, got "
                 "\"ckpt/*.jsonl\""}},
        BadCase{"manifest_missing_glob",
                "tiers:\n  - {name: a, path: /a, role: rapid}\nmanifests:\n  - {tier: a}\n",
                {"bad.yml:4:5: manifests[0].glob: required key is missing"}},
        BadCase{"manifest_unknown_tier",
                "tiers:\n  - {name: a, path: /a, role: rapid}\nmanifests:\n  - {glob: /l/*.jsonl, "
                "tier: "
                "b}\n",
                {"bad.yml:4:30: manifests[0].tier: names no tier: \"b\" (tiers are: a)"}},
        BadCase{"manifest_unknown_key",
                "tiers:\n  - {name: a, path: /a, role: rapid}\nmanifests:\n  - {glob: /l/*.jsonl, "
                "tiers: a}\n",
                {"bad.yml:4:24: manifests[0].tiers: unknown key (expected one of: glob, tier)"}},
        BadCase{
            "manifest_duplicate_glob",
            "tiers:\n  - {name: a, path: /a, role: rapid}\nmanifests:\n  - {glob: /l/*.jsonl}\n  - "
            "{glob: /l/*.jsonl, tier: a}\n",
            {"bad.yml:5:12: manifests[1].glob: duplicate glob \"/l/*.jsonl\" (first given at "
             "line 4)"}},
        BadCase{"max_line_bytes_not_a_size",
                "global: {max_line_bytes: lots}\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:1:26: global.max_line_bytes: expected a size such as 64KiB, 50MiB or a "
                 "number of bytes, got \"lots\""}},
        BadCase{
            "max_jobs_per_tier_zero",
            "global: {max_jobs_per_tier: 0}\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
            {"bad.yml:1:29: global.max_jobs_per_tier: expected an integer from 1 to 1000000, got "
             "\"0\""}},
        BadCase{"max_line_bytes_too_small",
                "global: {max_line_bytes: 100}\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:1:26: global.max_line_bytes: must be from 1KiB to 64MiB, got \"100\""}},
        BadCase{"tail_interval_too_short",
                "global: {tail_interval: 1ms}\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                {"bad.yml:1:25: global.tail_interval: must be at least 10ms, got \"1ms\""}},
        BadCase{
            "integrity_rate_unit",
            "tiers:\n  - {name: a, path: /a, role: rapid}\nintegrity: {bytes_per_second: 50Mb}\n",
            {"bad.yml:3:31: integrity.bytes_per_second: expected a size such as 64KiB, 50MiB "
             "or a number of bytes, got \"50Mb\""}},
        BadCase{"integrity_enabled_not_bool",
                "tiers:\n  - {name: a, path: /a, role: rapid}\nintegrity: {enabled: yes}\n",
                {"bad.yml:3:22: integrity.enabled: expected true or false, got \"yes\""}},
        BadCase{"integrity_unknown_key",
                "tiers:\n  - {name: a, path: /a, role: rapid}\nintegrity: {rate: 1MiB}\n",
                {"bad.yml:3:13: integrity.rate: unknown key (expected one of: enabled, "
                 "bytes_per_second, interval, read_deadline)"}},
        BadCase{"several_errors_at_once",
                "global: {scan_interval: 1x}\ntiers:\n  - {name: a, role: slow}\n",
                {"bad.yml:1:25: global.scan_interval: expected a duration such as 500ms, 15s, "
                 "5m, 2h or 14d, got \"1x\"",
                 "bad.yml:3:5: tiers[0].path: required key is missing",
                 "bad.yml:3:21: tiers[0].role: expected one of staging, rapid, milestone, "
                 "capacity, deletion, got \"slow\""}}),
    [](const ::testing::TestParamInfo<BadCase>& p) { return p.param.name; });

TEST(Config, ReadsTierScanOptions) {
  LoadResult r = parse_config(R"(tiers:
  - name: rapid
    path: /lustre/ckpt
    role: rapid
    partial_after: 45m
    shard: 1/4
    watch: poll
    jobs: {regex: '(?<job>[^/]+)/checkpoints', max_depth: 3}
    layout: {shard_glob: '*.bin', marker: COMMITTED, step_regex: 'ckpt_(\d+)'}
)",
                              "ok.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  const TierConfig& t = r.config->tiers[0];
  EXPECT_EQ(t.partial_after, std::chrono::minutes(45));
  EXPECT_EQ(t.shard_index, 1u);
  EXPECT_EQ(t.shard_count, 4u);
  EXPECT_EQ(t.watch, WatchMode::kPoll);
  ASSERT_TRUE(t.jobs.regex);
  EXPECT_EQ(t.jobs.max_depth, 3);
  std::smatch m;
  const std::string rel = "llama-70b/checkpoints";
  ASSERT_TRUE(std::regex_match(rel, m, *t.jobs.regex));
  EXPECT_EQ(m[t.jobs.group].str(), "llama-70b");
  ASSERT_TRUE(t.layout);
  EXPECT_EQ(t.layout->marker, "COMMITTED");
}

TEST(Config, ReadsRulesPolicyHistoryAndAlerting) {
  LoadResult r = parse_config(R"(tiers:
  - name: staging
    path: /nvme
    role: staging
    drains_to: rapid
    retention: {keep_last: 2, keep_every: 1000, max_age: 7d, partial_window: 30m}
    sizing: {replicas: 2, temp_write_allowance_ratio: 0.5, growth_headroom_ratio: 0.1,
             concurrent_jobs: 3, trend_window: 2h}
    bandwidth: {allowed_window: 1m, concurrent_writers: 4, overhead_ratio: 0.2, observe_window: 12h}
    drain: {rate_window: 5m}
  - {name: rapid, path: /lustre, role: rapid}
history:
  raw_retention: 2d
  downsample:
    - {resolution: 10m, retention: 60d}
alerting:
  alertmanager_url: http://127.0.0.1:9093
  resend_interval: 30s
  timeout: 5s
  external_url: http://node1:10025
  runbook_url: https://wiki.example/ckptmon
  rules:
    CheckpointDrainBacklogGrowing: {for: 0s, severity: critical, min_overlapping: 2}
    CheckpointTierDown: {enabled: false}
)",
                              "ok.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  const Config& c = *r.config;
  const TierPolicy& p = c.tiers[0].policy;
  EXPECT_EQ(p.retention.keep_last, 2);
  EXPECT_EQ(p.retention.keep_every, 1000);
  EXPECT_DOUBLE_EQ(p.retention.max_age_seconds, 7 * 86400.0);
  EXPECT_DOUBLE_EQ(p.retention.partial_window_seconds, 1800.0);
  EXPECT_DOUBLE_EQ(p.sizing.replicas, 2.0);
  EXPECT_DOUBLE_EQ(p.sizing.temp_write_allowance_ratio, 0.5);
  EXPECT_DOUBLE_EQ(p.sizing.growth_headroom_ratio, 0.1);
  EXPECT_EQ(p.sizing.concurrent_jobs, 3);
  EXPECT_DOUBLE_EQ(p.sizing.trend_window_seconds, 7200.0);
  EXPECT_DOUBLE_EQ(p.bandwidth.allowed_window_seconds, 60.0);
  EXPECT_EQ(p.bandwidth.concurrent_writers, 4);
  EXPECT_DOUBLE_EQ(p.bandwidth.overhead_ratio, 0.2);
  EXPECT_DOUBLE_EQ(p.bandwidth.observe_window_seconds, 12 * 3600.0);
  EXPECT_DOUBLE_EQ(p.drain.rate_window_seconds, 300.0);
  // The tier that says nothing keeps the defaults.
  EXPECT_EQ(c.tiers[1].policy.retention.keep_last, 3);
  EXPECT_DOUBLE_EQ(c.tiers[1].policy.drain.rate_window_seconds, 900.0);

  EXPECT_DOUBLE_EQ(c.history.raw_retention_seconds, 2 * 86400.0);
  ASSERT_EQ(c.history.levels.size(), 1u);
  EXPECT_DOUBLE_EQ(c.history.levels[0].resolution_seconds, 600.0);
  EXPECT_DOUBLE_EQ(c.history.levels[0].retention_seconds, 60 * 86400.0);

  EXPECT_EQ(c.alerting.alertmanager_url, "http://127.0.0.1:9093");
  EXPECT_DOUBLE_EQ(c.alerting.resend_interval_seconds, 30.0);
  EXPECT_DOUBLE_EQ(c.alerting.timeout_seconds, 5.0);
  EXPECT_EQ(c.alerting.external_url, "http://node1:10025");
  EXPECT_EQ(c.alerting.runbook_url, "https://wiki.example/ckptmon");
  EXPECT_DOUBLE_EQ(c.alerting.rules.drain_backlog_growing.for_seconds, 0.0);
  EXPECT_EQ(c.alerting.rules.drain_backlog_growing.severity, Severity::kCritical);
  EXPECT_EQ(c.alerting.rules.drain_backlog_growing.min_overlapping, 2);
  EXPECT_FALSE(c.alerting.rules.tier_down.enabled);
  EXPECT_TRUE(c.alerting.rules.tier_almost_full.enabled);
}

TEST(Config, DurableDefaultsByRoleAndEstatePolicyPerJob) {
  LoadResult r = parse_config(R"(tiers:
  - {name: staging, path: /nvme, role: staging, drains_to: rapid}
  - {name: shared, path: /shared-nvme, role: staging, durable: true}
  - {name: rapid, path: /lustre, role: rapid}
  - {name: scratch, path: /scratch, role: capacity, durable: false}
  - {name: trash, path: /trash, role: deletion}
estate:
  durable_within: 30m
  jobs:
    "llama-.*": {copies_required: 2}
    "gpt": {durable_within: 2h}
)",
                              "ok.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  const Config& c = *r.config;
  EXPECT_FALSE(c.tiers[0].durable);  // staging is node-local unless it says otherwise
  EXPECT_TRUE(c.tiers[1].durable);
  EXPECT_TRUE(c.tiers[2].durable);
  EXPECT_FALSE(c.tiers[3].durable);
  EXPECT_TRUE(c.tiers[4].durable);  // the role makes it no copy, whatever this says
  EXPECT_EQ(c.estate.defaults.copies_required, 1);
  EXPECT_DOUBLE_EQ(c.estate.defaults.durable_within_seconds, 1800);
  // A job rule inherits what it does not set from the defaults; first match wins.
  EXPECT_EQ(c.estate.for_job("llama-70b").copies_required, 2);
  EXPECT_DOUBLE_EQ(c.estate.for_job("llama-70b").durable_within_seconds, 1800);
  EXPECT_EQ(c.estate.for_job("gpt").copies_required, 1);
  EXPECT_DOUBLE_EQ(c.estate.for_job("gpt").durable_within_seconds, 7200);
  // The regex matches the whole name.
  EXPECT_DOUBLE_EQ(c.estate.for_job("gpt-2").durable_within_seconds, 1800);
  EXPECT_EQ(c.estate.for_job("bert").copies_required, 1);
}

TEST(Config, RulesPolicyDefaultsWhenAbsent) {
  LoadResult r = parse_config("tiers:\n  - {name: a, path: /a, role: capacity}\n", "ok.yml");
  ASSERT_TRUE(r.config);
  EXPECT_DOUBLE_EQ(r.config->history.raw_retention_seconds, 86400.0);
  ASSERT_EQ(r.config->history.levels.size(), 2u);
  EXPECT_EQ(r.config->alerting.alertmanager_url, "");
  EXPECT_DOUBLE_EQ(r.config->alerting.rules.drain_backlog_growing.for_seconds, 600.0);
  EXPECT_EQ(r.config->tiers[0].policy.retention.keep_last, 3);
}

TEST(Config, ReadsNamespacesInOrder) {
  LoadResult r = parse_config(R"(tiers:
  - name: rapid
    path: /lustre/ckpt
    role: rapid
    residency: eu-west
    namespaces:
      '^team-a-': {owner: alice, group: team-a, residency: [eu-west, eu-central]}
      '.*': {group: '1000'}
)",
                              "ok.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  const TierConfig& t = r.config->tiers[0];
  EXPECT_EQ(t.residency, "eu-west");
  ASSERT_EQ(t.namespaces.size(), 2u);
  EXPECT_EQ(t.namespaces[0].owner, "alice");
  EXPECT_EQ(t.namespaces[0].residency, (std::vector<std::string>{"eu-west", "eu-central"}));
  EXPECT_TRUE(std::regex_search(std::string("team-a-llama"), *t.namespaces[0].regex));
  EXPECT_EQ(t.namespaces[1].group, "1000");
  EXPECT_EQ(t.namespaces[1].owner, "");
}

TEST(Config, JobRegexNamedGroupIsFoundAfterOtherGroups) {
  JobRule rule;
  ASSERT_EQ(compile_job_regex("(team-[a-z]+)/(?:x/)?(?P<job>[^/]+)", rule), "");
  EXPECT_EQ(rule.group, 2);
  std::smatch m;
  const std::string rel = "team-a/x/bert";
  ASSERT_TRUE(std::regex_match(rel, m, *rule.regex));
  EXPECT_EQ(m[rule.group].str(), "bert");
  EXPECT_NE(compile_job_regex("(?<job>[", rule), "");
}

TEST(Config, UnreadableFileIsAnErrorWithTheFileName) {
  LoadResult r = load_config_file("/nonexistent/ckptmon.yml");
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(),
            "/nonexistent/ckptmon.yml: cannot open: No such file or directory");
}

// A FIFO would block the reader until a writer shows up (forever): it and a
// directory are refused at once, saying what they are. Before, a directory
// read as an empty document ("tiers: required key is missing").
TEST(Config, OnlyARegularFileIsRead) {
  testing::TempDir dir;
  const std::string fifo = dir.file("fifo.yml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  LoadResult r = load_config_file(fifo);
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(),
            fifo + ": is a FIFO, not a regular file; a configuration must be a regular file");

  r = load_config_file(dir.str());
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(
      r.errors[0].to_string(),
      dir.str() + ": is a directory, not a regular file; a configuration must be a regular file");

  WebConfigResult w = load_web_config_file(fifo);
  ASSERT_FALSE(w.config);
  ASSERT_EQ(w.errors.size(), 1u);
  EXPECT_EQ(w.errors[0].to_string(),
            fifo + ": is a FIFO, not a regular file; a configuration must be a regular file");
}

TEST(Config, ReadsTheAuditSection) {
  LoadResult r = parse_config(R"(tiers:
  - {name: a, path: /data/a, role: rapid}
audit:
  log_file: /var/log/ckptmon/audit.log
  max_size: 10MiB
  max_files: 3
  http_access_log: true
)",
                              "ok.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  EXPECT_EQ(r.config->audit.log_file, "/var/log/ckptmon/audit.log");
  EXPECT_EQ(r.config->audit.max_bytes, 10u * 1024 * 1024);
  EXPECT_EQ(r.config->audit.max_files, 3u);
  EXPECT_TRUE(r.config->audit.http_access);
  // Absent: off.
  LoadResult none = parse_config("tiers:\n  - {name: a, path: /a, role: capacity}\n", "ok.yml");
  ASSERT_TRUE(none.config);
  EXPECT_FALSE(none.config->audit.enabled());
  EXPECT_FALSE(none.config->audit.http_access);
}

TEST(Config, AuditLogInsideATierIsAnError) {
  const auto errors = errors_of(R"(tiers:
  - {name: rapid, path: /data/rapid, role: rapid}
audit:
  log_file: /data/rapid/audit.log
)");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "bad.yml:4:13: audit.log_file: \"/data/rapid/audit.log\" is inside tier \"rapid\" "
            "(\"/data/rapid\"); ckptmon never writes under a monitored tier");
  // A sibling whose name merely starts like the tier is not inside it.
  EXPECT_TRUE(errors_of(R"(tiers:
  - {name: rapid, path: /data/rapid, role: rapid}
audit: {log_file: /data/rapid-audit.log}
)")
                  .empty());
  EXPECT_EQ(
      errors_of("tiers:\n  - {name: a, path: /a, role: rapid}\naudit: {log_file: relative.log}\n")
          .size(),
      1u);
  EXPECT_EQ(
      errors_of("tiers:\n  - {name: a, path: /a, role: rapid}\naudit: {max_files: 0}\n").size(),
      1u);
}

}  // namespace
}  // namespace ckptmon
