#include "store/store.hpp"

#include <gtest/gtest.h>

#include "temp_dir.hpp"

namespace ckptmon {
namespace {

Checkpoint make(const std::string& path, std::int64_t step, CkptState state) {
  Checkpoint c;
  c.tier = "rapid";
  c.job = "llama";
  c.path = path;
  c.step = step;
  c.framework = "pytorch_dcp";
  c.state = state;
  c.reason = state == CkptState::kPartial ? "no .metadata after 30m" : "";
  c.files = 9;
  c.bytes = 123456789012ULL;
  c.allocated_bytes = 123456794624ULL;
  c.first_write = 1700000000.25;
  c.last_write = 1700000042.5;
  c.marker_time = 1700000043.0;
  c.component_bytes = {100, 200, 3, 4, 5, 6, 7, 8};  // scaler 7, dataloader 8 (schema 4)
  c.expected_files = 8;
  c.save_start = 1699999990.0;
  c.save_end = 1700000043.0;
  c.dir_mtime = 1700000043.0;
  c.first_seen = 1700000050.0;
  c.last_seen = 1700000060.0;
  c.skew_observed = true;
  return c;
}

TEST(Store, SavedCheckpointsComeBackAfterReopen) {
  testing::TempDir dir;
  std::string error;
  {
    auto store = Store::open(dir.str() + "/state", &error);
    ASSERT_TRUE(store) << error;
    store->save_catalog("rapid", {make("llama/step-100", 100, CkptState::kCommitted),
                                  make("llama/step-200", 200, CkptState::kPartial)},
                        {}, 1700000060.0);
    store->flush();
    EXPECT_EQ(store->transactions(), 1u);
    EXPECT_EQ(store->errors(), 0u);
  }
  auto store = Store::open(dir.str() + "/state", &error);
  ASSERT_TRUE(store) << error;
  auto loaded = store->load_catalog();
  ASSERT_EQ(loaded.size(), 1u);
  ASSERT_EQ(loaded["rapid"].size(), 2u);
  const Checkpoint& a = loaded["rapid"][0];
  const Checkpoint want = make("llama/step-100", 100, CkptState::kCommitted);
  EXPECT_EQ(a.path, want.path);
  EXPECT_EQ(a.step, 100);
  EXPECT_EQ(a.state, CkptState::kCommitted);
  EXPECT_EQ(a.bytes, 123456789012ULL);
  EXPECT_EQ(a.allocated_bytes, 123456794624ULL);
  EXPECT_DOUBLE_EQ(a.first_write, 1700000000.25);
  EXPECT_DOUBLE_EQ(a.last_write, 1700000042.5);
  EXPECT_EQ(a.component_bytes, want.component_bytes);
  EXPECT_EQ(a.expected_files, 8u);
  EXPECT_DOUBLE_EQ(a.first_seen, 1700000050.0);
  EXPECT_TRUE(a.skew_observed);
  EXPECT_EQ(loaded["rapid"][1].state, CkptState::kPartial);
  EXPECT_EQ(loaded["rapid"][1].reason, "no .metadata after 30m");
}

TEST(Store, DeletedIsRememberedAndDistinctFromNeverSeen) {
  testing::TempDir dir;
  std::string error;
  auto store = Store::open(dir.str(), &error);
  ASSERT_TRUE(store) << error;
  store->save_catalog("rapid", {make("llama/step-100", 100, CkptState::kCommitted)}, {}, 10);
  store->save_catalog("rapid", {}, {"llama/step-100"}, 20);
  store->flush();
  EXPECT_TRUE(store->load_catalog()["rapid"].empty());
  auto deleted = store->deleted("rapid");
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_DOUBLE_EQ(deleted["llama/step-100"], 20);
  EXPECT_FALSE(deleted.contains("llama/step-999"));  // never seen

  // A checkpoint that comes back is present again.
  store->save_catalog("rapid", {make("llama/step-100", 100, CkptState::kCommitted)}, {}, 30);
  store->flush();
  EXPECT_EQ(store->load_catalog()["rapid"].size(), 1u);
  EXPECT_TRUE(store->deleted("rapid").empty());
}

TEST(Store, UpdateOverwritesFiguresButKeepsOneRow) {
  testing::TempDir dir;
  std::string error;
  auto store = Store::open(dir.str(), &error);
  ASSERT_TRUE(store) << error;
  auto c = make("llama/step-100", 100, CkptState::kInProgress);
  store->save_catalog("rapid", {c}, {}, 10);
  c.state = CkptState::kCommitted;
  c.files = 10;
  store->save_catalog("rapid", {c}, {}, 20);
  store->flush();
  auto loaded = store->load_catalog()["rapid"];
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].state, CkptState::kCommitted);
  EXPECT_EQ(loaded[0].files, 10u);
}

TEST(Store, UnusableStateDirIsAnErrorNotACrash) {
  testing::TempDir dir;
  dir.write("file", 1);
  std::string error;
  auto store = Store::open(dir.str() + "/file/state", &error);
  EXPECT_FALSE(store);
  EXPECT_NE(error.find("cannot create state_dir"), std::string::npos) << error;
}

}  // namespace
}  // namespace ckptmon
