#pragma once
// The verification ledger: where the integrity verifier finds its work (the
// shards the event tailer queued, the committed checkpoints with an
// integrity.json) and records its results. Declared here, implemented by the
// store (store/verification_ledger.hpp), injected by the daemon. Every
// method blocks until its write is durable (worker threads and start-up
// only) and throws when it fails; each record_* is one transaction.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/events.hpp"

namespace ckptmon {

// A group of shards queued by one batch for one checkpoint.
struct QueuedShards {
  std::int64_t id = 0;
  std::string tier;
  std::string job;
  std::int64_t step = 0;
  std::size_t next_index = 0;  // shards before it are verified already
  std::vector<ShardCheck> shards;
};

// A committed checkpoint whose integrity.json is still to be verified.
struct ManifestCandidate {
  std::string tier;
  std::string path;  // tier-relative checkpoint directory
  std::string job;
  std::int64_t step = -1;
  std::size_t next_index = 0;  // files before it are verified already
  double first_seen = 0;       // when the catalog first saw the checkpoint
};

class VerificationLedger {
 public:
  virtual ~VerificationLedger() = default;

  // Forgets results of checkpoints the catalog no longer holds and of steps
  // beyond the newest kEventStepsPerJob of each (tier, job), then loads what
  // is left.
  virtual IntegrityStatus load() = 0;
  // Shards queued and not verified yet.
  virtual std::uint64_t queued_shards() = 0;
  // The oldest `limit` queue entries.
  virtual std::vector<QueuedShards> queue(std::size_t limit) = 0;
  // Drops a queue entry (unreadable, or finished).
  virtual void drop(const QueuedShards& q) = 0;
  // Records the result for shard q.shards[index] and moves the queue on.
  virtual void record_shard(const QueuedShards& q, std::size_t index, IntegrityResult r) = 0;
  // Moves the queue past shard q.shards[index], whose path was refused (never
  // opened), and counts the refusal for the tier.
  virtual void record_refused(const QueuedShards& q, std::size_t index, PathRefusal why) = 0;

  // Committed, present checkpoints of `framework` not verified to the end yet.
  virtual std::vector<ManifestCandidate> manifest_candidates(const std::string& framework,
                                                             std::size_t limit) = 0;
  // Progress on one checkpoint's integrity.json: `r` (when given) is the
  // result of file next_index-1, `refused` (when given) why that file was
  // refused; `done` when the manifest is finished (or absent).
  virtual void record_manifest(const ManifestCandidate& c, std::size_t next_index, bool done,
                               std::optional<IntegrityResult> r,
                               std::optional<PathRefusal> refused) = 0;
};

}  // namespace ckptmon
