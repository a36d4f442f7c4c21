#include "collectors/io_parsers.hpp"

#include <charconv>
#include <cmath>

#include "collectors/mountinfo.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

bool to_u64(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool to_uint(std::string_view s, unsigned& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Whitespace-separated fields (spaces and tabs, runs collapsed).
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string clip(std::string_view s) {
  constexpr std::size_t kMax = 120;
  if (s.size() <= kMax) return std::string(s);
  return std::string(s.substr(0, kMax)) + "...";
}

}  // namespace

DiskStatsParse parse_diskstats(std::string_view text) {
  DiskStatsParse r;
  auto bad = [&](std::string_view line, const std::string& why) {
    if (r.bad_lines++ == 0) r.first_error = why + ": " + json_quote(clip(line));
  };
  for (std::string_view line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    const auto f = fields_of(line);
    const int n = static_cast<int>(f.size());
    if (n != 7 && n != 14 && n != 18 && n != 20) {
      bad(line, "diskstats line with " + std::to_string(n) + " fields (expected 7, 14, 18 or 20)");
      continue;
    }
    DiskStatsLine d;
    d.fields = n;
    d.name = std::string(f[2]);
    bool ok = to_uint(f[0], d.major) && to_uint(f[1], d.minor) && !d.name.empty();
    std::uint64_t v = 0;
    for (int i = 3; i < n && ok; ++i) ok = to_u64(f[static_cast<std::size_t>(i)], v);
    if (!ok) {
      bad(line, "diskstats line with a field that is not an unsigned number");
      continue;
    }
    if (n == 7) {
      // Partitions before 2.6.25: reads, sectors read, writes, sectors written.
      to_u64(f[3], d.reads);
      to_u64(f[4], d.sectors_read);
      to_u64(f[5], d.writes);
      to_u64(f[6], d.sectors_written);
    } else {
      // reads, reads merged, sectors read, ms reading, writes, writes merged,
      // sectors written, ... (Documentation/admin-guide/iostats.rst).
      to_u64(f[3], d.reads);
      to_u64(f[5], d.sectors_read);
      to_u64(f[7], d.writes);
      to_u64(f[9], d.sectors_written);
      // ..., ms writing, I/Os in progress, ms doing I/Os, weighted ms.
      std::uint64_t in_flight = 0, io_ms = 0, weighted = 0;
      to_u64(f[11], in_flight);
      to_u64(f[12], io_ms);
      to_u64(f[13], weighted);
      d.in_flight = in_flight;
      d.io_ms = io_ms;
      d.weighted_io_ms = weighted;
    }
    r.lines.push_back(std::move(d));
  }
  return r;
}

std::optional<MetaOp> nfs_meta_op(std::string_view op) {
  struct M {
    std::string_view name;
    std::optional<MetaOp> op;
  };
  static constexpr std::optional<MetaOp> kData = std::nullopt;
  static const M kMap[] = {
      {"NULL", kData},
      {"READ", kData},
      {"WRITE", kData},
      {"READ_PLUS", kData},
      {"SEQUENCE", kData},
      {"RENEW", kData},
      {"SETCLIENTID", kData},
      {"SETCLIENTID_CONFIRM", kData},
      {"EXCHANGE_ID", kData},
      {"CREATE_SESSION", kData},
      {"DESTROY_SESSION", kData},
      {"DESTROY_CLIENTID", kData},
      {"BIND_CONN_TO_SESSION", kData},
      {"RECLAIM_COMPLETE", kData},
      {"GET_LEASE_TIME", kData},
      {"OPEN", MetaOp::kOpen},
      {"OPEN_NOATTR", MetaOp::kOpen},
      {"OPEN_CONFIRM", MetaOp::kOpen},
      {"OPEN_DOWNGRADE", MetaOp::kOpen},
      {"CLOSE", MetaOp::kClose},
      {"CREATE", MetaOp::kCreate},
      {"MKNOD", MetaOp::kCreate},
      {"SYMLINK", MetaOp::kCreate},
      {"LINK", MetaOp::kCreate},
      {"GETATTR", MetaOp::kGetattr},
      {"ACCESS", MetaOp::kGetattr},
      {"SETATTR", MetaOp::kSetattr},
      {"LOOKUP", MetaOp::kLookup},
      {"LOOKUPP", MetaOp::kLookup},
      {"LOOKUP_ROOT", MetaOp::kLookup},
      {"READDIR", MetaOp::kReaddir},
      {"READDIRPLUS", MetaOp::kReaddir},
      {"REMOVE", MetaOp::kRemove},
      {"RMDIR", MetaOp::kRemove},
      {"RENAME", MetaOp::kRename},
      {"MKDIR", MetaOp::kMkdir},
      {"COMMIT", MetaOp::kCommit},
  };
  for (const auto& m : kMap) {
    if (m.name == op) return m.op;
  }
  return MetaOp::kOther;
}

std::optional<LliteCounter> classify_llite_counter(std::string_view name) {
  struct M {
    std::string_view name;
    LliteCounter counter;
  };
  constexpr LliteCounter kIo{LliteKind::kIo, MetaOp::kOther};
  constexpr LliteCounter kLocal{LliteKind::kLocal, MetaOp::kOther};
  auto rpc = [](MetaOp op) { return LliteCounter{LliteKind::kMetadataRpc, op}; };
  // lustre/llite/lproc_llite.c's llite_opcode_table (2.12 to 2.16) and the
  // counters of older clients, by what each counts.
  static const M kMap[] = {
      // Data: bytes and calls on the I/O path (OST RPCs, page cache).
      {"read_bytes", kIo},
      {"write_bytes", kIo},
      {"read", kIo},
      {"write", kIo},
      {"brw_read", kIo},
      {"brw_write", kIo},
      {"osc_read", kIo},
      {"osc_write", kIo},
      {"direct_read", kIo},
      {"direct_write", kIo},
      {"lockless_read_bytes", kIo},
      {"lockless_write_bytes", kIo},
      {"lockless_truncate", kIo},
      {"splice_read", kIo},
      {"fallocate", kIo},
      // Calls answered on the client: permission checks against cached
      // attributes, cache hit counts, per-file statistics, local VFS calls.
      {"inode_permission", kLocal},
      {"getxattr_hits", kLocal},  // the getxattr calls the xattr cache answered
      {"opencount", kLocal},      // opens per file (a histogram of its own)
      {"openclosetime", kLocal},  // open-to-close time per file
      {"dirty_pages_hits", kLocal},
      {"dirty_pages_misses", kLocal},
      {"alloc_inode", kLocal},
      {"seek", kLocal},
      {"mmap", kLocal},
      {"page_fault", kLocal},
      {"page_mkwrite", kLocal},
      {"ioctl", kLocal},
      // Metadata: calls that go to the MDS.
      {"open", rpc(MetaOp::kOpen)},
      {"close", rpc(MetaOp::kClose)},
      {"create", rpc(MetaOp::kCreate)},
      {"mknod", rpc(MetaOp::kCreate)},
      {"link", rpc(MetaOp::kCreate)},
      {"symlink", rpc(MetaOp::kCreate)},
      {"getattr", rpc(MetaOp::kGetattr)},
      {"setattr", rpc(MetaOp::kSetattr)},
      {"truncate", rpc(MetaOp::kSetattr)},
      {"lookup", rpc(MetaOp::kLookup)},
      {"readdir", rpc(MetaOp::kReaddir)},
      {"unlink", rpc(MetaOp::kRemove)},
      {"rmdir", rpc(MetaOp::kRemove)},
      {"rename", rpc(MetaOp::kRename)},
      {"mkdir", rpc(MetaOp::kMkdir)},
      {"fsync", rpc(MetaOp::kCommit)},
      {"statfs", rpc(MetaOp::kOther)},
      {"getxattr", rpc(MetaOp::kOther)},  // less getxattr_hits: parse_llite_stats
      {"setxattr", rpc(MetaOp::kOther)},
      {"listxattr", rpc(MetaOp::kOther)},
      {"removexattr", rpc(MetaOp::kOther)},
      {"flock", rpc(MetaOp::kOther)},
  };
  for (const auto& m : kMap) {
    if (m.name == name) return m.counter;
  }
  // Lustre 2.16's hybrid I/O switch (buffered or direct by size).
  if (name.starts_with("hybrid_")) return kIo;
  return std::nullopt;
}

MountstatsParse parse_mountstats(std::string_view text) {
  MountstatsParse r;
  // Blocks: from one "device " line to the next.
  std::vector<std::string_view> lines = split(text, '\n');
  const bool ends_cleanly = text.empty() || text.back() == '\n';
  if (!lines.empty() && lines.back().empty()) lines.pop_back();

  std::size_t i = 0;
  while (i < lines.size()) {
    std::string_view head = lines[i];
    if (!head.starts_with("device ")) {
      ++i;  // stray line outside a block (or of a skipped block)
      continue;
    }
    std::size_t end = i + 1;
    while (end < lines.size() && !lines[end].starts_with("device ")) ++end;
    const bool last_block = end == lines.size();

    const auto h = fields_of(head);
    // device X mounted on Y with fstype T [statvers=V]
    if (h.size() < 8 || h[2] != "mounted" || h[3] != "on" || h[5] != "with" || h[6] != "fstype") {
      i = end;
      continue;  // not a line this parser knows; not NFS either
    }
    const std::string fstype(h[7]);
    if (fstype != "nfs" && fstype != "nfs4") {
      i = end;
      continue;
    }
    NfsMountStats m;
    m.device = unescape_mount_field(h[1]);
    m.mount_point = unescape_mount_field(h[4]);
    m.fstype = fstype;
    auto reject = [&](std::string why) {
      m.ok = false;
      m.error = "mountstats block of " + json_quote(m.mount_point) + ": " + std::move(why);
    };
    if (h.size() >= 9 && h[8].starts_with("statvers=")) m.statvers = std::string(h[8].substr(9));
    bool have_bytes = false;
    bool in_ops = false;
    int op_lines = 0;
    m.ok = true;
    if (m.statvers != "1.0" && m.statvers != "1.1") {
      reject("unknown statvers " + json_quote(m.statvers.empty() ? "(none)" : m.statvers) +
             " (known: 1.0, 1.1)");
    }
    for (std::size_t k = i + 1; k < end && m.ok; ++k) {
      std::string_view line = trim(lines[k]);
      if (line.empty()) continue;
      const bool final_line = last_block && k + 1 == end;
      if (final_line && !ends_cleanly) {
        reject("cut off (the file ends inside the line " + json_quote(clip(line)) + ")");
        break;
      }
      if (line.starts_with("bytes:")) {
        const auto f = fields_of(line.substr(6));
        std::uint64_t v[8] = {};
        bool ok = f.size() >= 8;
        for (std::size_t j = 0; j < 8 && ok; ++j) ok = to_u64(f[j], v[j]);
        if (!ok) {
          reject("cut off or malformed bytes: line " + json_quote(clip(line)));
          break;
        }
        m.normal_read_bytes = v[0];
        m.normal_write_bytes = v[1];
        m.direct_read_bytes = v[2];
        m.direct_write_bytes = v[3];
        m.raw.read_bytes = static_cast<double>(v[4]);
        m.raw.written_bytes = static_cast<double>(v[5]);
        have_bytes = true;
        continue;
      }
      if (line == "per-op statistics") {
        in_ops = true;
        continue;
      }
      if (!in_ops) continue;  // opts:, age:, events:, xprt: ... not needed
      // OP: ops trans timeouts bytes_sent bytes_recv queue rtt execute [errors]
      const auto colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0) {
        reject("malformed per-op line " + json_quote(clip(line)));
        break;
      }
      const auto f = fields_of(line.substr(colon + 1));
      std::uint64_t v[9] = {};  // ops trans timeouts sent recv queue rtt execute errors
      bool ok = f.size() >= 8;
      for (std::size_t j = 0; j < f.size() && ok; ++j) {
        std::uint64_t x = 0;
        ok = to_u64(f[j], x);
        if (j < 9) v[j] = x;
      }
      if (!ok) {
        reject("cut off or malformed per-op line " + json_quote(clip(line)));
        break;
      }
      ++op_lines;
      if (auto op = nfs_meta_op(line.substr(0, colon))) {
        const auto o = static_cast<std::size_t>(*op);
        m.raw.metadata_ops[o] += static_cast<double>(v[0]);
        m.raw.metadata_seconds[o] += static_cast<double>(v[7]) / 1000;
        m.rtt_seconds[o] += static_cast<double>(v[6]) / 1000;
        if (v[1] > v[0]) m.retransmissions[o] += static_cast<double>(v[1] - v[0]);
      }
    }
    if (m.ok && !have_bytes) reject("cut off (no bytes: line)");
    if (m.ok && !in_ops) reject("cut off (no per-op statistics)");
    if (m.ok && op_lines == 0) reject("cut off (per-op statistics without operations)");
    if (!m.ok) ++r.errors;
    r.nfs.push_back(std::move(m));
    i = end;
  }
  return r;
}

LliteStats parse_llite_stats(std::string_view text) {
  LliteStats r;
  bool snapshot = false;
  std::uint64_t getxattr = 0, hits = 0;
  bool ends_cleanly = text.empty() || text.back() == '\n';
  std::vector<std::string_view> lines = split(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (std::size_t k = 0; k < lines.size(); ++k) {
    std::string_view line = trim(lines[k]);
    if (line.empty()) continue;
    const auto f = fields_of(line);
    if (f[0] == "snapshot_time" || f[0] == "start_time" || f[0] == "elapsed_time") {
      if (f[0] == "snapshot_time") snapshot = true;
      continue;
    }
    if (k + 1 == lines.size() && !ends_cleanly) {
      r.error = "llite stats cut off (the file ends inside " + json_quote(clip(line)) + ")";
      return r;
    }
    // name count samples [unit] [min max sum [sumsq]]
    std::uint64_t count = 0;
    if (f.size() < 4 || f[2] != "samples" || !to_u64(f[1], count)) {
      r.error = "malformed llite stats line " + json_quote(clip(line));
      return r;
    }
    if (f[0] == "read_bytes" || f[0] == "write_bytes") {
      std::uint64_t sum = 0;
      if (f.size() < 7 || !to_u64(f[6], sum)) {
        r.error = "llite " + std::string(f[0]) + " line without a sum: " + json_quote(clip(line));
        return r;
      }
      (f[0] == "read_bytes" ? r.raw.read_bytes : r.raw.written_bytes) = static_cast<double>(sum);
      continue;
    }
    const auto c = classify_llite_counter(f[0]);
    if (!c) {
      if (r.unknown_counters.size() < LliteStats::kMaxUnknown) {
        r.unknown_counters.emplace_back(clip(f[0]));
      }
      continue;
    }
    if (f[0] == "getxattr_hits") hits = count;
    if (c->kind != LliteKind::kMetadataRpc) continue;
    if (f[0] == "getxattr") getxattr = count;
    r.raw.metadata_ops[static_cast<std::size_t>(c->op)] += static_cast<double>(count);
  }
  // getxattr counts every call, getxattr_hits those the client's xattr cache
  // answered: only the rest went to the MDS.
  r.raw.metadata_ops[static_cast<std::size_t>(MetaOp::kOther)] -=
      static_cast<double>(std::min(hits, getxattr));
  if (!snapshot) {
    r.error = "not an llite stats file (no snapshot_time line)";
    return r;
  }
  r.ok = true;
  return r;
}

PsiParse parse_psi(std::string_view text) {
  PsiParse r;
  for (std::string_view line : split(text, '\n')) {
    line = trim(line);
    if (line.empty()) continue;
    const auto f = fields_of(line);
    std::optional<std::uint64_t>* slot = nullptr;
    if (f[0] == "some") slot = &r.some_total_us;
    if (f[0] == "full") slot = &r.full_total_us;
    std::uint64_t total = 0;
    bool found = false;
    for (std::size_t k = 1; slot != nullptr && k < f.size(); ++k) {
      if (f[k].starts_with("total=")) found = to_u64(f[k].substr(6), total);
    }
    if (slot == nullptr || !found) {
      r.error = "not a pressure line: " + json_quote(clip(line));
      r.some_total_us.reset();
      r.full_total_us.reset();
      return r;
    }
    *slot = total;
  }
  if (!r.some_total_us && !r.full_total_us) {
    r.error = "no some or full line";
    return r;
  }
  r.ok = true;
  return r;
}

MeminfoParse parse_meminfo(std::string_view text) {
  MeminfoParse r;
  bool any = false;
  for (std::string_view line : split(text, '\n')) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) continue;
    const std::string_view key = line.substr(0, colon);
    const auto f = fields_of(line.substr(colon + 1));
    std::uint64_t v = 0;
    if (f.empty() || !to_u64(f[0], v)) continue;
    any = true;
    const double factor = f.size() > 1 && f[1] == "kB" ? 1024.0 : 1.0;
    const double bytes = static_cast<double>(v) * factor;
    if (key == "MemAvailable") r.available_bytes = bytes;
    if (key == "Dirty") r.dirty_bytes = bytes;
    if (key == "Writeback") r.writeback_bytes = bytes;
  }
  if (!any) {
    r.error = "no \"Key: value\" line";
    return r;
  }
  r.ok = true;
  return r;
}

std::optional<double> parse_net_speed_bytes_per_second(std::string_view text) {
  std::string_view t = trim(text);
  long long mbps = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), mbps);
  if (ec != std::errc() || p != t.data() + t.size() || mbps <= 0) return std::nullopt;
  return static_cast<double>(mbps) * 1e6 / 8;
}

std::optional<double> parse_ib_rate_bytes_per_second(std::string_view text) {
  // "<number> Gb/sec (<width> <speed>)"; the number may have a fraction
  // (e.g. "2.5 Gb/sec (1X SDR)").
  const auto f = fields_of(trim(text));
  if (f.size() < 2 || f[1] != "Gb/sec") return std::nullopt;
  double gbps = 0;
  auto [p, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), gbps);
  if (ec != std::errc() || p != f[0].data() + f[0].size() || !(gbps > 0) || !std::isfinite(gbps)) {
    return std::nullopt;
  }
  return gbps * 1e9 / 8;
}

std::optional<std::uint64_t> parse_counter_file(std::string_view text) {
  std::string_view t = text;
  if (!t.empty() && t.back() == '\n') t.remove_suffix(1);
  std::uint64_t v = 0;
  if (!to_u64(t, v)) return std::nullopt;
  return v;
}

std::string lustre_fsname(std::string_view mount_source) {
  const auto pos = mount_source.find(":/");
  if (pos == std::string_view::npos) return {};
  std::string_view rest = mount_source.substr(pos + 2);
  const auto slash = rest.find('/');
  if (slash != std::string_view::npos) rest = rest.substr(0, slash);
  return std::string(rest);
}

}  // namespace ckptmon
