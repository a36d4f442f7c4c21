// The since/until range GET /api/v1/history and GET /api/v1/report share
// (api/time_range.hpp), and the messages each route gives for it.

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "api/time_range.hpp"
#include "api/web.hpp"
#include "tools/review/report_command.hpp"

namespace ckptmon {
namespace {

// 100 days after the epoch: 1970-01-01 + 31 (Jan) + 28 (Feb) + 31 (Mar) = Apr 1
// is day 90, so day 100 is 1970-04-11, midnight.
constexpr double kNow = 100 * 86400.0;
constexpr const char* kNowText = "1970-04-11T00:00:00.000Z";

struct Parsed {
  TimeRangeFault fault;
  TimeRange range;
  std::string error;
};

Parsed parse(const std::map<std::string, std::string>& query, double span = 3600) {
  Parsed p{TimeRangeFault::kNone, {-1, -1}, ""};
  p.fault = parse_time_range(query, kNow, span, &p.range, &p.error);
  return p;
}

TEST(TimeRange, EmptyOrMissingEndsTakeTheDefaults) {
  for (const auto& q : {std::map<std::string, std::string>{},
                        std::map<std::string, std::string>{{"since", ""}, {"until", ""}}}) {
    const Parsed p = parse(q, 7200);
    ASSERT_EQ(p.fault, TimeRangeFault::kNone) << p.error;
    EXPECT_EQ(p.range.since, 8632800);  // 8640000 - 7200
    EXPECT_EQ(p.range.until, 8640000);
  }
}

TEST(TimeRange, EachEndIsADurationBeforeNowOrUnixSeconds) {
  Parsed p = parse({{"since", "30d"}, {"until", " 2h "}});
  ASSERT_EQ(p.fault, TimeRangeFault::kNone) << p.error;
  EXPECT_EQ(p.range.since, 6048000);  // 8640000 - 30 * 86400
  EXPECT_EQ(p.range.until, 8632800);  // 8640000 - 7200, blanks trimmed
  p = parse({{"since", "8553600.5"}, {"until", "8553601"}});
  ASSERT_EQ(p.fault, TimeRangeFault::kNone) << p.error;
  EXPECT_EQ(p.range.since, 8553600.5);
  EXPECT_EQ(p.range.until, 8553601);
}

TEST(TimeRange, TheEndsMayMeetAndUntilMayBeAfterNow) {
  Parsed p = parse({{"since", "8640000"}, {"until", "8640000"}});  // since = until = now
  ASSERT_EQ(p.fault, TimeRangeFault::kNone) << p.error;
  EXPECT_EQ(p.range.since, kNow);
  EXPECT_EQ(p.range.until, kNow);
  p = parse({{"until", "8640060"}});
  ASSERT_EQ(p.fault, TimeRangeFault::kNone) << p.error;
  EXPECT_EQ(p.range.until, 8640060);
}

TEST(TimeRange, AnEndThatDoesNotParseIsNamed) {
  // " " is a value, not the default: trimmed to nothing, it does not parse.
  for (const char* bad : {"yesterday", "-5", "12abc", "nan", "inf", "1e400", " "}) {
    const Parsed p = parse({{"since", bad}});
    EXPECT_EQ(p.fault, TimeRangeFault::kUnparsable) << bad;
    EXPECT_EQ(p.error, std::string("since: expected a duration before now (30d) or unix seconds, "
                                   "got \"") +
                           bad + "\"");
  }
  const Parsed p = parse({{"since", "1h"}, {"until", "soon"}});
  EXPECT_EQ(p.fault, TimeRangeFault::kUnparsable);
  EXPECT_EQ(p.error, "until: expected a duration before now (30d) or unix seconds, got \"soon\"");
}

TEST(TimeRange, SinceInTheFutureAndUntilBeforeSinceAreRefusedInThatOrder) {
  Parsed p = parse({{"since", "8640060"}});
  EXPECT_EQ(p.fault, TimeRangeFault::kSinceInFuture);
  EXPECT_EQ(p.error, std::string("since: 1970-04-11T00:01:00.000Z is in the future (now is ") +
                         kNowText + ")");
  EXPECT_EQ(p.range.since, 8640060);  // the parsed ends, for the caller's message
  EXPECT_EQ(p.range.until, kNow);

  p = parse({{"since", "1h"}, {"until", "2h"}});
  EXPECT_EQ(p.fault, TimeRangeFault::kUntilBeforeSince);
  // since 8640000 - 3600 = 23:00 the day before, until 8640000 - 7200 = 22:00.
  EXPECT_EQ(p.error, "until: 1970-04-10T22:00:00.000Z is before since (1970-04-10T23:00:00.000Z)");

  p = parse({{"since", "8640060"}, {"until", "1h"}});  // both: the future is named first
  EXPECT_EQ(p.fault, TimeRangeFault::kSinceInFuture);
}

TEST(TimeRange, TheHistoryRouteGivesTheHelpersMessages) {
  const HistoryPolicy policy;
  HistoryQuery q;
  std::string error;
  ASSERT_TRUE(parse_history_query({}, kNow, policy, &q, &error)) << error;
  EXPECT_EQ(q.since, 8553600);  // 1d before now
  EXPECT_EQ(q.until, kNow);
  EXPECT_FALSE(parse_history_query({{"since", "8640060"}}, kNow, policy, &q, &error));
  EXPECT_EQ(error, std::string("since: 1970-04-11T00:01:00.000Z is in the future (now is ") +
                       kNowText + ")");
  EXPECT_FALSE(parse_history_query({{"since", "1h"}, {"until", "2h"}}, kNow, policy, &q, &error));
  EXPECT_EQ(error, "until: 1970-04-10T22:00:00.000Z is before since (1970-04-10T23:00:00.000Z)");
}

TEST(TimeRange, TheReportRouteKeepsItsOneMessageForBothBounds) {
  ReportApiRequest q;
  std::string error;
  ASSERT_TRUE(parse_report_query({}, kNow, &q, &error)) << error;
  EXPECT_EQ(q.since, 6048000);  // 30d before now
  EXPECT_EQ(q.until, kNow);
  EXPECT_FALSE(parse_report_query({{"since", "yesterday"}}, kNow, &q, &error));
  EXPECT_EQ(error,
            "since: expected a duration before now (30d) or unix seconds, got \"yesterday\"");
  EXPECT_FALSE(parse_report_query({{"since", "8640060"}}, kNow, &q, &error));
  EXPECT_EQ(error, std::string("since: 1970-04-11T00:01:00.000Z must be before until (") +
                       kNowText + ") and not in the future (now is " + kNowText + ")");
  EXPECT_FALSE(parse_report_query({{"since", "1h"}, {"until", "2h"}}, kNow, &q, &error));
  EXPECT_EQ(error, std::string("since: 1970-04-10T23:00:00.000Z must be before until "
                               "(1970-04-10T22:00:00.000Z) and not in the future (now is ") +
                       kNowText + ")");
}

}  // namespace
}  // namespace ckptmon
