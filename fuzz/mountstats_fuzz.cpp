// libFuzzer target for the storage-path parsers (collectors/io_parsers.hpp),
// chiefly /proc/self/mountstats. Beyond "never crash": every rejected NFS
// block is counted once and says why; an accepted one has a known statvers;
// no counter is negative or NaN. The same bytes also go through the
// diskstats, llite stats and link-speed parsers.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "collectors/io_parsers.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "mountstats_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

void check_counters(const ckptmon::IoCounters& c) {
  check(std::isfinite(c.read_bytes) && c.read_bytes >= 0, "read bytes are a count");
  check(std::isfinite(c.written_bytes) && c.written_bytes >= 0, "written bytes are a count");
  for (double v : c.metadata_ops) check(std::isfinite(v) && v >= 0, "op counts are counts");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ckptmon::MountstatsParse p = ckptmon::parse_mountstats(text);
  int rejected = 0;
  for (const auto& m : p.nfs) {
    check(m.fstype == "nfs" || m.fstype == "nfs4", "only NFS blocks are returned");
    if (m.ok) {
      check(m.statvers == "1.0" || m.statvers == "1.1", "an accepted block has a known statvers");
      check(m.error.empty(), "an accepted block has no error");
    } else {
      ++rejected;
      check(!m.error.empty(), "a rejected block says why");
    }
    check_counters(m.raw);
  }
  check(rejected == p.errors, "every rejected block is counted once");

  const ckptmon::DiskStatsParse d = ckptmon::parse_diskstats(text);
  check(d.bad_lines >= 0 && (d.bad_lines == 0) == d.first_error.empty(),
        "bad diskstats lines are counted and the first is named");
  for (const auto& l : d.lines) {
    check(l.fields == 7 || l.fields == 14 || l.fields == 18 || l.fields == 20,
          "diskstats lines have a known field count");
  }
  const ckptmon::LliteStats s = ckptmon::parse_llite_stats(text);
  check(s.ok == s.error.empty(), "llite stats are ok or say why");
  check_counters(s.raw);
  check(s.unknown_counters.size() <= ckptmon::LliteStats::kMaxUnknown,
        "unknown llite counters are capped");
  if (auto v = ckptmon::parse_net_speed_bytes_per_second(text)) check(*v > 0, "speed > 0");
  if (auto v = ckptmon::parse_ib_rate_bytes_per_second(text)) {
    check(*v > 0 && std::isfinite(*v), "rate > 0");
  }
  (void)ckptmon::lustre_fsname(text);
  return 0;
}
