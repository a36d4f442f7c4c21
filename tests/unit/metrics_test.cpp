#include "exporter/metrics.hpp"

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ckptmon {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const prometheus::MetricFamily* family(const std::vector<prometheus::MetricFamily>& fams,
                                       const std::string& name) {
  for (const auto& f : fams) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// The value of the sample of `name` whose labels include every pair in `want`.
std::optional<double> sample(const std::vector<prometheus::MetricFamily>& fams,
                             const std::string& name, const Labels& want) {
  const auto* f = family(fams, name);
  if (f == nullptr) return std::nullopt;
  for (const auto& m : f->metric) {
    bool all = true;
    for (const auto& [k, v] : want) {
      bool found = false;
      for (const auto& l : m.label) found |= (l.name == k && l.value == v);
      all &= found;
    }
    if (!all) continue;
    switch (f->type) {
      case prometheus::MetricType::Counter:
        return m.counter.value;
      case prometheus::MetricType::Gauge:
        return m.gauge.value;
      default:
        return m.untyped.value;
    }
  }
  return std::nullopt;
}

TierState tier(const std::string& name, TierRole role, bool up, bool has_stats) {
  TierState t;
  t.config.name = name;
  t.config.path = "/data/" + name;
  t.config.role = role;
  t.up = up;
  t.has_stats = has_stats;
  if (has_stats) {
    t.stats.size_bytes = 1099511627776.0;  // 1 TiB
    t.stats.free_bytes = 400.0 * 1024 * 1024 * 1024;
    t.stats.avail_bytes = 300.0 * 1024 * 1024 * 1024;
    t.stats.files = 65536;
    t.stats.files_free = 60000;
    t.stats.readonly = false;
    t.stats.mountpoint = "/data";
    t.stats.fstype = "xfs";
    t.stats.device = "/dev/nvme0n1";
  }
  return t;
}

class MetricsTest : public ::testing::Test {
 protected:
  MetricsTest() {
    state_.tiers["fast"] = tier("fast", TierRole::kStaging, true, true);
    state_.tiers["fast"].last_success = 1700000000.5;
    state_.tiers["fast"].stats.readonly = true;
    // Down after having been up: figures are known but stale.
    state_.tiers["stuck"] = tier("stuck", TierRole::kRapid, false, true);
    state_.tiers["stuck"].last_success = 1699999000;
    // Never seen.
    state_.tiers["gone"] = tier("gone", TierRole::kCapacity, false, false);
  }
  State state_;
};

TEST_F(MetricsTest, UpTierHasEveryFigure) {
  auto f = state_families(state_);
  const Labels fast{{"tier", "fast"}};
  EXPECT_EQ(sample(f, "ckpt_tier_up", fast), 1.0);
  EXPECT_EQ(sample(f, "ckpt_tier_size_bytes", fast), 1099511627776.0);
  EXPECT_EQ(sample(f, "ckpt_tier_free_bytes", fast), 400.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(sample(f, "ckpt_tier_avail_bytes", fast), 300.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(sample(f, "ckpt_tier_files", fast), 65536.0);
  EXPECT_EQ(sample(f, "ckpt_tier_files_free", fast), 60000.0);
  EXPECT_EQ(sample(f, "ckpt_tier_readonly", fast), 1.0);
  EXPECT_EQ(sample(f, "ckpt_tier_last_success_timestamp_seconds", fast), 1700000000.5);
  EXPECT_EQ(sample(f, "ckpt_tier_info",
                   {{"tier", "fast"},
                    {"role", "staging"},
                    {"mountpoint", "/data"},
                    {"fstype", "xfs"},
                    {"device", "/dev/nvme0n1"}}),
            1.0);
}

TEST_F(MetricsTest, TheLatestCheckpointByComponentAndAllocatedBytes) {
  Checkpoint old;
  old.tier = "fast";
  old.job = "llm";
  old.path = "llm/step-1";
  old.step = 1;
  old.state = CkptState::kCommitted;
  old.bytes = 10;
  old.marker_time = 100;
  Checkpoint c = old;
  c.path = "llm/step-2";
  c.step = 2;
  c.bytes = 1000;
  c.allocated_bytes = 512;  // a compressing file system
  c.marker_time = 200;
  c.component_bytes[static_cast<std::size_t>(Component::kModel)] = 300;
  c.component_bytes[static_cast<std::size_t>(Component::kOptimizer)] = 600;
  c.component_bytes[static_cast<std::size_t>(Component::kScaler)] = 1;
  c.component_bytes[static_cast<std::size_t>(Component::kDataloader)] = 9;
  c.component_bytes[static_cast<std::size_t>(Component::kMetadata)] = 90;
  state_.catalogs["fast"].edit().checkpoints = {old, c};
  state_.catalogs["fast"].edit().scanned = true;
  auto f = state_families(state_);
  const Labels tj{{"tier", "fast"}, {"training_job", "llm"}};
  EXPECT_EQ(sample(f, "ckpt_last_checkpoint_bytes", tj), 1000.0);
  EXPECT_EQ(sample(f, "ckpt_last_checkpoint_allocated_bytes", tj), 512.0);
  // Every component of the fixed set has a sample, 0 where none was seen.
  const std::map<std::string, double> want{{"model", 300},   {"optimizer", 600}, {"scheduler", 0},
                                           {"scaler", 1},    {"rng", 0},         {"dataloader", 9},
                                           {"metadata", 90}, {"other", 0}};
  for (const auto& [component, bytes] : want) {
    EXPECT_EQ(sample(f, "ckpt_last_checkpoint_component_bytes",
                     {{"tier", "fast"}, {"training_job", "llm"}, {"component", component}}),
              bytes)
        << component;
  }
}

TEST_F(MetricsTest, ASharedTiersShardCountSaysItsFiguresArePartial) {
  state_.tiers["fast"].config.shard_index = 1;
  state_.tiers["fast"].config.shard_count = 3;
  auto f = state_families(state_);
  EXPECT_EQ(sample(f, "ckpt_tier_shards", {{"tier", "fast"}}), 3.0);
  EXPECT_EQ(sample(f, "ckpt_tier_shards", {{"tier", "stuck"}}), 1.0);  // not sharded
}

TEST_F(MetricsTest, DownTierKeepsUpAndInfoButNoFigures) {
  auto f = state_families(state_);
  for (const char* name : {"stuck", "gone"}) {
    const Labels l{{"tier", name}};
    EXPECT_EQ(sample(f, "ckpt_tier_up", l), 0.0) << name;
    EXPECT_EQ(sample(f, "ckpt_tier_info", l), 1.0) << name;
    for (const char* fig : {"ckpt_tier_size_bytes", "ckpt_tier_avail_bytes", "ckpt_tier_free_bytes",
                            "ckpt_tier_files", "ckpt_tier_files_free", "ckpt_tier_readonly"}) {
      EXPECT_EQ(sample(f, fig, l), std::nullopt) << fig << " " << name;
    }
  }
  // A tier that was up once keeps its identity and last success time.
  EXPECT_EQ(sample(f, "ckpt_tier_info", {{"tier", "stuck"}, {"mountpoint", "/data"}}), 1.0);
  EXPECT_EQ(sample(f, "ckpt_tier_last_success_timestamp_seconds", {{"tier", "stuck"}}),
            1699999000.0);
  // One never seen has empty identity labels and no last success sample.
  EXPECT_EQ(sample(f, "ckpt_tier_info",
                   {{"tier", "gone"},
                    {"role", "capacity"},
                    {"mountpoint", ""},
                    {"fstype", ""},
                    {"device", ""}}),
            1.0);
  EXPECT_EQ(sample(f, "ckpt_tier_last_success_timestamp_seconds", {{"tier", "gone"}}),
            std::nullopt);
}

TEST_F(MetricsTest, FamiliesHaveTypesAndHelp) {
  auto f = state_families(state_);
  std::set<std::string> names;
  for (const auto& fam : f) {
    names.insert(fam.name);
    EXPECT_FALSE(fam.help.empty()) << fam.name;
    EXPECT_EQ(fam.type, fam.name.ends_with("_total") ? prometheus::MetricType::Counter
                                                     : prometheus::MetricType::Gauge)
        << fam.name;
  }
  EXPECT_EQ(names.size(), f.size()) << "a family appears twice";
}

TEST_F(MetricsTest, NoTiersNoCollectorsGivesNoEmptyFamilies) {
  State empty;
  auto f = state_families(empty);
  EXPECT_TRUE(f.empty());
  EXPECT_EQ(serialize(f), "");
}

TEST_F(MetricsTest, AllTiersDownOmitsTheFigureFamiliesEntirely) {
  state_.tiers.erase("fast");
  auto f = state_families(state_);
  EXPECT_NE(family(f, "ckpt_tier_up"), nullptr);
  EXPECT_EQ(family(f, "ckpt_tier_size_bytes"), nullptr);
  // A family with no samples would print a lone # TYPE line.
  const std::string text = serialize(f);
  EXPECT_THAT(text, Not(HasSubstr("ckpt_tier_size_bytes")));
}

TEST_F(MetricsTest, CollectorMetricsPerCollector) {
  CollectorStatus& ts = state_.collectors["tier_stats"];
  ts.targets["a"] = {true, 0.25, false};
  ts.targets["b"] = {false, 1.5, true};
  ts.timeouts = 3;
  ts.skipped = 2;
  ts.errors = 1;
  CollectorStatus& other = state_.collectors["checkpoints"];
  other.targets["a"] = {true, 0.5, false};
  other.targets["b"] = {true, 0.125, false};
  auto f = state_families(state_);
  const Labels t{{"collector", "tier_stats"}};
  const Labels c{{"collector", "checkpoints"}};
  EXPECT_EQ(sample(f, "ckptmon_collector_success", t), 0.0);
  EXPECT_EQ(sample(f, "ckptmon_collector_duration_seconds", t), 1.5);  // the slowest target
  EXPECT_EQ(sample(f, "ckptmon_collector_timeouts_total", t), 3.0);
  EXPECT_EQ(sample(f, "ckptmon_collector_skipped_total", t), 2.0);
  EXPECT_EQ(sample(f, "ckptmon_collector_errors_total", t), 1.0);
  EXPECT_EQ(sample(f, "ckptmon_collector_success", c), 1.0);
  EXPECT_EQ(sample(f, "ckptmon_collector_duration_seconds", c), 0.5);
  EXPECT_EQ(sample(f, "ckptmon_collector_timeouts_total", c), 0.0);
  EXPECT_EQ(family(f, "ckptmon_collector_success")->metric.size(), 2u);
}

TEST_F(MetricsTest, SerializeEscapesLabelValues) {
  State s;
  TierState t = tier("odd", TierRole::kRapid, true, true);
  t.stats.mountpoint = "/mnt/a \"quoted\" dir";
  t.stats.device = "back\\slash\nnewline";
  s.tiers["odd"] = t;
  const std::string text = serialize(state_families(s));
  // Exposition format 0.0.4: \ -> \\, " -> \" in label values; a control
  // character is replaced by the label sanitiser (U+FFFD, then "~" and the
  // SHA-256 prefix of the raw value, from sha256sum).
  EXPECT_THAT(text, HasSubstr("device=\"back\\\\slash\xEF\xBF\xBDnewline~2e40a17e\""));
  EXPECT_THAT(text, HasSubstr("mountpoint=\"/mnt/a \\\"quoted\\\" dir\""));
  // No raw newline may break a sample line: every line is a comment or a sample.
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    EXPECT_TRUE(line.starts_with("# ") || line.starts_with("ckpt")) << "stray line: " << line;
  }
}

TEST_F(MetricsTest, SerializeWritesTypeHelpAndSamples) {
  State s;
  s.tiers["t"] = tier("t", TierRole::kMilestone, true, true);
  const std::string text = serialize(state_families(s));
  EXPECT_THAT(text, HasSubstr("# TYPE ckpt_tier_up gauge\n"));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_up{tier=\"t\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_files{tier=\"t\"} 65536\n"));
  EXPECT_THAT(text, HasSubstr("ckpt_tier_size_bytes{tier=\"t\"} 1099511627776\n"));
  EXPECT_THAT(text, HasSubstr("# HELP ckpt_tier_size_bytes "));
}

TEST(ProcessFamilies, ReportsThisProcess) {
  auto f = process_families("/proc", 1234.5);
  EXPECT_EQ(sample(f, "process_start_time_seconds", {}), 1234.5);
  auto fds = sample(f, "process_open_fds", {});
  ASSERT_TRUE(fds);
  EXPECT_GE(*fds, 3.0);  // stdin, stdout, stderr at least
  auto rss = sample(f, "process_resident_memory_bytes", {});
  ASSERT_TRUE(rss);
  EXPECT_GT(*rss, 0.0);
  EXPECT_TRUE(sample(f, "process_cpu_seconds_total", {}));
  EXPECT_TRUE(sample(f, "process_max_fds", {}));
}

TEST(ProcessFamilies, AMissingProcGivesWhatItCanWithoutCrashing) {
  auto f = process_families("/nonexistent-proc", 1.0);
  EXPECT_EQ(sample(f, "process_start_time_seconds", {}), 1.0);
  EXPECT_EQ(sample(f, "process_open_fds", {}), std::nullopt);
  EXPECT_EQ(sample(f, "process_cpu_seconds_total", {}), std::nullopt);
}

}  // namespace
}  // namespace ckptmon
