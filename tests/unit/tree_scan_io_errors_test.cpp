// Issue 27.1: an I/O error (EIO, ESTALE, ENOTCONN, EACCES...) on any call
// about a directory the walk has seen before (its stat, not only its open)
// means "unreadable now", never "deleted": the checkpoints below it are kept
// and flagged, the job keeps its recovery point, and nothing is counted again
// when it flaps. The errors are injected on the walker's calls (a FUSE
// passthrough returning EIO on getattr does the same to a real tree).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/tree_scan.hpp"
#include "model/catalog.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

struct Injected {
  int err;
  const char* op;  // the call that fails on the job directory
};

class TreeScanIoErrorTree : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* ck : {"jobA/save_100", "jobA/save_200", "jobB/save_100"}) {
      tier_.write(std::string(ck) + "/rank0.bin", 100);
      tier_.write(std::string(ck) + "/rank1.bin", 100);
      tier_.write(std::string(ck) + "/COMMITTED", 0);
    }
    cfg_.name = "rapid";
    cfg_.path = tier_.str();
    cfg_.jobs.depth = 1;
    cfg_.partial_after = std::chrono::seconds(1);
    cfg_.layout = GenericLayoutConfig{"rank*.bin", "COMMITTED", "^save_(\\d+)$"};
  }

  testing::TempDir tier_;
  TierConfig cfg_;
};

class TreeScanIoErrors : public TreeScanIoErrorTree,
                         public ::testing::WithParamInterface<Injected> {};

std::vector<std::int64_t> steps(const TierCatalog& cat, const std::string& job, bool flag) {
  std::vector<std::int64_t> out;
  for (const auto& c : cat.checkpoints) {
    if (c.job == job && c.unreadable == flag && c.state == CkptState::kCommitted) {
      out.push_back(c.step);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_P(TreeScanIoErrors, AFailingCallOnAJobDirectoryKeepsItsCheckpointsThroughFlaps) {
  const Injected inj = GetParam();
  TierScanner scanner(cfg_, false);
  auto failing = std::make_shared<bool>(false);
  scanner.set_fault_hook([failing, inj](std::string_view op, const std::string& rel) {
    return *failing && rel == "jobA" && op == inj.op ? inj.err : 0;
  });
  auto cat = std::make_shared<TierCatalog>();
  double now = 1'000'000'000;
  merge_scan(*cat, scanner.scan(now, nullptr, cat), now);
  ASSERT_EQ(steps(*cat, "jobA", false), (std::vector<std::int64_t>{100, 200}));
  ASSERT_EQ(cat->skew_by_job["jobA"].count, 2u);
  ASSERT_NE(summarize_jobs(*cat)["jobA"].latest_committed, nullptr);

  for (int flap = 0; flap < 4; ++flap) {
    SCOPED_TRACE("flap " + std::to_string(flap));
    *failing = true;
    now += 10;
    ScanOutcome o = scanner.scan(now, nullptr, cat);
    ASSERT_TRUE(o.root_ok) << o.error;
    ASSERT_EQ(o.unreadable.size(), 1u);
    EXPECT_EQ(o.unreadable[0].path, "jobA");
    EXPECT_EQ(o.unreadable[0].job, "jobA");
    EXPECT_EQ(o.unreadable[0].error, inj.err);
    EXPECT_GE(o.permission_errors, 1u);  // ckptmon_scan_permission_errors_total
    ASSERT_TRUE(o.findings);
    EXPECT_TRUE(std::any_of(o.findings->begin(), o.findings->end(), [](const AccessFinding& f) {
      return f.kind == FindingKind::kUnreadable && f.path == "jobA";
    }));
    cat->removed.clear();
    merge_scan(*cat, std::move(o), now);
    EXPECT_TRUE(cat->removed.empty());
    EXPECT_EQ(steps(*cat, "jobA", true), (std::vector<std::int64_t>{100, 200}));
    EXPECT_EQ(steps(*cat, "jobB", false), (std::vector<std::int64_t>{100}));
    const auto jobs = summarize_jobs(*cat);
    ASSERT_TRUE(jobs.contains("jobA"));
    EXPECT_TRUE(jobs.at("jobA").unreadable);
    ASSERT_NE(jobs.at("jobA").latest_committed, nullptr);  // the recovery point
    EXPECT_EQ(jobs.at("jobA").latest_committed_step(), 200);
    EXPECT_EQ(cat->skew_by_job["jobA"].count, 2u);

    *failing = false;
    now += 10;
    merge_scan(*cat, scanner.scan(now, nullptr, cat), now);
    EXPECT_TRUE(cat->removed.empty());
    EXPECT_EQ(steps(*cat, "jobA", false), (std::vector<std::int64_t>{100, 200}));
    EXPECT_FALSE(summarize_jobs(*cat)["jobA"].unreadable);
    EXPECT_EQ(cat->skew_by_job["jobA"].count, 2u);
    EXPECT_EQ(cat->skew_by_job["jobB"].count, 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(Errors, TreeScanIoErrors,
                         ::testing::Values(Injected{EIO, "stat"}, Injected{ESTALE, "stat"},
                                           Injected{ENOTCONN, "stat"}, Injected{EACCES, "stat"},
                                           Injected{EIO, "open"}, Injected{ESTALE, "list"}),
                         [](const ::testing::TestParamInfo<Injected>& p) {
                           return std::string(p.param.op) + "_" + std::to_string(p.param.err);
                         });

// Below the job level: a checkpoint directory whose stat fails keeps its
// record, the other checkpoints of the job are walked as usual.
TEST_F(TreeScanIoErrorTree, AFailingStatOfACheckpointDirectoryKeepsItsRecord) {
  TierScanner scanner(cfg_, false);
  auto failing = std::make_shared<bool>(false);
  scanner.set_fault_hook([failing](std::string_view op, const std::string& rel) {
    return *failing && rel == "jobA/save_200" && op == "stat" ? EIO : 0;
  });
  auto cat = std::make_shared<TierCatalog>();
  double now = 1'000'000'000;
  merge_scan(*cat, scanner.scan(now, nullptr, cat), now);
  *failing = true;
  now += 10;
  ScanOutcome o = scanner.scan(now, nullptr, cat);
  EXPECT_FALSE(o.unreadable.empty());
  merge_scan(*cat, std::move(o), now);
  EXPECT_TRUE(cat->removed.empty());
  EXPECT_EQ(steps(*cat, "jobA", false).size() + steps(*cat, "jobA", true).size(), 2u);
  EXPECT_EQ(cat->skew_by_job["jobA"].count, 2u);
}

}  // namespace
}  // namespace ckptmon
