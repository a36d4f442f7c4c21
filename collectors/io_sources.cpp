#include "collectors/io_sources.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "collectors/io_parsers.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

constexpr int kMaxSlaveDepth = 8;
constexpr std::size_t kMaxMembers = 256;

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    out.push_back(std::move(n));
    if (out.size() > 4096) break;
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// A sysfs name that can be joined into a path.
bool plain_name(std::string_view n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string_view::npos &&
         n.find('\0') == std::string_view::npos;
}

std::string uevent_value(const std::string& text, std::string_view key) {
  for (std::string_view line : split(text, '\n')) {
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == '=') {
      return std::string(line.substr(key.size() + 1));
    }
  }
  return {};
}

// The kernel name of the device a mount source names (/dev/sdb,
// /dev/mapper/vg-lv, /dev/disk/... are not followed: the name must be in sysfs).
std::string name_from_source(const std::string& sys, const std::string& source) {
  if (!source.starts_with("/dev/")) return {};
  if (source.starts_with("/dev/mapper/")) {
    const std::string want = source.substr(12);
    for (const std::string& n : list_dir(sys + "/class/block")) {
      if (!n.starts_with("dm-")) continue;
      std::string text, err;
      std::string name_file = sys;
      name_file.append("/class/block/").append(n).append("/dm/name");
      if (read_kernel_file(name_file, text, err, 4096) && std::string(trim(text)) == want) {
        return n;
      }
    }
    return {};
  }
  std::string base = source.substr(source.rfind('/') + 1);
  if (plain_name(base) && exists(sys + "/class/block/" + base)) return base;
  return {};
}

void members_of(const std::string& sys, const std::string& name, int depth,
                std::set<std::string>& out) {
  if (out.size() >= kMaxMembers) return;
  const auto slaves = list_dir(sys + "/class/block/" + name + "/slaves");
  if (slaves.empty() || depth >= kMaxSlaveDepth) {
    out.insert(name);
    return;
  }
  for (const std::string& s : slaves) {
    if (plain_name(s)) members_of(sys, s, depth + 1, out);
  }
}

}  // namespace

bool read_kernel_file(const std::string& path, std::string& out, std::string& error,
                      std::size_t max_bytes) {
  out.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    error = "cannot read " + path + ": " + errno_text(errno);
    return false;
  }
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = "cannot read " + path + ": " + errno_text(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      error = path + " is larger than " + std::to_string(max_bytes) + " bytes";
      ::close(fd);
      return false;
    }
  }
  ::close(fd);
  return true;
}

IoSource io_source_for(const MountInfo& m) {
  if (m.fstype == "nfs" || m.fstype == "nfs4") return IoSource::kNfs;
  if (m.fstype == "lustre") return IoSource::kLustre;
  if (m.fstype.starts_with("fuse") || m.fstype == "tmpfs" || m.fstype == "ramfs" ||
      m.fstype == "overlay" || m.fstype == "squashfs" || m.fstype == "devtmpfs") {
    return IoSource::kNone;
  }
  if (m.major != 0) return IoSource::kBlock;
  if (m.source.starts_with("/dev/")) return IoSource::kBlock;  // btrfs: anonymous 0:N
  return IoSource::kNone;
}

namespace {

// The kernel name of the block device `major:minor` (or of `source`), "" with
// `error` when sysfs does not have it.
std::string block_name(const std::string& sys, unsigned major, unsigned minor,
                       const std::string& source, std::string& error) {
  std::string name;
  const std::string dev = std::to_string(major) + ":" + std::to_string(minor);
  if (major != 0) {
    std::string text, err;
    if (read_kernel_file(sys + "/dev/block/" + dev + "/uevent", text, err, 65536)) {
      name = uevent_value(text, "DEVNAME");
    }
  }
  if (name.empty()) name = name_from_source(sys, source);
  if (name.empty() || !plain_name(name)) {
    error = "no block device " + dev + " (" + source + ") in " + sys + "/dev/block";
    return {};
  }
  return name;
}

void stack_of(const std::string& sys, const std::string& name, int depth,
              std::set<std::string>& out) {
  if (out.size() >= kMaxMembers || !out.insert(name).second || depth >= kMaxSlaveDepth) return;
  std::string slaves = sys;
  slaves.append("/class/block/").append(name).append("/slaves");
  for (const std::string& s : list_dir(slaves)) {
    if (plain_name(s)) stack_of(sys, s, depth + 1, out);
  }
}

}  // namespace

std::vector<std::string> block_members(const std::string& sys, unsigned major, unsigned minor,
                                       const std::string& source, std::string& error) {
  const std::string name = block_name(sys, major, minor, source, error);
  if (name.empty()) return {};
  std::set<std::string> members;
  members_of(sys, name, 0, members);
  return {members.begin(), members.end()};
}

std::vector<std::string> block_stack(const std::string& sys, unsigned major, unsigned minor,
                                     const std::string& source, std::string& error) {
  const std::string name = block_name(sys, major, minor, source, error);
  if (name.empty()) return {};
  std::set<std::string> stack;
  stack_of(sys, name, 0, stack);
  return {stack.begin(), stack.end()};
}

SourceRead read_block_source(const std::string& proc, const std::string& sys, const MountInfo& m) {
  SourceRead r;
  r.devices = block_members(sys, m.major, m.minor, m.source, r.error);
  if (r.devices.empty()) return r;
  std::string text;
  if (!read_kernel_file(proc + "/diskstats", text, r.error)) return r;
  const DiskStatsParse p = parse_diskstats(text);
  r.has_device_times = true;
  for (const std::string& d : r.devices) {
    const DiskStatsLine* line = nullptr;
    for (const auto& l : p.lines) {
      if (l.name == d) line = &l;
    }
    if (line == nullptr) {
      r.error.clear();
      r.error.append("block device ").append(d).append(" is not in ").append(proc);
      r.error.append("/diskstats");
      if (p.bad_lines > 0) {
        r.error.append(" (").append(std::to_string(p.bad_lines)).append(" lines rejected, first: ");
        r.error.append(p.first_error).append(")");
      }
      return r;
    }
    r.raw.read_bytes += static_cast<double>(line->sectors_read) * 512;
    r.raw.written_bytes += static_cast<double>(line->sectors_written) * 512;
    if (line->io_ms && line->weighted_io_ms && line->in_flight) {
      r.raw.device_busy_seconds += static_cast<double>(*line->io_ms) / 1000;
      r.raw.device_weighted_seconds += static_cast<double>(*line->weighted_io_ms) / 1000;
      r.device_in_flight += static_cast<double>(*line->in_flight);
    } else {
      r.has_device_times = false;
    }
  }
  if (!r.has_device_times) {
    r.raw.device_busy_seconds = r.raw.device_weighted_seconds = r.device_in_flight = 0;
  }
  r.ok = true;
  return r;
}

SourceRead read_nfs_source(const std::string& proc, const MountInfo& m) {
  SourceRead r;
  r.devices = {m.source};
  r.has_metadata_ops = true;
  std::string text;
  if (!read_kernel_file(proc + "/self/mountstats", text, r.error)) return r;
  const MountstatsParse p = parse_mountstats(text);
  const NfsMountStats* best = nullptr;
  for (const auto& s : p.nfs) {
    if (s.mount_point != m.mount_point) continue;
    // Mounted over: the last listed is on top; a device match wins.
    if (best == nullptr || s.device == m.source || best->device != m.source) best = &s;
  }
  if (best == nullptr) {
    r.error = "no NFS block for " + json_quote(m.mount_point) + " in " + proc + "/self/mountstats";
    return r;
  }
  if (!best->ok) {
    r.error = best->error;
    return r;
  }
  r.raw = best->raw;
  r.has_metadata_seconds = true;
  r.rtt_seconds = best->rtt_seconds;
  r.retransmissions = best->retransmissions;
  r.ok = true;
  return r;
}

SourceRead read_lustre_source(const std::string& proc, const std::string& sys, const MountInfo& m) {
  SourceRead r;
  r.has_metadata_ops = true;
  const std::string fsname = lustre_fsname(m.source);
  if (fsname.empty()) {
    r.error = "cannot tell the Lustre file system name from the mount source " +
              json_quote(m.source) + " (expected nid:/fsname)";
    return r;
  }
  struct Candidate {
    std::string dir, name;
  };
  std::vector<Candidate> cands;
  for (const std::string& root : {proc + "/fs/lustre/llite", sys + "/kernel/debug/lustre/llite"}) {
    for (const std::string& n : list_dir(root)) {
      if (n.size() > fsname.size() + 1 && n.starts_with(fsname + "-") && plain_name(n)) {
        bool dup = false;
        for (const auto& c : cands) dup = dup || c.name == n;
        if (!dup) cands.push_back({std::string(root).append("/").append(n), n});
      }
    }
  }
  const Candidate* pick = nullptr;
  if (cands.size() == 1) {
    pick = &cands.front();
  } else if (cands.size() > 1) {
    // An option naming the instance in full tells several mounts apart.
    for (const auto& c : cands) {
      for (const std::string* opts : {&m.super_options, &m.mount_options}) {
        for (std::string_view o : split(*opts, ',')) {
          const auto eq = o.find('=');
          if (o == c.name || (eq != std::string_view::npos && o.substr(eq + 1) == c.name)) {
            pick = &c;
          }
        }
      }
    }
    if (pick == nullptr) {
      r.error = std::to_string(cands.size()) + " llite instances of file system " +
                json_quote(fsname) + " and no mount option naming one";
      return r;
    }
  }
  if (pick == nullptr) {
    r.error = "no llite instance of file system " + json_quote(fsname) + " in " + proc +
              "/fs/lustre/llite or " + sys + "/kernel/debug/lustre/llite";
    return r;
  }
  r.devices = {pick->name};
  std::string text;
  if (!read_kernel_file(pick->dir + "/stats", text, r.error)) return r;
  LliteStats s = parse_llite_stats(text);
  if (!s.ok) {
    r.error = pick->dir + "/stats: " + s.error;
    return r;
  }
  r.raw = s.raw;
  for (const std::string& c : s.unknown_counters) {
    r.unknown.push_back(pick->dir + "/stats: counter " + json_quote(c) +
                        " is not known to this ckptmon: left out of the metadata rate");
  }
  r.ok = true;
  return r;
}

NetRead read_net_interface(const std::string& sys, const std::string& name) {
  NetRead r;
  // A sysfs value as a message quotes it: trimmed, at most 40 bytes.
  auto shown = [](const std::string& text) {
    return json_quote(std::string(trim(text)).substr(0, 40));
  };
  auto counter = [&](const std::string& path, std::uint64_t& out) {
    std::string text;
    if (!read_kernel_file(path, text, r.error, 4096)) return false;
    auto v = parse_counter_file(text);
    if (!v) {
      r.error = path + " is not a counter: " + shown(text);
      return false;
    }
    out = *v;
    return true;
  };
  auto read_ib_port = [&](const std::string& hca, const std::string& port) {
    const std::string base = sys + "/class/infiniband/" + hca + "/ports/" + port;
    r.infiniband = true;
    // The rate first: a port without data counters still has a link speed.
    std::string text, err;
    if (read_kernel_file(base + "/rate", text, err, 4096)) {
      r.link_speed_bytes_per_second = parse_ib_rate_bytes_per_second(text);
      if (!r.link_speed_bytes_per_second) {
        r.unknown.push_back(base + "/rate reads " + shown(text) +
                            ", not \"<number> Gb/sec (...)\": the link speed is unknown");
      }
    }
    // The kernel's ib core answers "N/A (no PMA)" for a port whose device has
    // no performance management agent (drivers/infiniband/core/sysfs.c).
    const std::string rcv_path = base + "/counters/port_rcv_data";
    if (read_kernel_file(rcv_path, text, err, 4096) && trim(text).starts_with("N/A")) {
      r.counters_unsupported = true;
      r.unknown.push_back(rcv_path + " reads " + shown(text) +
                          ": the port keeps no data counters; its traffic is unknown");
      r.ok = true;
      return true;
    }
    std::uint64_t rcv = 0, xmit = 0;
    if (!counter(rcv_path, rcv) || !counter(base + "/counters/port_xmit_data", xmit)) {
      return false;
    }
    r.receive_bytes = rcv * 4;  // 4-byte words (octets divided by 4)
    r.transmit_bytes = xmit * 4;
    r.ok = true;
    return true;
  };

  if (const auto colon = name.find(':'); colon != std::string::npos) {
    const std::string hca = name.substr(0, colon);
    const std::string port = name.substr(colon + 1);
    if (!plain_name(hca) || !plain_name(port) ||
        !exists(sys + "/class/infiniband/" + hca + "/ports/" + port)) {
      r.error = "no InfiniBand port " + name + " in " + sys + "/class/infiniband";
      return r;
    }
    read_ib_port(hca, port);
    return r;
  }
  if (!plain_name(name)) {
    r.error = "bad interface name " + json_quote(name);
    return r;
  }
  const std::string dir = sys + "/class/net/" + name;
  if (!exists(dir)) {
    r.error = "interface " + name + " not found in " + sys + "/class/net";
    return r;
  }
  // IPoIB: the HCA port the netdev sits on carries RDMA traffic too.
  const auto hcas = list_dir(dir + "/device/infiniband");
  if (hcas.size() == 1 && plain_name(hcas.front())) {
    std::string text, err;
    unsigned dev_port = 0;
    if (read_kernel_file(dir + "/dev_port", text, err, 64)) {
      if (auto v = parse_counter_file(text)) dev_port = static_cast<unsigned>(*v);
    }
    const std::string port = std::to_string(dev_port + 1);
    if (exists(sys + "/class/infiniband/" + hcas.front() + "/ports/" + port + "/counters")) {
      read_ib_port(hcas.front(), port);
      return r;
    }
  }
  if (!counter(dir + "/statistics/rx_bytes", r.receive_bytes) ||
      !counter(dir + "/statistics/tx_bytes", r.transmit_bytes)) {
    return r;
  }
  std::string text, err;
  // A link that is down answers EINVAL; -1 is "unknown" too.
  if (read_kernel_file(dir + "/speed", text, err, 64)) {
    r.link_speed_bytes_per_second = parse_net_speed_bytes_per_second(text);
  }
  r.ok = true;
  return r;
}

NodeRead read_node_pressure(const std::string& proc) {
  NodeRead r;
  r.ok = true;
  auto fail = [&](const std::string& why) {
    r.ok = false;
    if (r.error.empty()) r.error = why;
  };
  struct stat st {};
  if (::stat((proc + "/pressure").c_str(), &st) != 0) {
    r.unknown.push_back(proc + "/pressure: " + errno_text(errno) +
                        ": no pressure stall information (a kernel before 4.20, or psi=0); "
                        "pressure unknown");
  } else {
    r.node.psi_available = true;
    for (std::size_t i = 0; i < kPressureResourceNames.size(); ++i) {
      const std::string path = proc + "/pressure/" + std::string(kPressureResourceNames[i]);
      std::string text, err;
      if (!read_kernel_file(path, text, err, 4096)) {
        fail(err);
        continue;
      }
      const PsiParse p = parse_psi(text);
      if (!p.ok) {
        fail(path + ": " + p.error);
        continue;
      }
      auto& slot = r.node.pressure_seconds[i];
      if (p.some_total_us) slot[0] = static_cast<double>(*p.some_total_us) / 1e6;
      if (p.full_total_us) slot[1] = static_cast<double>(*p.full_total_us) / 1e6;
    }
  }
  const std::string path = proc + "/meminfo";
  if (::stat(path.c_str(), &st) != 0) {
    r.unknown.push_back(path + ": " + errno_text(errno) + ": memory figures unknown");
    return r;
  }
  std::string text, err;
  if (!read_kernel_file(path, text, err, 1 << 16)) {
    fail(err);
    return r;
  }
  const MeminfoParse m = parse_meminfo(text);
  if (!m.ok) {
    fail(path + ": " + m.error);
    return r;
  }
  r.node.memory_available_bytes = m.available_bytes;
  r.node.memory_dirty_bytes = m.dirty_bytes;
  r.node.memory_writeback_bytes = m.writeback_bytes;
  for (const auto& [value, name] :
       {std::pair{&m.available_bytes, "MemAvailable"}, std::pair{&m.dirty_bytes, "Dirty"},
        std::pair{&m.writeback_bytes, "Writeback"}}) {
    if (!*value) r.unknown.push_back(path + " has no " + name + " line: it is unknown");
  }
  return r;
}

}  // namespace ckptmon
