#pragma once
// The top-level `gpu` section: where GPU utilisation comes from, how often it
// is sampled and how GPUs map to training jobs (docs/configuration.md, "gpu").
// Plain data; immutable once loaded.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "config/yaml_reader.hpp"
#include "util/duration.hpp"

namespace ckptmon {

enum class GpuSourceKind { kNone, kNvml, kDcgm, kPrometheus };
std::string_view to_string(GpuSourceKind k);

// The most GPUs one instance tracks: a bound on the `gpu` label.
inline constexpr unsigned kMaxGpus = 64;

struct GpuConfig {
  GpuSourceKind source = GpuSourceKind::kNone;
  // Sampling period of nvml and dcgm; also the join's granularity (samples
  // are kept as means over buckets of this width).
  Duration interval = std::chrono::seconds(1);
  // Deadline of one poll of the source on its worker.
  Duration timeout = std::chrono::seconds(5);
  // The longest checkpoint window the join covers; the ring buffer keeps
  // three times this (window, baseline and room for excluded windows).
  Duration max_window = std::chrono::minutes(10);
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string dcgm_url = "http://127.0.0.1:9400/metrics";
  std::string prometheus_url;               // gpu.prometheus.url
  std::string prometheus_selector;          // gpu.prometheus.selector, e.g. {cluster="a"}
  std::string job_mapping_dir;              // empty: not used
  std::map<unsigned, std::string> job_map;  // GPU index -> job

  bool enabled() const { return source != GpuSourceKind::kNone; }
};

// Reads the `gpu` mapping into `out` over its defaults; calls finish().
void read_gpu(YamlMap& m, GpuConfig& out, ErrorSink& sink);

}  // namespace ckptmon
