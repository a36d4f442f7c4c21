#pragma once
// inotify for collectors on local file systems: jobs add watches on the
// directories they read, each on behalf of a target (a tier, a log glob); the
// event loop drains the descriptor and runs the targets whose directories
// changed early (serve/wake_watch). Network file systems get no watches:
// inotify sees nothing other clients write there, so they are polled.
// Thread-safe.

#include <sys/inotify.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

namespace ckptmon {

class DirWatcher {
 public:
  // Directory entries created, deleted, renamed or finished writing.
  static constexpr std::uint32_t kEntryChanges =
      IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF;

  explicit DirWatcher(std::uint32_t events = kEntryChanges,
                      std::size_t max_watches_per_target = 8192);
  ~DirWatcher();
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

  // The inotify descriptor (non-blocking), or -1 when inotify is unavailable.
  int fd() const { return fd_; }

  // Watch `dir` on behalf of `target`. False when inotify is unavailable, the
  // target's cap is reached, or `dir` is gone or a symlink.
  bool watch(const std::string& target, const std::string& dir);
  // Watch exactly `dirs` for `target`: new ones added, others dropped.
  void set(const std::string& target, const std::set<std::string>& dirs);
  // Drops every watch of `target` (a tier removed or re-pointed by a reload).
  void forget(const std::string& target);
  // Drops the targets not in `keep`.
  void retain(const std::set<std::string>& keep);

  // Loop thread: reads every pending event; returns the targets they concern.
  std::set<std::string> drain();

  std::size_t watches(const std::string& target) const;

 private:
  struct Watch {
    std::string dir;
    std::set<std::string> targets;
  };
  void unwatch_locked(const std::string& target, int wd);

  int fd_;
  std::uint32_t events_;
  std::size_t max_per_target_;
  mutable std::mutex mu_;
  std::unordered_map<int, Watch> by_wd_;
  std::map<std::string, std::set<int>> of_target_;
};

// True for file systems whose changes by other clients inotify cannot see
// (NFS, Lustre, GPFS, CIFS/SMB, Ceph, FUSE, 9p, BeeGFS...), from fstatfs' f_type.
bool is_network_fs(long f_type);

}  // namespace ckptmon
