// Orbax step directories (16 hosts, OCDBT) and PyTorch Lightning / NeMo files
// and sharded directories.

#include <gtest/gtest.h>

#include "collectors/layouts/layout.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

using testing::component;
using testing::find_ckpt;
using testing::TreeBuilder;

constexpr double kNow = 1'700'000'000;

std::string step_metadata(std::int64_t init_ns, std::optional<std::int64_t> commit_ns) {
  std::string j =
      R"({"item_handlers": {"params": "orbax.checkpoint._src.handlers.standard_checkpoint_handler.StandardCheckpointHandler", "opt_state": "orbax.checkpoint._src.handlers.standard_checkpoint_handler.StandardCheckpointHandler"}, "metrics": {}, "performance_metrics": {}, "init_timestamp_nsecs": )" +
      std::to_string(init_ns);
  if (commit_ns) j += ", \"commit_timestamp_nsecs\": " + std::to_string(*commit_ns);
  return j + ", \"custom_metadata\": {}}";
}

struct Items {
  std::uint64_t params = 0, opt = 0, meta = 0;
  std::uint64_t files = 0;
};

// Two items written by 16 processes, each an OCDBT database.
Items add_items(TreeBuilder& b, const std::string& dir, double t) {
  Items it;
  for (const char* item : {"params", "opt_state"}) {
    const std::string base = dir + "/" + item;
    b.file(base + "/_METADATA", 40'000, t);
    b.file(base + "/_sharding", 9'000, t);
    b.file(base + "/manifest.ocdbt", 300, t + 20);
    it.meta += 40'000 + 9'000 + 300;
    it.files += 3;
    for (int p = 0; p < 16; ++p) {
      const std::string proc = base + "/ocdbt.process_" + std::to_string(p);
      const std::uint64_t data = std::string(item) == "params" ? 1'000'000'000 : 2'000'000'000;
      b.sparse(proc + "/d/" + std::to_string(1000 + p) + "abcdef", data, t + p);
      b.file(proc + "/manifest.ocdbt", 200, t + p);
      (std::string(item) == "params" ? it.params : it.opt) += data;
      it.meta += 200;
      it.files += 2;
    }
  }
  return it;
}

TEST(LayoutOrbax, CommittedStepsCarrySaveTimes) {
  TreeBuilder b("job");
  const double t = kNow - 6000;
  const Items it = add_items(b, "ckpts/2000", t);
  const std::string meta = step_metadata(1'699'994'000'123'456'789, 1'699'994'021'500'000'000);
  b.text("ckpts/2000/_CHECKPOINT_METADATA", meta, t + 21);
  b.text("ckpts/2000/commit_success.txt", "Checkpoint commit was successful to /ckpts/2000",
         t + 21.5);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  const Checkpoint& c = all[0];
  EXPECT_EQ(c.path, "ckpts/2000");
  EXPECT_EQ(c.framework, "orbax");
  EXPECT_EQ(c.step, 2000);
  EXPECT_EQ(c.state, CkptState::kCommitted) << c.reason;
  EXPECT_EQ(c.files, it.files + 2);
  EXPECT_EQ(component(c, Component::kModel), it.params);
  EXPECT_EQ(component(c, Component::kOptimizer), it.opt);
  EXPECT_EQ(component(c, Component::kMetadata), it.meta + meta.size() + 47);
  EXPECT_DOUBLE_EQ(c.save_start, 1'699'994'000.123456789);
  EXPECT_DOUBLE_EQ(c.save_end, 1'699'994'021.5);
  EXPECT_DOUBLE_EQ(c.marker_time, t + 21.5);
  EXPECT_DOUBLE_EQ(c.completion_skew(), 15.0);
}

TEST(LayoutOrbax, RenamedStepWithoutCommitFileIsCommittedByItsTimestamp) {
  TreeBuilder b("job");
  add_items(b, "ckpts/1000", kNow - 9000);
  b.text("ckpts/1000/_CHECKPOINT_METADATA", step_metadata(1, 2), kNow - 8970);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kCommitted) << all[0].reason;
  EXPECT_DOUBLE_EQ(all[0].marker_time, kNow - 8970);
}

TEST(LayoutOrbax, TemporaryDirectoriesAreInProgressThenPartial) {
  TreeBuilder b("job");
  add_items(b, "ckpts/3000.orbax-checkpoint-tmp-1699999900", kNow - 100);
  b.text("ckpts/3000.orbax-checkpoint-tmp-1699999900/_CHECKPOINT_METADATA",
         step_metadata(1, std::nullopt), kNow - 100);
  add_items(b, "ckpts/2500.orbax-checkpoint-tmp", kNow - 9000);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* young = find_ckpt(all, "ckpts/3000.orbax-checkpoint-tmp-1699999900");
  ASSERT_NE(young, nullptr);
  EXPECT_EQ(young->step, 3000);
  EXPECT_EQ(young->state, CkptState::kInProgress);
  EXPECT_EQ(
      young->reason,
      "temporary 3000.orbax-checkpoint-tmp-1699999900 not renamed to 3000; last write 1m ago");
  const Checkpoint* old = find_ckpt(all, "ckpts/2500.orbax-checkpoint-tmp");
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->state, CkptState::kPartial);
  EXPECT_EQ(old->reason, "temporary 2500.orbax-checkpoint-tmp not renamed to 2500 after 30m");
}

TEST(LayoutOrbax, CommitFileSaveInFlightAndGarbageMetadata) {
  TreeBuilder b("job");
  add_items(b, "gcs/4000", kNow - 50);
  b.text("gcs/4000/_CHECKPOINT_METADATA", step_metadata(1, std::nullopt), kNow - 60);
  add_items(b, "gcs/3000", kNow - 9000);
  b.text("gcs/3000/_CHECKPOINT_METADATA", "{\"init_timestamp_nsecs\": 16999", kNow - 9000);
  b.text("gcs/3000/commit_success.txt", "ok", kNow - 8900);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* flight = find_ckpt(all, "gcs/4000");
  ASSERT_NE(flight, nullptr);
  EXPECT_EQ(flight->state, CkptState::kInProgress);
  EXPECT_EQ(flight->reason,
            "no commit_timestamp_nsecs in _CHECKPOINT_METADATA and no commit_success.txt; last "
            "write 30s ago");
  const Checkpoint* garbage = find_ckpt(all, "gcs/3000");
  ASSERT_NE(garbage, nullptr);
  EXPECT_EQ(garbage->state, CkptState::kPartial);
  EXPECT_EQ(garbage->reason, "_CHECKPOINT_METADATA: not valid JSON");
}

TEST(LayoutLightning, SingleFilesSymlinkAndNemoMarker) {
  TreeBuilder b("job");
  const std::string d = "lightning_logs/version_0/checkpoints/";
  b.sparse(d + "epoch=0-step=500.ckpt", 3'000'000'000, kNow - 9000);
  b.sparse(d + "epoch=1-step=1000.ckpt", 3'000'000'000, kNow - 5000);
  b.symlink(d + "last.ckpt", "epoch=1-step=1000.ckpt", kNow - 5000);  // alias, not a checkpoint
  b.symlink(d + "best.ckpt", "epoch=0-step=250.ckpt", kNow - 9100);   // target deleted by top-k
  b.sparse(d + "epoch=2-step=1500.ckpt", 1'000'000'000, kNow - 10);   // NeMo still writing
  b.file(d + "epoch=2-step=1500-unfinished", 0, kNow - 30);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 4u);
  const Checkpoint* c = find_ckpt(all, d + "epoch=1-step=1000.ckpt");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->framework, "lightning");
  EXPECT_EQ(c->step, 1000);
  EXPECT_EQ(c->state, CkptState::kCommitted);
  EXPECT_EQ(c->files, 1u);
  EXPECT_EQ(c->bytes, 3'000'000'000u);
  EXPECT_EQ(component(*c, Component::kOther), 3'000'000'000u);
  EXPECT_DOUBLE_EQ(c->completion_skew(), 0);
  const Checkpoint* dangling = find_ckpt(all, d + "best.ckpt");
  ASSERT_NE(dangling, nullptr);
  EXPECT_EQ(dangling->state, CkptState::kPartial);
  EXPECT_EQ(dangling->step, 250);
  EXPECT_EQ(dangling->reason,
            "best.ckpt -> epoch=0-step=250.ckpt, target missing (dangling symlink) after 30m");
  const Checkpoint* nemo = find_ckpt(all, d + "epoch=2-step=1500.ckpt");
  ASSERT_NE(nemo, nullptr);
  EXPECT_EQ(nemo->state, CkptState::kInProgress);
  EXPECT_EQ(nemo->files, 2u);
  EXPECT_EQ(nemo->reason, "NeMo marker epoch=2-step=1500-unfinished present; last write 10s ago");
  EXPECT_EQ(find_ckpt(all, d + "last.ckpt"), nullptr);
}

TEST(LayoutLightning, ShardedDirectoryNeedsMetaPt) {
  TreeBuilder b("job");
  const std::string d = "checkpoints/";
  for (int r = 0; r < 8; ++r) {
    b.sparse(d + "epoch=0-step=100.ckpt/__" + std::to_string(r) + "_0.distcp", 700'000'000,
             kNow - 9000 + r);
    b.sparse(d + "epoch=1-step=200.ckpt/__" + std::to_string(r) + "_0.distcp", 700'000'000,
             kNow - 3000 + r);
  }
  b.file(d + "epoch=0-step=100.ckpt/.metadata", 80'000, kNow - 8990);
  b.file(d + "epoch=0-step=100.ckpt/meta.pt", 3'000, kNow - 8989);
  b.file(d + "epoch=1-step=200.ckpt/.metadata", 80'000, kNow - 2990);  // meta.pt never came
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* ok = find_ckpt(all, d + "epoch=0-step=100.ckpt");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->state, CkptState::kCommitted);
  EXPECT_EQ(ok->files, 10u);
  EXPECT_DOUBLE_EQ(ok->marker_time, kNow - 8989);
  EXPECT_DOUBLE_EQ(ok->completion_skew(), 7);
  const Checkpoint* bad = find_ckpt(all, d + "epoch=1-step=200.ckpt");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->state, CkptState::kPartial);
  EXPECT_EQ(bad->reason, "no meta.pt after 30m (9 of 10 files; epoch=0-step=100.ckpt has 10)");
}

}  // namespace
}  // namespace ckptmon
