#include "collectors/dir_watcher.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>

namespace ckptmon {

DirWatcher::DirWatcher(std::uint32_t events, std::size_t max_watches_per_target)
    : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)),
      events_(events),
      max_per_target_(max_watches_per_target) {}

DirWatcher::~DirWatcher() {
  if (fd_ >= 0) ::close(fd_);
}

bool DirWatcher::watch(const std::string& target, const std::string& dir) {
  if (fd_ < 0) return false;
  {
    std::lock_guard lock(mu_);
    if (of_target_[target].size() >= max_per_target_) return false;
  }
  // IN_ONLYDIR|IN_DONT_FOLLOW: never watch through a symlink. The kernel
  // gives the same descriptor for the same directory, whoever asks.
  const int wd = ::inotify_add_watch(fd_, dir.c_str(), events_ | IN_ONLYDIR | IN_DONT_FOLLOW);
  if (wd < 0) return false;
  std::lock_guard lock(mu_);
  Watch& w = by_wd_[wd];
  w.dir = dir;
  w.targets.insert(target);
  of_target_[target].insert(wd);
  return true;
}

void DirWatcher::set(const std::string& target, const std::set<std::string>& dirs) {
  std::set<std::string> have;
  {
    std::lock_guard lock(mu_);
    auto it = of_target_.find(target);
    if (it != of_target_.end()) {
      for (int wd : std::set<int>(it->second)) {
        const std::string& dir = by_wd_[wd].dir;
        if (dirs.contains(dir)) {
          have.insert(dir);
        } else {
          unwatch_locked(target, wd);
        }
      }
    }
  }
  for (const auto& d : dirs) {
    if (!have.contains(d)) watch(target, d);
  }
}

void DirWatcher::unwatch_locked(const std::string& target, int wd) {
  auto w = by_wd_.find(wd);
  if (w != by_wd_.end()) {
    w->second.targets.erase(target);
    if (w->second.targets.empty()) {
      ::inotify_rm_watch(fd_, wd);
      by_wd_.erase(w);
    }
  }
  auto t = of_target_.find(target);
  if (t != of_target_.end()) {
    t->second.erase(wd);
    if (t->second.empty()) of_target_.erase(t);
  }
}

void DirWatcher::forget(const std::string& target) {
  std::lock_guard lock(mu_);
  auto it = of_target_.find(target);
  if (it == of_target_.end()) return;
  for (int wd : std::set<int>(it->second)) unwatch_locked(target, wd);
}

void DirWatcher::retain(const std::set<std::string>& keep) {
  std::set<std::string> drop;
  {
    std::lock_guard lock(mu_);
    for (const auto& [t, _] : of_target_) {
      if (!keep.contains(t)) drop.insert(t);
    }
  }
  for (const auto& t : drop) forget(t);
}

std::set<std::string> DirWatcher::drain() {
  std::set<std::string> targets;
  if (fd_ < 0) return targets;
  alignas(struct inotify_event) std::array<char, std::size_t{64} * 1024> buf{};
  while (true) {
    const ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n <= 0) break;  // EAGAIN: nothing more for now
    std::lock_guard lock(mu_);
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const struct inotify_event*>(buf.data() + off);
      off += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
      auto it = by_wd_.find(ev->wd);
      if (it == by_wd_.end()) continue;
      targets.insert(it->second.targets.begin(), it->second.targets.end());
      if (ev->mask & IN_IGNORED) {
        // The kernel dropped the watch (directory deleted): forget it.
        for (const auto& t : it->second.targets) {
          auto ot = of_target_.find(t);
          if (ot == of_target_.end()) continue;
          ot->second.erase(ev->wd);
          if (ot->second.empty()) of_target_.erase(ot);
        }
        by_wd_.erase(it);
      }
    }
  }
  return targets;
}

std::size_t DirWatcher::watches(const std::string& target) const {
  std::lock_guard lock(mu_);
  auto it = of_target_.find(target);
  return it == of_target_.end() ? 0 : it->second.size();
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
