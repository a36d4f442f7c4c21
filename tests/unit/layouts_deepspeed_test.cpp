// DeepSpeed ZeRO: 128 data-parallel ranks, `latest` rewritten by rank 0.

#include <gtest/gtest.h>

#include "collectors/layouts/layout.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

using testing::component;
using testing::find_ckpt;
using testing::TreeBuilder;

constexpr double kNow = 1'700'000'000;
constexpr std::uint64_t kModel = 2'600'000'000;
constexpr std::uint64_t kOptim = 240ull * 1024 * 1024;

std::string optim_name(int dp) {
  return "bf16_zero_pp_rank_" + std::to_string(dp) + "_mp_rank_00_optim_states.pt";
}

// A tag with the model file and `ranks` optimizer shards; rank r lands r/4 s
// after `start`. Returns the time of the last shard.
double add_tag(TreeBuilder& b, const std::string& tag, double start, int ranks) {
  b.sparse(tag + "/mp_rank_00_model_states.pt", kModel, start);
  double last = start;
  for (int r = 0; r < ranks; ++r) {
    last = start + r * 0.25;
    b.sparse(tag + "/" + optim_name(r), kOptim, last);
  }
  return last;
}

TEST(LayoutDeepSpeed, LatestNamesTheNewestCompleteTag) {
  TreeBuilder b("job");
  add_tag(b, "ds/global_step100", kNow - 9000, 128);
  add_tag(b, "ds/global_step200", kNow - 6000, 128);
  const double last = add_tag(b, "ds/global_step300", kNow - 3000, 128);
  b.text("ds/latest", "global_step300", kNow - 3000 + 1.0);  // rank 0 did not wait for the others
  b.file("ds/zero_to_fp32.py", 30'000, kNow - 9000);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 3u);
  for (const auto& c : all) {
    EXPECT_EQ(c.framework, "deepspeed");
    EXPECT_EQ(c.state, CkptState::kCommitted) << c.path << ": " << c.reason;
    EXPECT_EQ(c.files, 129u);
    EXPECT_EQ(c.bytes, kModel + 128 * kOptim);
    EXPECT_EQ(component(c, Component::kModel), kModel);
    EXPECT_EQ(component(c, Component::kOptimizer), 128 * kOptim);
    EXPECT_EQ(c.allocated_bytes, 0u);
  }
  const Checkpoint* c = find_ckpt(all, "ds/global_step300");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->step, 300);
  EXPECT_DOUBLE_EQ(c->marker_time, kNow - 3000 + 1.0);
  EXPECT_DOUBLE_EQ(c->completion_skew(), last - (kNow - 3000));
  EXPECT_DOUBLE_EQ(c->completion_skew(), 127 * 0.25);
  EXPECT_EQ(find_ckpt(all, "ds/global_step100")->marker_time, 0);
}

TEST(LayoutDeepSpeed, LatestNamingAShortTagIsInProgressThenPartial) {
  TreeBuilder b("job");
  add_tag(b, "ds/global_step200", kNow - 6000, 128);
  add_tag(b, "ds/global_step300", kNow - 100, 120);
  b.text("ds/latest", "global_step300\n", kNow - 99);
  const DirNode tree = b.build();

  auto all = recognise_tree(tree, LayoutContext{.now = kNow});
  const Checkpoint* c = find_ckpt(all, "ds/global_step300");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->state, CkptState::kInProgress);
  EXPECT_EQ(c->reason,
            "latest names global_step300 with 120 of 128 optimizer shards; last write 1m ago");
  EXPECT_EQ(c->expected_files, 129u);
  EXPECT_EQ(c->files, 121u);
  EXPECT_EQ(find_ckpt(all, "ds/global_step200")->state, CkptState::kCommitted);

  all = recognise_tree(tree, LayoutContext{.now = kNow + 3600});
  c = find_ckpt(all, "ds/global_step300");
  EXPECT_EQ(c->state, CkptState::kPartial);
  EXPECT_EQ(c->reason, "latest names global_step300 with 120 of 128 optimizer shards after 30m");
}

TEST(LayoutDeepSpeed, TagNewerThanLatestIsNotCommitted) {
  TreeBuilder b("job");
  add_tag(b, "ds/global_step300", kNow - 6000, 128);
  b.text("ds/latest", "global_step300", kNow - 5900);
  add_tag(b, "ds/global_step400", kNow - 4000, 128);  // finished writing, latest never moved
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  const Checkpoint* c = find_ckpt(all, "ds/global_step400");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->state, CkptState::kPartial);
  EXPECT_EQ(c->reason, "newer than the tag latest names (global_step300) after 30m");
  EXPECT_EQ(find_ckpt(all, "ds/global_step300")->state, CkptState::kCommitted);
}

TEST(LayoutDeepSpeed, TruncatedOptimizerShardIsCaught) {
  TreeBuilder b("job");
  add_tag(b, "ds/global_step300", kNow - 6000, 8);
  b.sparse("ds/global_step300/" + optim_name(5), 100ull * 1024 * 1024,
           kNow - 6000 + 2);  // overwrite: cut off
  b.text("ds/latest", "global_step300", kNow - 5990);
  const DirNode tree = b.build();
  // The builder keeps both entries for rank 5; keep the short one only.
  DirNode fixed = tree;
  auto& files = fixed.dirs[0].dirs[0].files;
  files.erase(std::find_if(files.begin(), files.end(), [](const FileEntry& f) {
    return f.name == optim_name(5) && f.size == kOptim;
  }));
  const auto all = recognise_tree(fixed, LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason, "latest names global_step300 but " + optim_name(5) +
                               " holds 104857600 of its peers' " + std::to_string(kOptim) +
                               " bytes after 30m");
}

TEST(LayoutDeepSpeed, NoLatestFile) {
  TreeBuilder b("job");
  add_tag(b, "ds/global_step10", kNow - 60, 4);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kInProgress);
  EXPECT_EQ(all[0].reason, "no latest file; last write 59s ago");
}

TEST(LayoutDeepSpeed, ReusedStubsStayUnlessLatestDemotesThem) {
  Checkpoint old;
  old.framework = "deepspeed";
  old.step = 100;
  old.state = CkptState::kCommitted;
  old.files = 129;
  old.path = "somewhere/else";
  old.last_write = kNow - 9000;
  Checkpoint newer = old;
  newer.step = 300;
  newer.last_write = kNow - 60;

  TreeBuilder b("job");
  b.reused("ds/global_step100", old, kNow - 9000);
  add_tag(b, "ds/global_step200", kNow - 6000, 128);
  b.reused("ds/global_step300", newer, kNow - 60);
  b.text("ds/latest", "global_step200", kNow - 5000);  // rolled back by hand
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 3u);
  const Checkpoint* c100 = find_ckpt(all, "ds/global_step100");
  ASSERT_NE(c100, nullptr);
  EXPECT_EQ(c100->state, CkptState::kCommitted);
  EXPECT_EQ(c100->files, 129u);  // taken from the stub, not derived
  const Checkpoint* c300 = find_ckpt(all, "ds/global_step300");
  ASSERT_NE(c300, nullptr);
  EXPECT_EQ(c300->state, CkptState::kInProgress);
  EXPECT_EQ(c300->reason, "newer than the tag latest names (global_step200); last write 1m ago");
}

}  // namespace
}  // namespace ckptmon
