#include "model/checkpoint_view.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

Checkpoint at(const std::string& tier, const std::string& path) {
  Checkpoint c;
  c.tier = tier;
  c.path = path;
  return c;
}

// The rules cycle reads every tier's catalog through one view: the records
// where the catalogs hold them, in the order added, none copied.
TEST(CheckpointView, ViewsSeveralCatalogsInOrderWithoutCopyingThem) {
  const std::vector<Checkpoint> rapid{at("rapid", "a/1"), at("rapid", "a/2")};
  const std::vector<Checkpoint> empty;
  const std::vector<Checkpoint> capacity{at("capacity", "b/1")};
  CheckpointView all;
  EXPECT_TRUE(all.empty());
  all.add(rapid);
  all.add(empty);
  all.add(capacity);
  ASSERT_EQ(all.size(), 3u);
  std::vector<const Checkpoint*> seen;
  for (const Checkpoint& c : all) seen.push_back(&c);
  EXPECT_EQ(seen, (std::vector<const Checkpoint*>{&rapid[0], &rapid[1], &capacity[0]}));
  EXPECT_EQ(&all[2], &capacity[0]);
  EXPECT_EQ(all.begin()->path, "a/1");

  // From one vector (a test's, a one-shot scan's): the same records.
  const CheckpointView one = capacity;
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(&one[0], &capacity[0]);
}

}  // namespace
}  // namespace ckptmon
