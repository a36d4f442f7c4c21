#pragma once
// Small text helpers shared by the logger, the web pages and the parsers.

#include <string>
#include <string_view>
#include <vector>

namespace ckptmon {

// Escapes for an HTML text node or attribute value.
std::string html_escape(std::string_view s);

// A logfmt value: bare when it has no space, quote, '=' or control character,
// otherwise double-quoted with Go-style escapes.
std::string logfmt_value(std::string_view s);

// A JSON string literal including the quotes; invalid UTF-8 is replaced.
std::string json_quote(std::string_view s);

std::vector<std::string_view> split(std::string_view s, char sep);
std::string_view trim(std::string_view s);

// Formats a number for humans: 1.5 GiB, 10 KiB, 312 B.
std::string human_bytes(double bytes);

}  // namespace ckptmon
