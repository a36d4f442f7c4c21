// PyTorch DCP: 256 ranks writing __{rank}_0.distcp, the coordinator's .metadata last.

#include <gtest/gtest.h>

#include "collectors/layouts/layout.hpp"
#include "tree_builder.hpp"

namespace ckptmon {
namespace {

using testing::component;
using testing::find_ckpt;
using testing::TreeBuilder;

constexpr double kNow = 1'700'000'000;
// Saves in this file older than 30 minutes without a marker are partial.
const LayoutContext kContext{.now = kNow, .partial_after = 1800};
constexpr int kRanks = 256;

std::uint64_t shard_size(int rank) {
  return 48ull * 1024 * 1024 + static_cast<std::uint64_t>(rank) * 4096;
}

struct DcpDir {
  std::uint64_t shard_bytes = 0;
  double first = 0;
  double last = 0;
};

// Ranks [0, ranks) write one shard each, rank r finishing at start + r/2 s.
DcpDir add_dcp(TreeBuilder& b, const std::string& dir, double start, int ranks) {
  DcpDir d;
  for (int r = 0; r < ranks; ++r) {
    const double t = start + r * 0.5;
    b.sparse(dir + "/__" + std::to_string(r) + "_0.distcp", shard_size(r), t);
    d.shard_bytes += shard_size(r);
    if (r == 0) d.first = t;
    d.last = t;
  }
  return d;
}

TEST(LayoutDcp, CompleteInProgressAndPartialSiblings) {
  TreeBuilder b("job");
  const DcpDir s100 = add_dcp(b, "ckpts/step-100", kNow - 7200, kRanks);
  b.file("ckpts/step-100/.metadata", 912'345, s100.last + 1.5);
  const DcpDir s200 = add_dcp(b, "ckpts/step-200", kNow - 3600, kRanks);
  b.file("ckpts/step-200/.metadata", 912'345, s200.last + 0.9);
  const DcpDir s300 = add_dcp(b, "ckpts/step-300", kNow - 200, 200);  // 56 ranks still writing
  const DirNode tree = b.build();

  const auto all = recognise_tree(tree, kContext);
  ASSERT_EQ(all.size(), 3u);

  const Checkpoint* c = find_ckpt(all, "ckpts/step-100");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->framework, "pytorch_dcp");
  EXPECT_EQ(c->step, 100);
  EXPECT_EQ(c->state, CkptState::kCommitted);
  EXPECT_EQ(c->reason, "");
  EXPECT_EQ(c->files, 257u);
  EXPECT_EQ(c->bytes, s100.shard_bytes + 912'345);
  EXPECT_EQ(c->allocated_bytes,
            913'408u);  // sparse shards allocate nothing; .metadata 223 blocks of 4 KiB
  EXPECT_DOUBLE_EQ(c->first_write, kNow - 7200);
  EXPECT_DOUBLE_EQ(c->last_write, kNow - 7200 + 127.5);
  EXPECT_DOUBLE_EQ(c->completion_skew(), 127.5);
  EXPECT_DOUBLE_EQ(c->marker_time, s100.last + 1.5);
  EXPECT_EQ(component(*c, Component::kOther), s100.shard_bytes);
  EXPECT_EQ(component(*c, Component::kMetadata), 912'345u);
  EXPECT_EQ(component(*c, Component::kModel), 0u);
  EXPECT_DOUBLE_EQ(c->dir_mtime, s100.last + 1.5);
  EXPECT_EQ(c->shard_files, nullptr);

  const Checkpoint* p = find_ckpt(all, "ckpts/step-300");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->state, CkptState::kInProgress);
  EXPECT_EQ(p->files, 200u);
  EXPECT_EQ(p->bytes, s300.shard_bytes);
  EXPECT_EQ(p->expected_files, 257u);  // the committed sibling tells
  EXPECT_EQ(p->reason, "no .metadata; last write 1m ago (200 of 257 files; step-200 has 257)");
  EXPECT_DOUBLE_EQ(p->completion_skew(), 99.5);
}

TEST(LayoutDcp, NoMetadataAfterPartialAfterIsPartial) {
  TreeBuilder b("job");
  add_dcp(b, "step-400", kNow - 4000, kRanks);
  const auto all = recognise_tree(b.build(), kContext);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason, "no .metadata after 30m");
  EXPECT_EQ(all[0].marker_time, 0);
}

TEST(LayoutDcp, LeftoverMetadataTmpIsNotACommit) {
  TreeBuilder b("job");
  const DcpDir d = add_dcp(b, "step-500", kNow - 5000, 16);
  b.file("step-500/.metadata.tmp", 4096, d.last + 1);
  const auto all = recognise_tree(b.build(), kContext);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason, ".metadata.tmp present, not yet renamed to .metadata after 30m");
  EXPECT_EQ(all[0].files, 17u);
}

TEST(LayoutDcp, ShardsNewerThanMetadataAreAReSave) {
  TreeBuilder b("job");
  b.file("step-600/.metadata", 1000, kNow - 9000);  // from the first save
  add_dcp(b, "step-600", kNow - 100, 8);            // the second save rewrites the shards
  auto all = recognise_tree(b.build(), kContext);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, CkptState::kInProgress);
  EXPECT_EQ(all[0].reason, "shards newer than .metadata (re-save); last write 1m ago");

  LayoutContext later = kContext;
  later.now = kNow + 3600;
  all = recognise_tree(b.build(), later);
  EXPECT_EQ(all[0].state, CkptState::kPartial);
  EXPECT_EQ(all[0].reason, "shards newer than .metadata (re-save) after 30m");
}

TEST(LayoutDcp, RankLocalMetadataNeedsEveryRank) {
  TreeBuilder b("job");
  for (int r = 0; r < 8; ++r) {
    b.sparse("s/step-10/__" + std::to_string(r) + "_0.distcp", 1000, kNow - 3000 + r);
    b.file("s/step-10/__" + std::to_string(r) + ".metadata", 100, kNow - 3000 + r + 0.5);
    b.sparse("s/step-20/__" + std::to_string(r) + "_0.distcp", 1000, kNow - 3000 + r);
    if (r != 3 && r != 5)
      b.file("s/step-20/__" + std::to_string(r) + ".metadata", 100, kNow - 3000 + r + 0.5);
  }
  const auto all = recognise_tree(b.build(), kContext);
  ASSERT_EQ(all.size(), 2u);
  const Checkpoint* ok = find_ckpt(all, "s/step-10");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->state, CkptState::kCommitted);
  EXPECT_DOUBLE_EQ(ok->marker_time, kNow - 3000 + 7.5);
  const Checkpoint* bad = find_ckpt(all, "s/step-20");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->state, CkptState::kPartial);
  EXPECT_EQ(bad->reason,
            "no __{rank}.metadata for 2 of 8 ranks (rank 3, 5) after 30m (14 of 16 files; step-10 "
            "has 16)");
}

TEST(LayoutDcp, KeepsPerFileListWhenAsked) {
  TreeBuilder b("job");
  add_dcp(b, "step-1", kNow - 100, 3);
  b.file("step-1/.metadata", 10, kNow - 90);
  LayoutContext ctx = kContext;
  ctx.keep_shard_files = true;
  const auto all = recognise_tree(b.build(), ctx);
  ASSERT_EQ(all.size(), 1u);
  ASSERT_NE(all[0].shard_files, nullptr);
  const auto& files = *all[0].shard_files;
  ASSERT_EQ(files.size(), 4u);
  EXPECT_EQ(files[0].rel_path, ".metadata");
  EXPECT_EQ(files[1].rel_path, "__0_0.distcp");
  EXPECT_EQ(files[3].rel_path, "__2_0.distcp");
  EXPECT_EQ(files[3].size, shard_size(2));
}

}  // namespace
}  // namespace ckptmon
