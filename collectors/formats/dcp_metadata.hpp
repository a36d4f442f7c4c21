#pragma once
// PyTorch Distributed Checkpoint's `.metadata`, read through the restricted
// unpickler: every state-dict key with its storage, and where each chunk's
// bytes lie in the `.distcp` files.
//
// The format (torch/distributed/checkpoint/metadata.py and filesystem.py,
// torch 2.0 to 2.9): `.metadata` is `pickle.dump(Metadata)` at Python's
// default protocol (4; 5 from Python 3.14). Metadata is a dataclass:
//   state_dict_metadata: {fqn: TensorStorageMetadata | BytesStorageMetadata}
//     TensorStorageMetadata(properties: TensorProperties(dtype, ...),
//                           size: torch.Size, chunks: [ChunkStorageMetadata(
//                           offsets: torch.Size, sizes: torch.Size)])
//   planner_data: the planner's (DefaultSavePlanner: {fqn: key path})
//   storage_data: {MetadataIndex(fqn, offset, index): _StorageInfo(
//                  relative_path, offset, length, transform_descriptors)}
//   storage_meta: StorageMeta(checkpoint_id, save_id, load_id, modules)
//                 (torch 2.4 and later; checkpoint_id may be a PosixPath)
//   version: "1.0.0" (torch 2.6 and later)
// Pure: the caller hands in the bytes.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/checkpoint.hpp"

namespace ckptmon::dcp {

// One chunk's bytes in a file of the checkpoint.
struct StoredChunk {
  std::string fqn;
  std::vector<std::int64_t> offsets;  // the chunk's offsets in the tensor; empty for bytes
  std::string file;                   // relative_path, e.g. "__3_0.distcp"
  std::uint64_t offset = 0;           // in the file
  std::uint64_t length = 0;
};

// One state-dict key.
struct Item {
  std::string fqn;
  bool tensor = false;  // TensorStorageMetadata; else BytesStorageMetadata (pickled objects)
  std::string dtype;    // "torch.bfloat16"; empty for bytes
  std::vector<std::int64_t> size;  // the global shape; empty for bytes
  struct Chunk {
    std::vector<std::int64_t> offsets;
    std::vector<std::int64_t> sizes;
  };
  std::vector<Chunk> chunks;
  std::uint64_t stored_bytes = 0;  // sum of its chunks' lengths in storage_data
  Component component = Component::kOther;
};

struct Metadata {
  std::vector<Item> items;           // sorted by fqn
  std::vector<StoredChunk> storage;  // storage_data, sorted by (file, offset)
  std::string version;               // empty before torch 2.6
  std::string checkpoint_id;         // storage_meta's, when a string or path
  // Stored bytes per component (the sum of storage_data lengths of the keys
  // classified as that component). Bytes in the files that storage_data does
  // not cover (headers, alignment) are not here.
  std::array<std::uint64_t, kComponentCount> component_bytes{};
  std::uint64_t stored_bytes = 0;  // all of storage_data
  // Chunks whose storage_data entry names a path outside the checkpoint
  // directory ("../x", "/abs"): kept out of `storage` and counted here.
  std::uint64_t foreign_paths = 0;
};

struct ReadResult {
  std::optional<Metadata> metadata;
  std::string error;     // ".metadata: ..." when metadata is empty
  bool refused = false;  // the unpickler refused a global or opcode
};

// The largest `.metadata` read; bigger ones are not read (unknown).
inline constexpr std::uint64_t kMaxMetadataBytes = std::uint64_t{64} << 20;

ReadResult read_metadata(std::string_view bytes);

// The component a state-dict key's bytes belong to, from its first segment:
// "model.*" and "module.*" model, "optim.*", "optimizer.*" and torch's
// flattened optimizer keys ("state.*", "param_groups.*") optimizer,
// "lr_scheduler" scheduler, "rng*" rng, "dataloader" dataloader, "scaler"
// scaler; anything else other (a tensor under an unknown key is not guessed
// to be weights).
Component component_of_key(std::string_view fqn);

// One byte range a rank reads.
struct ReadRange {
  std::string file;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string fqn;
};

// What each of `ranks` ranks reads to load this checkpoint into a new
// topology, as DCP's FileSystemReader does: every stored chunk that overlaps
// the rank's target shard is read whole (then narrowed in memory). The target
// shard of a tensor is FSDP's: dim 0 split by torch.chunk (ceil(rows/ranks)
// rows each, the last ones short or empty). Tensors with no dimensions and
// bytes items (pickled objects) are read by every rank. Ranges per rank in
// (file, offset) order.
std::vector<std::vector<ReadRange>> plan_reads(const Metadata& m, std::size_t ranks);

// A `.metadata` as DCP's default planner writes it for a checkpoint of
// `ranks` ranks, each with one file `__{rank}_0.distcp` of `shard_bytes`
// bytes: its first half the rank's slice of "model.weight", the rest its
// slice of "optim.state.weight.exp_avg" (torch.uint8, dim 0 split by rank).
// Python's protocol 4 (dcp_metadata_writer.cpp). What `ckptmon burst` writes,
// so its DCP and Megatron torch_dist checkpoints read as real ones do.
std::string synthetic_metadata(std::size_t ranks, std::uint64_t shard_bytes);

// Whether the unpickler may name this global in a DCP `.metadata`.
bool allowed_global(std::string_view module, std::string_view name);

}  // namespace ckptmon::dcp
