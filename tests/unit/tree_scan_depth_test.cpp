// Issue 27.8: the walk follows directories down to walk_max_depth (from the
// tier root) and no further. A deeper directory is reported (an access
// finding of kind too_deep) and not opened: a hostile nest of directories
// costs a bounded walk, and what lies below it is unknown, not empty.

#include <algorithm>
#include <cstddef>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/tree_scan.hpp"
#include "model/catalog.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

std::size_t components(const std::string& rel) {
  return rel.empty() ? 0 : static_cast<std::size_t>(std::count(rel.begin(), rel.end(), '/')) + 1;
}

// `n` nested directories named d below `under`: under/d/d/.../d.
std::string nest(const std::string& under, std::size_t n) {
  std::string p = under;
  for (std::size_t i = 0; i < n; ++i) p += "/d";
  return p;
}

struct Calls {
  std::mutex mu;
  std::size_t deepest = 0;  // components of the deepest path opened or listed
};

class TreeScanDepth : public ::testing::Test {
 protected:
  void SetUp() override {
    tier_.write("jobA/step-1/__0_0.distcp", 100);
    tier_.write("jobA/step-1/.metadata", 10);
    cfg_.name = "rapid";
    cfg_.path = tier_.str();
  }
  ScanOutcome scan(TierScanner& scanner) {
    scanner.set_call_hook([calls = calls_](std::string_view op, const std::string& rel) {
      if (op != "open" && op != "list") return;
      std::lock_guard lock(calls->mu);
      calls->deepest = std::max(calls->deepest, components(rel));
    });
    return scanner.scan(static_cast<double>(std::time(nullptr)));
  }
  std::vector<std::string> too_deep(const ScanOutcome& o) {
    std::vector<std::string> out;
    if (!o.findings) return out;
    for (const auto& f : *o.findings) {
      if (to_string(f.kind) == "too_deep") out.push_back(f.path);
    }
    return out;
  }

  testing::TempDir tier_;
  TierConfig cfg_;
  std::shared_ptr<Calls> calls_ = std::make_shared<Calls>();
};

TEST_F(TreeScanDepth, ByDefaultTheWalkStopsAt64DirectoriesBelowTheRoot) {
  // jobA (1) / nest (2) / 78 more: 80 below the root.
  tier_.write(nest("jobA/nest", 78) + "/bottom.bin", 1);
  TierScanner scanner(cfg_, false);
  ScanOutcome o = scan(scanner);
  ASSERT_TRUE(o.root_ok) << o.error;
  EXPECT_LE(calls_->deepest, 64u);
  const std::string at65 = nest("jobA/nest", 63);
  ASSERT_EQ(components(at65), 65u);
  EXPECT_EQ(too_deep(o), (std::vector<std::string>{at65}));
  // The checkpoint beside the nest is catalogued as usual.
  ASSERT_EQ(o.checkpoints.size(), 1u);
  EXPECT_EQ(o.checkpoints[0].path, "jobA/step-1");
  // Directories listed: the root, jobA, step-1, and the nest down to depth 64.
  EXPECT_EQ(o.dirs_listed, 3u + 63u);
}

TEST_F(TreeScanDepth, WalkMaxDepthBoundsTheWalkAndWhatIsDeeperIsUnknownNotGone) {
  tier_.write("jobA/x/y/z/w/v/file.bin", 1);
  tier_.write("jobA/save_7/rank0.bin", 1);  // beside it, in_progress, at depth 2
  cfg_.walk_max_depth = 3;
  cfg_.layout = GenericLayoutConfig{"rank*.bin", "COMMITTED", "^save_(\\d+)$"};
  TierScanner scanner(cfg_, false);
  ScanOutcome o = scan(scanner);
  ASSERT_TRUE(o.root_ok) << o.error;
  EXPECT_LE(calls_->deepest, 3u);
  EXPECT_EQ(too_deep(o), (std::vector<std::string>{"jobA/x/y/z"}));
  ASSERT_TRUE(o.findings);
  for (const auto& f : *o.findings) {
    if (f.kind == FindingKind::kTooDeep) {
      EXPECT_EQ(f.job, "jobA");
      EXPECT_NE(f.detail.find("walk_max_depth (3)"), std::string::npos) << f.detail;
    }
  }
  // Unknown below, not empty: reported like an unreadable directory.
  ASSERT_EQ(o.unreadable.size(), 1u);
  EXPECT_TRUE(o.unreadable[0].too_deep);
  EXPECT_EQ(o.unreadable[0].path, "jobA/x/y/z");
  std::vector<std::string> paths;
  for (const auto& c : o.checkpoints) paths.push_back(c.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"jobA/save_7", "jobA/step-1"}));

  // A checkpoint the catalog knew, now below the limit's reach, is kept.
  TierCatalog cat;
  merge_scan(cat, std::move(o), 1000);
  Checkpoint known;
  known.tier = "rapid";
  known.job = "jobA";
  known.path = "jobA/x/y/z/w";
  known.state = CkptState::kCommitted;
  cat.checkpoints.push_back(known);
  std::sort(cat.checkpoints.begin(), cat.checkpoints.end(),
            [](const Checkpoint& a, const Checkpoint& b) { return a.path < b.path; });
  merge_scan(cat, scan(scanner), 1010);
  EXPECT_TRUE(cat.removed.empty());
  const auto it = std::find_if(cat.checkpoints.begin(), cat.checkpoints.end(),
                               [](const Checkpoint& c) { return c.path == "jobA/x/y/z/w"; });
  ASSERT_NE(it, cat.checkpoints.end());
  EXPECT_TRUE(it->unreadable);
}

}  // namespace
}  // namespace ckptmon
