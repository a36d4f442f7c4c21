#pragma once
// Structured logging on top of spdlog: every line is a message plus key=value
// fields, written as logfmt (the Prometheus exporters' habit) or JSON lines.
// Thread-safe.

#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include <spdlog/common.h>

namespace ckptmon::log {

enum class Format { kLogfmt, kJson };

std::optional<spdlog::level::level_enum> parse_level(std::string_view s);
std::optional<Format> parse_format(std::string_view s);

// Installs the process-wide logger writing to `sink` (stderr when null).
void init(spdlog::level::level_enum level, Format format, spdlog::sink_ptr sink = nullptr);

struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v), quoted(true) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v), quoted(true) {}
  Field(std::string_view k, const char* v) : key(k), value(v), quoted(true) {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Field(std::string_view k, T v) : key(k), value(number(v)), quoted(false) {}

  std::string_view key;
  std::string value;
  bool quoted;  // false: a JSON number/bool, written bare

 private:
  template <typename T>
  static std::string number(T v) {
    if constexpr (std::is_same_v<T, bool>) {
      return v ? "true" : "false";
    } else if constexpr (std::is_floating_point_v<T>) {
      return format_double(static_cast<double>(v));
    } else {
      return std::to_string(v);
    }
  }
  static std::string format_double(double v);
};

void write(spdlog::level::level_enum level, std::string_view msg,
           std::initializer_list<Field> fields = {});
inline void debug(std::string_view m, std::initializer_list<Field> f = {}) {
  write(spdlog::level::debug, m, f);
}
inline void info(std::string_view m, std::initializer_list<Field> f = {}) {
  write(spdlog::level::info, m, f);
}
inline void warn(std::string_view m, std::initializer_list<Field> f = {}) {
  write(spdlog::level::warn, m, f);
}
inline void error(std::string_view m, std::initializer_list<Field> f = {}) {
  write(spdlog::level::err, m, f);
}

// Lets through at most `burst` messages per key per `window_seconds`, and
// tells how many were dropped so the next message that gets through can say so.
// Used for errors caused by outside input, which can repeat millions of times.
// Thread-safe.
class RateLimiter {
 public:
  RateLimiter(int burst, double window_seconds) : burst_(burst), window_(window_seconds) {}
  // Returns the number of suppressed messages since the last allowed one, or
  // nullopt when this one should be suppressed as well.
  std::optional<std::uint64_t> allow(const std::string& key, double now);

 private:
  struct Bucket {
    double window_start = 0;
    int used = 0;
    std::uint64_t suppressed = 0;
  };
  int burst_;
  double window_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace ckptmon::log
