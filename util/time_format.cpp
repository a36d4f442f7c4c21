#include "util/time_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace ckptmon {

std::string format_rfc3339(double unix_seconds) {
  // Truncated, never rounded up: a resolved alert's endsAt must not lie in
  // Alertmanager's future, or it merges the update as still firing.
  const double whole = std::floor(unix_seconds);
  const long long ms =
      // 1 us of slack so 0.1 s (0.0999999 as a double) prints as .100, not .099.
      std::min(999LL, static_cast<long long>(std::floor((unix_seconds - whole) * 1000 + 1e-3)));
  const std::time_t t = static_cast<std::time_t>(whole);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  static_cast<void>(std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ",
                                  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                                  tm.tm_min, tm.tm_sec, ms));
  return buf;
}

}  // namespace ckptmon
