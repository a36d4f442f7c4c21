#include "util/duration.hpp"

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

using std::chrono::milliseconds;

TEST(Duration, ParsesEveryUnit) {
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("15s"), milliseconds(15'000));
  EXPECT_EQ(parse_duration("5m"), milliseconds(300'000));
  EXPECT_EQ(parse_duration("2h"), milliseconds(7'200'000));
  EXPECT_EQ(parse_duration("14d"), milliseconds(14LL * 86'400'000));
  EXPECT_EQ(parse_duration("2w"), milliseconds(14LL * 86'400'000));
  EXPECT_EQ(parse_duration("0s"), milliseconds(0));
}

TEST(Duration, ParsesCompoundLargestUnitFirst) {
  EXPECT_EQ(parse_duration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(parse_duration("1m500ms"), milliseconds(60'500));
  EXPECT_FALSE(parse_duration("30m1h"));  // out of order
  EXPECT_FALSE(parse_duration("1m1m"));   // repeated unit
}

TEST(Duration, RejectsGarbage) {
  for (const char* bad :
       {"", "15", "s", "-5s", "5 s", "5sec", "1.5h", "fifteen", "5S", "9223372036854775807d"}) {
    EXPECT_FALSE(parse_duration(bad)) << bad;
  }
}

TEST(Duration, FormatRoundTrips) {
  for (long long ms :
       {0LL, 1LL, 999LL, 1000LL, 61'000LL, 5'400'000LL, 1'209'600'000LL, 90'061'001LL}) {
    const std::string text = format_duration(milliseconds(ms));
    auto back = parse_duration(text);
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(back->count(), ms) << text;
  }
  EXPECT_EQ(format_duration(milliseconds(5'400'000)), "1h30m");
  EXPECT_EQ(format_duration(milliseconds(1'209'600'000)), "14d");
}

}  // namespace
}  // namespace ckptmon
