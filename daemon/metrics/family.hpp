#pragma once
// The toolkit every metric family of daemon/metrics/ is built with: a builder
// that escapes label values, appending, and the text exposition.

#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "model/catalog.hpp"

namespace ckptmon {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Accumulates the samples of one family. Every label value passes
// label_value() (util/label.hpp) here: callers hand in raw names.
class FamilyBuilder {
 public:
  FamilyBuilder(std::string name, std::string help, prometheus::MetricType type);
  FamilyBuilder& add(const Labels& labels, double value);
  // For histogram families.
  FamilyBuilder& add_histogram(const Labels& labels, const HistogramData& h);
  bool empty() const { return family_.metric.empty(); }
  prometheus::MetricFamily take() { return std::move(family_); }

 private:
  prometheus::MetricFamily family_;
};

// Appends the family to `out` unless it has no samples.
void append(std::vector<prometheus::MetricFamily>& out, FamilyBuilder&& b);

// Appends a family of one unlabelled sample.
void append_scalar(std::vector<prometheus::MetricFamily>& out, std::string name, std::string help,
                   prometheus::MetricType type, double value);

// Text exposition format 0.0.4.
std::string serialize(const std::vector<prometheus::MetricFamily>& families);

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace ckptmon
