#include "util/time_format.hpp"

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

// Expected texts from `date -u -d @SECONDS +%FT%T` (GNU date), milliseconds
// appended by hand.
TEST(TimeFormat, Rfc3339) {
  EXPECT_EQ(format_rfc3339(1'700'000'000.0), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(format_rfc3339(1'700'000'000.5), "2023-11-14T22:13:20.500Z");
  EXPECT_EQ(format_rfc3339(1'700'000'000.9996), "2023-11-14T22:13:20.999Z");  // truncated
  EXPECT_EQ(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(1'700'000'000.1), "2023-11-14T22:13:20.100Z");
  EXPECT_EQ(format_rfc3339(4'102'444'800.0), "2100-01-01T00:00:00.000Z");
}

// Before the epoch the whole second is the floor, so -0.5 s is half a second
// after 1969-12-31T23:59:59 (date -u -d @-1).
TEST(TimeFormat, Rfc3339BeforeTheEpoch) {
  EXPECT_EQ(format_rfc3339(-0.5), "1969-12-31T23:59:59.500Z");
}

}  // namespace
}  // namespace ckptmon
