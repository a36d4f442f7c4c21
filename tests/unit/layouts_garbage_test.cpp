// Manifests are outside input: truncated, huge, deeply nested or binary text
// makes the checkpoint partial with the file named in the reason, never a crash.

#include <gtest/gtest.h>

#include <functional>

#include "collectors/layouts/layout.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

using testing::TreeBuilder;

constexpr double kNow = 1'700'000'000;

struct Garbage {
  const char* label;
  std::string text;
};

std::vector<Garbage> garbage() {
  std::string binary(4096, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i)
    binary[i] = static_cast<char>((i * 131 + 7) % 256);
  std::string huge = "{\"a\": \"" + std::string(10 * 1024 * 1024, 'x') + "\"}";
  std::string nested_json(100'000, '[');
  std::string nested_yaml;
  for (int i = 0; i < 2000; ++i)
    nested_yaml += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
  std::string dashes;
  for (int i = 0; i < 5000; ++i) dashes += "- ";
  return {
      {"truncated", "{\"metadata\": {\"total_size\": 12}, \"weight_map\": {\"a\": \"model-000"},
      {"10MB", huge},
      {"nested", nested_json},
      {"nested_yaml", nested_yaml},
      {"dashes", dashes + "x"},
      {"binary", binary},
      {"wrong_types",
       R"({"weight_map": [1, 2], "metadata": "x", "files": 7, "manifest": [], "sharded_backend": 3,
                          "init_timestamp_nsecs": "soon", "commit_timestamp_nsecs": 1.5})"},
      {"overflow", R"({"weight_map": {"a": "b"}, "commit_timestamp_nsecs": -1e400})"},
      {"not_object", "[1, 2, 3]"},
      {"empty", ""},
  };
}

struct Case {
  const char* manifest;                     // path inside the checkpoint
  std::function<void(TreeBuilder&)> build;  // the rest of the checkpoint
  const char* ckpt;                         // its path
};

std::vector<Case> cases() {
  return {
      {"out/checkpoint-5/model.safetensors.index.json",
       [](TreeBuilder& b) {
         b.sparse("out/checkpoint-5/model-00001-of-00001.safetensors", 100, kNow - 5000);
         b.file("out/checkpoint-5/trainer_state.json", 10, kNow - 4990);
       },
       "out/checkpoint-5"},
      {"save/iter_0000010/metadata.json",
       [](TreeBuilder& b) {
         b.sparse("save/iter_0000010/__0_0.distcp", 100, kNow - 5000);
         b.file("save/iter_0000010/.metadata", 10, kNow - 4995);
         b.text("save/latest_checkpointed_iteration.txt", "10", kNow - 4990);
       },
       "save/iter_0000010"},
      {"save/iter_0000010/integrity.json",
       [](TreeBuilder& b) {
         b.sparse("save/iter_0000010/__0_0.distcp", 100, kNow - 5000);
         b.file("save/iter_0000010/.metadata", 10, kNow - 4995);
         b.text("save/iter_0000010/metadata.json", R"({"sharded_backend": "torch_dist"})",
                kNow - 4994);
         b.text("save/latest_checkpointed_iteration.txt", "10", kNow - 4990);
       },
       "save/iter_0000010"},
      {"ckpts/10/_CHECKPOINT_METADATA",
       [](TreeBuilder& b) {
         b.file("ckpts/10/state/_METADATA", 100, kNow - 5000);
         b.sparse("ckpts/10/state/ocdbt.process_0/d/abc", 100, kNow - 5000);
         b.file("ckpts/10/commit_success.txt", 10, kNow - 4990);
       },
       "ckpts/10"},
      {"snap/step-10/.snapshot_metadata",
       [](TreeBuilder& b) { b.sparse("snap/step-10/0/model/w", 100, kNow - 5000); },
       "snap/step-10"},
  };
}

TEST(LayoutGarbage, EveryManifestKindEveryGarbageIsPartialNamingTheFile) {
  LayoutContext ctx;
  ctx.now = kNow;
  for (const auto& k : cases()) {
    for (const auto& g : garbage()) {
      TreeBuilder b("job");
      k.build(b);
      b.text(k.manifest, g.text, kNow - 4992);
      const auto all = recognise_tree(b.build(), ctx);
      const Checkpoint* c = testing::find_ckpt(all, k.ckpt);
      ASSERT_NE(c, nullptr) << k.manifest << " / " << g.label;
      EXPECT_EQ(c->state, CkptState::kPartial)
          << k.manifest << " / " << g.label << ": " << c->reason;
      const std::string name =
          std::string(k.manifest).substr(std::string(k.manifest).rfind('/') + 1);
      EXPECT_NE(c->reason.find(name), std::string::npos)
          << k.manifest << " / " << g.label << ": " << c->reason;
    }
  }
}

TEST(LayoutGarbage, GarbageTrackersNeverCommitAndNameTheFile) {
  LayoutContext ctx;
  ctx.now = kNow;
  for (const auto& g : garbage()) {
    TreeBuilder b("job");
    b.sparse("ds/global_step10/mp_rank_00_model_states.pt", 100, kNow - 5000);
    b.text("ds/latest", g.text, kNow - 4990);
    b.sparse("mg/iter_0000010/mp_rank_00/model_optim_rng.pt", 100, kNow - 5000);
    b.text("mg/latest_checkpointed_iteration.txt", g.text, kNow - 4990);
    const auto all = recognise_tree(b.build(), ctx);
    ASSERT_EQ(all.size(), 2u) << g.label;
    for (const auto& c : all) {
      EXPECT_EQ(c.state, CkptState::kPartial) << g.label << ": " << c.path;
      const std::string name =
          c.framework == "deepspeed" ? "latest" : "latest_checkpointed_iteration.txt";
      EXPECT_NE(c.reason.find(name), std::string::npos) << g.label << ": " << c.reason;
    }
  }
}

}  // namespace
}  // namespace ckptmon
