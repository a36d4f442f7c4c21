#include "api/report_render.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

#include "util/text.hpp"
#include "util/time_format.hpp"

namespace ckptmon {
namespace {

using nlohmann::json;

constexpr double kWidth = 900, kHeight = 270;
constexpr double kLeft = 86, kRight = 24, kTop = 34, kBottom = 44;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

std::string fmt(const char* f, double v) {
  char buf[64];
  static_cast<void>(std::snprintf(buf, sizeof buf, f, v));
  return buf;
}

std::string px(double v) { return fmt("%.1f", v); }

// 1, 2 or 5 x 10^k at or above `raw`.
double nice_step(double raw) {
  if (!(raw > 0)) return 1;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  }
  return 10 * mag;
}

struct YTicks {
  double top = 1;
  std::vector<double> ticks;
};

// Ticks from 0 to at least `max`, about five of them; bytes step in the
// binary unit the maximum is written in, so labels read 200 GiB, not 214.7 GB.
YTicks y_ticks(double max, ChartUnit unit) {
  YTicks y;
  if (!(max > 0) || !std::isfinite(max)) max = unit == ChartUnit::kShare ? 1 : 1024;
  double scale = 1;
  if (unit == ChartUnit::kBytes) {
    while (max / scale >= 1024 && scale < std::pow(1024.0, 6)) scale *= 1024;
  }
  const double step = nice_step(max / scale / 5) * scale;
  y.top = std::ceil(max / step * (1 - 1e-12)) * step;
  if (y.top <= 0) y.top = step;
  for (double v = 0; v <= y.top * (1 + 1e-9); v += step) y.ticks.push_back(v);
  return y;
}

std::string y_label(double v, ChartUnit unit) {
  if (unit == ChartUnit::kShare) return fmt("%.0f %%", v * 100);
  return human_bytes(v);
}

struct XTicks {
  std::vector<double> ticks;
  bool dates_only = true;
};

// UTC-aligned ticks between since and until, at most eight.
XTicks x_ticks(double since, double until) {
  XTicks x;
  const double span = std::max(until - since, 1.0);
  static constexpr double kSteps[] = {
      60,    300,       900,       1800,       3600,       3 * 3600,   6 * 3600,    12 * 3600,
      86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 182 * 86400, 365 * 86400};
  double step = kSteps[std::size(kSteps) - 1];
  for (double s : kSteps) {
    if (span / s <= 8) {
      step = s;
      break;
    }
  }
  x.dates_only = step >= 86400;
  for (double t = std::ceil(since / step) * step; t <= until; t += step) x.ticks.push_back(t);
  if (x.ticks.empty()) x.ticks.push_back(since);
  return x;
}

std::string x_label(double t, bool dates_only) {
  const auto tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  const std::size_t n =
      std::strftime(buf, sizeof buf, dates_only ? "%Y-%m-%d" : "%m-%d %H:%M", &tm);
  return std::string(buf, n);
}

// At most the first, lowest, highest and last point of each pixel column,
// in time order.
std::vector<std::pair<double, double>> thin(const std::vector<std::pair<double, double>>& pts,
                                            double since, double until, double columns) {
  if (pts.size() <= static_cast<std::size_t>(columns)) return pts;
  std::vector<std::pair<double, double>> out;
  const double width = std::max(until - since, 1.0) / columns;
  std::size_t i = 0;
  while (i < pts.size()) {
    const double col = std::floor((pts[i].first - since) / width);
    std::size_t j = i, lo = i, hi = i;
    while (j < pts.size() && std::floor((pts[j].first - since) / width) == col) {
      if (pts[j].second < pts[lo].second) lo = j;
      if (pts[j].second > pts[hi].second) hi = j;
      ++j;
    }
    std::vector<std::size_t> keep{i, lo, hi, j - 1};
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    for (std::size_t k : keep) out.push_back(pts[k]);
    i = j;
  }
  return out;
}

}  // namespace

std::string svg_time_chart(const std::string& title, const std::vector<ChartLine>& lines,
                           ChartUnit unit, double since, double until) {
  if (!(until > since)) until = since + 1;
  double max = 0;
  std::size_t points = 0;
  for (const ChartLine& l : lines) {
    for (const auto& [t, v] : l.points) {
      if (std::isfinite(v)) max = std::max(max, v);
      ++points;
    }
  }
  const YTicks y = y_ticks(max, unit);
  const XTicks x = x_ticks(since, until);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto sx = [&](double t) { return kLeft + (t - since) / (until - since) * plot_w; };
  auto sy = [&](double v) { return kTop + plot_h - v / y.top * plot_h; };

  std::string out = "<figure class=\"chart\"><svg class=\"chart\" viewBox=\"0 0 " + px(kWidth) +
                    " " + px(kHeight) + "\" width=\"" + px(kWidth) + "\" height=\"" + px(kHeight) +
                    "\" role=\"img\" aria-label=\"" + html_escape(title) + "\">\n<title>" +
                    html_escape(title) + "</title>\n";
  out += "<text class=\"chart-title\" x=\"" + px(kLeft) + "\" y=\"20\">" + html_escape(title) +
         "</text>\n";
  // Grid and y axis.
  out += "<g class=\"y-axis\"><line x1=\"" + px(kLeft) + "\" y1=\"" + px(kTop) + "\" x2=\"" +
         px(kLeft) + "\" y2=\"" + px(kTop + plot_h) + "\"/>\n";
  for (double v : y.ticks) {
    const std::string yy = px(sy(v));
    out.append("<line class=\"grid\" x1=\"").append(px(kLeft)).append("\" y1=\"").append(yy);
    out.append("\" x2=\"").append(px(kLeft + plot_w)).append("\" y2=\"").append(yy);
    out.append("\"/><line class=\"tick\" x1=\"")
        .append(px(kLeft - 5))
        .append("\" y1=\"")
        .append(yy);
    out.append("\" x2=\"").append(px(kLeft)).append("\" y2=\"").append(yy);
    out.append("\"/><text class=\"tick-label\" x=\"").append(px(kLeft - 8)).append("\" y=\"");
    out.append(px(sy(v) + 4)).append("\" text-anchor=\"end\">");
    out.append(html_escape(y_label(v, unit))).append("</text>\n");
  }
  out += "</g>\n";
  // X axis.
  out += "<g class=\"x-axis\"><line x1=\"" + px(kLeft) + "\" y1=\"" + px(kTop + plot_h) +
         "\" x2=\"" + px(kLeft + plot_w) + "\" y2=\"" + px(kTop + plot_h) + "\"/>\n";
  for (double t : x.ticks) {
    const std::string xx = px(sx(t));
    out.append("<line class=\"tick\" x1=\"").append(xx).append("\" y1=\"");
    out.append(px(kTop + plot_h)).append("\" x2=\"").append(xx).append("\" y2=\"");
    out.append(px(kTop + plot_h + 5)).append("\"/><text class=\"tick-label\" x=\"").append(xx);
    out.append("\" y=\"").append(px(kTop + plot_h + 19)).append("\" text-anchor=\"middle\">");
    out.append(html_escape(x_label(t, x.dates_only))).append("</text>\n");
  }
  out += "<text class=\"axis-label\" x=\"" + px(kLeft + plot_w) + "\" y=\"" + px(kHeight - 6) +
         "\" text-anchor=\"end\">time (UTC)</text></g>\n";
  // Lines.
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string color = kColors[i % std::size(kColors)];
    const auto pts = thin(lines[i].points, since, until, plot_w);
    std::string poly;
    for (const auto& [t, v] : pts) {
      if (!std::isfinite(v)) continue;
      poly += px(sx(t)) + "," + px(sy(v)) + " ";
    }
    out.append("<polyline class=\"series\" fill=\"none\" stroke=\"").append(color);
    out.append("\" stroke-width=\"2\" points=\"").append(poly).append("\"><title>");
    out.append(html_escape(lines[i].name)).append("</title></polyline>\n");
    if (pts.size() <= 60) {
      for (const auto& [t, v] : pts) {
        if (!std::isfinite(v)) continue;
        out += "<circle cx=\"" + px(sx(t)) + "\" cy=\"" + px(sy(v)) + "\" r=\"3\" fill=\"" + color +
               "\"/>";
      }
      out += "\n";
    }
    // Legend, top right, one row per line.
    const double ly = kTop + 4 + 16 * static_cast<double>(i);
    out += "<g class=\"legend\"><rect x=\"" + px(kLeft + plot_w - 190) + "\" y=\"" + px(ly) +
           "\" width=\"12\" height=\"4\" fill=\"" + color + "\"/><text x=\"" +
           px(kLeft + plot_w - 172) + "\" y=\"" + px(ly + 6) + "\">" + html_escape(lines[i].name) +
           "</text></g>\n";
  }
  if (points == 0) {
    out += "<text class=\"empty\" x=\"" + px(kLeft + plot_w / 2) + "\" y=\"" +
           px(kTop + plot_h / 2) + "\" text-anchor=\"middle\">no samples in the period</text>\n";
  }
  out += "</svg></figure>\n";
  return out;
}

namespace {

std::string h(const json& v) { return html_escape(v.is_string() ? v.get<std::string>() : ""); }

std::string bytes_cell(const json& v) {
  return v.is_number() ? human_bytes(v.get<double>()) : std::string("-");
}

std::string duration_cell(const json& v) {
  if (!v.is_number()) return "-";
  const double s = v.get<double>();
  if (s < 10) return fmt("%.3g s", s);  // sub-second saves stay visible
  if (s < 120) return fmt("%.0f s", s);
  if (s < 2 * 3600) return fmt("%.0f min", s / 60);
  if (s < 2 * 86400) return fmt("%.1f h", s / 3600);
  return fmt("%.1f days", s / 86400);
}

std::string share_cell(const json& v) {
  return v.is_number() ? fmt("%.1f %%", v.get<double>() * 100) : std::string("-");
}

std::string triple(const json& q, std::string (*cell)(const json&)) {
  if (!q.is_object()) return "not known";
  return cell(q["p50"]) + " / " + cell(q["p90"]) + " / " + cell(q["max"]);
}

ChartLine line_of(const std::string& name, const json& pts) {
  ChartLine l;
  l.name = name;
  if (!pts.is_array()) return l;
  for (const json& p : pts) l.points.emplace_back(p.at(0).get<double>(), p.at(1).get<double>());
  return l;
}

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 2em; color: #111; max-width: 960px; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 3px 7px; } td.n { text-align: right; }
th { background: #eee; }
figure.chart { margin: 0.8em 0; }
svg.chart { background: #fff; max-width: 100%; height: auto; }
svg.chart text { font-size: 12px; fill: #222; }
svg.chart .chart-title { font-size: 14px; font-weight: bold; }
svg.chart .x-axis line, svg.chart .y-axis line { stroke: #333; stroke-width: 1; shape-rendering: crispEdges; }
svg.chart line.grid { stroke: #e3e3e3; }
svg.chart .empty { fill: #888; font-style: italic; }
.note { color: #555; font-size: 0.9em; }
@media print {
  body { margin: 0; max-width: none; font-size: 10pt; }
  h2 { break-after: avoid; }
  figure.chart, tr { break-inside: avoid; }
  th { background: #eee; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  @page { margin: 1.5cm; }
}
)";

}  // namespace

std::string report_html(const json& j) {
  const double since = j["since"].get<double>(), until = j["until"].get<double>();
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Checkpoint "
      "storage capacity review</title>\n<style>" +
      std::string(kStyle) + "</style></head><body>\n<h1>Checkpoint storage capacity review</h1>\n";
  out += "<p>Period: " + html_escape(format_rfc3339(since)) + " to " +
         html_escape(format_rfc3339(until)) + "; source: " + h(j["source"]) + ".</p>\n";
  out += "<h2>Findings</h2>\n<ul>\n";
  if (j["findings"].empty()) out += "<li>Nothing to report.</li>\n";
  for (const json& f : j["findings"]) out += "<li>" + h(f) + "</li>\n";
  out +=
      "</ul>\n<h2>Tiers</h2>\n<table><tr><th>tier</th><th>size</th><th>used</th>"
      "<th>available</th><th>growth per day</th><th>±</th><th>time to full</th>"
      "<th>required</th><th>size − required</th></tr>\n";
  for (const json& t : j["tiers"]) {
    std::string ttf = "-";
    if (t["time_to_full_seconds"].is_string()) ttf = "not filling";
    if (t["time_to_full_seconds"].is_number()) ttf = duration_cell(t["time_to_full_seconds"]);
    out += "<tr><td>" + h(t["tier"]) + (t["partial"].get<bool>() ? " (shard)" : "") +
           "</td><td class=\"n\">" + bytes_cell(t["size_bytes"]) + "</td><td class=\"n\">" +
           bytes_cell(t["used_bytes"]) + "</td><td class=\"n\">" + bytes_cell(t["avail_bytes"]) +
           "</td><td class=\"n\">" + bytes_cell(t["growth_bytes_per_day"]) +
           "</td><td class=\"n\">" + bytes_cell(t["growth_stderr_bytes_per_day"]) +
           "</td><td class=\"n\">" + ttf + "</td><td class=\"n\">" +
           bytes_cell(t["required_capacity_bytes"]) + "</td><td class=\"n\">" +
           bytes_cell(t["size_minus_required_bytes"]) + "</td></tr>\n";
  }
  out += "</table>\n";
  for (const json& t : j["tiers"]) {
    const std::string tier = t["tier"].get<std::string>();
    out += "<h2>Tier " + html_escape(tier) + "</h2>\n";
    const json& series = t.contains("series") ? t["series"] : json::object();
    out += svg_time_chart(tier + ": used and available bytes",
                          {line_of("used", series.value("used_bytes", json::array())),
                           line_of("available", series.value("avail_bytes", json::array()))},
                          ChartUnit::kBytes, since, until);
    // The sizing rule over time, where the history keeps it (schema 6).
    if (!series.value("required_capacity_bytes", json::array()).empty()) {
      out += svg_time_chart(
          tier + ": size and required capacity (sizing rule)",
          {line_of("size", series.value("size_bytes", json::array())),
           line_of("required", series.value("required_capacity_bytes", json::array()))},
          ChartUnit::kBytes, since, until);
    }
    std::vector<ChartLine> sizes, stored, shares;
    bool have_sizes = false;
    for (const json& jb : t["jobs"]) {
      const json& js = jb.contains("series") ? jb["series"] : json::object();
      const std::string name = jb["job"].get<std::string>();
      sizes.push_back(line_of(name, js.value("checkpoint_bytes", json::array())));
      stored.push_back(line_of(name, js.value("stored_bytes", json::array())));
      shares.push_back(line_of(name, js.value("optimizer_share", json::array())));
      have_sizes = have_sizes || jb["checkpoints_committed"].is_number();
    }
    if (have_sizes) {
      out += svg_time_chart(tier + ": checkpoint size by job (bytes at each commit)", sizes,
                            ChartUnit::kBytes, since, until);
      if (std::any_of(shares.begin(), shares.end(),
                      [](const ChartLine& l) { return !l.points.empty(); })) {
        out += svg_time_chart(tier + ": optimizer share of checkpoint bytes", shares,
                              ChartUnit::kShare, since, until);
      }
    }
    out += svg_time_chart(tier + ": stored bytes by job", stored, ChartUnit::kBytes, since, until);
    out +=
        "<table><tr><th>job</th><th>stored at start</th><th>stored at end</th><th>peak</th>"
        "<th>growth per day</th><th>committed</th><th>size p50 / p90 / max</th>"
        "<th>save duration p50 / p90 / max</th><th>completion skew p50 / p90 / max</th>"
        "<th>optimizer share first → last</th></tr>\n";
    for (const json& jb : t["jobs"]) {
      const json& share = jb["optimizer_share"];
      out += "<tr><td>" + h(jb["job"]) + "</td><td class=\"n\">" +
             bytes_cell(jb["first_stored_bytes"]) + "</td><td class=\"n\">" +
             bytes_cell(jb["last_stored_bytes"]) + "</td><td class=\"n\">" +
             bytes_cell(jb["peak_stored_bytes"]) + "</td><td class=\"n\">" +
             bytes_cell(jb["growth_bytes_per_day"]) + "</td><td class=\"n\">" +
             (jb["checkpoints_committed"].is_number() ? jb["checkpoints_committed"].dump()
                                                      : std::string("not known")) +
             "</td><td class=\"n\">" + triple(jb["checkpoint_bytes"], bytes_cell) +
             "</td><td class=\"n\">" + triple(jb["save_duration_seconds"], duration_cell) +
             "</td><td class=\"n\">" + triple(jb["completion_skew_seconds"], duration_cell) +
             "</td><td class=\"n\">" +
             (share.is_object() && share["first"].is_number()
                  ? share_cell(share["first"]) + " → " + share_cell(share["last"])
                  : std::string("not known")) +
             "</td></tr>\n";
    }
    out += "</table>\n";
  }
  std::string drains;
  for (const json& t : j["tiers"]) {
    for (const json& jb : t["jobs"]) {
      const json& d = jb["drain_backlog"];
      if (!d.is_object()) continue;
      drains += "<tr><td>" + h(t["tier"]) + "</td><td>" + h(d["to_tier"]) + "</td><td>" +
                h(jb["job"]) + "</td><td class=\"n\">" + bytes_cell(d["peak_bytes"]) + "</td><td>" +
                html_escape(format_rfc3339(d["peak_at"].get<double>())) + "</td><td class=\"n\">" +
                d["hours_observed"].dump() + "</td></tr>\n";
    }
  }
  std::string gpus;
  for (const json& t : j["tiers"]) {
    for (const json& jb : t["jobs"]) {
      const json& g = jb["gpu_cost"];
      if (!g.is_object()) continue;
      gpus += "<tr><td>" + h(t["tier"]) + "</td><td>" + h(jb["job"]) + "</td><td class=\"n\">" +
              (g["lost_gpu_seconds"].is_number() ? fmt("%.1f", g["lost_gpu_seconds"].get<double>())
                                                 : std::string("not known")) +
              "</td><td class=\"n\">" + g["checkpoints_known"].dump() + "</td><td class=\"n\">" +
              g["checkpoints_unknown"].dump() + "</td></tr>\n";
    }
  }
  if (!gpus.empty()) {
    out +=
        "<h2>GPU time lost to checkpoints</h2>\n<table><tr><th>tier</th><th>job</th>"
        "<th>lost GPU-seconds</th><th>checkpoints known</th><th>unknown</th></tr>\n" +
        gpus + "</table>\n";
  }
  std::string drills;
  for (const json& t : j["tiers"]) {
    for (const json& jb : t["jobs"]) {
      const json& d = jb["restore_drills"];
      if (!d.is_object()) continue;
      const json& l = d["last"];
      const std::string result = l["ok"].get<bool>()        ? std::string("ok")
                                 : l["failure"].is_string() ? l["failure"].get<std::string>()
                                                            : std::string("over the objective");
      drills += "<tr><td>" + h(t["tier"]) + "</td><td>" + h(jb["job"]) + "</td><td class=\"n\">" +
                d["drills"].dump() + "</td><td class=\"n\">" + d["ok"].dump() +
                "</td><td class=\"n\">" + d["failed"].dump() + "</td><td class=\"n\">" +
                fmt("%.3f", l["seconds"].get<double>()) + "</td><td>" + html_escape(result) +
                "</td></tr>\n";
    }
  }
  if (!drills.empty()) {
    out +=
        "<h2>Restore drills</h2>\n<table><tr><th>tier</th><th>job</th><th>drills</th>"
        "<th>ok</th><th>failed</th><th>last, seconds</th><th>last result</th></tr>\n" +
        drills + "</table>\n";
  }
  out += "<h2>Drain backlog peaks</h2>\n";
  if (drains.empty()) {
    out +=
        "<p class=\"note\">No drain observed in the period (or not known: <code>--from</code> "
        "has none).</p>\n";
  } else {
    out +=
        "<table><tr><th>tier</th><th>to</th><th>job</th><th>peak</th><th>at</th><th>hours "
        "observed</th></tr>\n" +
        drains + "</table>\n";
  }
  out += "<h2>Alerts fired</h2>\n";
  if (j["alerts"].empty()) {
    out +=
        "<p class=\"note\">None in the period (or not known: <code>--from</code> has no alert "
        "history).</p>\n";
  } else {
    out +=
        "<table><tr><th>alert</th><th>severity</th><th>tier</th><th>job</th><th>fired</th>"
        "<th>for</th></tr>\n";
    for (const json& a : j["alerts"]) {
      out += "<tr><td>" + h(a["alertname"]) + "</td><td>" + h(a["severity"]) + "</td><td>" +
             h(a["tier"]) + "</td><td>" + h(a["job"]) + "</td><td>" +
             html_escape(format_rfc3339(a["fired_at"].get<double>())) + "</td><td class=\"n\">" +
             duration_cell(a["duration_seconds"]) +
             (a["resolved_at"].is_null() ? " (still firing)" : "") + "</td></tr>\n";
    }
    out += "</table>\n";
  }
  out += "<h2>Compliance: copies outside their allowed residency</h2>\n";
  const json c = j.value("compliance", json::object());
  if (!c.value("known", false)) {
    out += "<p class=\"note\">Not known: " +
           html_escape(c.value("reason", std::string("the source does not say"))) + ".</p>\n";
  } else if (c["outside_residency"].empty()) {
    out +=
        "<p>None: every checkpoint committed in the period lay where its job's namespaces "
        "allow.</p>\n";
  } else {
    out +=
        "<table><tr><th>tier</th><th>residency</th><th>job</th><th>allowed</th><th>copies</th>"
        "<th>bytes</th><th>first step</th><th>last step</th><th>last committed</th></tr>\n";
    for (const json& x : c["outside_residency"]) {
      std::vector<std::string> allowed;
      for (const json& a : x["allowed"]) allowed.push_back(h(a));
      out += "<tr><td>" + h(x["tier"]) + "</td><td>" + h(x["residency"]) + "</td><td>" +
             h(x["job"]) + "</td><td>" + join(allowed, ", ") + "</td><td class=\"n\">" +
             x["copies"].dump() + "</td><td class=\"n\">" +
             html_escape(human_bytes(x["bytes"].get<double>())) + "</td><td class=\"n\">" +
             x["first_step"].dump() + "</td><td class=\"n\">" + x["last_step"].dump() +
             "</td><td>" + html_escape(format_rfc3339(x["last_committed_at"].get<double>())) +
             "</td></tr>\n";
    }
    out += "</table>\n";
  }
  out +=
      "<p class=\"note\">Drawn by ckptmon report; exact figures: <code>--format json</code>."
      "</p>\n</body></html>\n";
  return out;
}

}  // namespace ckptmon
