// The SVG charts of `ckptmon report --format html`: both axes with labelled
// ticks, bytes in binary units, a peak that survives the thinning to one
// column per pixel, and axes even when there is nothing to draw.

#include "api/report_render.hpp"

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

constexpr double kDay = 86400;
constexpr double kSince = 1767225600;  // 2026-01-01T00:00:00Z

std::vector<std::string> tick_labels(const std::string& svg, const std::string& axis) {
  const auto start = svg.find("<g class=\"" + axis + "\">");
  EXPECT_NE(start, std::string::npos) << axis;
  const auto end = svg.find("</g>", start);
  const std::string g = svg.substr(start, end - start);
  std::vector<std::string> out;
  const std::regex rx(R"re(<text class="tick-label"[^>]*>([^<]*)</text>)re");
  for (auto it = std::sregex_iterator(g.begin(), g.end(), rx); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

TEST(ReportRender, AxesHaveLabelledTicksInBinaryUnitsAndUtcDates) {
  // Up to 900 GiB over ten days: ticks 0, 200 GiB ... 1000 GiB; one date
  // tick every two days from 2026-01-01.
  ChartLine used{"used", {}};
  for (int d = 0; d <= 10; ++d) used.points.emplace_back(kSince + d * kDay, 90.0 * d * (1 << 30));
  const std::string svg =
      svg_time_chart("t", {used}, ChartUnit::kBytes, kSince, kSince + 10 * kDay);
  EXPECT_EQ(tick_labels(svg, "y-axis"),
            (std::vector<std::string>{"0 B", "200.0 GiB", "400.0 GiB", "600.0 GiB", "800.0 GiB",
                                      "1000.0 GiB"}));
  EXPECT_EQ(tick_labels(svg, "x-axis"),
            (std::vector<std::string>{"2026-01-01", "2026-01-03", "2026-01-05", "2026-01-07",
                                      "2026-01-09", "2026-01-11"}));
  // Eleven points: each drawn, and a circle for each.
  EXPECT_NE(svg.find("<polyline class=\"series\""), std::string::npos);
  std::size_t circles = 0;
  for (auto p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1)) {
    ++circles;
  }
  EXPECT_EQ(circles, 11u);
  // Nothing that fetches: no href, no src, no script.
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("src"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
}

TEST(ReportRender, ThinningKeepsAOneSamplePeak) {
  // 100,000 samples of 1 over a day, one of 1000 in the middle: thinned to
  // a few points per pixel column, the peak is still among them (y = the
  // plot's top, 34.0, since the axis tops out at 1000).
  ChartLine l{"backlog", {}};
  for (int i = 0; i < 100000; ++i) {
    l.points.emplace_back(kSince + i * (kDay / 100000), i == 50001 ? 1000.0 : 1.0);
  }
  const std::string svg = svg_time_chart("t", {l}, ChartUnit::kBytes, kSince, kSince + kDay);
  const auto poly = svg.find("points=\"");
  ASSERT_NE(poly, std::string::npos);
  const std::string pts = svg.substr(poly, svg.find('"', poly + 8) - poly);
  EXPECT_NE(pts.find(",34.0 "), std::string::npos) << pts.substr(0, 200);
  // At most four points per column of the 790-pixel plot.
  EXPECT_LE(static_cast<std::size_t>(std::count(pts.begin(), pts.end(), ',')), 4u * 790u);
  EXPECT_EQ(svg.find("<circle"), std::string::npos);  // too many points for markers
}

TEST(ReportRender, AnEmptyChartStillHasBothAxesAndSaysSo) {
  const std::string svg =
      svg_time_chart("empty", {ChartLine{"a", {}}}, ChartUnit::kShare, kSince, kSince + 3600);
  EXPECT_GE(tick_labels(svg, "y-axis").size(), 3u);
  EXPECT_GE(tick_labels(svg, "x-axis").size(), 3u);
  EXPECT_EQ(tick_labels(svg, "y-axis").front(), "0 %");
  EXPECT_NE(svg.find("no samples in the period"), std::string::npos);
}

}  // namespace
}  // namespace ckptmon
