#pragma once
// The state database's event-log tables (schema version 2, store/store.cpp):
// every log's identity and read position, the aggregates and totals derived
// from what was read, and the integrity verifier's queue and results. The
// functions run inside Store::call on the store thread and throw sql::Error;
// callers wrap the writes of one batch in one sql::Transaction.

#include <cstdint>
#include <string>
#include <vector>

#include "events/parser.hpp"
#include "model/events.hpp"
#include "store/sqlite.hpp"

namespace ckptmon::event_tables {

// One log's identity and resume point (table manifest_cursors).
struct CursorRow {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::string path;              // where the file was last seen
  std::string glob;              // the manifest glob that tails it
  std::uint32_t fp_len = 0;      // the fingerprint covers the first fp_len bytes
  std::uint64_t fp_hash = 0;     // XXH64 of them
  ParseCursor parse;             // offset, line number, skipping an over-long line
  std::uint32_t check_len = 0;   // the bytes just before parse.offset ...
  std::uint64_t check_hash = 0;  // ... and their XXH64
  bool gone = false;             // left the glob and was read to its end
  double last_seen = 0;

  bool operator==(const CursorRow&) const = default;
};

struct Loaded {
  EventCatalog catalog;
  std::vector<CursorRow> cursors;
};

Loaded load(sql::Db& db);

void upsert_cursor(sql::Db& db, const CursorRow& c);
// Forgets logs not seen since `cutoff` (unix seconds); returns how many.
std::int64_t delete_cursors_before(sql::Db& db, double cutoff);

// Writes the entries `agg` touched as they now are in `cat` (deleting those no
// longer there), queues its checksummed shards for the verifier, and writes
// the totals.
void save_batch(sql::Db& db, const EventCatalog& cat, const EventAggregator& agg);

// --- integrity ---------------------------------------------------------------------

// A group of shards queued by one batch for one checkpoint.
struct QueuedShards {
  std::int64_t id = 0;
  std::string tier;
  std::string job;
  std::int64_t step = 0;
  std::size_t next_index = 0;  // shards before it are verified already
  std::vector<ShardCheck> shards;
};

std::vector<QueuedShards> load_queue(sql::Db& db, std::size_t limit);
std::uint64_t queued_shards(sql::Db& db);
// Records the result for shard q.shards[index] and moves the queue on, in
// the caller's transaction.
void record_shard(sql::Db& db, const QueuedShards& q, std::size_t index, IntegrityResult r);
// Moves the queue past shard q.shards[index], whose path was refused (never
// opened), and counts the refusal for the tier; in the caller's transaction.
void record_refused(sql::Db& db, const QueuedShards& q, std::size_t index, PathRefusal why);
// Counts a refusal of a path an integrity.json listed.
void count_refused(sql::Db& db, const std::string& tier, PathRefusal why);

// A committed checkpoint whose integrity.json is still to be verified.
struct ManifestCandidate {
  std::string tier;
  std::string path;  // tier-relative checkpoint directory
  std::string job;
  std::int64_t step = -1;
  std::size_t next_index = 0;  // files before it are verified already
  double first_seen = 0;       // when the catalog first saw the checkpoint
};
// Committed, present checkpoints of `framework` not verified to the end yet.
std::vector<ManifestCandidate> manifest_candidates(sql::Db& db, const std::string& framework,
                                                   std::size_t limit);
// Progress on one checkpoint's integrity.json: `r` (when given) is the result
// of file index-1; `done` when the manifest is finished (or absent).
void record_manifest(sql::Db& db, const ManifestCandidate& c, std::size_t next_index, bool done,
                     std::optional<IntegrityResult> r);
// Forgets results of checkpoints the catalog no longer holds and of steps
// beyond the newest kEventStepsPerJob of each (tier, job).
void prune_integrity(sql::Db& db);

IntegrityStatus load_integrity(sql::Db& db);

}  // namespace ckptmon::event_tables
