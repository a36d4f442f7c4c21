#pragma once
// tree_scan: walks every tier, finds its jobs, recognises checkpoint layouts
// and produces the tier's catalog. Incremental: committed checkpoints whose
// directories' mtimes did not change are not listed again.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/dir_watcher.hpp"
#include "collectors/layouts/layout.hpp"
#include "collectors/tree_walk.hpp"
#include "model/catalog.hpp"

namespace ckptmon {

// Scans one tier; keeps what the next scan needs to be incremental. One scan
// at a time (not thread-safe; the runner never runs a target twice at once).
class TierScanner {
 public:
  // `keep_files`: fill Checkpoint::shard_files (tiers that drain or are drained to).
  TierScanner(TierConfig cfg, bool keep_files);
  // Blocking: walks the tier. `now` decides in_progress versus partial. With
  // a watcher, the directories listed are watched when the tier's watch mode
  // (auto: by file-system type) says inotify. `records`: the catalog the
  // earlier walks' outcomes were merged into (merge_scan); a committed
  // checkpoint whose directories did not change is reused from it rather
  // than listed again. Without it every checkpoint is listed.
  ScanOutcome scan(double now, DirWatcher* watcher = nullptr,
                   std::shared_ptr<const TierCatalog> records = nullptr);
  const TierConfig& config() const { return cfg_; }
  bool keep_files() const { return keep_files_; }
  // A walk in which no metadata call returns for this long is given up (the
  // tier's catalog stays stale). The collector sets it to scan_timeout.
  // Thread-safe (a reload sets it while a walk may run; the next walk uses it).
  void set_stall_timeout(std::chrono::milliseconds t) {
    std::lock_guard lock(slots_mu_);
    stall_timeout_ = t;
  }
  // Where procfs is (mountinfo tells the file-system type without a call on the tier).
  void set_proc_path(std::string p) {
    std::lock_guard lock(slots_mu_);
    proc_path_ = std::move(p);
  }
  // The clock whose monotonic reading the stall timeout counts on (default:
  // the real one). Thread-safe like set_stall_timeout.
  void set_clock(std::shared_ptr<const Clock> clock) {
    std::lock_guard lock(slots_mu_);
    clock_ = std::move(clock);
  }
  // Tests: called before every metadata call (see WalkCallHook).
  void set_call_hook(WalkCallHook hook) {
    std::lock_guard lock(slots_mu_);
    hook_ = std::move(hook);
  }
  // Tests: makes metadata calls fail with an errno (see WalkFaultHook).
  void set_fault_hook(WalkFaultHook fault) {
    std::lock_guard lock(slots_mu_);
    fault_ = std::move(fault);
  }
  // The live figures of this tier's metadata calls (null before the first walk).
  std::shared_ptr<WalkLive> live() const;
  // The concurrency the walks use: walk_concurrency, or from the file-system type.
  static int default_concurrency(const std::string& fstype);

 private:
  // The job tier-relative `child` (named `name`, `depth` levels down) is the
  // root of, by the tier's jobs rule; "" when it is none.
  std::string job_named(const std::string& child, const std::string& name, int depth) const;
  std::vector<std::pair<std::string, std::string>> find_jobs(TreeWalker& walker,
                                                             std::vector<UnreadableDir>& unreadable,
                                                             std::string* error);
  // Logs each directory that became unreadable or readable again since the
  // last complete walk: once per transition, not once per walk.
  void log_transitions(const std::vector<UnreadableDir>& now);
  bool owns_job(const std::string& job) const;

  // What the tier root was at the first walk that listed it: a root with
  // another identity is another tree (a mount gone, a symlink re-pointed).
  struct RootId {
    dev_t dev = 0;
    ino_t ino = 0;
    long f_type = 0;
    bool has_type = false;  // fstatfs answered
  };
  // Why `now` is not the tree `was` described ("" when it is).
  static std::string root_change(const RootId& was, const RootId& now);

  TierConfig cfg_;
  bool keep_files_;
  std::optional<RootId> root_id_;
  bool root_change_logged_ = false;
  bool root_had_jobs_ = false;  // the last walk found a job: root_id_ is held to
  GenericLayout generic_;
  WalkMemory memory_;
  std::map<std::string, int> unreadable_;  // path -> errno, of the last complete walk
  std::chrono::milliseconds stall_timeout_ = std::chrono::minutes(10);
  std::shared_ptr<const Clock> clock_ = std::make_shared<SystemClock>();
  std::string proc_path_ = "/proc";
  WalkCallHook hook_;
  WalkFaultHook fault_;
  // Guards slots_ (read by live() from the loop thread) and the settings
  // above (set by reloads while a walk may run; each walk copies them).
  mutable std::mutex slots_mu_;
  std::shared_ptr<WalkSlots> slots_;
};

// The job a directory belongs to, for shard: i/n splitting (FNV-1a 64).
std::uint64_t job_hash(std::string_view job);

class TreeScanCollector final : public Collector {
 public:
  explicit TreeScanCollector(std::shared_ptr<const Clock> clock)
      : clock_(std::move(clock)), watcher_(std::make_shared<DirWatcher>()) {}
  std::string_view name() const override { return "tree_scan"; }
  void configure(const Config& cfg) override;
  Duration interval() const override { return interval_; }
  Duration deadline() const override { return deadline_; }
  std::vector<std::string> targets() const override;
  Job prepare(const std::string& target, const State& state) override;
  void on_deadline(const std::string& target, State& state) override;
  void on_failure(const std::string& target, const std::string& error, State& state) override;
  // inotify on the directories the walks of local tiers listed.
  int wake_fd() const override { return watcher_->fd(); }
  std::set<std::string> on_wake() override { return watcher_->drain(); }

 private:
  std::shared_ptr<const Clock> clock_;
  std::shared_ptr<DirWatcher> watcher_;
  std::map<std::string, std::shared_ptr<TierScanner>> scanners_;
  Duration interval_{};
  Duration deadline_{};
};

}  // namespace ckptmon
