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
};

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
  std::string why_;  // what the last failed same_content() found, for the log
  std::atomic<bool> stopping_{false};
  log::RateLimiter log_limit_{5, 60};
};

// The directory a glob is rooted in: its components before the first one
// with a wildcard ("/lustre/ckpt/*/events*.jsonl" -> "/lustre/ckpt").
std::string glob_root(const std::string& glob);

}  // namespace ckptmon
