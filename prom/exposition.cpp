#include "prom/exposition.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

namespace ckptmon {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool label_start(char c) { return name_start(c) && c != ':'; }
bool label_char(char c) { return name_char(c) && c != ':'; }

// Valid UTF-8 without NUL: anything else is not exposition text.
bool valid_text(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned min = 0;
    unsigned cp = 0;
    if ((c >> 5) == 0x6) {
      len = 2, min = 0x80, cp = c & 0x1Fu;
    } else if ((c >> 4) == 0xE) {
      len = 3, min = 0x800, cp = c & 0x0Fu;
    } else if ((c >> 3) == 0x1E) {
      len = 4, min = 0x10000, cp = c & 0x07u;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// A value as Go's strconv.ParseFloat reads the common forms: decimal and
// exponent, NaN, Inf, +Inf, -Inf (any case).
std::optional<double> parse_value(std::string_view t) {
  if (t.empty()) return std::nullopt;
  bool plus = false;
  if (t.front() == '+') {
    plus = true;
    t.remove_prefix(1);
    if (t.empty() || t.front() == '-' || t.front() == '+') return std::nullopt;
  }
  auto lower = [](std::string_view s) {
    std::string o(s);
    for (char& c : o) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return o;
  };
  const std::string l = lower(t);
  if (l == "nan") {
    if (plus) return std::nullopt;
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (l == "inf" || l == "infinity") return std::numeric_limits<double>::infinity();
  if (l == "-inf" || l == "-infinity") return -std::numeric_limits<double>::infinity();
  // Only digits, sign, point and exponent: from_chars would also take
  // "nan(...)" and hex forms Prometheus does not write.
  for (char c : t) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) {
      return std::nullopt;
    }
  }
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

class LineParser {
 public:
  LineParser(std::string_view line, const ExpositionLimits& limits) : s_(line), limits_(limits) {}

  // A sample line: fills `out`, or returns the reason it is malformed.
  std::string sample(ExpositionSample& out) {
    const std::size_t start = i_;
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    if (i_ == start || !name_start(s_[start])) return "expected a metric name";
    out.name.assign(s_.substr(start, i_ - start));
    bool spaced = skip_space();
    if (peek() == '{') {
      ++i_;
      if (std::string e = labels(out); !e.empty()) return e;
      spaced = skip_space();
    }
    if (!spaced) return "expected a space before the value";
    std::string_view v = token();
    if (v.empty()) return "expected a value";
    auto value = parse_value(v);
    if (!value) return "value \"" + std::string(v) + "\" is not a number";
    out.value = *value;
    skip_space();
    if (i_ < s_.size() && peek() != '#') {
      std::string_view ts = token();
      std::int64_t t = 0;
      auto [p, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
      if (ec != std::errc() || p != ts.data() + ts.size()) {
        return "timestamp \"" + std::string(ts) + "\" is not integer milliseconds";
      }
      out.timestamp_ms = t;
      skip_space();
    }
    if (i_ < s_.size()) {
      // An exemplar: "# {labels} value [timestamp]", ignored.
      if (peek() != '#') return "unexpected text after the sample";
      ++i_;
      skip_space();
      if (peek() != '{' || s_.find('}', i_) == std::string_view::npos) {
        return "malformed exemplar after the sample";
      }
    }
    return {};
  }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool skip_space() {
    const std::size_t from = i_;
    while (i_ < s_.size() && is_space(s_[i_])) ++i_;
    return i_ > from;
  }
  std::string_view token() {
    const std::size_t from = i_;
    while (i_ < s_.size() && !is_space(s_[i_])) ++i_;
    return s_.substr(from, i_ - from);
  }

  std::string labels(ExpositionSample& out) {
    std::set<std::string_view> seen;
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++i_;
        return {};
      }
      const std::size_t start = i_;
      while (i_ < s_.size() && label_char(s_[i_])) ++i_;
      if (i_ == start || !label_start(s_[start])) return "expected a label name or '}'";
      std::string_view name = s_.substr(start, i_ - start);
      if (!seen.insert(name).second) return "label " + std::string(name) + " repeated";
      if (seen.size() > limits_.max_labels) {
        return "more than " + std::to_string(limits_.max_labels) + " labels";
      }
      skip_space();
      if (peek() != '=') return "expected '=' after label " + std::string(name);
      ++i_;
      skip_space();
      if (peek() != '"') return "expected '\"' to open the value of label " + std::string(name);
      ++i_;
      std::string value;
      while (true) {
        if (i_ >= s_.size()) return "unterminated value of label " + std::string(name);
        char c = s_[i_++];
        if (c == '"') break;
        if (c == '\\') {
          char e = peek();
          ++i_;
          if (e == '\\' || e == '"') {
            value += e;
          } else if (e == 'n') {
            value += '\n';
          } else {
            return "invalid escape in the value of label " + std::string(name);
          }
          continue;
        }
        value += c;
      }
      out.labels.emplace_back(std::string(name), std::move(value));
      skip_space();
      if (peek() == ',') {
        ++i_;
      } else if (peek() != '}') {
        return "expected ',' or '}' after the value of label " + std::string(name);
      }
    }
  }

  std::string_view s_;
  const ExpositionLimits& limits_;
  std::size_t i_ = 0;
};

bool valid_metric_name(std::string_view n) {
  return !n.empty() && name_start(n.front()) && std::all_of(n.begin(), n.end(), name_char);
}

// A comment line (after '#'): HELP and TYPE are checked, others ignored.
std::string comment(std::string_view rest, Exposition& out, std::set<std::string>& typed) {
  std::size_t i = 0;
  while (i < rest.size() && is_space(rest[i])) ++i;
  rest.remove_prefix(i);
  const bool help = rest.starts_with("HELP") && (rest.size() == 4 || is_space(rest[4]));
  const bool type = rest.starts_with("TYPE") && (rest.size() == 4 || is_space(rest[4]));
  if (!help && !type) return {};
  rest.remove_prefix(4);
  while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
  std::size_t n = 0;
  while (n < rest.size() && !is_space(rest[n])) ++n;
  std::string_view name = rest.substr(0, n);
  if (!valid_metric_name(name)) {
    return std::string(help ? "HELP" : "TYPE") + " names no valid metric";
  }
  if (help) return {};
  rest.remove_prefix(n);
  while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
  while (!rest.empty() && is_space(rest.back())) rest.remove_suffix(1);
  static constexpr std::string_view kTypes[] = {"counter", "gauge", "histogram", "summary",
                                                "untyped"};
  if (std::find(std::begin(kTypes), std::end(kTypes), rest) == std::end(kTypes)) {
    return "unknown TYPE \"" + std::string(rest.substr(0, 32)) + "\" for " + std::string(name);
  }
  if (!typed.insert(std::string(name)).second) {
    return "second TYPE for " + std::string(name);
  }
  out.types.emplace_back(std::string(name), std::string(rest));
  return {};
}

}  // namespace

const std::string* ExpositionSample::label(std::string_view n) const {
  for (const auto& [k, v] : labels) {
    if (k == n) return &v;
  }
  return nullptr;
}

Exposition parse_exposition(std::string_view text, const ExpositionLimits& limits) {
  Exposition out;
  std::set<std::string> typed;
  std::size_t line_no = 0;
  auto fail = [&](std::string why) {
    out.ok = false;
    out.error_line = line_no;
    out.error = "line " + std::to_string(line_no) + ": " + std::move(why);
    out.samples.clear();
    out.types.clear();
    return out;
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.size() > limits.max_line_bytes) {
      return fail("longer than " + std::to_string(limits.max_line_bytes) + " bytes");
    }
    if (!valid_text(line)) return fail("not UTF-8 text (binary or another encoding)");
    std::size_t lead = 0;
    while (lead < line.size() && is_space(line[lead])) ++lead;
    line.remove_prefix(lead);
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (std::string e = comment(line.substr(1), out, typed); !e.empty()) return fail(e);
      continue;
    }
    if (out.samples.size() >= limits.max_series) {
      return fail("more than " + std::to_string(limits.max_series) + " series");
    }
    ExpositionSample s;
    LineParser p(line, limits);
    if (std::string e = p.sample(s); !e.empty()) return fail(e);
    out.samples.push_back(std::move(s));
  }
  out.ok = true;
  return out;
}

}  // namespace ckptmon
