#pragma once
// One checkpoint as the catalog knows it: where it is, what framework wrote
// it, whether it can be restored, and its figures. Plain data; not
// thread-safe by itself (copies travel between threads).

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckptmon {

enum class CkptState {
  kInProgress,  // shards still arriving, no valid marker, younger than partial_after
  kCommitted,   // marker present and not older than the newest shard; manifest satisfied
  kPartial,     // abandoned or broken: can not be restored
};
std::string_view to_string(CkptState s);
std::optional<CkptState> ckpt_state_from(std::string_view s);

// What a file holds, where the layout's names tell. The order is the state
// database's column order (store/store.cpp): new components go at the end.
enum class Component : std::uint8_t {
  kModel,
  kOptimizer,
  kRng,
  kScheduler,
  kMetadata,
  kOther,
  kScaler,      // AMP grad scaler (scaler.pt)
  kDataloader,  // data-loader / sampler state
};
inline constexpr std::size_t kComponentCount = 8;
std::string_view to_string(Component c);
// The component a lower-case word names ("optimizer_states", "rng_state",
// "lr_scheduler", "model", "sampler"...): file names, directory names and
// state-dict keys say what they hold this way. nullopt for other words.
std::optional<Component> component_of_word(std::string_view w);

// One file of a checkpoint, kept only where per-file matching is needed
// (tiers that drain or are drained to), so memory grows with checkpoints, not
// files, everywhere else.
struct ShardFile {
  std::string rel_path;  // relative to the checkpoint directory
  std::uint64_t size = 0;
  double mtime = 0;
};

struct Checkpoint {
  // Identity. `path` is relative to the tier root ("jobA/step-100"); the
  // checkpoint is a directory or, for single-file layouts, a file.
  std::string tier;
  std::string job;
  std::string path;
  std::int64_t step = -1;  // -1 when the layout does not tell
  std::string framework;   // "pytorch_dcp", "deepspeed", ... (collectors/layouts/)
  CkptState state = CkptState::kInProgress;
  std::string reason;  // why it is partial or in progress, for humans

  // Figures over the checkpoint's files (markers and manifests included).
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;            // logical (st_size)
  std::uint64_t allocated_bytes = 0;  // st_blocks * 512
  double first_write = 0;             // oldest shard mtime, unix seconds (0 = no shards)
  double last_write = 0;              // newest shard mtime
  double marker_time = 0;             // mtime of the commit marker; 0 = none
  std::array<std::uint64_t, kComponentCount> component_bytes{};
  // What the checkpoint's own metadata (PyTorch DCP's .metadata) gave:
  // "" when none was read (component_bytes then come from file names),
  // "read" (they come from its storage entries), or why it could not be
  // used, starting "refused: " (a global or opcode off the unpickler's
  // allow-list), "malformed: " or "unread: " (too large, unreadable).
  std::string metadata;
  // Shards the layout expects (from a manifest or the rank count of sibling
  // checkpoints); 0 when unknown.
  std::uint64_t expected_files = 0;

  // Save timing a framework manifest (Orbax) or the event log states; 0 = unknown.
  double save_start = 0;
  double save_end = 0;

  // Newest mtime of any directory of the checkpoint; the scanner uses it to
  // skip re-listing committed checkpoints that did not change.
  double dir_mtime = 0;

  // Per-file list (sorted by rel_path) on tiers that drain or are drained to;
  // null elsewhere.
  std::shared_ptr<const std::vector<ShardFile>> shard_files;

  // Catalog bookkeeping: when this checkpoint was first and last seen, and
  // whether its completion skew was counted in the histogram already (once
  // per checkpoint, across restarts).
  double first_seen = 0;
  double last_seen = 0;
  bool skew_observed = false;
  // Kept from an earlier walk: its directory, or one above it, cannot be read
  // now (TierCatalog::unreadable). Unreadable is not deleted; not stored.
  bool unreadable = false;

  double completion_skew() const { return last_write > first_write ? last_write - first_write : 0; }
};

}  // namespace ckptmon
