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

#include "collectors/file_identity.hpp"
#include "model/events.hpp"

namespace ckptmon {

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
