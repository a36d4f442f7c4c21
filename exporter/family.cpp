#include "exporter/family.hpp"

#include <limits>
#include <sstream>

#include <prometheus/text_serializer.h>

#include "util/label.hpp"

namespace ckptmon {

FamilyBuilder::FamilyBuilder(std::string name, std::string help, prometheus::MetricType type) {
  family_.name = std::move(name);
  family_.help = std::move(help);
  family_.type = type;
}

FamilyBuilder& FamilyBuilder::add(const Labels& labels, double value) {
  prometheus::ClientMetric m;
  for (const auto& [k, v] : labels) m.label.push_back({k, label_value(v)});
  switch (family_.type) {
    case prometheus::MetricType::Counter:
      m.counter.value = value;
      break;
    case prometheus::MetricType::Gauge:
      m.gauge.value = value;
      break;
    default:
      m.untyped.value = value;
      break;
  }
  family_.metric.push_back(std::move(m));
  return *this;
}

FamilyBuilder& FamilyBuilder::add_histogram(const Labels& labels, const HistogramData& h) {
  prometheus::ClientMetric m;
  for (const auto& [k, v] : labels) m.label.push_back({k, label_value(v)});
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    cumulative += h.buckets[i];
    prometheus::ClientMetric::Bucket b;
    b.cumulative_count = cumulative;
    b.upper_bound = i < h.bounds.size() ? h.bounds[i] : std::numeric_limits<double>::infinity();
    m.histogram.bucket.push_back(b);
  }
  m.histogram.sample_count = h.count;
  m.histogram.sample_sum = h.sum;
  family_.metric.push_back(std::move(m));
  return *this;
}

FamilyBuilder gauge(std::string name, std::string help) {
  return {std::move(name), std::move(help), prometheus::MetricType::Gauge};
}

FamilyBuilder counter(std::string name, std::string help) {
  return {std::move(name), std::move(help), prometheus::MetricType::Counter};
}

void append(std::vector<prometheus::MetricFamily>& out, FamilyBuilder&& b) {
  if (!b.empty()) out.push_back(b.take());
}

void append(std::vector<prometheus::MetricFamily>& out,
            std::initializer_list<FamilyBuilder*> builders) {
  for (FamilyBuilder* b : builders) append(out, std::move(*b));
}

void append_scalar(std::vector<prometheus::MetricFamily>& out, std::string name, std::string help,
                   prometheus::MetricType type, double value) {
  FamilyBuilder b(std::move(name), std::move(help), type);
  b.add({}, value);
  append(out, std::move(b));
}

std::string serialize(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, families);
  return os.str();
}

}  // namespace ckptmon
