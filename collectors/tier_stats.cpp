#include "collectors/tier_stats.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "collectors/encryption.hpp"
#include "collectors/mountinfo.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

constexpr std::size_t kMaxMountinfoBytes = std::size_t{64} * 1024 * 1024;

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + ckptmon::errno_text(err);
}

bool read_small_file(const std::string& path, std::string& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = errno_text(("cannot read " + path).c_str(), errno);
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  out = std::move(text).str();
  if (out.size() > kMaxMountinfoBytes) {
    error = path + " is larger than 64 MiB";
    return false;
  }
  return true;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The mount of an open tier root (`st` its fstat), or null with `error`.
std::optional<MountInfo> mount_of(const std::string& path, const struct stat& st,
                                  const std::string& proc_path, std::string& error) {
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  const std::string real_path = real ? std::string(real.get()) : path;
  std::string text;
  if (!read_small_file(proc_path + "/self/mountinfo", text, error)) return std::nullopt;
  const auto mounts = parse_mountinfo(text);
  const MountInfo* m =
      find_mount(mounts, real_path, std::make_pair(major(st.st_dev), minor(st.st_dev)));
  if (m == nullptr) return MountInfo{};
  return *m;
}

}  // namespace

TierMount resolve_tier_mount(const std::string& path, const std::string& proc_path) {
  TierMount r;
  Fd dir;
  dir.fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd < 0) {
    r.error = errno_text(("open " + path).c_str(), errno);
    return r;
  }
  struct stat st {};
  if (::fstat(dir.fd, &st) != 0) {
    r.error = errno_text("stat", errno);
    return r;
  }
  auto m = mount_of(path, st, proc_path, r.error);
  if (!m) return r;
  if (m->mount_point.empty()) {
    r.error = "no mount in " + proc_path + "/self/mountinfo holds " + path;
    return r;
  }
  r.mount = std::move(*m);
  r.ok = true;
  return r;
}

TierProbe probe_tier(const std::string& path, const std::string& proc_path,
                     const std::string& sys_path) {
  TierProbe r;
  Fd dir;
  dir.fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      r.error = "path does not exist";
    } else if (err == EACCES) {
      r.error = "permission denied";
    } else if (err == ENOTDIR) {
      r.error = "path is not a directory";
    } else {
      r.error = errno_text("open", err);
    }
    return r;
  }
  struct statvfs vfs {};
  if (::fstatvfs(dir.fd, &vfs) != 0) {
    r.error = errno_text("statvfs", errno);
    return r;
  }
  struct stat st {};
  if (::fstat(dir.fd, &st) != 0) {
    r.error = errno_text("stat", errno);
    return r;
  }
  // POSIX: block counts are in units of f_frsize (f_bsize is the preferred I/O size).
  const double unit = static_cast<double>(vfs.f_frsize != 0 ? vfs.f_frsize : vfs.f_bsize);
  r.stats.size_bytes = static_cast<double>(vfs.f_blocks) * unit;
  r.stats.free_bytes = static_cast<double>(vfs.f_bfree) * unit;
  r.stats.avail_bytes = static_cast<double>(vfs.f_bavail) * unit;
  r.stats.files = static_cast<double>(vfs.f_files);
  r.stats.files_free = static_cast<double>(vfs.f_ffree);

  std::string error;
  const auto found = mount_of(path, st, proc_path, error);
  if (!found) {
    r.error = error;
    return r;
  }
  const MountInfo* m = found->mount_point.empty() ? nullptr : &*found;
  if (m != nullptr) {
    r.stats.mountpoint = m->mount_point;
    r.stats.fstype = m->fstype;
    r.stats.device = m->source;
    // The superblock says whether the file system itself is writable; the
    // per-mount flags (and statvfs' ST_RDONLY) only describe this view of it,
    // which is read-only whenever ckptmon is given a read-only bind mount.
    r.stats.readonly = has_option(m->super_options, "ro");
  }
  const EncryptionDetection enc = detect_encryption(dir.fd, m, sys_path);
  r.stats.encryption_at_rest = enc.at_rest;
  r.stats.encryption_in_transit = enc.in_transit;
  r.stats.encryption_detail = enc.detail;
  r.ok = true;
  return r;
}

void TierStatsCollector::configure(const Config& cfg) {
  tiers_ = cfg.tiers;
  proc_path_ = cfg.global.proc_path;
  sys_path_ = cfg.global.sys_path;
  timeout_ = cfg.global.probe_timeout;
  interval_ = cfg.global.scan_interval;
}

std::vector<std::string> TierStatsCollector::targets() const {
  std::vector<std::string> out;
  out.reserve(tiers_.size());
  for (const auto& t : tiers_) out.push_back(t.name);
  return out;
}

Job TierStatsCollector::prepare(const std::string& target, const State& /*state*/) {
  std::string path;
  std::uint64_t generation = 0;
  for (const auto& t : tiers_) {
    if (t.name == target) {
      path = t.path;
      generation = t.generation;
    }
  }
  return
      [path, generation, proc = proc_path_, sys = sys_path_, target, clock = clock_]() -> Update {
        TierProbe probe = probe_tier(path, proc, sys);
        const double now = clock->now();
        return [probe = std::move(probe), generation, target, now](State& state) {
          // The tier may have been removed or re-pointed by a reload meanwhile.
          if (!state.current_tier("tier_stats", target, generation)) return;
          auto it = state.tiers.find(target);
          TierState& t = it->second;
          t.last_probe = now;
          t.not_probed_since = 0;
          // The walk found another tree where the tier was (its mount gone, its
          // symlink re-pointed): down, and the figures of that file system are
          // not the tier's.
          const std::string* changed = nullptr;
          if (auto c = state.catalogs.find(target);
              c != state.catalogs.end() && !c->second->root_changed.empty()) {
            changed = &c->second->root_changed;
          }
          t.up = probe.ok && changed == nullptr;
          if (t.up) {
            t.stats = probe.stats;
            t.has_stats = true;
            t.last_success = now;
            t.down_reason.clear();
          } else {
            t.down_reason = probe.ok ? *changed : probe.error;
          }
        };
      };
}

void TierStatsCollector::on_deadline(const std::string& target, State& state) {
  auto it = state.tiers.find(target);
  if (it == state.tiers.end()) return;
  it->second.up = false;
  it->second.last_probe = clock_->now();
  it->second.not_probed_since = 0;
  it->second.down_reason =
      "statfs did not return within " + format_duration(timeout_) + " (hung mount?)";
}

void TierStatsCollector::on_failure(const std::string& target, const std::string& error,
                                    State& state) {
  auto it = state.tiers.find(target);
  if (it == state.tiers.end()) return;
  it->second.up = false;
  it->second.last_probe = clock_->now();
  it->second.not_probed_since = 0;
  it->second.down_reason = error;
}

void TierStatsCollector::on_not_started(const std::string& target, const std::string& why,
                                        State& state) {
  auto it = state.tiers.find(target);
  if (it == state.tiers.end()) return;
  TierState& t = it->second;
  if (t.not_probed_since <= 0) t.not_probed_since = clock_->now();
  if (!t.up) return;
  t.up = false;
  t.down_reason = why;
}

}  // namespace ckptmon
