#pragma once
// What checkpoint event logs said (docs/events.md), aggregated per
// (tier, job, step), per (tier, job) and per job, with the tailer's line
// totals; and what the integrity verifier found. The manifest_tail collector
// builds an EventCatalog, persists it in the state database batch by batch and
// publishes immutable copies to State; scrapes and the API read those copies.
// Plain data and pure functions; not thread-safe by themselves.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "events/parser.hpp"
#include "model/catalog.hpp"

namespace ckptmon {

// The state database's tables of event aggregates, in the order of
// EventCatalog::unreadable_rows.
inline constexpr std::array<std::string_view, 3> kEventTables{"event_steps", "event_jobs",
                                                              "event_restores"};

// Steps kept per (tier, job); older ones are folded into the job's figures.
inline constexpr std::size_t kEventStepsPerJob = 64;
// Failures listed per (tier, job) in the API.
inline constexpr std::size_t kRecentFailures = 10;
// Distinct jobs per tier the event catalog takes (global.max_jobs_per_tier):
// job names from event logs become label values, so an outsider writing a
// log could otherwise make millions of series.
inline constexpr std::size_t kMaxJobsPerTier = 1000;

// What the catalog refuses from the lines it folds in.
struct EventLimits {
  std::size_t max_jobs_per_tier = kMaxJobsPerTier;
  // The configured tiers; an event naming another is refused. Empty: any
  // (tools and tests that configure none).
  std::set<std::string, std::less<>> tiers;
};

// One line the aggregator refused, for the log (the first few of a batch).
struct EventRefusal {
  RejectReason reason = RejectReason::kNone;
  std::string tier;
  std::string job;
};

struct StepKey {
  std::string tier;
  std::string job;
  std::int64_t step = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>'s own 0.
  auto operator<=>(const StepKey&) const = default;
};

// Orders StepKeys and looks them up by views without building strings.
struct StepKeyLess {
  using is_transparent = void;
  struct View {
    std::string_view tier;
    std::string_view job;
    std::int64_t step;
  };
  static View view(const StepKey& k) { return {k.tier, k.job, k.step}; }
  static View view(const View& v) { return v; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    const View x = view(a);
    const View y = view(b);
    return std::tie(x.tier, x.job, x.step) < std::tie(y.tier, y.job, y.step);
  }
};

// Copying to the next tier, per (from_tier, to_tier) of one checkpoint.
struct DrainProgress {
  double start_ts = 0;       // drain_start; 0 = not seen
  double done_ts = 0;        // drain_done; 0 = not seen
  std::uint64_t bytes = 0;   // sum of shard_drained bytes
  std::uint64_t shards = 0;  // shard_drained events
  std::optional<bool> ok;    // from drain_done
};

// One checkpoint (tier, job, step) as its events describe it.
struct EventStep {
  double start_ts = 0;   // earliest checkpoint_start; 0 = none seen
  double commit_ts = 0;  // earliest checkpoint_commit; 0 = none seen
  bool committed = false;
  std::uint64_t commit_files = 0;
  std::uint64_t commit_bytes = 0;

  std::uint64_t shards = 0;  // shard_written events
  std::uint64_t shard_bytes = 0;
  std::uint64_t checksummed_shards = 0;
  double first_shard_start = 0;  // earliest start_ts of a shard
  double first_shard_end = 0;    // earliest shard end (ts)
  double last_shard_end = 0;     // latest shard end
  std::int64_t last_rank = -1;   // the rank whose shard ended last (-1: none or no rank)

  // Pauses are paired per rank (-1 when the event names none); unmatched
  // halves wait here for their partner, whatever order the logs are read in.
  std::map<std::int64_t, double> pause_starts;
  std::map<std::int64_t, double> pause_ends;
  std::uint64_t pauses = 0;  // matched pause_start/pause_end pairs
  double pause_max = 0;      // the longest matched pause, seconds
  // The span of the matched pauses: the earliest start and the latest end
  // (0 = none), the blocking window the GPU join measures.
  double pause_first_start = 0;
  double pause_last_end = 0;

  bool failed = false;
  double failed_ts = 0;
  std::string failure_reason;

  std::map<std::string, DrainProgress> drains;  // key: "from_tier>to_tier"
  std::uint64_t cleanups = 0;                   // cleanup events naming this step
  std::uint64_t cleanup_bytes = 0;
  double last_event_ts = 0;

  // Each checkpoint is observed once in the duration and pause histograms.
  bool duration_observed = false;
  bool pause_observed = false;

  // Save duration: commit minus the earliest start; nullopt until both are known.
  std::optional<double> duration() const;
  // Latest minus earliest shard end; nullopt without shards.
  std::optional<double> completion_skew() const;
};

struct EventFailure {
  std::int64_t step = 0;
  double ts = 0;
  std::string reason;
};

// Figures of one (tier, job) over all its checkpoints, including those no
// longer kept step by step.
struct EventJob {
  HistogramData duration;                     // ckpt_checkpoint_duration_seconds
  HistogramData pause;                        // ckpt_checkpoint_pause_seconds
  std::uint64_t failures = 0;                 // checkpoints with a checkpoint_failed event
  std::vector<EventFailure> recent_failures;  // oldest first, at most kRecentFailures
  // How often each rank finished last, over the steps no longer kept
  // (EventCatalog::slow_ranks adds the kept ones).
  std::map<std::int64_t, std::uint64_t> slow_ranks;
  // Steps up to here were folded in: later events for them are not aggregated.
  std::int64_t evicted_through = -1;
  std::uint64_t cleanups = 0;
  std::uint64_t cleanup_bytes = 0;
  double last_event_ts = 0;

  EventJob();
};

struct RestoreRecord {
  std::int64_t step = 0;
  std::string tier;
  double ts = 0;  // restore_done
  std::uint64_t bytes = 0;
  bool ok = false;
  std::optional<double> duration;  // when its restore_start was seen
};

// The phases of a job's latest restore, from the optional phase events
// (docs/events.md): restore_start, restore_locate_done, restore_read_done
// (one per rank: the latest counts), restore_reshard_done, restore_done,
// restore_resume. Each mark is absent until its event is read; a phase is
// known only when both of its ends are (phase_seconds).
struct RestorePhases {
  std::int64_t step = 0;
  std::optional<double> start;      // earliest restore_start
  std::optional<double> located;    // latest restore_locate_done
  std::optional<double> read;       // latest restore_read_done
  std::optional<double> resharded;  // latest restore_reshard_done
  std::optional<double> done;       // latest restore_done
  std::optional<double> resumed;    // earliest restore_resume
  std::uint64_t ranks_read = 0;     // restore_read_done events

  bool operator==(const RestorePhases&) const = default;
};

// Phase names in order: locate (start to located), read (located, else
// start, to the last rank's read), reshard (read to resharded), resume (the
// last of done, resharded, read to resumed).
inline constexpr std::array<std::string_view, 4> kRestorePhaseNames = {"locate", "read", "reshard",
                                                                       "resume"};
// The seconds of phase `i` of kRestorePhaseNames; nullopt when one of its
// ends was not seen (unknown is not zero) or they are out of order.
std::optional<double> phase_seconds(const RestorePhases& p, std::size_t i);

// Restores of one job (a job restores from whichever tier holds its checkpoint).
struct EventRestores {
  HistogramData duration;      // ckpt_restore_duration_seconds
  std::uint64_t restores = 0;  // restore_done events
  std::uint64_t failed = 0;    // restore_done with ok=false
  double last_ok_ts = 0;       // ckpt_last_restore_timestamp_seconds
  std::optional<RestoreRecord> last;
  // Unmatched halves by "step/rank", so a restore_done read before its
  // restore_start still gets its duration.
  std::map<std::string, double> pending_starts;
  std::map<std::string, double> pending_dones;
  // The latest restore's phases; absent until a restore event is read.
  std::optional<RestorePhases> phases;

  // Notes a restore event (the six types above) in `phases`: an event of a
  // newer step, or a restore_start after the latest restore resumed or
  // finished, begins a new record; one of an older step is ignored.
  void note_phase(EventType type, std::int64_t step, double ts);

  EventRestores();
};

// How a tailed file changed under the tailer (ckptmon_manifest_file_changes_total).
enum class FileChange : std::uint8_t {
  kTruncated,  // shrank below the read offset, or its bytes before it changed: read again from 0
  kRotated,    // left the glob (renamed away) and was read to its end
  kDeleted,    // was deleted; what was written before was read through the open descriptor
  kReplaced,   // same inode, different first bytes: a new file (inode reuse), read from 0
};
inline constexpr std::size_t kFileChangeCount = 4;
std::string_view to_string(FileChange c);

// Everything counted exactly once, across restarts (persisted with the offsets).
struct ManifestTotals {
  std::array<std::uint64_t, 4> lines{};    // by LineStatus
  std::array<std::uint64_t, 15> errors{};  // by RejectReason (kNone unused)
  std::array<std::uint64_t, kFileChangeCount> file_changes{};
  std::uint64_t bytes = 0;         // bytes consumed
  std::uint64_t stale_events = 0;  // events for steps already folded into the job

  bool operator==(const ManifestTotals&) const = default;
};

// What one glob's last pass saw (not persisted).
struct TailStatus {
  std::uint64_t files = 0;  // regular files tailed
  std::uint64_t backlog_bytes =
      0;  // bytes written but not read yet (incomplete last lines included)
  std::map<std::string, std::uint64_t> refused;  // matches that are not regular files, by reason
  std::string error;                             // the glob could not be expanded (completely)
  std::uint64_t open = 0;    // of `files`, those whose descriptor is held (the others are quiet)
  std::uint64_t unread = 0;  // matched, with news, not read: the descriptor budget was spent

  bool operator==(const TailStatus&) const = default;
};

struct EventCatalog {
  std::map<StepKey, EventStep, StepKeyLess> steps;
  std::map<std::pair<std::string, std::string>, EventJob> jobs;  // (tier, job)
  std::map<std::string, EventRestores> restores;                 // by job
  ManifestTotals totals;
  std::map<std::string, TailStatus> tails;  // by glob
  std::uint64_t version = 0;                // grows with every committed batch
  // Rows of the state database's event tables the last load could not
  // decode, by table (kEventTables); they stay in the database untouched
  // and their aggregates start again from the events read after the load.
  std::array<std::uint64_t, 3> unreadable_rows{};

  const EventStep* find(std::string_view tier, std::string_view job, std::int64_t step) const;
  // How often each rank of (tier, job) finished last, kept steps included,
  // most frequent first (ties: lower rank first), at most `k`.
  std::vector<std::pair<std::int64_t, std::uint64_t>> slow_ranks(const std::string& tier,
                                                                 const std::string& job,
                                                                 std::size_t k) const;
};

std::vector<double> duration_buckets();
std::vector<double> pause_buckets();
std::vector<double> restore_buckets();

// A shard whose event carries a checksum, for the integrity verifier.
struct ShardCheck {
  std::string tier;
  std::string job;
  std::int64_t step = 0;
  std::int64_t rank = -1;
  std::string path;
  std::uint64_t bytes = 0;
  Checksum checksum;
};

// The checksummed shards of one checkpoint that one batch read, in a compact
// form: per shard a fixed record, its digest and path appended to one byte
// arena, so the hot path allocates nothing per shard (the store packs them
// for its queue, store/shard_pack.hpp).
class ShardChecks {
 public:
  struct View {
    std::int64_t rank = -1;
    std::uint64_t bytes = 0;
    ChecksumAlgo algo = ChecksumAlgo::kNone;
    std::string_view hex;  // as the parser wrote it (lower case)
    std::string_view path;
  };

  void add(std::int64_t rank, std::uint64_t bytes, const Checksum& sum, std::string_view path) {
    recs_.push_back(Rec{rank, bytes, arena_.size(), static_cast<std::uint32_t>(path.size()),
                        static_cast<std::uint16_t>(sum.hex.size()), sum.algo});
    arena_.append(sum.hex);
    arena_.append(path);
  }
  void reserve(std::size_t shards, std::size_t bytes) {
    recs_.reserve(shards);
    arena_.reserve(bytes);
  }
  std::size_t size() const { return recs_.size(); }
  bool empty() const { return recs_.empty(); }
  View operator[](std::size_t i) const {
    const Rec& r = recs_[i];
    const std::string_view a(arena_);
    return View{r.rank, r.bytes, r.algo, a.substr(r.off, r.hex_len),
                a.substr(r.off + r.hex_len, r.path_len)};
  }

 private:
  struct Rec {
    std::int64_t rank;
    std::uint64_t bytes;
    std::size_t off;  // the digest's first byte in arena_; the path follows it
    std::uint32_t path_len;
    std::uint16_t hex_len;
    ChecksumAlgo algo;
  };
  std::vector<Rec> recs_;
  std::string arena_;
};

// Applies parsed lines to an EventCatalog and remembers which entries it
// touched, so the caller can write exactly those to the store. Lines are
// counted in the totals whatever their status. Not thread-safe.
class EventAggregator {
 public:
  explicit EventAggregator(EventCatalog& cat, std::size_t steps_per_job = kEventStepsPerJob,
                           const EventLimits* limits = nullptr);

  // `tier` applies to events that do not name their own.
  void add(const LineResult& line, std::string_view tier);
  void count_change(FileChange c) { ++cat_.totals.file_changes[static_cast<std::size_t>(c)]; }
  void count_bytes(std::uint64_t n) { cat_.totals.bytes += n; }

  // What the lines since the last clear() touched: steps changed or removed
  // (absent from the catalog now), jobs, restores, and the shards to verify.
  const std::set<StepKey>& touched_steps() const { return touched_steps_; }
  const std::set<std::pair<std::string, std::string>>& touched_jobs() const {
    return touched_jobs_;
  }
  const std::set<std::string>& touched_restores() const { return touched_restores_; }
  // Checksummed shards by checkpoint, for the verifier's queue.
  // (tier, job and step are the key's; the store packs them, store/shard_pack.hpp).
  const std::map<StepKey, ShardChecks>& checks() const { return checks_; }
  // Lines refused by the limits since construction, by reason: the first
  // kRefusalsKept of each reason, for the log.
  static constexpr std::size_t kRefusalsKept = 4;
  const std::vector<EventRefusal>& refusals() const { return refusals_; }
  void clear();

 private:
  // The reason the limits refuse an event of (tier, job), or kNone.
  RejectReason refused(std::string_view tier, std::string_view job);
  EventStep* step_for(std::string_view tier, std::string_view job, std::int64_t step, bool create);
  EventJob& job_for(std::string_view tier, std::string_view job);
  EventRestores& restores_for(std::string_view job);
  void evict_beyond(std::string_view tier, std::string_view job);
  void apply(const Event& e, std::string_view tier);
  void observe_duration(EventStep& s, EventJob& j);
  DrainProgress& drain_for(EventStep& s, const Event& e);
  void pair_pause(EventStep& s, double start, double end, EventJob& j);

  EventCatalog& cat_;
  std::size_t steps_per_job_;
  const EventLimits* limits_;
  // Jobs per tier, counted the first time a new job of the tier comes.
  std::map<std::string, std::size_t, std::less<>> jobs_in_tier_;
  std::vector<EventRefusal> refusals_;
  std::array<std::size_t, 15> refusals_by_reason_{};
  // The step and job of the previous event: consecutive lines usually share them.
  EventStep* last_step_ = nullptr;
  StepKey last_key_;
  EventJob* last_job_ = nullptr;
  std::pair<std::string, std::string> last_job_key_;
  std::set<StepKey> touched_steps_;
  std::set<std::pair<std::string, std::string>> touched_jobs_;
  std::set<std::string> touched_restores_;
  std::map<StepKey, ShardChecks> checks_;
  ShardChecks* last_pack_ = nullptr;  // checks_ entry of last_step_, once it has one
  DrainProgress* last_drain_ = nullptr;
  const EventStep* last_drain_step_ = nullptr;
  std::string last_drain_from_;
  std::string last_drain_to_;
};

// What the integrity verifier found.
enum class IntegrityResult : std::uint8_t { kOk, kMismatch, kMissing, kError };
inline constexpr std::size_t kIntegrityResultCount = 4;
std::string_view to_string(IntegrityResult r);

// Why the verifier refused to open a path an event (or an integrity.json)
// named: it is never opened, hashed or counted as a check.
// ckptmon_integrity_refused_total{reason}.
enum class PathRefusal : std::uint8_t {
  kOutsideTier,       // absolute, and not under the tier's root
  kDotDot,            // a `..` component
  kBadPath,           // empty, a NUL byte, or nothing left once the tier root is removed
  kSymlink,           // a component is a symbolic link (never followed)
  kEscape,            // the kernel found the path leaving the tier (RESOLVE_BENEATH)
  kUnconfiguredTier,  // the event's tier is not configured, so there is no root to resolve under
};
inline constexpr std::size_t kPathRefusalCount = 6;
std::string_view to_string(PathRefusal r);
std::optional<PathRefusal> path_refusal_from(std::string_view label);

struct IntegrityCounts {
  std::array<std::uint64_t, kIntegrityResultCount> by_result{};
  std::uint64_t& operator[](IntegrityResult r) { return by_result[static_cast<std::size_t>(r)]; }
  std::uint64_t operator[](IntegrityResult r) const {
    return by_result[static_cast<std::size_t>(r)];
  }
  // A shard that does not match or is gone: the checkpoint cannot be trusted.
  // An I/O error says nothing either way.
  bool failed() const {
    return (*this)[IntegrityResult::kMismatch] + (*this)[IntegrityResult::kMissing] > 0;
  }
};

struct IntegrityStatus {
  std::map<std::string, IntegrityCounts> totals;          // by tier: ckpt_integrity_checks_total
  std::map<StepKey, IntegrityCounts, StepKeyLess> steps;  // shards from events with checksums
  std::map<std::pair<std::string, std::string>, IntegrityCounts>
      checkpoints;                   // (tier, path): integrity.json
  std::uint64_t pending_shards = 0;  // queued, not verified yet
  // Paths refused by tier, by PathRefusal: ckptmon_integrity_refused_total.
  std::map<std::string, std::array<std::uint64_t, kPathRefusalCount>> refused;
  std::uint64_t version = 0;

  // What verification says of a checkpoint, by its event checksums (tier, job,
  // step) and its integrity.json (tier, path): false when a file was found
  // broken, true when some file was verified and none failed, nullopt when
  // nothing was verified.
  std::optional<bool> verdict(const std::string& tier, const std::string& job, std::int64_t step,
                              const std::string& path) const;
  bool failed(const std::string& tier, const std::string& job, std::int64_t step,
              const std::string& path) const {
    return verdict(tier, job, step, path) == false;
  }
};

// What the verifier is doing right now, read by scrapes while a run goes on
// (a run can block in a hung read for as long as the mount hangs). Written by
// the verifier's thread, read by any; times are the verifier's clock.
struct IntegrityProgress {
  std::atomic<std::uint64_t> pending{0};    // shards queued, as of the last look at the queue
  std::atomic<bool> reading{false};         // inside a file's open or read
  std::atomic<double> last_progress{0};     // when that file was opened or last returned bytes
  std::atomic<double> read_deadline{3600};  // seconds without progress before a read is stuck

  // 1 when a read has made no progress for read_deadline seconds, else 0.
  std::uint64_t stuck(double now) const {
    return reading.load() && now - last_progress.load() >= read_deadline.load() ? 1 : 0;
  }
};

}  // namespace ckptmon
