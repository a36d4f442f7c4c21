#pragma once
// inotify for tiers on local file systems: scan jobs add watches on the
// directories they listed, the event loop reads the events and asks for a
// rescan of the tier that changed. Network file systems get no watches
// (inotify sees nothing other clients write there): they are polled.
// Thread-safe.

#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

namespace ckptmon {

class DirWatcher {
 public:
  explicit DirWatcher(std::size_t max_watches_per_tier = 8192);
  ~DirWatcher();
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

  // The inotify descriptor (non-blocking), or -1 when inotify is unavailable.
  int fd() const { return fd_; }

  // Worker thread: watch `path` on behalf of `tier`. False when inotify is
  // unavailable, the per-tier cap is reached or the path is gone.
  bool watch(const std::string& tier, const std::string& path);

  // Loop thread: reads every pending event; returns the tiers they concern.
  std::set<std::string> drain();

  // Drops every watch of `tier` (removed or re-pointed by a reload).
  void forget_tier(const std::string& tier);

  std::size_t watches(const std::string& tier) const;

 private:
  int fd_;
  std::size_t max_per_tier_;
  mutable std::mutex mu_;
  std::unordered_map<int, std::string> tier_of_;  // watch descriptor -> tier
  std::map<std::string, std::size_t> count_;
};

// True for file systems whose changes by other clients inotify cannot see
// (NFS, Lustre, GPFS, CIFS/SMB, Ceph, FUSE, 9p, BeeGFS...), from fstatfs' f_type.
bool is_network_fs(long f_type);

}  // namespace ckptmon
