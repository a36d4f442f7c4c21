#pragma once
// manifest_tail: tails the checkpoint event logs the `manifests` globs match
// (docs/events.md) and folds their events into the event catalog, exactly
// once across rotation, truncation, deletion, inode reuse and restarts.
//
// Split the way mature tailers are (Vector's file source: fingerprinter,
// watcher/reader, checkpointer):
//   collectors/file_identity.hpp  which file a log is, and whether it is still the one
//                                 its read position was recorded on;
//   collectors/log_tailer.hpp     one glob's logs: expand, open, read, follow rotation;
//   collectors/event_ingest.hpp   parsed lines -> event aggregates, one batch per read;
//   collectors/event_journal.hpp  the port the batch and its position are committed
//                                 through, in one transaction (store/event_journal.hpp);
// and this file, the collector: one tailer per glob, wakes from inotify.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/dir_watcher.hpp"
#include "collectors/event_ingest.hpp"
#include "collectors/event_journal.hpp"
#include "collectors/log_tailer.hpp"

namespace ckptmon {

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
  Job prepare(const std::string& target, const State& state) override;
  int wake_fd() const override;
  std::set<std::string> on_wake() override;

 private:
  std::shared_ptr<const Clock> clock_;
  std::shared_ptr<EventIngest> ingest_;
  // Descriptors of event logs, shared by every glob's tailer.
  std::shared_ptr<LogFdBudget> fd_budget_ =
      std::make_shared<LogFdBudget>(LogFdBudget::default_cap());
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

}  // namespace ckptmon
