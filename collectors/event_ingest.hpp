#pragma once
// The ingest adapter, the tailer's third part: parsed lines become event
// aggregates (model/events.hpp) and, with the read position they were read
// up to, one journal batch (collectors/event_journal.hpp). Exactly once
// hinges on EventIngest: a batch applies only on top of the position it was
// read from, and nothing in memory moves until the journal has committed it.

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
#include <string_view>
#include <vector>

#include "collectors/event_journal.hpp"
#include "events/parser.hpp"
#include "model/events.hpp"

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
  // What later batches refuse (the configured tiers, global.max_jobs_per_tier).
  void set_limits(EventLimits limits);
  // The catalog as of the last commit; copied only when something changed.
  std::shared_ptr<const EventCatalog> snapshot();

  std::uint64_t commits() const { return commits_.load(); }

 private:
  // Both run on the journal's thread with mu_ held.
  void load_from(EventJournal::Writer& w);
  // One log line per (reason, tier) the first time, for at most kLoggedRefusals of them.
  void log_refusals(const std::vector<EventRefusal>& refusals);
  std::int64_t apply(EventJournal::Writer& w, const CursorRow* from, const CursorRow& to,
                     std::span<const LineResult> lines, std::string_view tier,
                     std::optional<FileChange> change, std::uint64_t consumed);

  static constexpr std::size_t kLoggedRefusals = 64;

  std::shared_ptr<EventJournal> journal_;
  std::size_t steps_per_job_;
  mutable std::mutex mu_;
  // Unset until set_limits: tools and tests that never call it refuse nothing.
  std::optional<EventLimits> limits_;
  std::set<std::pair<RejectReason, std::string>> logged_refusals_;
  bool loaded_ = false;
  EventCatalog catalog_;
  std::map<FileId, CursorRow> cursors_;
  std::shared_ptr<const EventCatalog> snapshot_;
  std::atomic<double> last_gc_{0};
  std::atomic<std::uint64_t> commits_{0};
};

}  // namespace ckptmon
