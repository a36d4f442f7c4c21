#pragma once
// Arithmetic on time series the way PromQL does it, for the rules. Pure
// functions; thread-safe.

#include <optional>
#include <span>
#include <vector>

namespace ckptmon {

struct Point {
  double t = 0;  // unix seconds
  double v = 0;
};

// The points with now - window <= t <= now, sorted by time. Points from the
// future (a clock that jumped backwards) are left out; so are NaN values.
std::vector<Point> window_points(std::span<const Point> points, double now, double window);

struct LinearFit {
  double slope = 0;      // per second
  double intercept = 0;  // value at t = now (the fit is centred on now)
};

// Least-squares line through the points, as PromQL's deriv()/predict_linear().
// Needs two points at different times; nullopt otherwise.
std::optional<LinearFit> least_squares(std::span<const Point> points, double now);

// Seconds until the fitted line falls to zero, as predict_linear(v[w], t) == 0
// solved for t: nullopt without a fit, +Inf when the line is flat or rising,
// 0 when the fitted value at now is already at or below zero.
std::optional<double> time_to_zero(std::span<const Point> points, double now);

// Per-second rate of a counter over the points (sorted by time): the increase
// with resets handled as PromQL does (a drop means the counter restarted from
// zero), divided by the time the points span. No extrapolation to the window
// edges. nullopt with fewer than two points or a zero span.
std::optional<double> counter_rate(std::span<const Point> points);

// Per-second rate of the increases of a gauge (sorted by time): the sum of
// its rises, decreases ignored, divided by the time the points span.
std::optional<double> rise_rate(std::span<const Point> points);

// Nearest-rank quantile: the smallest value with at least a share q of the
// values at or below it (q in (0, 1]; q = 1 is the maximum). NaNs are left
// out; nullopt when nothing is left.
std::optional<double> nearest_rank(std::vector<double> values, double q);

}  // namespace ckptmon
