#include "util/duration.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <utility>

namespace ckptmon {
namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t ms;
};
// Longest suffix first so "ms" is not read as "m" followed by garbage.
constexpr std::array<Unit, 7> kUnits{{{"ms", 1},
                                      {"s", 1000},
                                      {"m", 60'000},
                                      {"h", 3'600'000},
                                      {"d", 86'400'000},
                                      {"w", 604'800'000},
                                      {"y", 31'536'000'000}}};

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t total = 0;
  std::size_t pos = 0;
  std::size_t last_unit = kUnits.size();  // units must appear largest to smallest, once each
  while (pos < text.size()) {
    std::int64_t value = 0;
    const char* begin = text.data() + pos;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || ptr == begin || value < 0) return std::nullopt;
    pos = static_cast<std::size_t>(ptr - text.data());
    std::size_t unit_index = kUnits.size();
    for (std::size_t i = 0; i < kUnits.size(); ++i) {
      if (text.substr(pos).starts_with(kUnits[i].suffix)) {
        unit_index = i;
        break;
      }
    }
    if (unit_index == kUnits.size()) return std::nullopt;
    if (last_unit != kUnits.size() && unit_index >= last_unit) return std::nullopt;
    last_unit = unit_index;
    pos += kUnits[unit_index].suffix.size();
    const std::int64_t ms = kUnits[unit_index].ms;
    if (value > (std::numeric_limits<std::int64_t>::max() - total) / ms) return std::nullopt;
    total += value * ms;
  }
  return Duration(total);
}

std::string format_duration(Duration d) {
  std::int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  // Weeks and years are not used on output: "14d" reads better than "2w".
  constexpr std::array<std::pair<std::string_view, std::int64_t>, 5> kOut{
      {{"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}}};
  for (const auto& [suffix, size] : kOut) {
    if (ms >= size) {
      out += std::to_string(ms / size);
      out += suffix;
      ms %= size;
    }
  }
  return out;
}

}  // namespace ckptmon
