// The walk over a job's tree: which recogniser claims what, paths relative to
// the root, reused stubs, the configured generic layout, hostile trees.

#include <gtest/gtest.h>

#include "collectors/layouts/layout.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

using testing::find_ckpt;
using testing::TreeBuilder;

constexpr double kNow = 1'700'000'000;

TEST(LayoutRegistry, MixedJobTreeEachCheckpointOnceWithRootRelativePaths) {
  TreeBuilder b("job-a");
  // Hugging Face FSDP checkpoint: its DCP subdirectories are part of it.
  for (int r = 0; r < 4; ++r) {
    b.sparse("hf/checkpoint-10/pytorch_model_fsdp_0/__" + std::to_string(r) + "_0.distcp", 100,
             kNow - 900);
    b.sparse("hf/checkpoint-10/optimizer_0/__" + std::to_string(r) + "_0.distcp", 200, kNow - 900);
  }
  b.file("hf/checkpoint-10/pytorch_model_fsdp_0/.metadata", 10, kNow - 899);
  b.file("hf/checkpoint-10/optimizer_0/.metadata", 10, kNow - 899);
  b.file("hf/checkpoint-10/trainer_state.json", 10, kNow - 898);
  // A plain DCP checkpoint two levels down, and Lightning files elsewhere.
  b.sparse("runs/r1/dcp/step-5/__0_0.distcp", 100, kNow - 800);
  b.file("runs/r1/dcp/step-5/.metadata", 10, kNow - 799);
  b.sparse("runs/r1/pl/checkpoints/epoch=0-step=5.ckpt", 1000, kNow - 700);
  b.file("logs/train.log", 5000, kNow - 1);  // nothing to recognise
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 3u);
  const Checkpoint* hf = find_ckpt(all, "hf/checkpoint-10");
  ASSERT_NE(hf, nullptr);
  EXPECT_EQ(hf->framework, "hf_trainer");
  EXPECT_EQ(hf->files, 11u);
  EXPECT_EQ(hf->state, CkptState::kCommitted);
  EXPECT_NE(find_ckpt(all, "runs/r1/dcp/step-5"), nullptr);
  EXPECT_NE(find_ckpt(all, "runs/r1/pl/checkpoints/epoch=0-step=5.ckpt"), nullptr);
  for (const auto& c : all) {
    EXPECT_TRUE(c.tier.empty());
    EXPECT_TRUE(c.job.empty());
  }
}

TEST(LayoutRegistry, RootItselfIsACheckpoint) {
  TreeBuilder b("step-42");
  b.sparse("__0_0.distcp", 100, kNow - 100);
  b.file(".metadata", 10, kNow - 99);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].path, ".");
  EXPECT_EQ(all[0].step, 42);
}

TEST(LayoutRegistry, ReusedStubIsEmittedAsIsWithItsPathAdjusted) {
  Checkpoint stub;
  stub.tier = "rapid";
  stub.job = "job-a";
  stub.path = "job-a/dcp/step-5";  // tier-relative as the catalog holds it
  stub.framework = "pytorch_dcp";
  stub.step = 5;
  stub.state = CkptState::kCommitted;
  stub.files = 257;
  stub.bytes = 123'456'789;
  stub.first_write = kNow - 5000;
  stub.last_write = kNow - 4900;
  TreeBuilder b("job-a");
  b.reused("dcp/step-5", stub, kNow - 4900);
  b.sparse("dcp/step-6/__0_0.distcp", 100, kNow - 100);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* c = find_ckpt(all, "dcp/step-5");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->files, 257u);
  EXPECT_EQ(c->bytes, 123'456'789u);
  EXPECT_EQ(c->state, CkptState::kCommitted);
  EXPECT_DOUBLE_EQ(c->completion_skew(), 100);
}

TEST(LayoutRegistry, GenericLayoutFromConfiguration) {
  GenericLayout g;
  g.shard_glob = "rank*.bin";
  g.marker = "COMMITTED";
  g.step_regex = R"(^save_(\d+)$)";
  LayoutContext ctx{.now = kNow};
  ctx.generic = &g;
  TreeBuilder b("job");
  for (int r = 0; r < 16; ++r) {
    b.sparse("out/save_100/rank" + std::to_string(r) + ".bin", 1'000, kNow - 9000 + r);
    b.sparse("out/save_200/rank" + std::to_string(r) + ".bin", 1'000, kNow - 100 + r);
    b.sparse("out/notes/rank" + std::to_string(r) + ".bin", 1'000,
             kNow - 100 + r);  // name does not match
  }
  b.file("out/save_100/COMMITTED", 0, kNow - 8980);
  b.file("out/save_100/optimizer.json", 40, kNow - 9000);
  const auto all = recognise_tree(b.build(), ctx);
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* ok = find_ckpt(all, "out/save_100");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->framework, "generic");
  EXPECT_EQ(ok->step, 100);
  EXPECT_EQ(ok->state, CkptState::kCommitted);
  EXPECT_EQ(ok->files, 18u);
  EXPECT_DOUBLE_EQ(ok->completion_skew(),
                   15);  // optimizer.json does not match the glob: not a shard
  EXPECT_DOUBLE_EQ(ok->marker_time, kNow - 8980);
  const Checkpoint* p = find_ckpt(all, "out/save_200");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->state, CkptState::kInProgress);
  EXPECT_EQ(p->reason, "no COMMITTED; last write 1m ago (16 of 18 files; save_100 has 18)");

  g.step_regex = "([";  // does not compile: the generic layout matches nothing
  EXPECT_TRUE(recognise_tree(b.build(), ctx).empty());
}

TEST(LayoutRegistry, DeepAndWideTreesDoNotBreakTheWalk) {
  TreeBuilder b("job");
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "d" + std::to_string(i) + "/";
  b.sparse(deep + "step-1/__0_0.distcp", 1, kNow);  // far below the depth limit: not reached
  for (int i = 0; i < 2000; ++i) b.dir("wide/" + std::to_string(i), kNow);
  // A positive control in the last of the wide directories: the walk reaches
  // it, and it is the only checkpoint found.
  b.sparse("wide/1999/step-7/__0_0.distcp", 100, kNow - 100);
  b.file("wide/1999/step-7/.metadata", 10, kNow - 99);
  const DirNode tree = b.build();
  const auto all = recognise_tree(tree, LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].path, "wide/1999/step-7");
  EXPECT_EQ(all[0].framework, "pytorch_dcp");
  EXPECT_EQ(all[0].step, 7);
}

TEST(LayoutRegistry, EmptyTreeFindsNothing) {
  const DirNode empty;
  EXPECT_TRUE(recognise_tree(empty, LayoutContext{.now = kNow}).empty());
}

}  // namespace
}  // namespace ckptmon
