#include "api/time_range.hpp"

#include <charconv>
#include <cmath>
#include <system_error>
#include <utility>

#include "util/duration.hpp"
#include "util/text.hpp"
#include "util/time_format.hpp"

namespace ckptmon {

std::optional<double> parse_time_arg(std::string_view text, double now) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  if (auto d = parse_duration(text)) return now - to_seconds(*d);
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v) || v < 0) {
    return std::nullopt;
  }
  return v;
}

TimeRangeFault parse_time_range(const std::map<std::string, std::string>& query, double now,
                                double default_span_seconds, TimeRange* out, std::string* error) {
  TimeRange r{now - default_span_seconds, now};
  for (auto [key, target] : {std::pair{"since", &r.since}, std::pair{"until", &r.until}}) {
    auto it = query.find(key);
    if (it == query.end() || it->second.empty()) continue;
    auto t = parse_time_arg(it->second, now);
    if (!t) {
      *error = std::string(key) + ": expected a duration before now (30d) or unix seconds, got \"" +
               it->second + "\"";
      return TimeRangeFault::kUnparsable;
    }
    *target = *t;
  }
  *out = r;
  if (r.since > now) {
    *error = "since: " + format_rfc3339(r.since) + " is in the future (now is " +
             format_rfc3339(now) + ")";
    return TimeRangeFault::kSinceInFuture;
  }
  if (r.until < r.since) {
    *error =
        "until: " + format_rfc3339(r.until) + " is before since (" + format_rfc3339(r.since) + ")";
    return TimeRangeFault::kUntilBeforeSince;
  }
  return TimeRangeFault::kNone;
}

}  // namespace ckptmon
