// util/text.hpp: human_bytes, the unit every report and message uses.

#include "util/text.hpp"

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

TEST(HumanBytes, PowersOf1024WithOneDecimal) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(312), "312 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1024), "1.0 KiB");
  EXPECT_EQ(human_bytes(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
}

// A shortfall reads like a surplus, not as raw bytes: the report's
// "size - required" of a tier that is too small (issue 32 item 4).
TEST(HumanBytes, NegativeIsTheSameUnitsWithASign) {
  EXPECT_EQ(human_bytes(-5.0 * 1024 * 1024 * 1024), "-5.0 GiB");
  EXPECT_EQ(human_bytes(-312), "-312 B");
  EXPECT_EQ(human_bytes(-1536), "-1.5 KiB");
}

}  // namespace
}  // namespace ckptmon
