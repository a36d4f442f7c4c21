#pragma once
// The audit log (`audit:` in the configuration, docs/operations.md "Audit
// log"): an opt-in file of JSON lines, one per security-relevant event:
// access findings opened and closed, configuration loads and who asked for
// them, and (opt-in again) every HTTP request. Never a secret, never a query
// string: the records are built from named fields only.
//
// Writing never waits on the disk where it is asked for: record() appends
// to a bounded queue in memory and a thread of its own writes batches,
// fsyncs once per batch and rotates by size. A full or failing disk is
// counted (Stats) and logged once per failing spell; the lines of a failed
// batch are counted as dropped, and the next line written starts on a line
// of its own even when the failed write left half a line behind.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/access.hpp"
#include "model/settings.hpp"
#include "util/clock.hpp"

namespace ckptmon {

class AuditLog {
 public:
  struct Stats {
    std::uint64_t written = 0;              // records written (and fsynced where the file can be)
    std::uint64_t dropped_queue_full = 0;   // refused: the queue held max_queued_bytes already
    std::uint64_t dropped_write_error = 0;  // lost with a write that failed (disk full, EIO...)
    std::uint64_t write_errors = 0;         // open, write or fsync calls that failed
    std::uint64_t rotations = 0;
  };

  // At most `max_queued_bytes` of records wait for the writer; more are dropped.
  explicit AuditLog(std::shared_ptr<const Clock> clock,
                    std::size_t max_queued_bytes = std::size_t{8} * 1024 * 1024);
  // Writes what is queued, then ends the writer.
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Any thread. A new file is opened by the writer before its next batch.
  void configure(const AuditConfig& c);
  bool enabled() const;
  bool http_access() const;

  // One line {"ts": RFC 3339, "event": event, ...fields}. Any thread; waits
  // for nothing but the queue's lock. Nothing is queued while disabled.
  // Strings that are not UTF-8 are written with U+FFFD in place of the bad
  // bytes (pass display_name() of file names to keep them readable).
  void record(std::string_view event, nlohmann::json fields);
  // Waits until every record queued before the call was written or given up on.
  void flush();
  Stats stats() const;

 private:
  void run();
  // The writer's side: (re)opens `path` when needed; false when it cannot.
  bool ensure_open(const std::string& path);
  void close_file();
  void rotate(const AuditConfig& cfg);
  void failed(const std::string& what, int err);

  std::shared_ptr<const Clock> clock_;
  const std::size_t max_queued_bytes_;

  mutable std::mutex mu_;
  std::condition_variable wake_;      // the writer: work or stop
  std::condition_variable progress_;  // flush(): done_seq_ moved
  AuditConfig cfg_;
  std::vector<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  std::uint64_t queued_seq_ = 0;  // records accepted so far
  std::uint64_t done_seq_ = 0;    // ... of which the writer is done with
  bool stop_ = false;
  Stats stats_;

  // The writer thread's own.
  int fd_ = -1;
  std::string open_path_;
  bool regular_ = false;  // rotated and fsynced only when a regular file
  bool partial_ = false;  // a failed write left part of a line behind
  bool failing_ = false;  // logged once per spell
  std::thread writer_;
};

// Which access findings appeared and which went away, tier by tier, so the
// audit log says each once. Loop thread.
class FindingsAudit {
 public:
  // At most this many opened or closed records per tier and update; the rest
  // are summed up in one `findings_truncated` record.
  static constexpr std::size_t kMaxRecordsPerUpdate = 1000;

  // `findings`: each tier's latest list; a tier whose list is null (not
  // walked to the end yet) changes nothing, since unknown is not closed. A
  // tier no longer configured has its findings closed (reason
  // "tier_removed"). Lists seen before (the same pointer) cost nothing.
  void update(
      const std::map<std::string, std::shared_ptr<const std::vector<AccessFinding>>>& findings,
      AuditLog& log);

 private:
  struct Seen {
    std::shared_ptr<const std::vector<AccessFinding>> list;  // kept: `open` points into it
    std::map<std::string, const AccessFinding*> open;        // by key (kind, path, job)
  };
  std::map<std::string, Seen> tiers_;
};

}  // namespace ckptmon
