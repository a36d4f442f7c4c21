// Hugging Face Trainer: checkpoint-N with sharded safetensors and their index,
// FSDP DCP directories, DeepSpeed inside, trainer_state.json as the marker.

#include <gtest/gtest.h>

#include "collectors/layouts/layout.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

using testing::component;
using testing::find_ckpt;
using testing::TreeBuilder;

constexpr double kNow = 1'700'000'000;
constexpr std::uint64_t kShard = 4'900'000'000;
constexpr std::uint64_t kOptimizer = 39'000'000'000;

std::string shard_name(int k) { return "model-0000" + std::to_string(k) + "-of-00004.safetensors"; }

std::string index_json(std::uint64_t total_size) {
  std::string j =
      "{\"metadata\": {\"total_size\": " + std::to_string(total_size) + "}, \"weight_map\": {";
  for (int layer = 0; layer < 32; ++layer) {
    j += "\"model.layers." + std::to_string(layer) + ".mlp.down_proj.weight\": \"" +
         shard_name(layer / 8 + 1) + "\", ";
  }
  j += "\"lm_head.weight\": \"" + shard_name(4) + "\"}}";
  return j;
}

struct Expect {
  std::uint64_t model = 0, optimizer = 0, rng = 0, scheduler = 0, metadata = 0, other = 0;
  std::uint64_t files = 0;
  double first = 0, last = 0;
};

// A full Trainer save of a 4-shard model on 8 processes; `marker` writes
// trainer_state.json last; `skip_shard` leaves one weight shard out.
Expect add_checkpoint(TreeBuilder& b, const std::string& dir, double t, bool marker,
                      int skip_shard = 0, std::uint64_t total_size = 4 * kShard - 4000) {
  Expect e;
  auto add = [&](const std::string& name, std::uint64_t size, double mtime, std::uint64_t& bucket,
                 bool shard) {
    b.sparse(dir + "/" + name, size, mtime);
    bucket += size;
    ++e.files;
    if (shard) {
      if (e.first == 0) e.first = mtime;
      e.last = std::max(e.last, mtime);
    }
  };
  add("config.json", 700, t, e.metadata, false);
  add("generation_config.json", 120, t, e.metadata, false);
  for (int k = 1; k <= 4; ++k) {
    if (k != skip_shard) add(shard_name(k), kShard, t + 10.0 * k, e.model, true);
  }
  const std::string idx = index_json(total_size);
  b.text(dir + "/model.safetensors.index.json", idx, t + 41);
  e.metadata += idx.size();
  ++e.files;
  add("tokenizer.json", 9'000'000, t + 41, e.other, false);
  add("special_tokens_map.json", 400, t + 41, e.other, false);
  add("optimizer.pt", kOptimizer, t + 120, e.optimizer, true);
  add("scheduler.pt", 1064, t + 121, e.scheduler, true);
  for (int p = 0; p < 8; ++p)
    add("rng_state_" + std::to_string(p) + ".pth", 14'000, t + 121, e.rng, true);
  add("training_args.bin", 5'200, t + 121, e.metadata, false);
  if (marker) add("trainer_state.json", 2'500, t + 122, e.metadata, false);
  return e;
}

TEST(LayoutHfTrainer, CompleteCheckpointsWithComponents) {
  TreeBuilder b("job");
  add_checkpoint(b, "out/checkpoint-500", kNow - 9000, true);
  const Expect e = add_checkpoint(b, "out/checkpoint-1000", kNow - 5000, true);
  b.sparse("out/model.safetensors", 19'600'000'000,
           kNow - 100);  // save_model() output, not a checkpoint
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* c = find_ckpt(all, "out/checkpoint-1000");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->framework, "hf_trainer");
  EXPECT_EQ(c->step, 1000);
  EXPECT_EQ(c->state, CkptState::kCommitted) << c->reason;
  EXPECT_EQ(c->files, e.files);
  EXPECT_EQ(c->files, 21u);
  EXPECT_EQ(c->bytes, e.model + e.optimizer + e.rng + e.scheduler + e.metadata + e.other);
  EXPECT_EQ(component(*c, Component::kModel), 4 * kShard);
  EXPECT_EQ(component(*c, Component::kOptimizer), kOptimizer);
  EXPECT_EQ(component(*c, Component::kRng), 8 * 14'000u);
  EXPECT_EQ(component(*c, Component::kScheduler), 1064u);
  EXPECT_EQ(component(*c, Component::kMetadata), e.metadata);
  EXPECT_EQ(component(*c, Component::kOther), e.other);
  EXPECT_DOUBLE_EQ(c->first_write, kNow - 5000 + 10);
  EXPECT_DOUBLE_EQ(c->last_write, kNow - 5000 + 121);
  EXPECT_DOUBLE_EQ(c->marker_time, kNow - 5000 + 122);
}

TEST(LayoutHfTrainer, ManifestNamingAMissingShardIsPartialDespiteTheMarker) {
  TreeBuilder b("job");
  const Expect e = add_checkpoint(b, "out/checkpoint-500", kNow - 9000, true, 2);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason,
            "model.safetensors.index.json lists model-00002-of-00004.safetensors, missing");
  EXPECT_EQ(all[0].files, e.files);
  EXPECT_EQ(all[0].expected_files, e.files + 1);
}

TEST(LayoutHfTrainer, ShardsShorterThanTotalSizeArePartial) {
  TreeBuilder b("job");
  add_checkpoint(b, "out/checkpoint-500", kNow - 9000, true, 0, 4 * kShard + 1);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason, "model.safetensors.index.json says total_size " +
                               std::to_string(4 * kShard + 1) + " but its shards hold " +
                               std::to_string(4 * kShard) + " bytes");
}

TEST(LayoutHfTrainer, NoTrainerStateIsInProgressThenPartial) {
  TreeBuilder b("job");
  add_checkpoint(b, "out/checkpoint-1500", kNow - 200, false);
  const DirNode tree = b.build();
  auto all = recognise_tree(tree, LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kInProgress);
  EXPECT_EQ(all[0].reason, "no trainer_state.json; last write 1m ago");
  all = recognise_tree(tree, LayoutContext{.now = kNow + 7200});
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason, "no trainer_state.json after 30m");
}

TEST(LayoutHfTrainer, LeftoverTmpCheckpointIsPartial) {
  TreeBuilder b("job");
  add_checkpoint(b, "out/checkpoint-1000", kNow - 9000, true);
  add_checkpoint(b, "out/tmp-checkpoint-1500", kNow - 4000, false);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  const Checkpoint* c = find_ckpt(all, "out/tmp-checkpoint-1500");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->step, 1500);
  EXPECT_EQ(c->state, CkptState::kPartial);
  EXPECT_EQ(c->reason,
            "tmp-checkpoint-1500 not renamed to checkpoint-1500 after 30m (20 of 21 files; "
            "checkpoint-1000 has 21)");
}

// FSDP with SHARDED_STATE_DICT: DCP directories for the model and the optimizer.
void add_fsdp(TreeBuilder& b, const std::string& dir, double t, bool optim_meta, bool marker) {
  for (int r = 0; r < 8; ++r) {
    b.sparse(dir + "/pytorch_model_fsdp_0/__" + std::to_string(r) + "_0.distcp", 2'000'000'000,
             t + r);
    b.sparse(dir + "/optimizer_0/__" + std::to_string(r) + "_0.distcp", 8'000'000'000, t + 20 + r);
  }
  b.file(dir + "/pytorch_model_fsdp_0/.metadata", 300'000, t + 9);
  if (optim_meta) b.file(dir + "/optimizer_0/.metadata", 600'000, t + 29);
  b.sparse(dir + "/scheduler.pt", 1064, t + 30);
  b.sparse(dir + "/rng_state_0.pth", 14'000, t + 30);
  if (marker) b.sparse(dir + "/trainer_state.json", 2'000, t + 31);
}

TEST(LayoutHfTrainer, FsdpDcpDirectoriesAreHeldToTheirMetadata) {
  TreeBuilder b("job");
  add_fsdp(b, "out/checkpoint-100", kNow - 9000, true, true);
  add_fsdp(b, "out/checkpoint-200", kNow - 40, false, false);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* ok = find_ckpt(all, "out/checkpoint-100");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->state, CkptState::kCommitted);
  EXPECT_EQ(ok->files, 21u);
  EXPECT_EQ(component(*ok, Component::kModel), 8 * 2'000'000'000ull);
  EXPECT_EQ(component(*ok, Component::kOptimizer), 8 * 8'000'000'000ull);
  EXPECT_EQ(component(*ok, Component::kMetadata), 300'000u + 600'000u + 2'000u);
  const Checkpoint* p = find_ckpt(all, "out/checkpoint-200");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->state, CkptState::kInProgress);
  EXPECT_EQ(
      p->reason,
      "optimizer_0: no .metadata; last write 10s ago (19 of 21 files; checkpoint-100 has 21)");
}

// DeepSpeed ZeRO inside the Trainer's checkpoint: global_stepN/ and latest.
void add_ds_inside(TreeBuilder& b, const std::string& dir, int step, double t, int ranks,
                   bool marker) {
  const std::string tag = dir + "/global_step" + std::to_string(step);
  b.sparse(tag + "/mp_rank_00_model_states.pt", 500'000'000, t);
  for (int r = 0; r < ranks; ++r) {
    b.sparse(tag + "/bf16_zero_pp_rank_" + std::to_string(r) + "_mp_rank_00_optim_states.pt",
             900'000'000, t + r);
  }
  b.text(dir + "/latest", "global_step" + std::to_string(step), t + 1);
  b.sparse(dir + "/model.safetensors", 2'000'000'000, t + 20);
  if (marker) b.sparse(dir + "/trainer_state.json", 2'000, t + 21);
}

TEST(LayoutHfTrainer, DeepSpeedInsideIsCountedAgainstFinishedCheckpoints) {
  TreeBuilder b("job");
  add_ds_inside(b, "out/checkpoint-100", 100, kNow - 9000, 16, true);
  add_ds_inside(b, "out/checkpoint-200", 200, kNow - 100, 14, false);
  const auto all = recognise_tree(b.build(), LayoutContext{.now = kNow});
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* ok = find_ckpt(all, "out/checkpoint-100");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->state, CkptState::kCommitted) << ok->reason;
  EXPECT_EQ(component(*ok, Component::kOptimizer), 16 * 900'000'000ull);
  EXPECT_EQ(component(*ok, Component::kModel), 500'000'000ull + 2'000'000'000ull);
  const Checkpoint* p = find_ckpt(all, "out/checkpoint-200");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->state, CkptState::kInProgress);
  EXPECT_EQ(p->reason,
            "latest names global_step200 with 14 of 16 optimizer shards; last write 1m ago (17 of "
            "20 files; "
            "checkpoint-100 has 20)");
}

}  // namespace
}  // namespace ckptmon
