#pragma once
// Durations as written in configuration files: 500ms, 15s, 5m, 2h, 14d, 1h30m.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ckptmon {

using Duration = std::chrono::milliseconds;

// Parses a Prometheus-style duration ("1h30m", "500ms", "14d", "2w").
// Returns nullopt for anything else, including an empty string, a bare number,
// a negative value or one that overflows.
std::optional<Duration> parse_duration(std::string_view text);

// The shortest text parse_duration() reads back as the same value ("1h30m").
std::string format_duration(Duration d);

inline double to_seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace ckptmon
