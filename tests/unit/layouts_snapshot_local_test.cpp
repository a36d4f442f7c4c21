// torchsnapshot (8 ranks, replicated, sharded and batched entries),
// nvidia-resiliency-ext local checkpoints (8 rank directories with
// replication) and DLRover stage directories.

#include <gtest/gtest.h>

#include "collectors/layouts/layout.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

using testing::component;
using testing::find_ckpt;
using testing::TreeBuilder;

constexpr double kNow = 1'700'000'000;

// ---- torchsnapshot -------------------------------------------------------------

struct Snap {
  std::string json;
  std::string yaml;
  std::uint64_t data_files = 0;
  std::uint64_t optim_bytes = 0;
  std::uint64_t model_bytes = 0;
};

// Per rank: optimizer state under <rank>/; a replicated weight; a sharded
// embedding (one shard per rank); small tensors batched into one file.
Snap add_snapshot(TreeBuilder& b, const std::string& dir, double t, int ranks,
                  std::uint64_t batched_size) {
  Snap s;
  std::string entries;
  std::string yentries;
  std::string shards;
  std::string yshards;
  for (int r = 0; r < ranks; ++r) {
    const std::string loc = std::to_string(r) + "/optim/state/0/exp_avg";
    b.sparse(dir + "/" + loc, 500'000'000, t + r);
    s.optim_bytes += 500'000'000;
    ++s.data_files;
    entries +=
        "\"" + loc + "\": {\"type\": \"Tensor\", \"location\": \"" + loc +
        "\", \"serializer\": \"torch_save\", \"dtype\": \"torch.float32\", \"shape\": [125000000], "
        "\"replicated\": false, \"byte_range\": null}, ";
    yentries +=
        "  " + loc + ":\n    type: Tensor\n    location: " + loc + "\n    replicated: false\n";
    const std::string shard = "sharded/model/embedding.weight_" + std::to_string(r * 4096) + "_0";
    b.sparse(dir + "/" + shard, 100'000'000, t + r);
    s.model_bytes += 100'000'000;
    ++s.data_files;
    shards += std::string(r ? ", " : "") + "{\"offsets\": [" + std::to_string(r * 4096) +
              ", 0], \"sizes\": [4096, 6104], \"tensor\": {\"type\": \"Tensor\", \"location\": \"" +
              shard +
              "\", \"serializer\": \"torch_save\", \"dtype\": \"torch.float32\", \"shape\": [4096, "
              "6104], "
              "\"replicated\": false, \"byte_range\": null}}";
    yshards += "    - offsets: [" + std::to_string(r * 4096) +
               ", 0]\n      tensor:\n        location: " + shard + "\n";
  }
  b.sparse(dir + "/replicated/model/fc.weight", 200'000'000, t + 1);
  s.model_bytes += 200'000'000;
  b.sparse(dir + "/batched/3f1c9a2e", batched_size, t + 2);
  s.data_files += 2;
  entries +=
      R"("0/model/fc.weight": {"type": "Tensor", "location": "replicated/model/fc.weight", "serializer": "torch_save", "dtype": "torch.bfloat16", "shape": [10000, 10000], "replicated": true, "byte_range": null}, )";
  entries +=
      R"("0/model/norm.bias": {"type": "Tensor", "location": "batched/3f1c9a2e", "serializer": "buffer_protocol", "dtype": "torch.float32", "shape": [4096], "replicated": true, "byte_range": [0, 16384]}, )";
  entries +=
      R"("0/model/norm.weight": {"type": "Tensor", "location": "batched/3f1c9a2e", "serializer": "buffer_protocol", "dtype": "torch.float32", "shape": [4096], "replicated": true, "byte_range": [16384, 32768]}, )";
  entries +=
      "\"0/model/embedding.weight\": {\"type\": \"ShardedTensor\", \"shards\": [" + shards + "]}, ";
  entries += R"("0/progress": {"type": "int", "serialized_value": "1200", "readable": "1200"})";
  s.json = "{\n  \"version\": \"0.1.0\",\n  \"world_size\": " + std::to_string(ranks) +
           ",\n  \"manifest\": {" + entries + "}\n}";
  s.yaml = "version: 0.1.0\nworld_size: " + std::to_string(ranks) + "\nmanifest:\n" + yentries +
           "  0/model/norm.weight:\n    type: Tensor\n    location: batched/3f1c9a2e\n    "
           "byte_range: [16384, 32768]\n" +
           "  0/model/embedding.weight:\n    type: ShardedTensor\n    shards:\n" + yshards;
  return s;
}

TEST(LayoutTorchsnapshot, ManifestHeldAgainstTheFiles) {
  TreeBuilder b("job");
  const Snap ok = add_snapshot(b, "snaps/step-1200", kNow - 9000, 8, 32'768);
  b.text("snaps/step-1200/.snapshot_metadata", ok.json, kNow - 8990);
  const Snap shortb =
      add_snapshot(b, "snaps/step-1300", kNow - 6000, 8, 20'000);  // batched file cut off
  b.text("snaps/step-1300/.snapshot_metadata", shortb.json, kNow - 5990);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* c = find_ckpt(all, "snaps/step-1200");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->framework, "torchsnapshot");
  EXPECT_EQ(c->step, 1200);
  EXPECT_EQ(c->state, CkptState::kCommitted) << c->reason;
  EXPECT_EQ(c->files, ok.data_files + 1);
  EXPECT_EQ(c->expected_files, ok.data_files + 1);
  EXPECT_EQ(component(*c, Component::kOptimizer), ok.optim_bytes);
  EXPECT_EQ(component(*c, Component::kModel), ok.model_bytes);
  EXPECT_EQ(component(*c, Component::kOther),
            32'768u);  // batched/<uuid> does not say what it holds
  const Checkpoint* s = find_ckpt(all, "snaps/step-1300");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->state, CkptState::kPartial);
  EXPECT_EQ(s->reason, "batched/3f1c9a2e holds 20000 bytes, .snapshot_metadata needs 32768");
}

TEST(LayoutTorchsnapshot, MissingLocationYamlAndNoMetadata) {
  TreeBuilder b("job");
  const Snap y = add_snapshot(b, "snaps/step-100", kNow - 9000, 4, 32'768);
  b.text("snaps/step-100/.snapshot_metadata", y.yaml, kNow - 8990);
  const Snap m = add_snapshot(b, "snaps/step-200", kNow - 9000, 4, 32'768);
  b.text("snaps/step-200/.snapshot_metadata", m.json, kNow - 8990);
  add_snapshot(b, "snaps/step-300", kNow - 20, 4,
               32'768);  // rank 0 has not written the metadata yet
  DirNode tree = b.build();
  // step-200 lost rank 2's optimizer file.
  DirNode& s200 = tree.dirs[0].dirs[1];
  ASSERT_EQ(s200.name, "step-200");
  for (auto& d : s200.dirs) {
    if (d.name == "2") d.dirs[0].dirs[0].dirs[0].files.clear();
  }
  const auto all = recognise_tree(tree, LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(find_ckpt(all, "snaps/step-100")->state, CkptState::kCommitted)
      << find_ckpt(all, "snaps/step-100")->reason;
  EXPECT_EQ(find_ckpt(all, "snaps/step-200")->state, CkptState::kPartial);
  EXPECT_EQ(find_ckpt(all, "snaps/step-200")->reason,
            ".snapshot_metadata lists 2/optim/state/0/exp_avg, missing");
  EXPECT_EQ(find_ckpt(all, "snaps/step-300")->state, CkptState::kInProgress);
  EXPECT_EQ(find_ckpt(all, "snaps/step-300")->reason,
            "no .snapshot_metadata; last write 17s ago (10 of 11 files; step-100 has 11)");
}

// ---- nvidia-resiliency-ext local ----------------------------------------------

std::string local_name(int iteration, int rank, bool dirty = false) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "iter_%07d_%d_local%s.pt", iteration, rank, dirty ? ".dirty" : "");
  return buf;
}

TEST(LayoutNvrxLocal, IterationValidWhenEveryRankFileIsThere) {
  TreeBuilder b("node-local");
  for (int r = 0; r < 8; ++r) {
    const std::string dir = "session-7/" + std::to_string(r) + "/";
    // Own file plus the replica of the next rank.
    b.sparse(dir + local_name(1000, r), 3'000'000'000, kNow - 4000 + r);
    b.sparse(dir + local_name(1000, (r + 1) % 8), 3'000'000'000, kNow - 3990 + r);
    if (r == 3) {
      b.sparse(dir + local_name(2000, r, true), 1'000'000'000, kNow - 5);
    } else if (r != 5) {
      b.sparse(dir + local_name(2000, r), 3'000'000'000, kNow - 20 + r);
    }
  }
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* ok = find_ckpt(all, "session-7/iter_0001000");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->framework, "nvrx_local");
  EXPECT_EQ(ok->step, 1000);
  EXPECT_EQ(ok->state, CkptState::kCommitted);
  EXPECT_EQ(ok->files, 16u);
  EXPECT_EQ(ok->bytes, 16 * 3'000'000'000ull);
  EXPECT_DOUBLE_EQ(ok->completion_skew(), 17);
  const Checkpoint* p = find_ckpt(all, "session-7/iter_0002000");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->state, CkptState::kInProgress);
  EXPECT_EQ(p->files, 7u);
  EXPECT_EQ(p->expected_files, 8u);
  EXPECT_EQ(p->reason,
            "1 *_local.dirty.pt files (rank 3); no iter_0002000_{rank}_local.pt for rank 3, 5 (6 "
            "of 8 ranks); "
            "last write 5s ago");
}

// ---- DLRover -----------------------------------------------------------------

TEST(LayoutDlrover, DoneCountShortOfShardsDemotesTheCheckpoint) {
  TreeBuilder b("job");
  for (int r = 0; r < 8; ++r) {
    b.sparse("ckpt/step-100/__" + std::to_string(r) + "_0.distcp", 1'000'000, kNow - 9000 + r);
    b.sparse("ckpt/step-200/__" + std::to_string(r) + "_0.distcp", 1'000'000, kNow - 60 + r);
  }
  b.file("ckpt/step-100/.metadata", 1000, kNow - 8990);
  b.file("ckpt/step-200/.metadata", 1000, kNow - 50);
  for (int r : {0, 1, 2, 4, 6, 7})
    b.text("ckpt/._dlrover_ckpt_stage/200.done/" + std::to_string(r), "done", kNow - 40);
  b.text("ckpt/dlrover_latest.txt", "100", kNow - 8980);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(find_ckpt(all, "ckpt/step-100")->state, CkptState::kCommitted);
  const Checkpoint* c = find_ckpt(all, "ckpt/step-200");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->state, CkptState::kInProgress);
  EXPECT_EQ(c->reason,
            "DLRover commit of step 200 pending: 6 of 8 shards done; last write 50s ago");
}

TEST(LayoutDlrover, StagedDataAndOrphanDoneDirectories) {
  TreeBuilder b("job");
  b.sparse("ckpt/._dlrover_ckpt_stage/300/iter_0000300/mp_rank_00/model_optim_rng.pt", 5'000'000,
           kNow - 4000);
  for (int r = 0; r < 3; ++r)
    b.text("ckpt/._dlrover_ckpt_stage/300.done/" + std::to_string(r), "done", kNow - 3990);
  for (int r = 0; r < 2; ++r)
    b.text("ckpt/._dlrover_ckpt_stage/400.done/" + std::to_string(r), "done", kNow - 30);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* staged = find_ckpt(all, "ckpt/._dlrover_ckpt_stage/300");
  ASSERT_NE(staged, nullptr);
  EXPECT_EQ(staged->framework, "dlrover");
  EXPECT_EQ(staged->state, CkptState::kPartial);
  EXPECT_EQ(staged->files, 1u);
  EXPECT_EQ(
      staged->reason,
      "staged in ._dlrover_ckpt_stage, not yet moved into place after 30m; 3 of 3 shards done");
  const Checkpoint* orphan = find_ckpt(all, "ckpt/._dlrover_ckpt_stage/400.done");
  ASSERT_NE(orphan, nullptr);
  EXPECT_EQ(orphan->step, 400);
  EXPECT_EQ(orphan->state, CkptState::kInProgress);
  EXPECT_EQ(orphan->files, 2u);
  EXPECT_EQ(orphan->reason,
            "DLRover commit of step 400 pending: 2 of 2 shards done; last write 30s ago");
}

}  // namespace
}  // namespace ckptmon
