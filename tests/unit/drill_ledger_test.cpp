// The drill ledger in the state database (store/drill_ledger.hpp): what a
// drill records comes back after the database is reopened, every field;
// load() gives the newest of each (tier, job); since() the history in time
// order; at most kDrillsKept drills are kept per (tier, job); job names are
// bytes, not UTF-8.

#include "store/drill_ledger.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "store/store.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

DrillRecord drill(const std::string& tier, const std::string& job, double at) {
  DrillRecord r;
  r.tier = tier;
  r.job = job;
  r.finished_at = at;
  r.step = static_cast<std::int64_t>(at) % 1000;
  r.path = job + "/step-" + std::to_string(r.step);
  r.framework = "pytorch_dcp";
  return r;
}

TEST(DrillLedger, EveryFieldComesBackAfterReopen) {
  testing::TempDir dir;
  DrillRecord full = drill("rapid", std::string("llama\xff\x01", 7), 1000.5);
  full.failure = "llama/step-0/__1_0.distcp: No such file or directory";
  full.objective_seconds = 600;
  full.locate_seconds = 0.25;
  full.metadata_seconds = 0.125;
  full.read_seconds = 12.5;
  full.bytes = std::uint64_t{1} << 40;
  full.files = 129;
  full.reader_ranks = 16;
  full.writer_ranks = 8;
  full.cold = true;
  full.planned = true;
  DrillRecord bare = drill("rapid", "gpt", 1001);  // no objective, nothing read
  {
    std::string error;
    std::shared_ptr<Store> store = Store::open(dir.str() + "/state", &error);
    ASSERT_TRUE(store) << error;
    auto ledger = make_drill_ledger(store);
    ledger->record(full);
    ledger->record(bare);
  }
  std::string error;
  std::shared_ptr<Store> store = Store::open(dir.str() + "/state", &error);
  ASSERT_TRUE(store) << error;
  auto back = make_drill_ledger(store)->load();
  ASSERT_EQ(back.size(), 2u);
  std::sort(back.begin(), back.end(), [](const DrillRecord& a, const DrillRecord& b) {
    return a.finished_at < b.finished_at;
  });
  const DrillRecord& f = back[0];
  EXPECT_EQ(f.tier, "rapid");
  EXPECT_EQ(f.job, std::string("llama\xff\x01", 7));
  EXPECT_EQ(f.finished_at, 1000.5);
  EXPECT_EQ(f.step, 0);
  EXPECT_EQ(f.path, full.path);
  EXPECT_EQ(f.framework, "pytorch_dcp");
  EXPECT_EQ(f.failure, full.failure);
  EXPECT_EQ(f.objective_seconds, 600);
  EXPECT_EQ(f.locate_seconds, 0.25);
  EXPECT_EQ(f.metadata_seconds, 0.125);
  EXPECT_EQ(f.read_seconds, 12.5);
  EXPECT_EQ(f.bytes, std::uint64_t{1} << 40);
  EXPECT_EQ(f.files, 129u);
  EXPECT_EQ(f.reader_ranks, 16u);
  EXPECT_EQ(f.writer_ranks, 8u);
  EXPECT_TRUE(f.cold);
  EXPECT_TRUE(f.planned);
  EXPECT_FALSE(f.ok());  // a failure
  EXPECT_EQ(back[1].job, "gpt");
  EXPECT_FALSE(back[1].objective_seconds);
  EXPECT_TRUE(back[1].ok());
}

TEST(DrillLedger, LoadGivesTheNewestOfEachJobAndSinceTheHistory) {
  testing::TempDir dir;
  std::string error;
  std::shared_ptr<Store> store = Store::open(dir.str(), &error);
  ASSERT_TRUE(store) << error;
  auto ledger = make_drill_ledger(store);
  for (int i = 0; i < 3; ++i) ledger->record(drill("rapid", "llama", 100 + i * 10));
  ledger->record(drill("capacity", "llama", 105));
  auto last = ledger->load();
  ASSERT_EQ(last.size(), 2u);
  for (const DrillRecord& r : last) {
    EXPECT_EQ(r.finished_at, r.tier == "rapid" ? 120 : 105) << r.tier;
  }
  const auto hist = ledger->since(105, 10);
  ASSERT_EQ(hist.size(), 3u);
  EXPECT_EQ(hist[0].finished_at, 105);  // capacity's, at 105 exactly
  EXPECT_EQ(hist[1].finished_at, 110);
  EXPECT_EQ(hist[2].finished_at, 120);
  EXPECT_EQ(ledger->since(0, 2).size(), 2u);  // the limit
}

TEST(DrillLedger, KeepsTheNewestHundredPerJob) {
  testing::TempDir dir;
  std::string error;
  std::shared_ptr<Store> store = Store::open(dir.str(), &error);
  ASSERT_TRUE(store) << error;
  auto ledger = make_drill_ledger(store);
  for (int i = 0; i < 105; ++i) ledger->record(drill("rapid", "llama", 1000 + i));
  ledger->record(drill("rapid", "gpt", 1));
  const auto all = ledger->since(0, 1000);
  ASSERT_EQ(all.size(), 101u);
  EXPECT_EQ(all[0].job, "gpt");         // another job's drill is not pruned
  EXPECT_EQ(all[1].finished_at, 1005);  // llama's five oldest are gone
  EXPECT_EQ(all.back().finished_at, 1104);
}

}  // namespace
}  // namespace ckptmon
