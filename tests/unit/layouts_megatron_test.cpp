// Megatron-LM: legacy TP=4 x PP=2 iteration directories and torch_dist with
// 64 ranks, held against latest_checkpointed_iteration.txt.

#include <gtest/gtest.h>

#include "collectors/layouts/layout.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

using testing::component;
using testing::find_ckpt;
using testing::TreeBuilder;

constexpr double kNow = 1'700'000'000;
constexpr std::uint64_t kModelShard = 1'750'000'000;
constexpr std::uint64_t kOptimShard = 7'000'000'000;

std::string mp_dir(int tp, int pp) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "mp_rank_%02d_%03d", tp, pp);
  return buf;
}

// TP=4 x PP=2 = 8 mp_rank directories (`skip` leaves some out).
double add_legacy(TreeBuilder& b, const std::string& iter, double start, int skip_from = 8) {
  double last = start;
  int i = 0;
  for (int pp = 0; pp < 2; ++pp) {
    for (int tp = 0; tp < 4; ++tp, ++i) {
      if (i >= skip_from) continue;
      last = start + i * 3.0;
      b.sparse(iter + "/" + mp_dir(tp, pp) + "/model_optim_rng.pt", kModelShard, last);
      b.sparse(iter + "/" + mp_dir(tp, pp) + "/distrib_optim.pt", kOptimShard, last);
    }
  }
  return last;
}

TEST(LayoutMegatron, LegacyTrackerCommitsUpToItsIteration) {
  TreeBuilder b("job");
  add_legacy(b, "save/iter_0001000", kNow - 9000);
  const double last = add_legacy(b, "save/iter_0002000", kNow - 5000);
  b.text("save/latest_checkpointed_iteration.txt", "2000", last + 2);
  b.file("save/progress.txt", 4000, last + 2);
  add_legacy(b, "save/iter_0003000", kNow - 120);  // still saving
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 3u);

  const Checkpoint* c = find_ckpt(all, "save/iter_0002000");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->framework, "megatron");
  EXPECT_EQ(c->step, 2000);
  EXPECT_EQ(c->state, CkptState::kCommitted);
  EXPECT_EQ(c->files, 16u);
  EXPECT_EQ(c->bytes, 8 * (kModelShard + kOptimShard));
  EXPECT_EQ(component(*c, Component::kModel), 8 * kModelShard);
  EXPECT_EQ(component(*c, Component::kOptimizer), 8 * kOptimShard);
  EXPECT_DOUBLE_EQ(c->completion_skew(), 21.0);
  EXPECT_DOUBLE_EQ(c->marker_time, last + 2);

  EXPECT_EQ(find_ckpt(all, "save/iter_0001000")->state, CkptState::kCommitted);
  const Checkpoint* p = find_ckpt(all, "save/iter_0003000");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->state, CkptState::kInProgress);
  EXPECT_EQ(p->reason, "iteration 3000 is newer than the tracker's 2000; last write 1m ago");
}

TEST(LayoutMegatron, LegacyAbandonedIterationCountsItsMpDirs) {
  TreeBuilder b("job");
  const double last = add_legacy(b, "save/iter_0002000", kNow - 9000);
  b.text("save/latest_checkpointed_iteration.txt", "2000\n", last + 2);
  add_legacy(b, "save/iter_0003000", kNow - 4000, 6);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  const Checkpoint* p = find_ckpt(all, "save/iter_0003000");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->state, CkptState::kPartial);
  EXPECT_EQ(p->reason,
            "iteration 3000 is newer than the tracker's 2000; 6 of 8 mp_rank directories after 30m "
            "(12 of 16 files; iter_0002000 has 16)");
  EXPECT_EQ(p->expected_files, 16u);
}

TEST(LayoutMegatron, TrackerNamingAnIncompleteIterationIsPartial) {
  TreeBuilder b("job");
  add_legacy(b, "save/iter_0002000", kNow - 9000);
  b.sparse("save/iter_0002000/mp_rank_04_001/distrib_optim.pt", kOptimShard,
           kNow - 8990);  // no model file
  b.text("save/latest_checkpointed_iteration.txt", "2000", kNow - 8000);
  DirNode tree = b.build();
  // Drop mp_rank_03_001/model_optim_rng.pt as a crash would have.
  auto& iter = tree.dirs[0].dirs[0];
  for (auto& m : iter.dirs) {
    if (m.name == "mp_rank_03_001") m.files.erase(m.files.begin() + 1);
  }
  const auto all = recognise_tree(tree, LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason, "tracker names 2000 but mp_rank_03_001 has no model_optim_rng.pt");
}

// torch_dist: 64 ranks, .metadata, metadata.json, integrity.json.
struct Dist {
  std::uint64_t shard_bytes = 0;
  double last = 0;
};

Dist add_dist(TreeBuilder& b, const std::string& iter, double start, int ranks, bool finalise,
              int integrity_extra = 0) {
  Dist d;
  std::string files = "{\"algorithm\": \"sha256\", \"files\": {";
  for (int r = 0; r < ranks; ++r) {
    const std::uint64_t size = 300'000'000 + static_cast<std::uint64_t>(r);
    d.last = start + r * 0.1;
    b.sparse(iter + "/__" + std::to_string(r) + "_0.distcp", size, d.last);
    d.shard_bytes += size;
    files += "\"__" + std::to_string(r) + "_0.distcp\": \"" + std::string(64, 'a') + "\", ";
  }
  for (int r = ranks; r < ranks + integrity_extra; ++r) {
    files += "\"__" + std::to_string(r) + "_0.distcp\": \"" + std::string(64, 'b') + "\", ";
  }
  if (!finalise) return d;
  b.file(iter + "/.metadata", 2'000'000, d.last + 1);
  b.text(iter + "/metadata.json",
         R"({"sharded_backend": "torch_dist", "sharded_backend_version": 1})", d.last + 2);
  files += "\".metadata\": \"" + std::string(64, 'c') + "\", \"metadata.json\": \"" +
           std::string(64, 'd') + "\"}}";
  b.text(iter + "/integrity.json", files, d.last + 30);
  return d;
}

TEST(LayoutMegatron, TorchDistCompleteWithIntegrityManifest) {
  TreeBuilder b("job");
  const Dist d = add_dist(b, "save/iter_0005000", kNow - 4000, 64, true);
  b.text("save/latest_checkpointed_iteration.txt", "5000", d.last + 31);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  const Checkpoint& c = all[0];
  EXPECT_EQ(c.framework, "megatron_torch_dist");
  EXPECT_EQ(c.step, 5000);
  EXPECT_EQ(c.state, CkptState::kCommitted) << c.reason;
  EXPECT_EQ(c.files, 67u);
  EXPECT_EQ(c.expected_files, 67u);  // 66 listed + integrity.json
  EXPECT_EQ(component(c, Component::kOther), d.shard_bytes);
  EXPECT_DOUBLE_EQ(c.marker_time, d.last + 2);  // metadata.json
  EXPECT_NEAR(c.completion_skew(), 6.3, 1e-3);
}

TEST(LayoutMegatron, TorchDistIntegrityListingAMissingFileIsPartial) {
  TreeBuilder b("job");
  const Dist d =
      add_dist(b, "save/iter_0005000", kNow - 100, 63, true, 1);  // lists __63_0.distcp too
  b.text("save/latest_checkpointed_iteration.txt", "5000", d.last + 31);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason, "integrity.json lists __63_0.distcp, missing");
  EXPECT_EQ(all[0].expected_files, 67u);
}

TEST(LayoutMegatron, TorchDistWithoutMetadataJsonIsInProgress) {
  TreeBuilder b("job");
  const Dist old = add_dist(b, "save/iter_0005000", kNow - 9000, 64, true);
  b.text("save/latest_checkpointed_iteration.txt", "5000", old.last + 31);
  add_dist(b, "save/iter_0006000", kNow - 30, 64, false);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  const Checkpoint* c = find_ckpt(all, "save/iter_0006000");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->framework, "megatron_torch_dist");
  EXPECT_EQ(c->state, CkptState::kInProgress);
  EXPECT_EQ(
      c->reason,
      "iteration 6000 is newer than the tracker's 5000; no .metadata, no metadata.json; last write "
      "23s ago (64 of 67 files; iter_0005000 has 67)");
}

TEST(LayoutMegatron, GarbageMetadataJsonIsPartial) {
  TreeBuilder b("job");
  const Dist d = add_dist(b, "save/iter_0005000", kNow - 9000, 4, true);
  DirNode tree = b.build();
  for (auto& f : tree.dirs[0].dirs[0].files) {
    if (f.name == "metadata.json") f.content = std::string("\x89PNG\r\n\x1a\n", 8);
  }
  const auto all = recognise_tree(tree, LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason, "metadata.json: not valid JSON");
  (void)d;
}

TEST(LayoutMegatron, CopiedTorchDistIterationWithoutTrackerStillCommits) {
  TreeBuilder b("iter_0005000");
  add_dist(b, "", kNow - 9000, 8, true);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].path, ".");
  EXPECT_EQ(all[0].framework, "megatron_torch_dist");
  EXPECT_EQ(all[0].step, 5000);
  EXPECT_EQ(all[0].state, CkptState::kCommitted) << all[0].reason;
}

}  // namespace
}  // namespace ckptmon
