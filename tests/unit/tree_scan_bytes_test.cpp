// Issue 27 (degraded): byte totals saturate, never wrap. Four sparse files of
// 2^62 bytes and one of 1 byte hold 2^64 + 1 bytes by their sizes: a sum that
// wraps reports 1 byte; the catalog says "at least 2^64 - 1" instead.

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "collectors/tree_scan.hpp"
#include "model/catalog.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr off_t k2to62 = off_t{1} << 62;

// A temporary directory on a file system that takes a 2^62-byte sparse file
// (tmpfs does; ext4 stops at 16 TiB), or empty when there is none.
struct SparseDir {
  SparseDir() {
    for (const fs::path& base : {fs::temp_directory_path(), fs::path("/dev/shm")}) {
      std::string tmpl = (base / "ckptmon-sparse-XXXXXX").string();
      if (::mkdtemp(tmpl.data()) == nullptr) continue;
      const std::string probe = tmpl + "/probe";
      const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      const bool ok = fd >= 0 && ::ftruncate(fd, k2to62) == 0;
      if (fd >= 0) ::close(fd);
      std::error_code ec;
      fs::remove(probe, ec);
      if (ok) {
        path = tmpl;
        return;
      }
      fs::remove_all(tmpl, ec);
    }
  }
  ~SparseDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  void file(const std::string& rel, off_t size) const {
    const fs::path p = fs::path(path) / rel;
    fs::create_directories(p.parent_path());
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, size), 0);
    ::close(fd);
  }
  std::string path;
};

TEST(TreeScanBytes, SparseFilesSummingPast2To64SaturateInsteadOfWrapping) {
  SparseDir d;
  if (d.path.empty()) GTEST_SKIP() << "no file system here takes a 2^62-byte sparse file";
  for (int r = 0; r < 4; ++r) d.file("jobA/save_1/rank" + std::to_string(r) + ".bin", k2to62);
  d.file("jobA/save_1/rank4.bin", 1);
  d.file("jobA/save_1/COMMITTED", 0);
  d.file("jobA/save_2/rank0.bin", k2to62);
  d.file("jobA/save_2/COMMITTED", 0);
  TierConfig cfg;
  cfg.name = "rapid";
  cfg.path = d.path;
  cfg.jobs.depth = 1;
  cfg.layout = GenericLayoutConfig{"rank*.bin", "COMMITTED", "^save_(\\d+)$"};
  TierScanner scanner(cfg, false);
  const auto now = static_cast<double>(std::time(nullptr));
  ScanOutcome o = scanner.scan(now);
  ASSERT_TRUE(o.root_ok) << o.error;
  ASSERT_EQ(o.checkpoints.size(), 2u);
  const Checkpoint& big =
      o.checkpoints[0].path == "jobA/save_1" ? o.checkpoints[0] : o.checkpoints[1];
  const Checkpoint& other = &big == &o.checkpoints[0] ? o.checkpoints[1] : o.checkpoints[0];
  EXPECT_EQ(big.files, 6u);  // the marker too
  EXPECT_EQ(big.bytes, kMax);
  EXPECT_EQ(other.bytes, std::uint64_t{1} << 62);
  std::uint64_t components = 0;
  for (auto b : big.component_bytes) components = std::max(components, b);
  EXPECT_EQ(components, kMax);

  TierCatalog cat;
  merge_scan(cat, std::move(o), now);
  const JobSummary job = summarize_jobs(cat)["jobA"];
  EXPECT_EQ(job.stored_bytes, kMax);  // 2^64 - 1 + 2^62, saturated too
}

// The per-job roll-up with synthetic sizes: no file system needed.
TEST(TreeScanBytes, JobTotalsSaturate) {
  TierCatalog cat;
  for (int i = 0; i < 3; ++i) {
    Checkpoint c;
    c.tier = "rapid";
    c.job = "j";
    c.path = "j/save_" + std::to_string(i);
    c.state = CkptState::kPartial;
    c.bytes = std::uint64_t{1} << 63;
    cat.checkpoints.push_back(c);
  }
  const JobSummary s = summarize_jobs(cat)["j"];
  EXPECT_EQ(s.stored_bytes, kMax);
  EXPECT_EQ(s.partial_bytes, kMax);
}

}  // namespace
}  // namespace ckptmon
