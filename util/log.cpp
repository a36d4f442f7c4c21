#include "util/log.hpp"

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "util/text.hpp"

namespace ckptmon::log {
namespace {

Format g_format = Format::kLogfmt;

std::string_view level_name(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "critical";
    default:
      return "off";
  }
}

// Writes ts and level, then the pre-encoded payload that write() built.
class StructuredFormatter final : public spdlog::formatter {
 public:
  explicit StructuredFormatter(Format f) : format_(f) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since_epoch = msg.time.time_since_epoch();
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - secs).count();
    std::time_t t = secs.count();
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::array<char, 64> ts{};
    static_cast<void>(std::snprintf(ts.data(), ts.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                                    tm.tm_min, tm.tm_sec, static_cast<int>(millis)));
    std::string head;
    if (format_ == Format::kJson) {
      head = "{\"ts\":\"" + std::string(ts.data()) + "\",\"level\":\"" +
             std::string(level_name(msg.level)) + "\",";
    } else {
      head = "ts=" + std::string(ts.data()) + " level=" + std::string(level_name(msg.level)) + " ";
    }
    dest.append(head.data(), head.data() + head.size());
    dest.append(msg.payload.data(), msg.payload.data() + msg.payload.size());
    if (format_ == Format::kJson) dest.push_back('}');
    dest.push_back('\n');
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<StructuredFormatter>(format_);
  }

 private:
  Format format_;
};

}  // namespace

std::optional<spdlog::level::level_enum> parse_level(std::string_view s) {
  if (s == "debug") return spdlog::level::debug;
  if (s == "info") return spdlog::level::info;
  if (s == "warn") return spdlog::level::warn;
  if (s == "error") return spdlog::level::err;
  return std::nullopt;
}

std::optional<Format> parse_format(std::string_view s) {
  if (s == "logfmt") return Format::kLogfmt;
  if (s == "json") return Format::kJson;
  return std::nullopt;
}

void init(spdlog::level::level_enum level, Format format, spdlog::sink_ptr sink) {
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("ckptmon", sink);
  logger->set_formatter(std::make_unique<StructuredFormatter>(format));
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  g_format = format;
  spdlog::set_default_logger(logger);
}

std::string Field::format_double(double v) {
  std::array<char, 32> buf{};
  static_cast<void>(std::snprintf(buf.data(), buf.size(), "%.6g", v));
  return buf.data();
}

void write(spdlog::level::level_enum level, std::string_view msg,
           std::initializer_list<Field> fields) {
  auto logger = spdlog::default_logger_raw();
  if (logger == nullptr || !logger->should_log(level)) return;
  std::string payload;
  if (g_format == Format::kJson) {
    payload = "\"msg\":" + json_quote(msg);
    for (const auto& f : fields) {
      payload += ',';
      payload += json_quote(f.key);
      payload += ':';
      payload += f.quoted ? json_quote(f.value) : f.value;
    }
  } else {
    payload = "msg=" + logfmt_value(msg);
    for (const auto& f : fields) {
      payload += ' ';
      payload += f.key;
      payload += '=';
      payload += logfmt_value(f.value);
    }
  }
  logger->log(level, "{}", payload);
}

std::optional<std::uint64_t> RateLimiter::allow(const std::string& key, double now) {
  std::lock_guard lock(mu_);
  Bucket& b = buckets_[key];
  if (now - b.window_start >= window_ || now < b.window_start) {
    b.window_start = now;
    b.used = 0;
  }
  if (b.used >= burst_) {
    ++b.suppressed;
    return std::nullopt;
  }
  ++b.used;
  std::uint64_t dropped = b.suppressed;
  b.suppressed = 0;
  return dropped;
}

}  // namespace ckptmon::log
