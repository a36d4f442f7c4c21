#pragma once
// The event journal: what the event-log tailer needs persisted, declared here
// and implemented by the store (store/event_journal.hpp), which the daemon
// injects. A batch of derived rows is committed together with the log's new
// read position in ONE transaction; that is what makes reading exactly once
// survive a kill -9. Nothing here names the database.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "events/parser.hpp"
#include "model/events.hpp"

namespace ckptmon {

// A file as the kernel knows it.
struct FileId {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  auto operator<=>(const FileId&) const = default;
};

// One log's identity and resume point.
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

  FileId id() const { return FileId{dev, ino}; }
  bool operator==(const CursorRow&) const = default;
};

// What the journal holds: the event catalog and every log's position.
struct JournalState {
  EventCatalog catalog;
  std::vector<CursorRow> cursors;
};

class EventJournal {
 public:
  // Writes into the journal; valid only inside a task run by post(), on the
  // journal's writer thread. Every method throws when the write fails, and
  // then nothing of it was written.
  class Writer {
   public:
    virtual JournalState load() = 0;
    // In one transaction: forgets the position of `replaced` (when the batch
    // moves a log to another identity), records `to`, and writes the entries
    // `agg` touched as `cat` holds them now, with the totals and the shards
    // queued for the verifier.
    virtual void commit_batch(std::optional<FileId> replaced, const CursorRow& to,
                              const EventCatalog& cat, const EventAggregator& agg) = 0;
    // Forgets the positions of logs not seen since `cutoff` (unix seconds).
    virtual void forget_before(double cutoff) = 0;
    // In one transaction: deletes the `folded` steps and writes the job
    // figures of their jobs as `cat` holds them now.
    virtual void fold_steps(std::span<const StepKey> folded, const EventCatalog& cat) = 0;

   protected:
    ~Writer() = default;
  };

  virtual ~EventJournal() = default;
  // Runs `task` on the journal's writer thread, after every task posted
  // before it; returns at once. A task that throws is counted as a failed
  // write by the journal.
  virtual void post(std::function<void(Writer&)> task) = 0;
};

}  // namespace ckptmon
