#pragma once
// The Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), as
// dcgm-exporter and every other exporter writes it: `# HELP` / `# TYPE`
// comments, samples `name{label="value",...} value [timestamp]`, label
// values escaped with \\ \" \n, values NaN / +Inf / -Inf, and OpenMetrics
// exemplars (` # {...} value [ts]`) accepted and ignored. Strict like
// Prometheus's own scraper: the first malformed line rejects the whole text
// with its line number, so HTML, binary or truncated bodies never become
// readings. Pure, no dependencies, no allocation beyond the result.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckptmon {

struct ExpositionSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // in text order, unescaped
  double value = 0;
  std::optional<std::int64_t> timestamp_ms;

  // The value of label `name`, or nullptr.
  const std::string* label(std::string_view name) const;
};

struct ExpositionLimits {
  std::size_t max_line_bytes = std::size_t{64} * 1024;  // longer lines reject the text
  std::size_t max_series = 100000;                      // more samples reject the text
  std::size_t max_labels = 64;                          // per sample
};

struct Exposition {
  bool ok = false;
  std::size_t error_line = 0;  // 1-based line of the error, when !ok
  std::string error;           // "line 3: expected '=' after label name", when !ok
  std::vector<ExpositionSample> samples;
  // `# TYPE` of each metric family that declared one: (name, type).
  std::vector<std::pair<std::string, std::string>> types;
};

Exposition parse_exposition(std::string_view text, const ExpositionLimits& limits = {});

}  // namespace ckptmon
