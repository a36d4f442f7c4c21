#include "rules/series.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ckptmon {

std::vector<Point> window_points(std::span<const Point> points, double now, double window) {
  std::vector<Point> out;
  for (const Point& p : points) {
    if (std::isnan(p.v) || std::isnan(p.t)) continue;
    if (p.t > now || p.t < now - window) continue;
    out.push_back(p);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Point& a, const Point& b) { return a.t < b.t; });
  return out;
}

std::optional<LinearFit> least_squares(std::span<const Point> points, double now) {
  if (points.size() < 2) return std::nullopt;
  // Times relative to now keep the sums small enough for doubles: unix
  // seconds squared would lose the fraction of a second.
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Point& p : points) {
    const double x = p.t - now;
    n += 1;
    sx += x;
    sy += p.v;
    sxx += x * x;
    sxy += x * p.v;
  }
  const double cov_xy = sxy - sx * sy / n;
  const double var_x = sxx - sx * sx / n;
  if (!(var_x > 0)) return std::nullopt;
  LinearFit fit;
  fit.slope = cov_xy / var_x;
  fit.intercept = sy / n - fit.slope * sx / n;
  return fit;
}

std::optional<double> time_to_zero(std::span<const Point> points, double now) {
  auto fit = least_squares(points, now);
  if (!fit) return std::nullopt;
  if (fit->intercept <= 0) return 0.0;
  if (fit->slope >= 0) return std::numeric_limits<double>::infinity();
  return -fit->intercept / fit->slope;
}

std::optional<double> counter_rate(std::span<const Point> points) {
  if (points.size() < 2) return std::nullopt;
  const double span = points.back().t - points.front().t;
  if (!(span > 0)) return std::nullopt;
  double increase = 0;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const double d = points[i].v - points[i - 1].v;
    increase += d >= 0 ? d : points[i].v;
  }
  return increase / span;
}

std::optional<double> rise_rate(std::span<const Point> points) {
  if (points.size() < 2) return std::nullopt;
  const double span = points.back().t - points.front().t;
  if (!(span > 0)) return std::nullopt;
  double rise = 0;
  for (std::size_t i = 1; i < points.size(); ++i) {
    rise += std::max(0.0, points[i].v - points[i - 1].v);
  }
  return rise / span;
}

std::optional<double> nearest_rank(std::vector<double> values, double q) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty() || !(q > 0)) return std::nullopt;
  std::sort(values.begin(), values.end());
  const auto rank =
      static_cast<std::size_t>(std::ceil(std::min(q, 1.0) * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

}  // namespace ckptmon
