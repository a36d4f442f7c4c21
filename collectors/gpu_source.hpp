#pragma once
// Where GPU readings come from: one GpuSource per configured `gpu.source`
// (NVML by dlopen, dcgm-exporter and Prometheus over HTTP). poll() blocks and
// runs on a worker, one call at a time per source (the collector runner
// never runs a target twice at once); sources are not thread-safe otherwise.

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/http_fetch.hpp"

namespace ckptmon {

struct GpuReading {
  unsigned index = 0;
  std::string uuid;                   // sanitised (gpu_label_value)
  std::string model;                  // sanitised
  std::optional<double> utilization;  // the newest reading, ratio 0..1
  std::optional<double> memory_used_bytes;
  std::string job;   // the source's own job label (dcgm hpc_job, pod), sanitised
  std::string host;  // the source's host label (dcgm Hostname), sanitised; may be empty
  // Raw utilisation samples since the previous poll: (unix seconds, ratio),
  // each covering the time just before it.
  std::vector<std::pair<double, double>> samples;
};

struct GpuPoll {
  bool ok = false;
  std::string error;  // why the poll failed (the source is down), when !ok
  // Calls that failed while the poll as a whole worked (one GPU's memory
  // query, say): counted and logged once each.
  std::vector<std::string> call_errors;
  std::vector<GpuReading> gpus;
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  virtual std::string_view name() const = 0;
  // Blocking. `now` is the injected clock's reading at the start of the poll.
  virtual GpuPoll poll(double now) = 0;
};

// NVML loaded with dlopen from `library` (a name for the loader's search
// path, or a path) at the first poll; nothing of NVIDIA is needed to build.
std::shared_ptr<GpuSource> make_nvml_source(const std::string& library);

// dcgm-exporter's /metrics scraped through `fetch` (docs/configuration.md,
// "gpu"): one GET per poll with a deadline of `timeout_seconds` and a body
// cap of kDcgmMaxBody. A null `fetch` reports the source down.
inline constexpr std::size_t kDcgmMaxBody = 16u << 20;
std::shared_ptr<GpuSource> make_dcgm_source(std::string url, HttpFetch fetch,
                                            double timeout_seconds);

// The readings of one dcgm-exporter scrape body (pure; the source's parser):
// utilisation from DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_PROF_SM_ACTIVE
// (ratios), else DCGM_FI_DEV_GPU_UTIL (percent); memory from
// DCGM_FI_DEV_FB_USED (MiB). One sample per GPU at the series' timestamp or
// `now`. Malformed text, no GPU series, or more than kDcgmMaxSeries series
// make the poll fail; a series whose `gpu` label is no index below 64, or
// that a second host names, is a call error.
inline constexpr std::size_t kDcgmMaxSeries = 20000;
GpuPoll dcgm_readings(std::string_view body, double now);

// dcgm-exporter's utilisation fields in order of preference, each with its
// scale to a ratio; the dcgm and prometheus sources both take the first a
// GPU has.
inline constexpr std::array<std::pair<std::string_view, double>, 3> kDcgmUtilFields{{
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1.0},
    {"DCGM_FI_PROF_SM_ACTIVE", 1.0},
    {"DCGM_FI_DEV_GPU_UTIL", 0.01},
}};
// The index of `metric` in kDcgmUtilFields; kDcgmUtilFields.size() for any other name.
std::size_t dcgm_util_field(std::string_view metric);

// What a dcgm-exporter series says of its GPU, each sanitised
// (gpu_label_value), empty when absent: host from Hostname (else hostname),
// uuid from UUID (else uuid), model from modelName, job from hpc_job, else
// namespace/pod (pod alone without a namespace). `label` gives a label's
// raw value, null or empty when the series has none.
struct DcgmSeriesLabels {
  std::string host, uuid, model, job;
};
DcgmSeriesLabels dcgm_series_labels(
    const std::function<const std::string*(std::string_view)>& label);

// dcgm-exporter's series in a Prometheus (gpu.prometheus.url): each poll one
// /api/v1/query for the raw samples since the last poll of
// DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_SM_ACTIVE and
// DCGM_FI_DEV_GPU_UTIL matching `selector` (a regex on __name__ plus the
// selector's matchers); each GPU takes the first field it has. The first
// poll reaches `history_seconds` back. Each distinct (Hostname, gpu,
// UUID) gets a local index, first seen first, at most 64. An error, HTML, a
// timeout or no matching series make the poll fail.
std::shared_ptr<GpuSource> make_prometheus_source(std::string url, std::string selector,
                                                  HttpFetch fetch, double timeout_seconds,
                                                  double history_seconds);

// Every string a GPU source hands over passes here before it can become a
// label value: valid UTF-8 (bad bytes become U+FFFD), control characters
// become '_', at most 128 bytes. The one place to point at the shared label
// sanitiser when util/ has one.
std::string gpu_label_value(std::string_view s);

}  // namespace ckptmon
