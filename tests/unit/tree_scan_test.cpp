// tree_scan collector: a reload that changes what a walk reports is applied
// to the next walk, not only to tiers that are new.

#include "collectors/tree_scan.hpp"
#include "config/config.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "exporter/collectors.hpp"
#include "exporter/family.hpp"

#include "temp_dir.hpp"

namespace ckptmon {
namespace {

Config config_of(const std::string& yaml) {
  auto r = parse_config(yaml, "test.yml");
  if (!r.config) throw std::runtime_error(r.errors.at(0).to_string());
  return *r.config;
}

class TreeScanReload : public ::testing::Test {
 protected:
  TreeScanReload() {
    tier_.write("llama/step-1/__0_0.distcp", 100);
    tier_.write("llama/step-1/.metadata", 10);
    state_.tiers["rapid"].config.path = tier_.str();
  }

  std::string yaml(const std::string& tier_extra) const {
    return "tiers:\n  - {name: rapid, path: " + tier_.str() + ", role: rapid" + tier_extra + "}\n";
  }

  // One walk of the tier, applied to the state; the kinds of its findings.
  std::vector<FindingKind> walk() {
    Update apply = collector_.prepare("rapid", state_)();
    apply(state_);
    std::vector<FindingKind> kinds;
    for (const auto& f : *state_.catalogs["rapid"]->findings) kinds.push_back(f.kind);
    return kinds;
  }

  testing::TempDir tier_;
  State state_;
  TreeScanCollector collector_{std::make_shared<FakeClock>()};
};

TEST_F(TreeScanReload, NamespacesChangedByAReloadApplyToTheNextWalk) {
  collector_.configure(config_of(yaml("")));
  const auto before = walk();
  EXPECT_EQ(std::count(before.begin(), before.end(), FindingKind::kOutsideNamespace), 0);

  // A namespace that does not claim the job: the job is now outside every namespace.
  collector_.configure(config_of(yaml(", namespaces: {'^gpt-': {}}")));
  const auto after = walk();
  EXPECT_EQ(std::count(after.begin(), after.end(), FindingKind::kOutsideNamespace), 1);
}

TEST_F(TreeScanReload, ShardFilesAreKeptOnceTheTierTakesPartInADrain) {
  collector_.configure(config_of(yaml("")));
  walk();
  ASSERT_EQ(state_.catalogs["rapid"]->checkpoints.size(), 1u);
  EXPECT_EQ(state_.catalogs["rapid"]->checkpoints[0].shard_files, nullptr);

  collector_.configure(config_of(yaml(", drains_to: capacity}\n  - {name: capacity, path: " +
                                      tier_.str() + "/../elsewhere, role: capacity")));
  walk();
  ASSERT_EQ(state_.catalogs["rapid"]->checkpoints.size(), 1u);
  ASSERT_NE(state_.catalogs["rapid"]->checkpoints[0].shard_files, nullptr);
  EXPECT_EQ(state_.catalogs["rapid"]->checkpoints[0].shard_files->size(), 2u);
}

// The racy window (tree_walk.hpp kRacySeconds): a checkpoint read the moment
// it was committed may have a file still being written. Frozen then, the
// next walks would reuse its half-read record, since writing into an existing
// file changes no directory's mtime.
class TreeScanRacy : public ::testing::Test {
 protected:
  TreeScanRacy() {
    shard_ = tier_.write("llama/step-1/__0_0.distcp", 100);
    tier_.write("llama/step-1/.metadata", 10);
    struct stat st {};
    ::stat(shard_.c_str(), &st);
    written_ =
        static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
    collector_.configure(
        config_of("tiers:\n  - {name: rapid, path: " + tier_.str() + ", role: rapid}\n"));
    state_.tiers["rapid"].config.path = tier_.str();
  }
  std::uint64_t walk_at(double now) {
    clock_->set(now);
    collector_.prepare("rapid", state_)()(state_);
    const auto& c = state_.catalogs["rapid"]->checkpoints;
    return c.size() == 1 ? c[0].bytes : 0;
  }
  // The shard written further in place: its directory is left as it was.
  void grow_in_place() {
    std::ofstream(shard_, std::ios::binary | std::ios::app) << std::string(50, 'x');
  }

  testing::TempDir tier_;
  std::filesystem::path shard_;
  double written_ = 0;
  State state_;
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  TreeScanCollector collector_{clock_};
};

TEST_F(TreeScanRacy, ACheckpointWalkedWithinTheRacyWindowIsReadAgainByTheNextWalk) {
  EXPECT_EQ(walk_at(written_ + 0.5), 110u);
  grow_in_place();
  EXPECT_EQ(walk_at(written_ + 10), 160u);
}

TEST_F(TreeScanRacy, OnceOutsideTheWindowTheCheckpointIsFrozenAndReused) {
  // The other side of the rule, so the first test cannot pass by never
  // freezing: walked 10 s after its last write, the record is reused as a
  // whole (a committed checkpoint is not written again in place).
  EXPECT_EQ(walk_at(written_ + 10), 110u);
  grow_in_place();
  EXPECT_EQ(walk_at(written_ + 20), 110u);
}

// Reloads as the daemon does them: each load stamped as the one after the
// last (stamp_generation), then applied to the state and the collector.
class TreeScanGeneration : public ::testing::Test {
 protected:
  void reload(const std::string& path, const std::string& extra = "") {
    Config next =
        config_of("tiers:\n  - {name: rapid, path: " + path + ", role: rapid" + extra + "}\n");
    stamp_generation(next, state_.config.get());
    auto cfg = std::make_shared<const Config>(std::move(next));
    state_.apply_config(cfg);
    collector_.configure(*cfg);
  }
  std::uint64_t epoch() const { return state_.tiers.at("rapid").config.generation; }
  std::vector<std::string> paths() {
    std::vector<std::string> out;
    for (const auto& c : state_.catalogs["rapid"]->checkpoints) out.push_back(c.path);
    return out;
  }
  // The collector families as a scrape shows them.
  std::string scrape() const {
    std::vector<prometheus::MetricFamily> families;
    collector_families(state_, families);
    return serialize(families);
  }
  static constexpr const char* kDropped =
      "ckptmon_collector_results_dropped_total{collector=\"tree_scan\","
      "reason=\"stale_generation\"} ";

  testing::TempDir old_root_;
  testing::TempDir new_root_;
  State state_;
  TreeScanCollector collector_{std::make_shared<FakeClock>()};
};

TEST_F(TreeScanGeneration, AWalkInFlightWhenAReloadRepointsTheTierIsDropped) {
  old_root_.write("llama/step-1/__0_0.distcp", 100);
  old_root_.write("llama/step-1/.metadata", 10);
  new_root_.write("gpt/step-7/__0_0.distcp", 100);
  new_root_.write("gpt/step-7/.metadata", 10);
  reload(old_root_.str());
  ASSERT_EQ(state_.config->generation, 1u);
  ASSERT_EQ(epoch(), 1u);

  Job walk_of_old_root = collector_.prepare("rapid", state_);  // scheduled under epoch 1...
  reload(new_root_.str());                                     // ...then the tier is re-pointed
  EXPECT_EQ(state_.config->generation, 2u);
  EXPECT_EQ(epoch(), 2u);
  EXPECT_EQ(state_.collectors["tree_scan"].stale_results_dropped, 0u);
  walk_of_old_root()(state_);  // the walk of the old root returns late: dropped
  EXPECT_TRUE(paths().empty());
  EXPECT_FALSE(state_.catalogs["rapid"]->scanned);
  EXPECT_EQ(state_.collectors["tree_scan"].stale_results_dropped, 1u);  // and counted
  EXPECT_NE(scrape().find(std::string(kDropped) + "1\n"), std::string::npos) << scrape();

  collector_.prepare("rapid", state_)()(state_);  // a walk scheduled under epoch 2 applies
  EXPECT_EQ(paths(), (std::vector<std::string>{"gpt/step-7"}));
  EXPECT_EQ(state_.collectors["tree_scan"].stale_results_dropped, 1u);
}

TEST_F(TreeScanGeneration, AWalkOfARemovedTierIsDroppedAndCounted) {
  old_root_.write("llama/step-1/__0_0.distcp", 100);
  old_root_.write("llama/step-1/.metadata", 10);
  reload(old_root_.str());
  Job walk = collector_.prepare("rapid", state_);
  Config next =
      config_of("tiers:\n  - {name: other, path: " + new_root_.str() + ", role: rapid}\n");
  stamp_generation(next, state_.config.get());
  state_.apply_config(std::make_shared<const Config>(std::move(next)));  // rapid removed
  walk()(state_);
  EXPECT_FALSE(state_.catalogs.contains("rapid"));  // not brought back by the late result
  EXPECT_EQ(state_.collectors["tree_scan"].stale_results_dropped, 1u);
  EXPECT_NE(scrape().find(std::string(kDropped) + "1\n"), std::string::npos) << scrape();
}

TEST_F(TreeScanGeneration, AReloadThatKeepsTheRootKeepsTheEpochAndTheWalkInFlightApplies) {
  old_root_.write("llama/step-1/__0_0.distcp", 100);
  old_root_.write("llama/step-1/.metadata", 10);
  reload(old_root_.str());
  Job walk = collector_.prepare("rapid", state_);
  reload(old_root_.str(), ", partial_after: 1h");  // another load, the same root
  EXPECT_EQ(state_.config->generation, 2u);
  EXPECT_EQ(epoch(), 1u);
  walk()(state_);
  EXPECT_EQ(paths(), (std::vector<std::string>{"llama/step-1"}));
  EXPECT_EQ(state_.collectors["tree_scan"].stale_results_dropped, 0u);  // nothing dropped
  EXPECT_NE(scrape().find(std::string(kDropped) + "0\n"), std::string::npos) << scrape();
}

}  // namespace
}  // namespace ckptmon
