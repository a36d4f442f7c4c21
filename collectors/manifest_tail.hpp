#pragma once
// manifest_tail: tails the checkpoint event logs the `manifests` globs match
// (docs/events.md) and folds their events into the event catalog, exactly
// once across rotation, truncation, deletion, inode reuse and restarts.
//
// A log is known by (device, inode) plus a fingerprint of its first bytes;
// its read position is resumed only when the bytes just before it still hash
// the same. Every batch of lines is committed to the event journal
// (collectors/event_journal.hpp) in one transaction together with the new
// position, the aggregates derived from the lines and the totals, and only
// then is anything advanced in memory.

#include <array>
#include <atomic>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/dir_watcher.hpp"
#include "collectors/event_journal.hpp"
#include "events/parser.hpp"
#include "model/events.hpp"
#include "util/log.hpp"

namespace ckptmon {

// The event catalog, every log's committed read position, and the one
// transaction per batch; shared by the tailers of every glob. Batches are
// folded in and written on the journal's writer thread, holding mu_ there; so
// nothing may wait for the journal while holding mu_. Thread-safe.
class EventIngest {
 public:
  using CursorRow = ckptmon::CursorRow;

  EventIngest(std::shared_ptr<EventJournal> journal, std::size_t steps_per_job = kEventStepsPerJob);

  // Loads the catalog and the positions from the journal the first time
  // (blocks on the journal: worker threads only). Throws when it cannot.
  void ensure_loaded();

  std::optional<CursorRow> cursor(FileId id) const;
  // A position recorded for `path` with inode `ino` on another device number
  // (network file systems may get a new one when remounted).
  std::optional<CursorRow> cursor_by_path(const std::string& path, std::uint64_t ino) const;
  // Positions of logs that `glob` tails, gone or not.
  std::vector<CursorRow> cursors_of(const std::string& glob) const;

  // Commits one batch: `lines` (parsed from `from` up to `to`, `consumed`
  // bytes), `to` as the log's position and `change`, if any, in one
  // transaction. `from` is the position the caller started from (nullptr: the
  // log had none); when it is not the committed one (another reader moved
  // on) nothing happens and false is returned. When the transaction fails the
  // catalog is reloaded from the journal and the error rethrown.
  bool commit(const CursorRow* from, const CursorRow& to, std::span<const LineResult> lines,
              std::string_view tier, std::optional<FileChange> change, std::uint64_t consumed);
  // The same, done on the journal's thread while the caller goes on; `lines` must
  // stay valid until the future is ready. The future holds the number of
  // rejected lines in the batch, or -1 when it did not apply.
  std::future<std::int64_t> commit_async(std::optional<CursorRow> from, CursorRow to,
                                         std::span<const LineResult> lines, std::string tier,
                                         std::optional<FileChange> change, std::uint64_t consumed);
  // Drops positions of logs not seen since `cutoff`.
  void forget_before(double cutoff);
  // Folds the kept checkpoints of jobs without events since `cutoff` (event
  // time) into their job figures, so finished jobs cost a few hundred bytes.
  // Returns how many checkpoints were folded.
  std::size_t fold_idle_jobs(double cutoff);
  // Both of the above for `forget_after` seconds before `now`, at most once an
  // hour however many tailers share this ingest.
  void collect_garbage(double now, double forget_after);

  void set_tail_status(const std::string& glob, TailStatus status);
  // The catalog as of the last commit; copied only when something changed.
  std::shared_ptr<const EventCatalog> snapshot();

  std::uint64_t commits() const { return commits_.load(); }

 private:
  // Both run on the journal's thread with mu_ held.
  void load_from(EventJournal::Writer& w);
  std::int64_t apply(EventJournal::Writer& w, const CursorRow* from, const CursorRow& to,
                     std::span<const LineResult> lines, std::string_view tier,
                     std::optional<FileChange> change, std::uint64_t consumed);

  std::shared_ptr<EventJournal> journal_;
  std::size_t steps_per_job_;
  mutable std::mutex mu_;
  bool loaded_ = false;
  EventCatalog catalog_;
  std::map<FileId, CursorRow> cursors_;
  std::shared_ptr<const EventCatalog> snapshot_;
  std::atomic<double> last_gc_{0};
  std::atomic<std::uint64_t> commits_{0};
};

struct TailerOptions {
  // One pread (and at most one transaction) reads this much; raised to hold
  // at least one line of max_line_bytes.
  std::size_t read_bytes = 4 * 1024 * 1024;
  std::size_t max_line_bytes = 64 * 1024;
  // Positions of logs not seen for this long are forgotten.
  double forget_after_seconds = 7 * 86400;
  // Tier name -> root, to name the log line of a shard path the verifier
  // will refuse (outside its tier).
  std::map<std::string, std::string> tier_roots;
};

// Bytes of a log's start that identify it, and bytes before the read
// position checked before resuming.
inline constexpr std::uint32_t kFingerprintBytes = 512;
inline constexpr std::uint32_t kCheckBytes = 64;

// Tails the logs of one glob. One pass at a time (the runner never runs a
// target twice at once); keeps the descriptors of the logs it tails between
// passes, so a log renamed away or deleted is still read to its end.
class LogTailer {
 public:
  LogTailer(ManifestConfig cfg, std::vector<std::string> earlier_globs, TailerOptions opts,
            std::shared_ptr<EventIngest> ingest, std::shared_ptr<const Clock> clock);
  ~LogTailer();
  LogTailer(const LogTailer&) = delete;
  LogTailer& operator=(const LogTailer&) = delete;

  struct Pass {
    std::set<std::string> dirs;  // directories to watch: those holding matches, and the glob's root
  };
  // Blocking: expands the glob and reads every log to its end.
  Pass run();
  // Any thread: makes a pass in progress return after its current batch
  // (shutdown; a catch-up can take minutes).
  void stop() { stopping_ = true; }

  const ManifestConfig& config() const { return cfg_; }
  const std::vector<std::string>& earlier_globs() const { return earlier_; }
  const TailerOptions& options() const { return opts_; }

 private:
  struct Open {
    int fd = -1;
    FileId id;
    std::string path;
    bool has_row = false;  // row is committed in the ingest
    EventIngest::CursorRow row;
    bool checked = false;  // the bytes before the position were verified in this pass
  };

  bool owned(const std::string& path) const;
  void refuse(const std::string& path, const std::string& reason, TailStatus& status);
  EventIngest::CursorRow fresh(FileId id, const std::string& path) const;
  void open_log(int fd, FileId id, const std::string& path, std::uint64_t size);
  void reset(Open& o, std::optional<FileChange> change);
  bool verify(int fd, const EventIngest::CursorRow& row, std::uint64_t size, bool* fingerprint_ok);
  // Reads `o` to its end (or to a stop); the file's size as last seen, if any.
  std::optional<std::uint64_t> drain(Open& o);
  void leave(Open& o, FileChange change);
  void recover_orphans(const std::set<FileId>& present);
  void log_rejected(const Open& o, const ChunkResult& chunk);
  void log_refused_paths(const Open& o, const ChunkResult& chunk);

  ManifestConfig cfg_;
  std::vector<std::string> earlier_;
  TailerOptions opts_;
  std::shared_ptr<EventIngest> ingest_;
  std::shared_ptr<const Clock> clock_;
  EventParser parser_;
  std::array<ChunkResult, 2> chunks_;  // one being committed, one being parsed
  std::vector<char> buf_;
  std::map<FileId, Open> open_;
  std::set<FileId> searched_;  // positions looked for after a restart
  double now_ = 0;
  std::string why_;  // what the last failed verify() found, for the log
  std::atomic<bool> stopping_{false};
  log::RateLimiter log_limit_{5, 60};
};

class ManifestTailCollector final : public Collector {
 public:
  // `journal` null: the collector tails nothing (tools without a state database).
  ManifestTailCollector(std::shared_ptr<const Clock> clock, std::shared_ptr<EventJournal> journal);
  ~ManifestTailCollector() override;
  std::string_view name() const override { return "manifest_tail"; }
  void configure(const Config& cfg) override;
  Duration interval() const override { return interval_; }
  Duration deadline() const override { return deadline_; }
  std::vector<std::string> targets() const override;
  Job prepare(const std::string& target) override;
  int wake_fd() const override;
  std::set<std::string> on_wake() override;

 private:
  std::shared_ptr<const Clock> clock_;
  std::shared_ptr<EventIngest> ingest_;
  // inotify on the directories that may hold a match, per glob.
  std::shared_ptr<DirWatcher> watches_;
  std::map<std::string, std::shared_ptr<LogTailer>> tailers_;  // by glob
  std::vector<std::string> order_;                             // globs in configuration order
  // Tailers a reload dropped: released by the next job, on a worker, because
  // closing a log on a network file system can block.
  std::vector<std::shared_ptr<LogTailer>> retired_;
  Duration interval_ = std::chrono::seconds(1);
  Duration deadline_ = std::chrono::minutes(5);
};

// The directory a glob is rooted in: its components before the first one
// with a wildcard ("/lustre/ckpt/*/events*.jsonl" -> "/lustre/ckpt").
std::string glob_root(const std::string& glob);

}  // namespace ckptmon
