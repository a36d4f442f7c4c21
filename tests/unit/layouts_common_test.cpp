// Names, components, manifest guards and state decisions shared by the recognisers.

#include <gtest/gtest.h>

#include "collectors/layouts/layout.hpp"
#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

TEST(LayoutNames, StepFromEveryFrameworkNaming) {
  EXPECT_EQ(parse_step("step-100"), 100);
  EXPECT_EQ(parse_step("step_100"), 100);
  EXPECT_EQ(parse_step("step100"), 100);
  EXPECT_EQ(parse_step("iter_0001000"), 1000);
  EXPECT_EQ(parse_step("global_step300"), 300);
  EXPECT_EQ(parse_step("global_step_300"), 300);
  EXPECT_EQ(parse_step("checkpoint-500"), 500);
  EXPECT_EQ(parse_step("epoch=3-step=1200.ckpt"), 1200);
  EXPECT_EQ(parse_step("epoch=3-step=1200-v1.ckpt"), 1200);
  EXPECT_EQ(parse_step("epoch=3-step=1200-last.ckpt"), 1200);
  EXPECT_EQ(parse_step("megatron_gpt--val_loss=1.23-step=4000-consumed_samples=8000.0"), 4000);
  EXPECT_EQ(parse_step("4000"), 4000);
  EXPECT_EQ(parse_step("ckpt_0023"), 23);
  EXPECT_EQ(parse_step("300.orbax-checkpoint-tmp-1700000000123"), 300);
  EXPECT_EQ(parse_step("state_300.orbax-checkpoint-tmp"), 300);
  EXPECT_EQ(parse_step("step-7-unfinished"), 7);
}

TEST(LayoutNames, NoStepWhereTheNameTellsNone) {
  EXPECT_EQ(parse_step("last.ckpt"), -1);
  EXPECT_EQ(parse_step("release"), -1);
  EXPECT_EQ(parse_step("epoch=3.ckpt"), -1);
  EXPECT_EQ(parse_step("best"), -1);
  EXPECT_EQ(parse_step("x.5"), -1);
  EXPECT_EQ(parse_step("step-99999999999999999999999"), -1);  // overflows int64
  EXPECT_EQ(parse_step(""), -1);
}

TEST(LayoutNames, ComponentsFromNames) {
  EXPECT_EQ(classify("mp_rank_00_model_states.pt"), Component::kModel);
  EXPECT_EQ(classify("bf16_zero_pp_rank_12_mp_rank_00_optim_states.pt"), Component::kOptimizer);
  EXPECT_EQ(classify("zero_pp_rank_3_mp_rank_01_model_states.pt"), Component::kModel);
  EXPECT_EQ(classify("layer_01-model_00-model_states.pt"), Component::kModel);
  EXPECT_EQ(classify("mp_rank_00/model_optim_rng.pt"), Component::kModel);
  EXPECT_EQ(classify("mp_rank_00/distrib_optim.pt"), Component::kOptimizer);
  EXPECT_EQ(classify("model-00001-of-00004.safetensors"), Component::kModel);
  EXPECT_EQ(classify("optimizer.pt"), Component::kOptimizer);
  EXPECT_EQ(classify("scheduler.pt"), Component::kScheduler);
  EXPECT_EQ(classify("rng_state_7.pth"), Component::kRng);
  EXPECT_EQ(classify("trainer_state.json"), Component::kMetadata);
  EXPECT_EQ(classify("model.safetensors.index.json"), Component::kMetadata);
  EXPECT_EQ(classify(".metadata"), Component::kMetadata);
  EXPECT_EQ(classify("__3.metadata"), Component::kMetadata);
  EXPECT_EQ(classify("pytorch_model_fsdp_0/__3_0.distcp"), Component::kModel);
  EXPECT_EQ(classify("optimizer_0/__3_0.distcp"), Component::kOptimizer);
  EXPECT_EQ(classify("__3_0.distcp"), Component::kOther);
  EXPECT_EQ(classify("opt_state/ocdbt.process_0/d/0a1b2c"), Component::kOptimizer);
  EXPECT_EQ(classify("params/ocdbt.process_0/d/0a1b2c"), Component::kModel);
  EXPECT_EQ(classify("0/optim/state/0/exp_avg"), Component::kOptimizer);
  EXPECT_EQ(classify("tokenizer.model"), Component::kOther);  // auxiliary, not weights
  // The AMP grad scaler and data-loader state, by the frameworks' names.
  EXPECT_EQ(classify("scaler.pt"), Component::kScaler);  // HF Trainer, Accelerate
  EXPECT_EQ(classify("checkpoint-500/scaler.pt"), Component::kScaler);
  EXPECT_EQ(classify("grad_scaler.pt"), Component::kScaler);
  EXPECT_EQ(classify("sampler.bin"), Component::kDataloader);  // Accelerate
  EXPECT_EQ(classify("sampler_1.bin"), Component::kDataloader);
  EXPECT_EQ(classify("dl_state_dict.bin"), Component::kDataloader);        // Accelerate
  EXPECT_EQ(classify("dataloader/__0_0.distcp"), Component::kDataloader);  // torchtitan
  EXPECT_EQ(classify("data_loader_state.pt"), Component::kDataloader);
  // Not fooled by the neighbours' names.
  EXPECT_EQ(classify("scheduler.pt"), Component::kScheduler);
  EXPECT_EQ(classify("random_states_0.pkl"), Component::kRng);
  EXPECT_EQ(to_string(Component::kScaler), "scaler");
  EXPECT_EQ(to_string(Component::kDataloader), "dataloader");
}

TEST(LayoutNames, ContentWantedForManifestsOnly) {
  for (const char* n : {"latest", "latest_checkpointed_iteration.txt", "metadata.json",
                        "integrity.json", "_CHECKPOINT_METADATA", ".snapshot_metadata", ".metadata",
                        "model.safetensors.index.json", "pytorch_model.bin.index.json"}) {
    EXPECT_TRUE(wants_content(n)) << n;
  }
  for (const char* n : {"model.safetensors", "__0_0.distcp", "__0.metadata", "trainer_state.json",
                        "optimizer.pt", "last.ckpt", "dlrover_latest.txt"}) {
    EXPECT_FALSE(wants_content(n)) << n;
  }
}

FileEntry manifest(std::string name, std::string text) {
  FileEntry f;
  f.name = std::move(name);
  f.size = text.size();
  f.content = std::move(text);
  return f;
}

TEST(LayoutManifests, RejectsGarbageWithTheFileNamed) {
  std::string error;
  bool unread = false;
  EXPECT_FALSE(parse_manifest_json(manifest("metadata.json", "{\"sharded_backend\": \"torch_d"),
                                   error, unread));
  EXPECT_EQ(error, "metadata.json: not valid JSON");
  EXPECT_FALSE(unread);

  EXPECT_FALSE(
      parse_manifest_json(manifest("metadata.json", std::string(200, '[')), error, unread));
  EXPECT_EQ(error, "metadata.json: nested deeper than 64 levels");

  EXPECT_FALSE(
      parse_manifest_json(manifest("x.json", std::string("{\"a\":\0}", 7)), error, unread));
  EXPECT_EQ(error, "x.json: binary data, not text");

  EXPECT_FALSE(parse_manifest_json(manifest("x.json", std::string(kMaxManifestBytes + 1, ' ')),
                                   error, unread));
  EXPECT_EQ(error, "x.json: 4194305 bytes, over the 4 MiB manifest limit");

  FileEntry not_read;
  not_read.name = "x.json";
  EXPECT_FALSE(parse_manifest_json(not_read, error, unread));
  EXPECT_TRUE(unread);

  // Brackets inside strings do not count as nesting.
  auto ok = parse_manifest_json(manifest("x.json", "{\"k\": \"" + std::string(500, '[') + "\"}"),
                                error, unread);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->is_object());
}

TEST(LayoutManifests, TrackerIsOneTrimmedName) {
  std::string error;
  bool unread = false;
  EXPECT_EQ(read_tracker(manifest("latest", "global_step300\n"), error, unread), "global_step300");
  EXPECT_FALSE(read_tracker(manifest("latest", "\n\n"), error, unread));
  EXPECT_EQ(error, "latest: empty");
  EXPECT_FALSE(read_tracker(manifest("latest", "global_step300\nglobal_step400"), error, unread));
  EXPECT_EQ(error, "latest: not a single checkpoint name");
  EXPECT_FALSE(read_tracker(manifest("latest", "../../etc"), error, unread));
}

TEST(LayoutStates, DecideFollowsMarkerAndAge) {
  LayoutContext ctx;
  ctx.now = 10'000;
  ctx.partial_after = 1800;
  Checkpoint c;
  c.last_write = 9'000;
  Verdict v;
  v.marker_name = ".metadata";

  decide(c, v, 9'000, ctx);  // no marker, 1000 s old
  EXPECT_EQ(c.state, CkptState::kInProgress);
  EXPECT_EQ(c.reason, "no .metadata; last write 16m ago");

  decide(c, v, 8'000, ctx);  // no marker, 2000 s old
  EXPECT_EQ(c.state, CkptState::kPartial);
  EXPECT_EQ(c.reason, "no .metadata after 30m");

  v.has_marker = true;
  c.marker_time = 9'001;  // within the slack of the newest shard
  c.last_write = 9'002.5;
  decide(c, v, 9'002.5, ctx);
  EXPECT_EQ(c.state, CkptState::kCommitted);
  EXPECT_EQ(c.reason, "");

  c.last_write = 9'100;  // re-save: shards newer than the marker
  decide(c, v, 9'100, ctx);
  EXPECT_EQ(c.state, CkptState::kInProgress);
  EXPECT_EQ(c.reason, "shards newer than .metadata (re-save); last write 15m ago");

  v.broken = "integrity.json lists __1_0.distcp, missing";
  decide(c, v, 9'100, ctx);
  EXPECT_EQ(c.state, CkptState::kPartial);
  EXPECT_EQ(c.reason, "integrity.json lists __1_0.distcp, missing");
}

TEST(LayoutStates, DemoteKeepsPartialAndAgesCommitted) {
  LayoutContext ctx;
  ctx.now = 10'000;
  Checkpoint c;
  c.state = CkptState::kCommitted;
  c.last_write = 9'950;
  demote(c, "tracker says otherwise", ctx);
  EXPECT_EQ(c.state, CkptState::kInProgress);
  EXPECT_EQ(c.reason, "tracker says otherwise; last write 50s ago");
  c.state = CkptState::kPartial;
  c.reason = "broken";
  demote(c, "again", ctx);
  EXPECT_EQ(c.reason, "broken");
}

}  // namespace
}  // namespace ckptmon::layouts
