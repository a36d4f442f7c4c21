#include "exporter/rules.hpp"

#include <cstdio>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "exporter/metrics.hpp"
#include "tests/unit/rules_fixtures.hpp"

namespace ckptmon {
namespace {

using testing::Ck;
using testing::tier_state;

std::string render() {
  std::map<std::string, TierState> tiers{
      {"staging", tier_state("staging", TierRole::kStaging, "rapid", 1e12, 4e11)},
      {"rapid", tier_state("rapid", TierRole::kRapid, "", 1e13, 5e12)}};
  std::vector<Checkpoint> cks{Ck("staging", "llama", 100).committed(1000, 90, 100),
                              Ck("staging", "llama", 200).committed(1000, 190, 200),
                              Ck("rapid", "llama", 100).in_progress(400, 110, 120),
                              Ck("staging", "llama", 150).partial(77, 140, 150)};
  RulesHistory h;
  h.tiers["staging"] = {{100, 1e12, 4.5e11, {}}, {200, 1e12, 4.2e11, {}}};
  RulesPolicy p;
  // Samples 100 s apart: no minimum span for this rendering test.
  for (const char* t : {"staging", "rapid"}) p.tiers[t].sizing.min_trend_span_seconds = 0;
  RuleFigures f = evaluate_rules(tiers, cks, h, {}, p, 300);
  // The storage path: step 200 on staging was slow from the network; a
  // restore estimate of 12.5 s against a 60 s objective; a measured restore.
  LastSlowFigures ls;
  ls.tier = "staging";
  ls.job = "llama";
  ls.step = 200;
  ls.verdict.judged = ls.verdict.slow = true;
  ls.verdict.cause = SlowCause::kNetwork;
  f.storage_path.last_slow.push_back(ls);
  f.storage_path.slow_counts[SlowCountKey{"staging", "llama", SlowCause::kNetwork}] = 2;
  f.storage_path.slow_counts[SlowCountKey{"staging", "llama", SlowCause::kStraggler}] = 1;
  RestoreFigures rf;
  rf.tier = "staging";
  rf.job = "llama";
  rf.objective_seconds = 60;
  rf.estimate = RestoreEstimate{};
  rf.estimate->seconds = 12.5;
  f.storage_path.restore.push_back(rf);
  RestoreFigures unknown = rf;  // no read rate known: no estimate, still the objective
  unknown.tier = "rapid";
  unknown.estimate.reset();
  f.storage_path.restore.push_back(unknown);
  f.storage_path.measured_restores.push_back({"rapid", "llama", 100, 4e9});
  f.storage_path.mtime_write_bytes_per_second["staging"] = 5e6;
  AlertInstance a;
  a.labels = {"CheckpointTierDown", "critical", "rapid", ""};
  std::vector<AlertInstance> firing{a};
  auto fams = rule_families(f);
  for (auto& x : alert_families(firing)) fams.push_back(std::move(x));
  AlertmanagerStats s;
  s.posts_total = 3;
  s.post_errors_total = 1;
  s.last_success = 290;
  for (auto& x : alertmanager_families(s)) fams.push_back(std::move(x));
  return serialize(fams);
}

TEST(RulesMetrics, RendersTheFiguresWithTheirLabels) {
  const std::string text = render();
  auto has = [&](const std::string& line) {
    return text.find("\n" + line + "\n") != std::string::npos;
  };
  // 600 bytes of step 100 and all of step 200 are not on rapid yet.
  EXPECT_TRUE(has(
      "ckpt_drain_backlog_bytes{tier=\"staging\",to_tier=\"rapid\",training_job=\"llama\"} 1600"))
      << text;
  EXPECT_TRUE(
      has("ckpt_drain_overlapping_checkpoints{tier=\"staging\",to_tier=\"rapid\",training_job="
          "\"llama\"} 1"));
  EXPECT_TRUE(
      has("ckpt_drain_oldest_pending_age_seconds{tier=\"staging\",to_tier=\"rapid\",training_job="
          "\"llama\"} "
          "200"));
  // Avail 4.5e11, 4.2e11, 4.0e11 at 100, 200, 300: least squares slope -2.5e8/s,
  // fitted 3.98333e11 at 300, so 1593.33 s to zero.
  EXPECT_NE(text.find("ckpt_tier_time_to_full_seconds{tier=\"staging\"} 1593.33"),
            std::string::npos)
      << text;
  EXPECT_TRUE(has("ckpt_restorable_step{training_job=\"llama\"} 200"));
  EXPECT_TRUE(has("ckpt_restorable_timestamp_seconds{training_job=\"llama\"} 200"));
  EXPECT_TRUE(has("ckpt_cleanup_pending_checkpoints{tier=\"staging\",training_job=\"llama\"} 0"));
  EXPECT_TRUE(
      has("ckpt_alert{alertname=\"CheckpointTierDown\",severity=\"critical\",tier=\"rapid\"} 1"));
  EXPECT_TRUE(has("ckptmon_alertmanager_post_errors_total 1"));
  // What `plan --prometheus` redoes the rule from: llama keeps keep_last (3,
  // the default) versions on staging; one job writes there at a time.
  EXPECT_TRUE(has("ckpt_job_retained_versions{tier=\"staging\",training_job=\"llama\"} 3")) << text;
  EXPECT_TRUE(has("ckpt_tier_concurrent_writers{tier=\"staging\"} 1")) << text;
  // The storage path's families.
  EXPECT_TRUE(
      has("ckpt_last_checkpoint_slow_cause{tier=\"staging\",training_job=\"llama\","
          "cause=\"network\"} 1"))
      << text;
  EXPECT_TRUE(
      has("ckpt_last_checkpoint_slow_cause{tier=\"staging\",training_job=\"llama\","
          "cause=\"storage_bandwidth\"} 0"));
  EXPECT_TRUE(
      has("ckpt_slow_checkpoints_total{tier=\"staging\",training_job=\"llama\","
          "cause=\"network\"} 2"));
  EXPECT_TRUE(
      has("ckpt_slow_checkpoints_total{tier=\"staging\",training_job=\"llama\","
          "cause=\"straggler\"} 1"));
  EXPECT_TRUE(
      has("ckpt_slow_checkpoints_total{tier=\"staging\",training_job=\"llama\","
          "cause=\"unknown\"} 0"));
  EXPECT_TRUE(has("ckpt_estimated_restore_seconds{tier=\"staging\",training_job=\"llama\"} 12.5"));
  EXPECT_EQ(text.find("ckpt_estimated_restore_seconds{tier=\"rapid\""), std::string::npos);
  EXPECT_TRUE(
      has("ckpt_recovery_time_objective_seconds{tier=\"rapid\",training_job=\"llama\"} 60"));
  EXPECT_TRUE(
      has("ckpt_last_restore_read_bytes_per_second{tier=\"rapid\",training_job=\"llama\"} "
          "4000000000"));
  EXPECT_TRUE(has("ckpt_tier_mtime_write_bandwidth_bytes_per_second{tier=\"staging\"} 5000000"));
  // rapid has no history and one sample: no trend, no sample.
  EXPECT_EQ(text.find("ckpt_tier_time_to_full_seconds{tier=\"rapid\"}"), std::string::npos);
}

TEST(RulesMetrics, PromtoolFindsNothingToComplainAbout) {
  const char* promtool = "/usr/bin/promtool";
  if (access(promtool, X_OK) != 0) GTEST_SKIP() << promtool << " is not installed";
  char path[] = "/tmp/ckptmon-metrics-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << render();
  const std::string cmd = std::string(promtool) + " check metrics < " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) output += buf;
  const int rc = pclose(p);
  unlink(path);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(output, "");
}

}  // namespace
}  // namespace ckptmon
