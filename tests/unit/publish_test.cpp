// Snapshots share what did not change and never see a later change
// (issue 16 item 6); their text is what state_families() renders.

#include <gtest/gtest.h>

#include "exporter/metrics.hpp"
#include "serve/publisher.hpp"

namespace ckptmon {
namespace {

Checkpoint committed(const std::string& tier, const std::string& job, std::int64_t step,
                     std::uint64_t bytes) {
  Checkpoint c;
  c.tier = tier;
  c.job = job;
  c.step = step;
  c.path = job + "/step-" + std::to_string(step);
  c.state = CkptState::kCommitted;
  c.bytes = bytes;
  c.files = 2;
  c.marker_time = 1000 + static_cast<double>(step);
  return c;
}

class PublishTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string name : {"a", "b"}) {
      state_.tiers[name].config.name = name;
      TierCatalog& cat = state_.catalogs[name].edit();
      cat.checkpoints = {committed(name, "llm", 100, 4096), committed(name, "llm", 200, 8192)};
      cat.jobs = {"llm"};
      cat.scanned = true;
    }
  }

  State state_;
  SnapshotPublisher publisher_;
};

TEST_F(PublishTest, SnapshotTakenBeforeAChangeKeepsTheOldValues) {
  auto before = publisher_.publish(state_, nullptr, 1);
  state_.catalogs["a"].edit().checkpoints[1].bytes = 12345;
  auto after = publisher_.publish(state_, nullptr, 2);

  EXPECT_EQ(before->state.catalogs.at("a")->checkpoints[1].bytes, 8192u);
  EXPECT_EQ(after->state.catalogs.at("a")->checkpoints[1].bytes, 12345u);
  // The newest committed checkpoint is step 200: its bytes by hand.
  const std::string old_line = "ckpt_last_checkpoint_bytes{tier=\"a\",training_job=\"llm\"} 8192\n";
  const std::string new_line =
      "ckpt_last_checkpoint_bytes{tier=\"a\",training_job=\"llm\"} 12345\n";
  EXPECT_NE(before->metrics_text.find(old_line), std::string::npos) << before->metrics_text;
  EXPECT_EQ(before->metrics_text.find(new_line), std::string::npos);
  EXPECT_NE(after->metrics_text.find(new_line), std::string::npos) << after->metrics_text;
  EXPECT_EQ(after->metrics_text.find(old_line), std::string::npos);
}

TEST_F(PublishTest, AnUnchangedTierIsSharedAndNotRenderedAgain) {
  auto first = publisher_.publish(state_, nullptr, 1);
  EXPECT_EQ(publisher_.catalog_renders(), 2u);  // both tiers, once
  state_.catalogs["a"].edit().checkpoints[0].bytes = 1;
  auto second = publisher_.publish(state_, nullptr, 2);

  EXPECT_EQ(first->state.catalogs.at("b").shared().get(),
            second->state.catalogs.at("b").shared().get());
  EXPECT_EQ(second->state.catalogs.at("b").shared().get(), state_.catalogs.at("b").shared().get());
  EXPECT_NE(first->state.catalogs.at("a").shared().get(),
            second->state.catalogs.at("a").shared().get());
  EXPECT_EQ(publisher_.catalog_renders(), 3u);  // only a again

  publisher_.publish(state_, nullptr, 3);
  EXPECT_EQ(publisher_.catalog_renders(), 3u);  // nothing changed
  // An event catalog change reaches every tier's figures (skew, duration).
  state_.events = std::make_shared<const EventCatalog>();
  publisher_.publish(state_, nullptr, 4);
  EXPECT_EQ(publisher_.catalog_renders(), 5u);
}

TEST_F(PublishTest, TextIsWhatStateFamiliesRender) {
  auto expect_same = [&](const char* when) {
    auto snap = publisher_.publish(state_, nullptr, 1);
    EXPECT_EQ(snap->metrics_text, serialize(state_families(state_))) << when;
  };
  expect_same("first");
  expect_same("unchanged");
  state_.catalogs["b"].edit().checkpoints.push_back(committed("b", "other", 5, 7));
  expect_same("a job added to b");
  state_.catalogs["a"].edit().checkpoints.clear();
  expect_same("a emptied");
  state_.catalogs["c"].edit().scanned = false;  // a tier not walked yet
  state_.tiers["c"].config.name = "c";
  expect_same("c added");
  state_.catalogs.erase("b");
  state_.tiers.erase("b");
  expect_same("b removed");
}

}  // namespace
}  // namespace ckptmon
