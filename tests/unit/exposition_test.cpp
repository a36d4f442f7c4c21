// The Prometheus text exposition parser (prom/exposition.hpp) on
// dcgm-exporter's output and on what must be rejected.
#include "prom/exposition.hpp"
#include "prom/sample_value.hpp"
#include "tests/test_paths.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(CKPTMON_SOURCE_DIR) + "/tests/fixtures/dcgm/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Exposition, ReadsDcgmExporterOutput) {
  // 13 fields x 2 GPUs, with a HELP and a TYPE for each field (promtool
  // check metrics parses the same file: only its naming lints complain).
  Exposition e = parse_exposition(fixture("h100-2gpu.prom"));
  ASSERT_TRUE(e.ok) << e.error;
  ASSERT_EQ(e.samples.size(), 26u);
  ASSERT_EQ(e.types.size(), 13u);
  EXPECT_EQ(e.types[4], (std::pair<std::string, std::string>{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                                                             "counter"}));
  const ExpositionSample& s = e.samples[20];  // GR_ENGINE_ACTIVE of GPU 0
  EXPECT_EQ(s.name, "DCGM_FI_PROF_GR_ENGINE_ACTIVE");
  EXPECT_DOUBLE_EQ(s.value, 0.873412);
  ASSERT_NE(s.label("gpu"), nullptr);
  EXPECT_EQ(*s.label("gpu"), "0");
  EXPECT_EQ(*s.label("modelName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(*s.label("hpc_job"), "llama-70b");
  EXPECT_EQ(*s.label("pod"), "");
  EXPECT_EQ(s.label("hostname"), nullptr);
  EXPECT_EQ(s.labels.size(), 11u);
  EXPECT_FALSE(s.timestamp_ms);
  EXPECT_EQ(e.samples[21].label("hpc_job"), nullptr);  // GPU 1 has no job file
}

TEST(Exposition, EscapesTimestampsSpecialValuesExemplars) {
  Exposition e = parse_exposition(
      "# a free comment\n"
      "# HELP m help with \\n escape\n"
      "# TYPE m gauge\n"
      "m{a=\"x\\\\y\",b=\"q\\\"t\",c=\"l1\\nl2\", } 1.5e3 1700000000123\n"
      "  m { a = \"sp\" }\t-Inf\n"
      "m NaN\n"
      "m +Inf -5\n"
      "n_total{k=\"v\"} 7 # {trace_id=\"abc\"} 1.0 1700000000.5\n"
      "\n"
      "n_total 0x1p3\n");
  ASSERT_FALSE(e.ok);  // hex is not what exporters write
  EXPECT_EQ(e.error_line, 10u);
  EXPECT_EQ(e.error, "line 10: value \"0x1p3\" is not a number");

  e = parse_exposition(
      "m{a=\"x\\\\y\",b=\"q\\\"t\",c=\"l1\\nl2\", } 1.5e3 1700000000123\n"
      "  m { a = \"sp\" }\t-Inf\n"
      "m NaN\n"
      "m +Inf -5\n"
      "n_total{k=\"v\"} 7 # {trace_id=\"abc\"} 1.0 1700000000.5\n"
      "n_total 2");  // no final newline
  ASSERT_TRUE(e.ok) << e.error;
  ASSERT_EQ(e.samples.size(), 6u);
  EXPECT_EQ(*e.samples[0].label("a"), "x\\y");
  EXPECT_EQ(*e.samples[0].label("b"), "q\"t");
  EXPECT_EQ(*e.samples[0].label("c"), "l1\nl2");
  EXPECT_EQ(e.samples[0].value, 1500);
  EXPECT_EQ(e.samples[0].timestamp_ms, 1700000000123);
  EXPECT_EQ(*e.samples[1].label("a"), "sp");
  EXPECT_TRUE(std::isinf(e.samples[1].value) && e.samples[1].value < 0);
  EXPECT_TRUE(std::isnan(e.samples[2].value));
  EXPECT_TRUE(std::isinf(e.samples[3].value) && e.samples[3].value > 0);
  EXPECT_EQ(e.samples[3].timestamp_ms, -5);
  EXPECT_EQ(e.samples[4].value, 7);  // the exemplar's 1.0 is not the value
  EXPECT_FALSE(e.samples[4].timestamp_ms);
  EXPECT_EQ(e.samples[5].value, 2);
}

struct Bad {
  const char* text;
  std::size_t line;
  const char* error;
};

TEST(Exposition, RejectsGarbageWithItsLine) {
  const Bad cases[] = {
      {"<!DOCTYPE html>\n<html><body>Login</body></html>\n", 1, "expected a metric name"},
      {"ok 1\n\x89PNG\r\n\x1a\n", 2, "not UTF-8 text (binary or another encoding)"},
      {"ok 1\nbad\xff 2\n", 2, "not UTF-8 text (binary or another encoding)"},
      {"m{a=\"1\"} 1\nm{a=\"1} 2\n", 2, "unterminated value of label a"},
      {"m{a=\"1\",a=\"2\"} 1\n", 1, "label a repeated"},
      {"m{a=\"\\t\"} 1\n", 1, "invalid escape in the value of label a"},
      {"m{a\"1\"} 1\n", 1, "expected '=' after label a"},
      {"m{a=1} 1\n", 1, "expected '\"' to open the value of label a"},
      {"m{a=\"1\" b=\"2\"} 1\n", 1, "expected ',' or '}' after the value of label a"},
      {"m{1a=\"1\"} 1\n", 1, "expected a label name or '}'"},
      {"m\n", 1, "expected a space before the value"},
      {"m one\n", 1, "value \"one\" is not a number"},
      {"m 1 2.5\n", 1, "timestamp \"2.5\" is not integer milliseconds"},
      {"m 1 2 3\n", 1, "unexpected text after the sample"},
      {"m 1 # trace\n", 1, "malformed exemplar after the sample"},
      {"# TYPE m gauge\n# TYPE m counter\n", 2, "second TYPE for m"},
      {"# TYPE m gauges\n", 1, "unknown TYPE \"gauges\" for m"},
      {"# HELP 9m x\n", 1, "HELP names no valid metric"},
      {"m 1\0\n", 1, "not UTF-8 text (binary or another encoding)"},
  };
  for (const Bad& b : cases) {
    std::string_view text(b.text);
    if (text == "m 1") text = std::string_view("m 1\0\n", 5);
    Exposition e = parse_exposition(text);
    EXPECT_FALSE(e.ok) << b.text;
    EXPECT_EQ(e.error_line, b.line) << b.text;
    EXPECT_EQ(e.error, "line " + std::to_string(b.line) + ": " + b.error) << b.text;
    EXPECT_TRUE(e.samples.empty());
  }
}

TEST(Exposition, CapsLineLengthSeriesAndLabels) {
  ExpositionLimits lim;
  lim.max_line_bytes = 32;
  lim.max_series = 3;
  lim.max_labels = 2;
  Exposition e = parse_exposition("a 1\nb 2\nc 3\n", lim);
  EXPECT_TRUE(e.ok);
  e = parse_exposition("a 1\nb 2\nc 3\nd 4\n", lim);
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.error, "line 4: more than 3 series");
  e = parse_exposition("a 1\n" + std::string(33, 'x') + " 1\n", lim);
  EXPECT_EQ(e.error, "line 2: longer than 32 bytes");
  e = parse_exposition("m{a=\"1\",b=\"2\",c=\"3\"} 1\n", lim);
  EXPECT_EQ(e.error, "line 1: more than 2 labels");
}

// The one formatter of sample values: what the parser reads back is the
// same double, and the specials are spelled as the format spells them.
TEST(PromValue, ShortestTextThatReadsBackTheSame) {
  EXPECT_EQ(prom_value(0.05), "0.05");
  EXPECT_EQ(prom_value(3600), "3600");
  EXPECT_EQ(prom_value(1e21), "1e+21");
  EXPECT_EQ(prom_value(-0.0), "-0");
  EXPECT_EQ(prom_value(INFINITY), "+Inf");
  EXPECT_EQ(prom_value(-INFINITY), "-Inf");
  EXPECT_EQ(prom_value(NAN), "NaN");
  for (double v : {0.1, 1.0 / 3, 6.02214076e23, 5e-324, 1.7976931348623157e308}) {
    const Exposition e = parse_exposition("m " + prom_value(v) + "\n");
    ASSERT_TRUE(e.ok) << e.error;
    EXPECT_EQ(e.samples.at(0).value, v) << prom_value(v);
  }
}

}  // namespace
}  // namespace ckptmon
