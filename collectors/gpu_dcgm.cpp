// gpu.source dcgm: dcgm-exporter's /metrics, scraped with the collectors'
// HttpFetch and read with the exposition parser (prom/exposition.hpp).

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>

#include "collectors/gpu_source.hpp"
#include "prom/exposition.hpp"

namespace ckptmon {
namespace {

// The `gpu` label is a local index; the same bound as NVML's (kMaxGpus).
constexpr unsigned kMaxIndex = 64;
constexpr double kMiB = 1024.0 * 1024.0;

constexpr const auto& kUtil = kDcgmUtilFields;
constexpr std::string_view kFbUsed = "DCGM_FI_DEV_FB_USED";

struct Seen {
  std::string host;
  std::string uuid;
  std::string model;
  std::string job;
  std::array<std::optional<std::pair<double, double>>, kUtil.size()> util;  // (t, ratio)
  std::optional<double> fb_used;
};

std::optional<unsigned> gpu_index(const std::string* v) {
  if (v == nullptr || v->empty() || v->size() > 3) return std::nullopt;
  unsigned n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || p != v->data() + v->size() || n >= kMaxIndex) return std::nullopt;
  return n;
}

class DcgmSource final : public GpuSource {
 public:
  DcgmSource(std::string url, HttpFetch fetch, double timeout)
      : url_(std::move(url)), fetch_(std::move(fetch)), timeout_(timeout) {}
  std::string_view name() const override { return "dcgm"; }

  GpuPoll poll(double now) override {
    GpuPoll out;
    if (!fetch_) {
      out.error = "no HTTP client in this tool";
      return out;
    }
    FetchResult r = fetch_(url_, timeout_, kDcgmMaxBody);
    if (!r.ok) {
      out.error = url_ + ": " + r.error;
      return out;
    }
    if (r.status != 200) {
      out.error = url_ + ": answered HTTP " + std::to_string(r.status);
      return out;
    }
    if (r.content_type.find("html") != std::string::npos) {
      out.error = url_ + ": answered " + gpu_label_value(r.content_type) +
                  ", not the Prometheus text format (is this dcgm-exporter's /metrics?)";
      return out;
    }
    out = dcgm_readings(r.body, now);
    if (!out.ok) out.error = url_ + ": " + out.error;
    return out;
  }

 private:
  std::string url_;
  HttpFetch fetch_;
  double timeout_;
};

}  // namespace

std::size_t dcgm_util_field(std::string_view metric) {
  for (std::size_t k = 0; k < kDcgmUtilFields.size(); ++k) {
    if (metric == kDcgmUtilFields[k].first) return k;
  }
  return kDcgmUtilFields.size();
}

DcgmSeriesLabels dcgm_series_labels(
    const std::function<const std::string*(std::string_view)>& label) {
  auto first = [&](std::string_view a, std::string_view b = {}) -> std::string {
    for (std::string_view k : {a, b}) {
      if (k.empty()) continue;
      if (const std::string* v = label(k); v != nullptr && !v->empty()) return gpu_label_value(*v);
    }
    return {};
  };
  DcgmSeriesLabels l{first("Hostname", "hostname"), first("UUID", "uuid"), first("modelName"),
                     first("hpc_job")};
  if (l.job.empty()) {
    const std::string pod = first("pod");
    const std::string ns = first("namespace");
    if (!pod.empty())
      l.job = gpu_label_value(ns.empty() ? pod : std::string(ns).append("/").append(pod));
  }
  return l;
}

GpuPoll dcgm_readings(std::string_view body, double now) {
  GpuPoll out;
  ExpositionLimits limits;
  limits.max_series = kDcgmMaxSeries;
  Exposition e = parse_exposition(body, limits);
  if (!e.ok) {
    out.error = e.error;
    return out;
  }
  std::map<unsigned, Seen> gpus;
  bool any = false;
  std::string bad_index;  // the first bad `gpu` label, reported once per poll
  std::string collision;
  for (const ExpositionSample& s : e.samples) {
    const std::size_t field = dcgm_util_field(s.name);
    const bool fb = s.name == kFbUsed;
    if (field == kUtil.size() && !fb) continue;
    any = true;
    const std::string* raw = s.label("gpu");
    auto idx = gpu_index(raw);
    if (!idx) {
      // The wording leaves the value out: it is logged once per distinct
      // message, and an exporter inventing values must not make a log storm.
      if (bad_index.empty()) {
        bad_index = s.name + ": series " +
                    (raw == nullptr
                         ? std::string("without a gpu label")
                         : "whose gpu label is no GPU index below " + std::to_string(kMaxIndex)) +
                    " ignored";
      }
      continue;
    }
    DcgmSeriesLabels l = dcgm_series_labels([&s](std::string_view name) { return s.label(name); });
    const std::string& host = l.host;
    auto [it, fresh] = gpus.try_emplace(*idx);
    Seen& g = it->second;
    if (fresh) {
      g.host = host;
    } else if (g.host != host) {
      if (collision.empty()) {
        collision = "GPU " + std::to_string(*idx) + " is named by hosts \"" + g.host + "\" and \"" +
                    host +
                    "\"; the second is ignored (point gpu.dcgm_url at this "
                    "node's own exporter)";
      }
      continue;
    }
    if (g.uuid.empty()) g.uuid = std::move(l.uuid);
    if (g.model.empty()) g.model = std::move(l.model);
    if (g.job.empty()) g.job = std::move(l.job);
    if (!std::isfinite(s.value)) continue;  // unknown, not 0
    const double t = s.timestamp_ms ? static_cast<double>(*s.timestamp_ms) / 1000.0 : now;
    if (fb) {
      g.fb_used = std::max(0.0, s.value) * kMiB;
    } else {
      g.util[field] = std::make_pair(t, std::clamp(s.value * kUtil[field].second, 0.0, 1.0));
    }
  }
  if (!bad_index.empty()) out.call_errors.push_back(bad_index);
  if (!collision.empty()) out.call_errors.push_back(collision);
  if (!any) {
    out.error =
        "no DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_SM_ACTIVE, "
        "DCGM_FI_DEV_GPU_UTIL or DCGM_FI_DEV_FB_USED series (is this dcgm-exporter?)";
    return out;
  }
  for (auto& [idx, g] : gpus) {
    GpuReading r;
    r.index = idx;
    r.uuid = std::move(g.uuid);
    r.model = std::move(g.model);
    r.job = std::move(g.job);
    r.host = std::move(g.host);
    r.memory_used_bytes = g.fb_used;
    for (const auto& u : g.util) {
      if (!u) continue;
      r.utilization = u->second;
      r.samples.push_back(*u);
      break;
    }
    out.gpus.push_back(std::move(r));
  }
  out.ok = true;
  return out;
}

std::shared_ptr<GpuSource> make_dcgm_source(std::string url, HttpFetch fetch,
                                            double timeout_seconds) {
  return std::make_shared<DcgmSource>(std::move(url), std::move(fetch), timeout_seconds);
}

}  // namespace ckptmon
