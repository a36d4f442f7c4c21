#pragma once
// Turns the daemon's State into Prometheus metric families (prometheus-cpp core
// types) and text exposition. Pure functions of their inputs.

#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"

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

// Domain and collector metrics for everything in `state`.
std::vector<prometheus::MetricFamily> state_families(const State& state);

// The checkpoint catalog: counts, sizes, latest steps, skew, scan cost. Part
// of state_families(). The recovery point (ckpt_restorable_*) is a rule's
// figure: rule_families() renders it.
void catalog_families(const State& state, std::vector<prometheus::MetricFamily>& out);

// What the event logs and the integrity verifier tell: line and error
// totals, save and pause durations, failures, restores, integrity checks.
// Part of state_families().
void event_families(const State& state, std::vector<prometheus::MetricFamily>& out);
// The verifier's queue and a stuck read, read at scrape time: a run blocked
// in a read publishes nothing else until it returns.
void integrity_live_families(const IntegrityProgress& progress, double now,
                             std::vector<prometheus::MetricFamily>& out);

// process_* metrics of this process, the way every Prometheus client names
// them: CPU, resident memory, open and maximum file descriptors, start time.
std::vector<prometheus::MetricFamily> process_families(const std::string& proc_path,
                                                       double start_time);

// Text exposition format 0.0.4.
std::string serialize(const std::vector<prometheus::MetricFamily>& families);

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace ckptmon
