#include "util/text.hpp"

#include "util/label.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

namespace ckptmon {

std::string errno_text(int err) {
  std::array<char, 256> buf{};
  // GNU strerror_r: returns the text, in buf or a static string.
  return ::strerror_r(err, buf.data(), buf.size());
}

std::string html_escape(std::string_view raw) {
  // The page is UTF-8: names from outside keep their bad bytes as \xNN, the
  // way the API shows them (display_name), whoever forgot to say so.
  const std::string s = display_name(raw);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string logfmt_value(std::string_view s) {
  bool needs_quotes = s.empty();
  for (unsigned char c : s) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) {
      needs_quotes = true;
      break;
    }
  }
  if (!needs_quotes) return std::string(s);
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          std::array<char, 8> buf{};
          static_cast<void>(std::snprintf(buf.data(), buf.size(), "\\x%02x", c));
          out += buf.data();
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string json_quote(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    std::size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  std::size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::string human_bytes(double bytes) {
  // A shortfall (size - required < 0) in the same units as a surplus.
  if (bytes < 0) return "-" + human_bytes(-bytes);
  constexpr std::array<const char*, 7> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t i = 0;
  double v = bytes;
  while (v >= 1024.0 && i + 1 < kUnits.size()) {
    v /= 1024.0;
    ++i;
  }
  std::array<char, 32> buf{};
  if (i == 0) {
    static_cast<void>(std::snprintf(buf.data(), buf.size(), "%.0f %s", v, kUnits[i]));
  } else {
    static_cast<void>(std::snprintf(buf.data(), buf.size(), "%.1f %s", v, kUnits[i]));
  }
  return buf.data();
}

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string_view number = text.substr(0, i);
  const std::string_view unit = text.substr(i);
  if (number.empty() || number.front() == '.' || number.back() == '.') return std::nullopt;
  struct Unit {
    std::string_view name;
    double factor;
  };
  static constexpr std::array<Unit, 10> kUnits{{{"B", 1},
                                                {"KiB", 1024.0},
                                                {"MiB", 1024.0 * 1024},
                                                {"GiB", 1024.0 * 1024 * 1024},
                                                {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                                {"kB", 1e3},
                                                {"KB", 1e3},
                                                {"MB", 1e6},
                                                {"GB", 1e9},
                                                {"TB", 1e12}}};
  double factor = 1;
  if (!unit.empty()) {
    auto it =
        std::find_if(kUnits.begin(), kUnits.end(), [&](const Unit& u) { return u.name == unit; });
    if (it == kUnits.end()) return std::nullopt;
    factor = it->factor;
  }
  if (number.find('.') == std::string_view::npos) {
    std::uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc() || ptr != number.data() + number.size()) return std::nullopt;
    const auto f = static_cast<std::uint64_t>(factor);
    if (v != 0 && f > UINT64_MAX / v) return std::nullopt;
    return v * f;
  }
  if (std::count(number.begin(), number.end(), '.') != 1) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (ec != std::errc() || ptr != number.data() + number.size()) return std::nullopt;
  const double bytes = v * factor;
  // 2^64 is exactly representable; anything at or above it does not fit.
  if (!(bytes < 18446744073709551616.0)) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::string format_byte_size(std::uint64_t bytes) {
  constexpr std::array<const char*, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t i = 0;
  while (bytes != 0 && bytes % 1024 == 0 && i + 1 < kUnits.size()) {
    bytes /= 1024;
    ++i;
  }
  return std::to_string(bytes) + kUnits[i];
}

std::string url_encode(std::string_view s, std::string_view keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || keep.find(ch) != std::string_view::npos) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

}  // namespace ckptmon
