#pragma once
// Wall-clock instants as text (the parsing side of RFC 3339 is the event
// schema's: parse_rfc3339 in events/parser.hpp).

#include <string>

namespace ckptmon {

// RFC 3339 in UTC with milliseconds, truncated: "2023-11-14T22:13:20.000Z".
std::string format_rfc3339(double unix_seconds);

}  // namespace ckptmon
