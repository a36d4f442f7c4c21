#pragma once
// Small text helpers shared by the logger, the web pages and the parsers.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckptmon {

// `parts` (strings, views or C strings) with `sep` between them: "a, b, c".
template <class Range>
std::string join(const Range& parts, std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& p : parts) {
    if (!first) out += sep;
    first = false;
    out += p;
  }
  return out;
}

// Escapes for an HTML text node or attribute value.
// HTML-escaped, and valid UTF-8: ill-formed bytes become \xNN (display_name).
// The text of an errno value, as strerror() gives it but thread-safe
// (strerror_r): collectors and workers report errors from many threads.
std::string errno_text(int err);

std::string html_escape(std::string_view s);

// Encodes a URL query component: every byte but ALPHA / DIGIT / "-._~" as
// %XX (RFC 3986 unreserved kept), so that url_decode gives `s` back.
// `keep`: bytes left as they are besides the unreserved ones ("/" for a path).
std::string url_encode(std::string_view s, std::string_view keep = {});

// A logfmt value: bare when it has no space, quote, '=' or control character,
// otherwise double-quoted with Go-style escapes.
std::string logfmt_value(std::string_view s);

// A JSON string literal including the quotes; invalid UTF-8 is replaced.
std::string json_quote(std::string_view s);

std::vector<std::string_view> split(std::string_view s, char sep);
std::string_view trim(std::string_view s);

// Formats a number for humans: 1.5 GiB, 10 KiB, 312 B, -5.0 GiB.
std::string human_bytes(double bytes);

// Parses a size as written in configuration: a plain number of bytes
// ("65536") or a number with a unit, binary (KiB, MiB, GiB, TiB) or decimal
// (B, kB, MB, GB, TB), e.g. "64KiB", "1.5GiB". Returns nullopt for anything
// else, a negative value or one that does not fit 64 bits.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

// The shortest exact form of `bytes` in binary units ("64KiB", "1536B").
std::string format_byte_size(std::uint64_t bytes);

}  // namespace ckptmon
