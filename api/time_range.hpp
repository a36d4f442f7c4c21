#pragma once
// The since/until range of GET /api/v1/history and GET /api/v1/report: each
// end a duration before now ("30d", "6h") or unix seconds, checked the same
// way for both routes.

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ckptmon {

// A time as the history API and `ckptmon report --since` take it: a
// duration before `now` ("30d", "6h") or unix seconds ("1767225600",
// "1767225600.5"). nullopt for anything else.
std::optional<double> parse_time_arg(std::string_view text, double now);

struct TimeRange {
  double since = 0;
  double until = 0;
};

// Why parse_time_range() refused a range (checked in this order).
enum class TimeRangeFault {
  kNone,
  kUnparsable,        // since= or until= is neither a duration nor unix seconds
  kSinceInFuture,     // since is after now
  kUntilBeforeSince,  // until is before since
};

// since= and until= of `query` as of `now`: since defaults to
// `default_span_seconds` before now, until to now; an empty value is the
// default. Either end may equal the other; until may be after now. `out`
// holds both ends once they parse (also on an order fault). On a fault,
// `error` names the parameter:
//   since: expected a duration before now (30d) or unix seconds, got "x"
//   since: 2026-01-02T00:00:00.000Z is in the future (now is ...)
//   until: 2026-01-01T00:00:00.000Z is before since (...)
TimeRangeFault parse_time_range(const std::map<std::string, std::string>& query, double now,
                                double default_span_seconds, TimeRange* out, std::string* error);

}  // namespace ckptmon
