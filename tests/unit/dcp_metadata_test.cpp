// PyTorch DCP's `.metadata`, assembled here opcode by opcode the way
// Python's pickler writes torch's dataclasses at protocol 4 (NEWOBJ of the
// class, BUILD of its field dict; torch.Size by REDUCE of a tuple; dtypes by
// name; TensorProperties' tuple state), with sizes and offsets written by
// hand, so the expected figures are this file's, not the reader's.

#include "collectors/formats/dcp_metadata.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "collectors/layouts/layout.hpp"
#include "tests/unit/pickle_builder.hpp"
#include "tests/unit/tree_builder.hpp"

namespace ckptmon::dcp {
namespace {

using testing_pickle::P;

const std::string kMeta = "torch.distributed.checkpoint.metadata";

// A dataclass instance: NEWOBJ of the class with no arguments, then BUILD
// with the dict that `fields` fills (MARK ... SETITEMS).
void dataclass(P& p, const std::string& module, const std::string& cls,
               const std::function<void(P&)>& fields) {
  p.global(module, cls).op(')').op(0x81).op('}').op(0x28);
  fields(p);
  p.op('u').op('b');
}

void ints_tuple(P& p, const std::vector<int>& v) {
  p.op(0x28);
  for (int i : v) p.op('J').le(static_cast<std::uint32_t>(i), 4);
  p.op('t');
}

void torch_size(P& p, const std::vector<int>& v) {
  p.global("torch", "Size");
  ints_tuple(p, v);
  p.op(0x85).op('R');
}

struct Chunk {
  std::vector<int> offsets, sizes;
};

void tensor(P& p, const std::string& dtype, const std::vector<int>& size,
            const std::vector<Chunk>& chunks) {
  dataclass(p, kMeta, "TensorStorageMetadata", [&](P& q) {
    // TensorProperties.__getstate__: (dtype, layout, requires_grad,
    // memory_format, pin_memory); memory_format an enum by REDUCE.
    q.str("properties").global(kMeta, "TensorProperties").op(')').op(0x81);
    q.op(0x28).global("torch", dtype).global("torch", "strided").op(0x89);
    q.global(kMeta, "_MEM_FORMAT_ENCODING").op('K').u8(1).op(0x85).op('R');
    q.op(0x89).op('t').op('b');
    q.str("size");
    torch_size(q, size);
    q.str("chunks").op(']').op(0x28);
    for (const Chunk& c : chunks) {
      dataclass(q, kMeta, "ChunkStorageMetadata", [&](P& r) {
        r.str("offsets");
        torch_size(r, c.offsets);
        r.str("sizes");
        torch_size(r, c.sizes);
      });
    }
    q.op('e');
  });
}

void bytes_item(P& p) {
  dataclass(p, kMeta, "BytesStorageMetadata", [](P&) {});
}

struct Stored {
  std::string fqn;
  std::vector<int> offset;  // empty: None (a bytes item)
  std::string file;
  int at, length;
};

void storage(P& p, const std::vector<Stored>& rows) {
  p.op('}').op(0x28);
  for (const Stored& s : rows) {
    dataclass(p, kMeta, "MetadataIndex", [&](P& q) {
      q.str("fqn").str(s.fqn).str("offset");
      if (s.offset.empty()) {
        q.op('N');
      } else {
        torch_size(q, s.offset);
      }
      q.str("index").op('N');
    });
    dataclass(p, "torch.distributed.checkpoint.filesystem", "_StorageInfo", [&](P& q) {
      q.str("relative_path")
          .str(s.file)
          .str("offset")
          .op('J')
          .le(static_cast<std::uint32_t>(s.at), 4);
      q.str("length").op('J').le(static_cast<std::uint32_t>(s.length), 4);
      q.str("transform_descriptors").op('N');
    });
  }
  p.op('u');
}

// A two-rank checkpoint: model.w (bf16 4x4, 32 bytes, rank 0), model.b
// (fp16 [8] in two chunks of 8 bytes, one per rank), optim.state.w.exp_avg
// (fp32 4x4, 64 bytes), lr_scheduler (100 bytes pickled), rng_state (50),
// step (5), and one row naming a file outside the checkpoint.
std::string two_rank_metadata(const std::function<void(P&)>& extra_storage_meta = nullptr) {
  P p;
  dataclass(p, kMeta, "Metadata", [&](P& m) {
    m.str("state_dict_metadata").op('}').op(0x28);
    m.str("model.w");
    tensor(m, "bfloat16", {4, 4}, {{{0, 0}, {4, 4}}});
    m.str("model.b");
    tensor(m, "float16", {8}, {{{0}, {4}}, {{4}, {4}}});
    m.str("optim.state.w.exp_avg");
    tensor(m, "float32", {4, 4}, {{{0, 0}, {4, 4}}});
    m.str("lr_scheduler");
    bytes_item(m);
    m.str("rng_state");
    bytes_item(m);
    m.str("step");
    bytes_item(m);
    m.op('u');
    m.str("planner_data").op('N');
    m.str("storage_data");
    storage(m, {{"model.w", {0, 0}, "__0_0.distcp", 0, 32},
                {"model.b", {0}, "__0_0.distcp", 32, 8},
                {"model.b", {4}, "__1_0.distcp", 0, 8},
                {"optim.state.w.exp_avg", {0, 0}, "__1_0.distcp", 8, 64},
                {"lr_scheduler", {}, "__0_0.distcp", 40, 100},
                {"rng_state", {}, "__1_0.distcp", 72, 50},
                {"step", {}, "__0_0.distcp", 140, 5},
                {"model.x", {}, "../evil.distcp", 0, 1000}});
    m.str("storage_meta");
    dataclass(m, kMeta, "StorageMeta", [&](P& s) {
      s.str("checkpoint_id").global("pathlib", "PosixPath");
      s.op(0x28).str("/").str("ckpt").str("step-10").op('t').op('R');
      if (extra_storage_meta) extra_storage_meta(s);
    });
    m.str("version").str("1.0.0");
  });
  return p.stop().bytes();
}

std::uint64_t comp(const Metadata& m, Component c) {
  return m.component_bytes[static_cast<std::size_t>(c)];
}

TEST(DcpMetadata, ComponentBytesFromStorageData) {
  const ReadResult r = read_metadata(two_rank_metadata());
  ASSERT_TRUE(r.metadata) << r.error;
  const Metadata& m = *r.metadata;
  EXPECT_EQ(comp(m, Component::kModel), 32U + 8 + 8);
  EXPECT_EQ(comp(m, Component::kOptimizer), 64U);
  EXPECT_EQ(comp(m, Component::kScheduler), 100U);
  EXPECT_EQ(comp(m, Component::kRng), 50U);
  EXPECT_EQ(comp(m, Component::kOther), 5U);
  EXPECT_EQ(m.stored_bytes, 32U + 8 + 8 + 64 + 100 + 50 + 5);
  EXPECT_EQ(m.foreign_paths, 1U);  // ../evil.distcp: neither counted nor planned
  EXPECT_EQ(m.version, "1.0.0");
  EXPECT_EQ(m.checkpoint_id, "/ckpt/step-10");
}

TEST(DcpMetadata, ItemsAndThePlannedReads) {
  const ReadResult r = read_metadata(two_rank_metadata());
  ASSERT_TRUE(r.metadata) << r.error;
  const Metadata& m = *r.metadata;
  ASSERT_EQ(m.items.size(), 6U);
  const Item& b = m.items[0];  // sorted: lr_scheduler, model.b, model.w, optim..., rng_state, step
  EXPECT_EQ(b.fqn, "lr_scheduler");
  EXPECT_FALSE(b.tensor);
  const Item& mb = m.items[1];
  EXPECT_EQ(mb.fqn, "model.b");
  EXPECT_TRUE(mb.tensor);
  EXPECT_EQ(mb.dtype, "torch.float16");
  EXPECT_EQ(mb.size, (std::vector<std::int64_t>{8}));
  ASSERT_EQ(mb.chunks.size(), 2U);
  EXPECT_EQ(mb.chunks[1].offsets, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(mb.stored_bytes, 16U);
  EXPECT_EQ(m.items[2].dtype, "torch.bfloat16");
  // storage_data, sorted by file then offset: rank 1's file holds model.b's
  // second chunk at 0, the optimizer state at 8, rng at 72.
  std::vector<std::string> rank1;
  for (const StoredChunk& c : m.storage) {
    if (c.file == "__1_0.distcp") rank1.push_back(c.fqn + "@" + std::to_string(c.offset));
  }
  EXPECT_EQ(rank1,
            (std::vector<std::string>{"model.b@0", "optim.state.w.exp_avg@8", "rng_state@72"}));
  EXPECT_EQ(m.storage.size(), 7U);
}

TEST(DcpMetadata, RefusesAForeignGlobalAnywhere) {
  // A REDUCE of os.system hidden in storage_meta: the whole file is refused.
  const ReadResult r = read_metadata(two_rank_metadata(
      [](P& s) { s.str("save_id").global("os", "system").str("id").op(0x85).op('R'); }));
  EXPECT_FALSE(r.metadata);
  EXPECT_TRUE(r.refused);
  EXPECT_NE(r.error.find(".metadata: global os.system is not on the allow-list"), std::string::npos)
      << r.error;
}

TEST(DcpMetadata, OtherPicklesAreNotMetadata) {
  const ReadResult d = read_metadata(P().op('}').stop().bytes());
  EXPECT_FALSE(d.metadata);
  EXPECT_FALSE(d.refused);
  EXPECT_EQ(d.error, ".metadata: not a DCP Metadata but a dict");
  const ReadResult t = read_metadata(two_rank_metadata().substr(0, 300));
  EXPECT_FALSE(t.metadata);
  EXPECT_NE(t.error.find("truncated"), std::string::npos) << t.error;
  const ReadResult huge = read_metadata(std::string(kMaxMetadataBytes + 1, 'N'));
  EXPECT_NE(huge.error.find("over the"), std::string::npos) << huge.error;
}

TEST(DcpMetadata, Torch20PropertiesAsADict) {
  // torch 2.0's TensorProperties had no __getstate__: its state is the field dict.
  P p;
  dataclass(p, kMeta, "Metadata", [&](P& m) {
    m.str("state_dict_metadata").op('}').str("model.w");
    dataclass(m, kMeta, "TensorStorageMetadata", [&](P& q) {
      q.str("properties");
      dataclass(q, kMeta, "TensorProperties",
                [](P& r) { r.str("dtype").global("torch", "float32"); });
      q.str("size");
      torch_size(q, {2});
      q.str("chunks").op(']');
    });
    m.op('s');
  });
  const ReadResult r = read_metadata(p.stop().bytes());
  ASSERT_TRUE(r.metadata) << r.error;
  ASSERT_EQ(r.metadata->items.size(), 1U);
  EXPECT_EQ(r.metadata->items[0].dtype, "torch.float32");
  EXPECT_EQ(r.metadata->stored_bytes, 0U);  // no storage_data: nothing claimed
}

std::vector<std::uint64_t> planned_bytes(const Metadata& m, std::size_t ranks) {
  std::vector<std::uint64_t> out;
  for (const auto& rank : plan_reads(m, ranks)) {
    std::uint64_t b = 0;
    for (const ReadRange& r : rank) b += r.length;
    out.push_back(b);
  }
  return out;
}

TEST(DcpMetadata, ReshardPlanReadsEveryOverlappingChunkWhole) {
  const ReadResult r = read_metadata(two_rank_metadata());
  ASSERT_TRUE(r.metadata) << r.error;
  // Three new ranks, dim 0 split by torch.chunk:
  //   model.w, optim (4 rows, one stored chunk of rows 0-3): 2 rows per rank,
  //     ranks 0 and 1 read the whole chunk (32 and 64 bytes), rank 2 none;
  //   model.b (8 rows, chunks 0-3 and 4-7 of 8 bytes): 3 rows per rank,
  //     rank 0 (0-2) the first, rank 1 (3-5) both, rank 2 (6-7) the second;
  //   lr_scheduler, rng_state, step (bytes, 155 together): every rank.
  EXPECT_EQ(planned_bytes(*r.metadata, 3),
            (std::vector<std::uint64_t>{32 + 8 + 64 + 155, 32 + 8 + 8 + 64 + 155, 8 + 155}));
  // One rank reads everything once.
  EXPECT_EQ(planned_bytes(*r.metadata, 1), (std::vector<std::uint64_t>{267}));
  const auto plan = plan_reads(*r.metadata, 3);
  ASSERT_EQ(plan[2].size(), 4U);  // sorted by file, offset
  EXPECT_EQ(plan[2][0].file, "__0_0.distcp");
  EXPECT_EQ(plan[2][0].fqn, "lr_scheduler");
  EXPECT_EQ(plan[2][3].fqn, "rng_state");
  EXPECT_TRUE(plan_reads(*r.metadata, 0).empty());
}

// What `ckptmon burst` writes: three ranks of 1001-byte shards, so each
// rank's file holds 500 bytes of model.weight then 501 of the optimizer's
// exp_avg (torch.uint8: an element is a byte).
TEST(DcpMetadata, TheSyntheticMetadataReadsBackAsWritten) {
  const ReadResult r = read_metadata(synthetic_metadata(3, 1001));
  ASSERT_TRUE(r.metadata) << r.error;
  const Metadata& m = *r.metadata;
  ASSERT_EQ(m.items.size(), 2u);
  EXPECT_EQ(m.items[0].fqn, "model.weight");
  EXPECT_EQ(m.items[0].dtype, "torch.uint8");
  EXPECT_EQ(m.items[0].size, (std::vector<std::int64_t>{1500}));
  EXPECT_EQ(m.items[1].fqn, "optim.state.weight.exp_avg");
  EXPECT_EQ(m.items[1].size, (std::vector<std::int64_t>{1503}));
  EXPECT_EQ(m.component_bytes[static_cast<std::size_t>(Component::kModel)], 1500u);
  EXPECT_EQ(m.component_bytes[static_cast<std::size_t>(Component::kOptimizer)], 1503u);
  EXPECT_EQ(m.stored_bytes, 3003u);
  EXPECT_EQ(m.version, "1.0.0");
  ASSERT_EQ(m.storage.size(), 6u);  // sorted by (file, offset)
  EXPECT_EQ(m.storage[1].file, "__0_0.distcp");
  EXPECT_EQ(m.storage[1].offset, 500u);
  EXPECT_EQ(m.storage[1].length, 501u);
  EXPECT_EQ(m.storage[5].file, "__2_0.distcp");
  // Two new ranks: model.weight rows 0-749 and 750-1499 (chunks of 500 at
  // 0, 500, 1000): rank 0 reads chunks 0 and 1, rank 1 chunks 1 and 2;
  // exp_avg rows 0-751 and 752-1502 (chunks of 501 at 0, 501, 1002): the
  // same pattern. Each reads 2 x 500 + 2 x 501.
  EXPECT_EQ(planned_bytes(m, 2), (std::vector<std::uint64_t>{2002, 2002}));
}

TEST(DcpMetadata, SyntheticMetadataOfShardsPast4GiB) {
  const std::uint64_t shard = (std::uint64_t{5} << 30) + 1;  // LONG1 offsets and lengths
  const ReadResult r = read_metadata(synthetic_metadata(2, shard));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->stored_bytes, 2 * shard);
  EXPECT_EQ(r.metadata->storage[1].offset, shard / 2);
  EXPECT_EQ(r.metadata->items[1].size,
            (std::vector<std::int64_t>{static_cast<std::int64_t>(2 * (shard - shard / 2))}));
}

TEST(DcpMetadata, EnumMembersPickledThroughGetattr) {
  // Python 3.11.2 pickles _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT as
  // getattr(_MEM_FORMAT_ENCODING, "TORCH_CONTIGUOUS_FORMAT"): data, not a call.
  P p;
  dataclass(p, kMeta, "Metadata", [&](P& m) {
    m.str("state_dict_metadata").op('}').str("model.w");
    dataclass(m, kMeta, "TensorStorageMetadata", [&](P& q) {
      q.str("properties").global(kMeta, "TensorProperties").op(')').op(0x81);
      q.op(0x28).global("torch", "float16").global("torch", "strided").op(0x89);
      q.global("builtins", "getattr").global(kMeta, "_MEM_FORMAT_ENCODING");
      q.str("TORCH_CONTIGUOUS_FORMAT").op(0x86).op('R');
      q.op(0x89).op('t').op('b');
      q.str("size");
      torch_size(q, {2});
      q.str("chunks").op(']');
    });
    m.op('s');
  });
  const ReadResult r = read_metadata(p.stop().bytes());
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->items[0].dtype, "torch.float16");
  // Any other builtin stays refused.
  P q;
  q.global("builtins", "eval").str("1").op(0x85).op('R').stop();
  EXPECT_TRUE(read_metadata(q.bytes()).refused);
}

TEST(DcpMetadata, KeyGroups) {
  EXPECT_EQ(component_of_key("model.layers.0.weight"), Component::kModel);
  EXPECT_EQ(component_of_key("module.fc.bias"), Component::kModel);
  EXPECT_EQ(component_of_key("optim.state.fc.exp_avg"), Component::kOptimizer);
  EXPECT_EQ(component_of_key("optimizer.param_groups.0.lr"), Component::kOptimizer);
  EXPECT_EQ(component_of_key("state.layers.0.wq.weight.exp_avg_sq"), Component::kOptimizer);
  EXPECT_EQ(component_of_key("param_groups.layers.0.wq.weight.lr"), Component::kOptimizer);
  EXPECT_EQ(component_of_key("lr_scheduler"), Component::kScheduler);
  EXPECT_EQ(component_of_key("dataloader"), Component::kDataloader);
  EXPECT_EQ(component_of_key("rng"), Component::kRng);
  EXPECT_EQ(component_of_key("scaler"), Component::kScaler);
  // torchtitan's unprefixed model keys are not guessed to be weights.
  EXPECT_EQ(component_of_key("tok_embeddings.weight"), Component::kOther);
  EXPECT_EQ(component_of_key("train_state"), Component::kOther);
}

// ---- the DCP recogniser with a .metadata it can read ----

constexpr double kNow = 1'700'000'000;
const LayoutContext kContext{.now = kNow, .partial_after = 1800};

// The checkpoint two_rank_metadata() describes, on disk: rank 0's file holds
// bytes 0..145 (model.w 0+32, model.b 32+8, lr_scheduler 40+100, step
// 140+5), rank 1's 0..122 (model.b 0+8, the optimizer state 8+64, rng 72+50).
Checkpoint recognised(std::uint64_t rank1_size, bool rank1_present = true,
                      const std::string& meta = two_rank_metadata()) {
  testing::TreeBuilder b;
  b.file("step-10/__0_0.distcp", 145, kNow - 100);
  if (rank1_present) b.file("step-10/__1_0.distcp", rank1_size, kNow - 99);
  b.file("step-10/.metadata", meta.size(), kNow - 98, meta);
  const auto all = recognise_tree(b.build(), kContext);
  EXPECT_EQ(all.size(), 1U);
  return all.empty() ? Checkpoint{} : all[0];
}

TEST(DcpRecogniser, ComponentsFromTheMetadata) {
  const Checkpoint c = recognised(122);
  EXPECT_EQ(c.state, CkptState::kCommitted) << c.reason;
  EXPECT_EQ(c.metadata, "read");
  EXPECT_EQ(testing::component(c, Component::kModel), 48U);
  EXPECT_EQ(testing::component(c, Component::kOptimizer), 64U);
  EXPECT_EQ(testing::component(c, Component::kScheduler), 100U);
  EXPECT_EQ(testing::component(c, Component::kRng), 50U);
  EXPECT_EQ(testing::component(c, Component::kOther), 5U);
  EXPECT_EQ(testing::component(c, Component::kMetadata), two_rank_metadata().size());
  EXPECT_EQ(c.bytes, 145U + 122 + two_rank_metadata().size());
}

TEST(DcpRecogniser, BytesNoKeyClaimsStayOther) {
  // Rank 1's file 30 bytes longer than its chunks (a header, alignment).
  const Checkpoint c = recognised(152);
  EXPECT_EQ(c.state, CkptState::kCommitted) << c.reason;
  EXPECT_EQ(testing::component(c, Component::kOther), 5U + 30);
  EXPECT_EQ(testing::component(c, Component::kModel), 48U);
}

TEST(DcpRecogniser, AShardShorterThanItsChunksIsBroken) {
  const Checkpoint c = recognised(100);
  EXPECT_EQ(c.state, CkptState::kPartial);
  EXPECT_EQ(c.reason, ".metadata reads __1_0.distcp up to byte 122 (rng_state), but it holds 100");
}

TEST(DcpRecogniser, AShardTheMetadataNamesIsMissing) {
  const Checkpoint c = recognised(0, /*rank1_present=*/false);
  EXPECT_EQ(c.state, CkptState::kPartial);
  EXPECT_EQ(c.reason, ".metadata places model.b in __1_0.distcp, which is missing (and 2 more)");
}

TEST(DcpRecogniser, ARefusedMetadataLeavesTheNamesAndSaysWhy) {
  const std::string hostile = two_rank_metadata(
      [](P& s) { s.str("save_id").global("os", "system").str("id").op(0x85).op('R'); });
  const Checkpoint c = recognised(122, true, hostile);
  EXPECT_EQ(c.state, CkptState::kCommitted);  // the marker commits it; the note says the rest
  EXPECT_EQ(c.metadata.rfind("refused: .metadata: global os.system", 0), 0U) << c.metadata;
  EXPECT_EQ(testing::component(c, Component::kOther), 145U + 122);
  EXPECT_EQ(testing::component(c, Component::kModel), 0U);
}

TEST(DcpRecogniser, MetadataTheScannerDidNotReadIsUnread) {
  testing::TreeBuilder b;
  b.file("step-10/__0_0.distcp", 145, kNow - 100);
  b.file("step-10/.metadata", 5'000'000, kNow - 98);  // over the 4 MiB read: no content
  const auto all = recognise_tree(b.build(), kContext);
  ASSERT_EQ(all.size(), 1U);
  EXPECT_EQ(all[0].metadata, "unread: .metadata is 5000000 bytes, over the 4 MiB read");
  EXPECT_EQ(testing::component(all[0], Component::kOther), 145U);
}

}  // namespace
}  // namespace ckptmon::dcp
