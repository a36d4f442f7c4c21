#include "collectors/dir_watcher.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace ckptmon {

DirWatcher::DirWatcher(std::size_t max_watches_per_tier)
    : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)), max_per_tier_(max_watches_per_tier) {}

DirWatcher::~DirWatcher() {
  if (fd_ >= 0) ::close(fd_);
}

bool DirWatcher::watch(const std::string& tier, const std::string& path) {
  if (fd_ < 0) return false;
  {
    std::lock_guard lock(mu_);
    if (count_[tier] >= max_per_tier_) return false;
  }
  // IN_ONLYDIR|IN_DONT_FOLLOW: never watch through a symlink.
  const int wd = ::inotify_add_watch(
      fd_, path.c_str(),
      IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF |
          IN_ONLYDIR | IN_DONT_FOLLOW);
  if (wd < 0) return false;
  std::lock_guard lock(mu_);
  auto [it, inserted] = tier_of_.emplace(wd, tier);
  if (inserted) {
    ++count_[tier];
  } else if (it->second != tier) {
    // The same directory under two tiers (nested roots): the last scan wins.
    --count_[it->second];
    it->second = tier;
    ++count_[tier];
  }
  return true;
}

std::set<std::string> DirWatcher::drain() {
  std::set<std::string> tiers;
  if (fd_ < 0) return tiers;
  alignas(struct inotify_event) std::array<char, 64 * 1024> buf{};
  while (true) {
    const ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n <= 0) break;  // EAGAIN: nothing more for now
    std::lock_guard lock(mu_);
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const struct inotify_event*>(buf.data() + off);
      off += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
      auto it = tier_of_.find(ev->wd);
      if (it == tier_of_.end()) continue;
      if (ev->mask & IN_IGNORED) {
        // The kernel dropped the watch (directory deleted): forget it.
        --count_[it->second];
        tiers.insert(it->second);
        tier_of_.erase(it);
        continue;
      }
      tiers.insert(it->second);
    }
  }
  return tiers;
}

void DirWatcher::forget_tier(const std::string& tier) {
  std::lock_guard lock(mu_);
  for (auto it = tier_of_.begin(); it != tier_of_.end();) {
    if (it->second == tier) {
      ::inotify_rm_watch(fd_, it->first);
      it = tier_of_.erase(it);
    } else {
      ++it;
    }
  }
  count_.erase(tier);
}

std::size_t DirWatcher::watches(const std::string& tier) const {
  std::lock_guard lock(mu_);
  auto it = count_.find(tier);
  return it == count_.end() ? 0 : it->second;
}

bool is_network_fs(long f_type) {
  switch (static_cast<unsigned long>(f_type) & 0xffffffffUL) {
    case 0x6969UL:      // NFS
    case 0x0BD00BD0UL:  // Lustre
    case 0x47504653UL:  // GPFS
    case 0xFF534D42UL:  // CIFS
    case 0xFE534D42UL:  // SMB2
    case 0x517BUL:      // SMB
    case 0x00C36400UL:  // Ceph
    case 0x65735546UL:  // FUSE (sshfs, gcsfuse, blobfuse, ...)
    case 0x01021997UL:  // 9p
    case 0x19830326UL:  // BeeGFS
    case 0xAAD7AAEAUL:  // PanFS
      return true;
    default:
      return false;
  }
}

}  // namespace ckptmon
