// libFuzzer target for the Prometheus text exposition parser
// (prom/exposition.hpp) and the dcgm source's reading of it
// (dcgm_readings). Beyond "never crash" (ASan + UBSan):
//  - the text is rejected exactly when there is an error, which names a line
//    that exists, and a rejected text yields no samples;
//  - no more samples than the series cap, every name a valid metric name;
//  - accepted samples, written back in canonical form (labels escaped), parse
//    to the same samples;
//  - dcgm_readings fails exactly when the text is rejected or has no GPU
//    series, and every reading it returns has an index below 64 and a
//    utilisation in [0, 1].

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "collectors/gpu_source.hpp"
#include "prom/exposition.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "exposition_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

std::string escape(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

std::string render(const ckptmon::ExpositionSample& s) {
  std::string o = s.name + "{";
  for (const auto& [k, v] : s.labels) o += k + "=\"" + escape(v) + "\",";
  o += "} ";
  char buf[64];
  if (std::isnan(s.value)) {
    o += "NaN";
  } else if (std::isinf(s.value)) {
    o += s.value > 0 ? "+Inf" : "-Inf";
  } else {
    std::snprintf(buf, sizeof buf, "%.17g", s.value);
    o += buf;
  }
  if (s.timestamp_ms) o += " " + std::to_string(*s.timestamp_ms);
  return o + "\n";
}

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ckptmon::ExpositionLimits lim;
  lim.max_line_bytes = 512;  // small caps, so the limits are exercised
  lim.max_series = 64;
  lim.max_labels = 8;
  const ckptmon::Exposition e = ckptmon::parse_exposition(text, lim);
  check(e.ok == e.error.empty(), "rejected exactly when there is an error");
  std::size_t lines = 0;
  for (char c : text) lines += c == '\n';
  if (!text.empty() && text.back() != '\n') ++lines;
  if (!e.ok) {
    check(e.error_line >= 1 && e.error_line <= lines, "the error names a line that exists");
    check(e.samples.empty(), "a rejected text yields no samples");
  } else {
    check(e.samples.size() <= lim.max_series, "no more samples than the cap");
    std::string again;
    for (const auto& s : e.samples) {
      check(!s.name.empty() && s.labels.size() <= lim.max_labels, "a name and few labels");
      again += render(s);
    }
    ckptmon::ExpositionLimits roomy = lim;
    roomy.max_line_bytes = 1 << 16;  // escaping may lengthen a line
    const ckptmon::Exposition r = ckptmon::parse_exposition(again, roomy);
    check(r.ok, "canonical text parses");
    check(r.samples.size() == e.samples.size(), "canonical text has the same samples");
    for (std::size_t i = 0; i < r.samples.size(); ++i) {
      const auto& a = e.samples[i];
      const auto& b = r.samples[i];
      check(a.name == b.name && a.labels == b.labels && a.timestamp_ms == b.timestamp_ms &&
                same_value(a.value, b.value),
            "canonical text parses to the same samples");
    }
  }
  const ckptmon::GpuPoll p = ckptmon::dcgm_readings(text, 1.0);
  check(p.ok == p.error.empty(), "a poll fails exactly when it has an error");
  ckptmon::ExpositionLimits dcgm;
  dcgm.max_series = ckptmon::kDcgmMaxSeries;
  if (!ckptmon::parse_exposition(text, dcgm).ok) check(!p.ok, "rejected text is no reading");
  for (const auto& g : p.gpus) {
    check(g.index < 64, "GPU index below 64");
    check(!g.utilization || (*g.utilization >= 0 && *g.utilization <= 1), "ratio in [0, 1]");
  }
  return 0;
}
