#include "store/state_lock.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/temp_dir.hpp"

namespace ckptmon {
namespace {

using ::testing::HasSubstr;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;  // not istreambuf_iterator: g++ 12 -Wnull-dereference
  text << in.rdbuf();
  return text.str();
}

// flock(2) locks belong to the open file description, so a second acquire in
// the same process conflicts exactly as a second daemon would.
TEST(StateDirLock, ASecondHolderIsRefusedWithThePidOfTheFirst) {
  testing::TempDir dir;
  const std::string state = dir.file("state");
  std::string error;
  auto first = StateDirLock::acquire(state, &error);
  ASSERT_TRUE(first) << error;
  EXPECT_EQ(first->path(), state + "/ckptmon.lock");
  const std::string pid = std::to_string(::getpid());
  EXPECT_EQ(read_all(first->path()), pid + "\n");

  auto second = StateDirLock::acquire(state, &error);
  EXPECT_FALSE(second);
  EXPECT_EQ(error, "state_dir " + state + " is in use by another ckptmon (PID " + pid +
                       ", holding " + state +
                       "/ckptmon.lock); two daemons on one state directory would overwrite "
                       "each other's state");

  first.reset();  // released: the next one gets it, over the stale PID
  std::ofstream(state + "/ckptmon.lock") << "999999999\n";
  auto third = StateDirLock::acquire(state, &error);
  ASSERT_TRUE(third) << error;
  EXPECT_EQ(read_all(third->path()), pid + "\n");
}

TEST(StateDirLock, AnUnwritableDirectoryIsAnError) {
  std::string error;
  EXPECT_FALSE(StateDirLock::acquire("/proc/ckptmon-no-such-dir", &error));
  EXPECT_THAT(error, HasSubstr("/proc/ckptmon-no-such-dir"));
}

}  // namespace
}  // namespace ckptmon
