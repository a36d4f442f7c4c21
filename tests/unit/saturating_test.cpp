// util/saturating.hpp: sums stay at the maximum instead of wrapping.

#include "util/saturating.hpp"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

TEST(Saturating, AddStopsAtTheMaximum) {
  EXPECT_EQ(sat_add<std::uint64_t>(1, 2), 3u);
  EXPECT_EQ(sat_add<std::uint64_t>(kMax - 1, 1), kMax);
  EXPECT_EQ(sat_add<std::uint64_t>(kMax, 1), kMax);
  EXPECT_EQ(sat_add<std::uint64_t>(std::uint64_t{1} << 63, std::uint64_t{1} << 63), kMax);
  static_assert(sat_add<std::uint32_t>(0xffffffffu, 5u) == 0xffffffffu);
}

TEST(Saturating, AddToAccumulatesFourTimesTwoToThe62) {
  std::uint64_t acc = 0;
  for (int i = 0; i < 4; ++i) sat_add_to(acc, std::uint64_t{1} << 62);
  EXPECT_EQ(acc, kMax);
  sat_add_to(acc, std::uint64_t{1});
  EXPECT_EQ(acc, kMax);  // stays saturated
  std::uint32_t narrow = 0;
  sat_add_to(narrow, kMax);  // a wider value into a narrower total
  EXPECT_EQ(narrow, std::numeric_limits<std::uint32_t>::max());
}

TEST(Saturating, SubStopsAtZero) {
  EXPECT_EQ(sat_sub<std::uint64_t>(5, 3), 2u);
  EXPECT_EQ(sat_sub<std::uint64_t>(3, 5), 0u);
}

}  // namespace
}  // namespace ckptmon
