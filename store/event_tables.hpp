#pragma once
// The state database's event-log tables (schema version 2, store/store.cpp):
// every log's identity and read position, the aggregates and totals derived
// from what was read, and the integrity verifier's queue and results. The
// functions run inside Store::call on the store thread and throw sql::Error;
// callers wrap the writes of one batch in one sql::Transaction. The ports
// built on them (store/event_journal.hpp, store/verification_ledger.hpp) do.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/event_journal.hpp"
#include "collectors/verification_ledger.hpp"
#include "events/parser.hpp"
#include "model/events.hpp"
#include "store/sqlite.hpp"

namespace ckptmon::event_tables {

// --- the aggregate tables ----------------------------------------------------------

// One primary-key column of an aggregate table.
struct KeyColumn {
  const char* name;
  bool integer;  // INTEGER; TEXT otherwise
};

// An aggregate table (schema 7): its primary key's columns, in order, then
// `data BLOB` (store/event_codec.hpp). The one definition the schema's
// creation (store/store.cpp) and the schema-7 rebuild
// (store/legacy_event_rows.cpp) both use.
struct AggregateTable {
  const char* name;
  std::span<const KeyColumn> keys;
};
inline constexpr std::array<KeyColumn, 3> kStepKeys{
    {{"tier", false}, {"job", false}, {"step", true}}};
inline constexpr std::array<KeyColumn, 2> kJobKeys{{{"tier", false}, {"job", false}}};
inline constexpr std::array<KeyColumn, 1> kRestoreKeys{{{"job", false}}};
inline constexpr AggregateTable kStepsTable{"event_steps", kStepKeys};
inline constexpr AggregateTable kJobsTable{"event_jobs", kJobKeys};
inline constexpr AggregateTable kRestoresTable{"event_restores", kRestoreKeys};

// "CREATE TABLE [IF NOT EXISTS] <as>(<keys>, data BLOB NOT NULL, PRIMARY KEY(<keys>)) WITHOUT
// ROWID".
std::string create_sql(const AggregateTable& t, std::string_view as, bool if_not_exists);
// The key columns, comma-separated: "tier, job, step".
std::string key_list(const AggregateTable& t);

using CursorRow = ckptmon::CursorRow;
using Loaded = JournalState;

Loaded load(sql::Db& db);

void upsert_cursor(sql::Db& db, const CursorRow& c);
void delete_cursor(sql::Db& db, FileId id);
// Forgets logs not seen since `cutoff` (unix seconds); returns how many.
std::int64_t delete_cursors_before(sql::Db& db, double cutoff);

// Writes the entries `agg` touched as they now are in `cat` (deleting those no
// longer there), queues its checksummed shards for the verifier, and writes
// the totals.
void save_batch(sql::Db& db, const EventCatalog& cat, const EventAggregator& agg);
// Deletes the `folded` steps and writes the job figures of their jobs as
// they are in `cat`.
void save_folded(sql::Db& db, std::span<const StepKey> folded, const EventCatalog& cat);

// --- integrity ---------------------------------------------------------------------

using QueuedShards = ckptmon::QueuedShards;
using ManifestCandidate = ckptmon::ManifestCandidate;

std::vector<QueuedShards> load_queue(sql::Db& db, std::size_t limit);
std::uint64_t queued_shards(sql::Db& db);
void drop_queued(sql::Db& db, std::int64_t id);
// Records the result for shard q.shards[index] and moves the queue on, in
// the caller's transaction.
void record_shard(sql::Db& db, const QueuedShards& q, std::size_t index, IntegrityResult r);
// Moves the queue past shard q.shards[index], whose path was refused (never
// opened), and counts the refusal for the tier; in the caller's transaction.
void record_refused(sql::Db& db, const QueuedShards& q, std::size_t index, PathRefusal why);
// Counts a refusal of a path an integrity.json listed.
void count_refused(sql::Db& db, const std::string& tier, PathRefusal why);

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
