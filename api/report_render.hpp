#pragma once
// `ckptmon report --format html`: one self-contained page from the report's
// JSON (with its series): inline CSS, SVG charts drawn here (used and
// available bytes per tier, checkpoint size per job, the optimizer's share of
// the bytes), every chart with both axes, ticks and labels; no scripts,
// fonts, images or requests of any kind. Readable printed (@media print).

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ckptmon {

struct ChartLine {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (unix seconds, value), oldest first
};

enum class ChartUnit { kBytes, kShare };

// An SVG line chart over time from `since` to `until`: an x axis of dates and
// a y axis from 0 in `unit`, each with ticks and labels, a legend when there
// is more than one line. Points are thinned to at most one per pixel column
// (the extreme of each column kept, so peaks survive). A chart with no points
// still has its axes and says "no samples".
std::string svg_time_chart(const std::string& title, const std::vector<ChartLine>& lines,
                           ChartUnit unit, double since, double until);

// The page, from to_json(report, /*with_series=*/true) of report_command.cpp.
std::string report_html(const nlohmann::json& report);

}  // namespace ckptmon
