#pragma once
// The burst engine behind `ckptmon burst` and `ckptmon demo`: writes
// checkpoints the way real frameworks lay them out (docs/validating-a-tier.md,
// ../shared/layouts.md), with R writer threads per checkpoint, commit marker
// last; optionally kills one writer mid-shard, stops at a fill level, drains
// committed checkpoints to a second directory at a limited rate and reads the
// newest one back. Everything it creates is listed in a manifest
// (<target>/.ckptmon-burst.manifest), each line with a keyed digest, so
// that cleanup removes only that. Every write resolves beneath the target's
// (and the drain directory's) descriptor, no symlink followed
// (tools/burst/burst_fs.hpp): a directory swapped for a symlink mid-run fails the
// write instead of leading it outside.
//
// Time: event timestamps come from the injected Clock; durations and pacing
// (intervals, the drain rate) from the injected Pacer, so tests run without
// waiting on wall time. One Burst runs on the thread that calls run(); it
// starts its writer and drain threads itself and joins them before returning.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.hpp"

namespace ckptmon::burst {

enum class Layout { kDcp, kDeepSpeed, kMegatron, kHf, kOrbax };
std::optional<Layout> layout_from_name(std::string_view name);
std::string_view layout_name(Layout layout);  // "dcp", "deepspeed", ...

// The manifest of created paths, in the target (and in the drain directory).
inline constexpr std::string_view kManifestName = ".ckptmon-burst.manifest";

// Monotonic time and interruptible sleeps.
class Pacer {
 public:
  virtual ~Pacer() = default;
  virtual double mono() = 0;  // seconds, monotonic
  // Sleeps `seconds` (nothing when <= 0); false when stop() was called.
  virtual bool sleep(double seconds) = 0;
  virtual void stop() = 0;
  virtual bool stopped() const = 0;
};

// steady_clock and a condition variable.
class RealPacer final : public Pacer {
 public:
  double mono() override;
  bool sleep(double seconds) override;
  void stop() override;
  bool stopped() const override { return stop_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stop_{false};
};

// Time moves only when someone sleeps. Thread-safe.
class FakePacer final : public Pacer {
 public:
  double mono() override;
  bool sleep(double seconds) override;
  void stop() override { stop_ = true; }
  bool stopped() const override { return stop_.load(); }
  double slept() const;  // total seconds slept, all threads

 private:
  mutable std::mutex mu_;
  double now_ = 0;
  double slept_ = 0;
  std::atomic<bool> stop_{false};
};

struct FailPoint {
  int rank = 0;        // 0-based
  int checkpoint = 1;  // 1-based: the checkpoint-th save of job 0
};

struct Options {
  std::string target;  // existing directory; jobs are created below it
  Layout layout = Layout::kDcp;
  std::vector<std::string> job_names;  // empty: job0 .. job{jobs-1}
  int jobs = 1;
  int ranks = 4;
  std::uint64_t shard_size = 64ull << 20;
  int checkpoints = 3;   // 0: until stopped (the demo)
  double interval = 10;  // seconds from one save's start to the next one's
  int writers = 0;       // writer threads per round; 0: jobs × ranks
  bool fsync = true;
  std::vector<FailPoint> fail;    // writers to kill (job 0)
  std::optional<double> fill_to;  // stop when the file system's use reaches this fraction
  std::string drain_to;           // copy committed checkpoints here ("" = no drain)
  std::uint64_t drain_rate = 0;   // bytes per second; 0 = unlimited
  int keep_last = 0;      // >0: the burst deletes its own older committed checkpoints (demo)
  bool restore = false;   // read the newest committed checkpoint back at the end
  int restore_every = 0;  // >0: also after every N-th committed save of a job (demo)
  // Readers of a restore; 0: as many as wrote it (ranks). With DCP's
  // .metadata (dcp, megatron) a different count reads the byte ranges DCP
  // plans for the new topology (collectors/formats/dcp_metadata.hpp).
  int restore_ranks = 0;
  std::string events;              // schema-v1 event log ("" = none)
  bool sparse = false;             // ftruncate shards instead of writing data
  std::optional<double> window;    // seconds a save should take (reported as met or not)
  std::string tier;                // tier name in events; default: basename of target
  std::string drain_tier;          // default: basename of drain_to
  std::int64_t step_stride = 100;  // step of the i-th save (1-based) = i × stride
  std::string key_file;  // the manifest's key (tools/burst/burst_manifest.hpp); "" = the default
};

enum class CkptOutcome { kCommitted, kPartial, kInProgress };
std::string_view outcome_name(CkptOutcome o);  // "committed", "partial", "in_progress"

struct CheckpointResult {
  std::string job;
  int index = 0;  // 1-based
  std::int64_t step = 0;
  std::string path;  // relative to the target: "job0/step-100"
  CkptOutcome outcome = CkptOutcome::kInProgress;
  std::string reason;  // why not committed
  int failed_rank = -1;
  std::uint64_t files = 0;                             // files inside the checkpoint's directory
  std::uint64_t bytes = 0;                             // their bytes (st_size)
  double start_ts = 0;                                 // unix seconds (Clock)
  double end_ts = 0;                                   // commit, failure or stop
  double duration = 0;                                 // start -> commit/stop, seconds (Pacer)
  double write_seconds = 0;                            // first shard start -> last shard end
  double skew_seconds = 0;                             // first shard end -> last shard end
  std::uint64_t creates = 0, renames = 0, fsyncs = 0;  // metadata operations
  std::optional<bool> window_met;
  double throughput() const { return duration > 0 ? static_cast<double>(bytes) / duration : 0; }
  double metadata_ops_per_second() const {
    return duration > 0 ? static_cast<double>(creates + renames + fsyncs) / duration : 0;
  }
};

struct DrainResult {
  std::string job;
  std::string path;  // relative to the drain directory (same as the source's)
  std::int64_t step = 0;
  std::uint64_t files = 0, bytes = 0;
  double seconds = 0;
  bool ok = false;
};

struct RestoreResult {
  std::string job;
  std::string path;
  std::int64_t step = 0;
  std::uint64_t files = 0, bytes = 0;
  int ranks = 0;           // readers
  bool resharded = false;  // ranks differ from the writers' and the reads follow DCP's plan
  double locate_seconds = 0, read_seconds = 0, total_seconds = 0;
  bool ok = false;
  double throughput() const {
    return read_seconds > 0 ? static_cast<double>(bytes) / read_seconds : 0;
  }
};

struct Result {
  std::vector<CheckpointResult> checkpoints;  // in commit/stop order
  std::vector<DrainResult> drains;
  std::vector<RestoreResult> restores;
  bool fill_reached = false;
  double fill_level = 0;  // file-system use when the burst stopped (fraction), when fill_to is set
  std::uint64_t drain_backlog_max = 0;  // most bytes committed and not yet drained at once
  double drain_backlog_max_ts = 0;
  double seconds = 0;  // the writes: first save's start to the last save's end
  std::string error;   // set when run() returned false
};

// Progress for a terminal: shards finished so far, and planned (0 when open-ended).
using ProgressFn =
    std::function<void(std::uint64_t done, std::uint64_t planned, std::uint64_t bytes)>;
// Called once per checkpoint as soon as its outcome is known (writer thread).
using CheckpointFn = std::function<void(const CheckpointResult&)>;
// Called on run()'s thread when the writes are done, while the drain may still copy.
using WritesDoneFn = std::function<void(const Result&)>;

class Burst {
 public:
  Burst(Options opts, const Clock& clock, Pacer& pacer);
  ~Burst();
  Burst(const Burst&) = delete;
  Burst& operator=(const Burst&) = delete;

  void on_progress(ProgressFn fn) { progress_ = std::move(fn); }
  void on_checkpoint(CheckpointFn fn) { on_checkpoint_ = std::move(fn); }
  void on_writes_done(WritesDoneFn fn) { on_writes_done_ = std::move(fn); }

  // Writes everything; false with result.error set on an I/O error (ENOSPC
  // before the fill threshold included). What was created is in the manifest.
  bool run(Result& result);

  // Bytes committed and not yet drained, now (thread-safe).
  std::uint64_t drain_backlog() const { return backlog_.load(); }

 private:
  struct Impl;
  Options opts_;
  const Clock& clock_;
  Pacer& pacer_;
  ProgressFn progress_;
  CheckpointFn on_checkpoint_;
  WritesDoneFn on_writes_done_;
  std::atomic<std::uint64_t> backlog_{0};
  Impl* impl_ = nullptr;
  friend struct Impl;
};

// Used fraction of the file system holding `path` as df(1) computes Use%:
// used ÷ (used + available to unprivileged users). nullopt on error.
std::optional<double> fill_level(const std::string& path, std::string* error = nullptr);

// What --cleanup did in one directory.
struct CleanupReport {
  std::uint64_t removed = 0;  // paths removed
  std::uint64_t kept = 0;     // burst's, but changed since or holding others' files: kept
  std::uint64_t refused =
      0;  // listed, but not a path below the directory reached without a symlink
  std::uint64_t outside = 0;          // the event log, created outside the directory: left in place
  bool trusted = true;                // false: the manifest failed a check and nothing was deleted
  std::vector<std::string> problems;  // one line per entry kept or refused (what, why)
  std::vector<std::string> notes;     // what was left on purpose
};

// Removes what the manifest in `dir` lists, and nothing else: only when the
// manifest is the invoking user's and every line carries its digest under
// the key at `key_file` ("" = default_key_file()); only paths below `dir`,
// looked up beneath its descriptor without following a symlink; only files
// whose (device, inode, ctime) and directories whose (device, inode) are
// still what burst recorded, files first, then directories when empty; last
// the manifest. false when something listed is left (kept, refused, or the
// manifest untrusted); `report` says what and why.
bool cleanup(const std::string& dir, const std::string& key_file, CleanupReport* report);

}  // namespace ckptmon::burst
