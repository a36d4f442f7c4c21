#pragma once
// The tailer, the second of the tailer's parts (collectors/manifest_tail.hpp
// lists them): expands one glob, opens its logs, reads each to its end, and
// follows rotation, truncation, deletion and inode reuse. Which file a log is
// comes from collectors/file_identity.hpp; what was read goes, batch by batch
// with its read position, to the ingest (collectors/event_ingest.hpp), and
// nothing moves on here until that batch is committed.

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
#include "collectors/event_ingest.hpp"
#include "collectors/file_identity.hpp"
#include "events/parser.hpp"
#include "model/events.hpp"
#include "util/log.hpp"

namespace ckptmon {

// Descriptors of event logs held open at once, shared by the tailers of one
// collector. A log read to its end is closed when the budget runs low (over
// half spent) or once it has been quiet for close_quiet_after_seconds, and
// opened again, by its path and checked to be the same file (device and
// inode), when it grows. What the budget leaves is the daemon's: the HTTP
// server, the walkers, SQLite. Thread-safe.
class LogFdBudget {
 public:
  explicit LogFdBudget(std::size_t cap);
  // Half the process's RLIMIT_NOFILE (soft limit), at most 8192.
  static std::size_t default_cap();
  bool try_acquire();
  void release();
  std::size_t cap() const { return cap_; }
  std::size_t used() const { return used_.load(); }
  bool low() const { return used() * 2 > cap_; }

 private:
  const std::size_t cap_;
  std::atomic<std::size_t> used_{0};
};

struct TailerOptions {
  // One pread (and at most one transaction) reads this much; raised to hold
  // at least one line of max_line_bytes.
  std::size_t read_bytes = std::size_t{4} * 1024 * 1024;
  std::size_t max_line_bytes = std::size_t{64} * 1024;
  // Positions of logs not seen for this long are forgotten.
  double forget_after_seconds = 7 * 86400;
  // Tier name -> root, to name the log line of a shard path the verifier
  // will refuse (outside its tier).
  std::map<std::string, std::string> tier_roots;
  // Shared by the tailers of one collector; null: one of default_cap() of its own.
  std::shared_ptr<LogFdBudget> fd_budget;
  // A log read to its end with nothing new for this long is closed.
  double close_quiet_after_seconds = 60;
};

// Tails the logs of one glob. One pass at a time (the runner never runs a
// target twice at once); keeps the descriptors of the logs it tails between
// passes, so a log renamed away or deleted is still read to its end, except
// those of quiet logs (LogFdBudget): a quiet log renamed away and written to
// before the next pass loses what it got after it was closed.
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
    int fd = -1;  // -1: closed while quiet (LogFdBudget); opened again when it grows
    FileId id;
    std::string path;
    std::uint64_t listed_size = 0;  // st_size when the glob last listed it
    double quiet_since = 0;         // when its read position last moved (or it was opened)
    bool has_row = false;           // row is committed in the ingest
    EventIngest::CursorRow row;
    bool checked = false;  // the bytes before the position were verified in this pass
  };

  bool owned(const std::string& path) const;
  void refuse(const std::string& path, const std::string& reason, TailStatus& status);
  EventIngest::CursorRow fresh(FileId id, const std::string& path) const;
  void open_log(int fd, FileId id, const std::string& path, std::uint64_t size);
  // Opens a log the glob listed that is not open yet (a descriptor from the
  // budget); false when it is not one to read (refused) or already open.
  bool open_new(const std::string& path, TailStatus& status, std::set<FileId>& present);
  // Takes a descriptor again for a quiet log: 1 opened, 0 the budget is spent,
  // -1 its path names another file now.
  int reopen(Open& o);
  void close_fd(Open& o);
  void reset(Open& o, std::optional<FileChange> change);
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
  std::shared_ptr<LogFdBudget> budget_;
  std::set<FileId> searched_;  // positions looked for after a restart
  double now_ = 0;
  std::string why_;  // what the last failed same_content() found, for the log
  std::atomic<bool> stopping_{false};
  log::RateLimiter log_limit_{5, 60};
};

// The directory a glob is rooted in: its components before the first one
// with a wildcard ("/lustre/ckpt/*/events*.jsonl" -> "/lustre/ckpt").
std::string glob_root(const std::string& glob);

}  // namespace ckptmon
