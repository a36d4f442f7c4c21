#pragma once
// The toolkit every metric family of exporter/ is built with: a builder
// that escapes label values, appending, and the text exposition.

#include <initializer_list>
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

// A builder of each plain type, the common case.
FamilyBuilder gauge(std::string name, std::string help);
FamilyBuilder counter(std::string name, std::string help);

// Appends the family to `out` unless it has no samples.
void append(std::vector<prometheus::MetricFamily>& out, FamilyBuilder&& b);
// The same for each of `builders`, in order (moved from).
void append(std::vector<prometheus::MetricFamily>& out,
            std::initializer_list<FamilyBuilder*> builders);

// Appends a family of one unlabelled sample.
void append_scalar(std::vector<prometheus::MetricFamily>& out, std::string name, std::string help,
                   prometheus::MetricType type, double value);
inline void append_gauge(std::vector<prometheus::MetricFamily>& out, std::string name,
                         std::string help, double value) {
  append_scalar(out, std::move(name), std::move(help), prometheus::MetricType::Gauge, value);
}
inline void append_counter(std::vector<prometheus::MetricFamily>& out, std::string name,
                           std::string help, double value) {
  append_scalar(out, std::move(name), std::move(help), prometheus::MetricType::Counter, value);
}

// Text exposition format 0.0.4.
std::string serialize(const std::vector<prometheus::MetricFamily>& families);

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace ckptmon
