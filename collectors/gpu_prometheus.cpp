// gpu.source prometheus: the dcgm-exporter series a Prometheus already holds,
// for an instance that watches a shared tier and has no GPUs of its own.
// Each poll is one /api/v1/query for the raw samples since the last poll,
// {__name__=~"DCGM_FI_PROF_GR_ENGINE_ACTIVE|DCGM_FI_PROF_SM_ACTIVE|
// DCGM_FI_DEV_GPU_UTIL",<selector>}[Ns]; each GPU takes the first of those
// fields it has. Raw samples keep their scrape timestamps, each covering the
// scrape period before it, the meaning the ring gives a dcgm or NVML sample.
// (query_range would evaluate at steps with a 5 minute lookback: a dip's
// edges shifted by up to a scrape period and a stopped exporter's last value
// repeated as if current.)

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>

#include "collectors/gpu_source.hpp"
#include "model/gpu.hpp"
#include "prom/prometheus_api.hpp"

namespace ckptmon {
namespace {

constexpr unsigned kMaxIndex = 64;  // kMaxGpus: the bound on the `gpu` label
constexpr std::size_t kMaxBody = 16u << 20;

constexpr const auto& kFields = kDcgmUtilFields;

// A series' labels as dcgm_series_labels() and the sources' keys read them.
auto labels_of(const std::map<std::string, std::string>& m) {
  return [&m](std::string_view k) -> const std::string* {
    auto it = m.find(std::string(k));
    return it == m.end() ? nullptr : &it->second;
  };
}

class PrometheusSource final : public GpuSource {
 public:
  PrometheusSource(std::string url, std::string selector, HttpFetch fetch, double timeout,
                   double history)
      : url_(std::move(url)),
        selector_(std::move(selector)),
        fetch_(std::move(fetch)),
        timeout_(timeout),
        history_(history) {
    while (!url_.empty() && url_.back() == '/') url_.pop_back();
  }
  std::string_view name() const override { return "prometheus"; }

  GpuPoll poll(double now) override {
    GpuPoll out;
    if (!fetch_) {
      out.error = "no HTTP client in this tool";
      return out;
    }
    // Never further back than the ring holds: after a long outage the gap
    // stays a gap (unknown) instead of one huge answer. 10 s of slack for
    // samples Prometheus ingested after the last poll asked.
    const double since = since_ ? std::max(*since_, now - history_) : now - history_;
    const auto range = static_cast<long long>(std::ceil(std::max(1.0, now - since))) + 10;
    // One query for the three fields; each GPU then takes the best it has.
    std::string inner = selector_.size() >= 2 ? selector_.substr(1, selector_.size() - 2) : "";
    while (!inner.empty() && (inner.back() == ' ' || inner.back() == ',')) inner.pop_back();
    std::string query = "{__name__=~\"";
    for (std::size_t k = 0; k < kFields.size(); ++k) {
      query += (k ? "|" : "") + std::string(kFields[k].first);
    }
    query +=
        "\"" + (inner.empty() ? std::string() : "," + inner) + "}[" + std::to_string(range) + "s]";
    PromResponse r;
    if (!ask(prometheus_query_target(query, now), r, out.error)) return out;
    if (r.series.empty()) {
      out.error =
          "no DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_SM_ACTIVE or "
          "DCGM_FI_DEV_GPU_UTIL series match" +
          (selector_.empty() ? std::string() : " " + gpu_label_value(selector_)) + " in the last " +
          std::to_string(range) + " s";
      return out;
    }
    // The best field per GPU: (host, gpu, uuid) -> index into kFields.
    auto field_of = [](const PromSeries& s) {
      auto it = s.metric.find("__name__");
      return it == s.metric.end() ? kFields.size() : dcgm_util_field(it->second);
    };
    // (host, gpu, uuid) and what else the series says of its GPU.
    auto read = [](const PromSeries& s) {
      DcgmSeriesLabels l = dcgm_series_labels(labels_of(s.metric));
      const std::string* gpu = labels_of(s.metric)("gpu");
      auto key =
          std::make_tuple(l.host, gpu == nullptr ? std::string() : gpu_label_value(*gpu), l.uuid);
      return std::make_pair(std::move(key), std::move(l));
    };
    std::map<std::tuple<std::string, std::string, std::string>, std::size_t> best;
    for (const PromSeries& s : r.series) {
      auto [it, fresh] = best.try_emplace(read(s).first, field_of(s));
      if (!fresh) it->second = std::min(it->second, field_of(s));
    }
    std::map<unsigned, GpuReading> readings;
    bool too_many = false;
    for (const PromSeries& s : r.series) {
      const std::size_t field = field_of(s);
      auto [key, l] = read(s);
      if (field == kFields.size() || best[key] != field) continue;
      const std::string& host = std::get<0>(key);
      const std::string& uuid = std::get<2>(key);
      auto it = index_.find(key);
      if (it == index_.end()) {
        if (index_.size() >= kMaxIndex) {
          too_many = true;
          continue;
        }
        it = index_.emplace(key, static_cast<unsigned>(index_.size())).first;
      }
      GpuReading& g = readings[it->second];
      g.index = it->second;
      g.uuid = uuid;
      g.model = std::move(l.model);
      g.host = host;
      g.job = std::move(l.job);
      double& seen = last_[it->second];
      for (const PromSample& p : s.values) {
        if (!std::isfinite(p.v) || p.t <= seen) continue;  // NaN: unknown, not 0
        const double ratio = std::clamp(p.v * kFields[field].second, 0.0, 1.0);
        g.samples.emplace_back(p.t, ratio);
        // One dated in the future is the collector's to refuse and count;
        // taken as the newest seen, it would hide every later sample.
        if (gpu_sample_from_future(p.t, now)) continue;
        g.utilization = ratio;
        seen = p.t;
      }
      if (!g.utilization && last_util_.contains(it->second)) {
        g.utilization = last_util_[it->second];
      }
      if (g.utilization) last_util_[it->second] = *g.utilization;
    }
    if (too_many) {
      out.call_errors.push_back("more than " + std::to_string(kMaxIndex) +
                                " GPUs match the selector; the first " + std::to_string(kMaxIndex) +
                                " seen are watched");
    }
    for (auto& [i, g] : readings) out.gpus.push_back(std::move(g));
    since_ = now;
    out.ok = true;
    return out;
  }

 private:
  bool ask(const std::string& target, PromResponse& r, std::string& error) {
    FetchResult f = fetch_(url_ + target, timeout_, kMaxBody);
    if (!f.ok) {
      error = url_ + ": " + f.error;
      return false;
    }
    if (f.content_type.find("html") != std::string::npos) {
      error = url_ + ": answered HTTP " + std::to_string(f.status) + " " +
              gpu_label_value(f.content_type) + ", not the Prometheus HTTP API";
      return false;
    }
    r = parse_prometheus_response(f.body);
    if (f.status != 200 || !r.ok) {
      error = url_ + ": " + (f.status != 200 ? "HTTP " + std::to_string(f.status) + ": " : "") +
              gpu_label_value(r.ok ? std::string("unexpected answer") : r.error);
      return false;
    }
    if (r.result_type != "matrix") {
      error = url_ + ": answered a " + gpu_label_value(r.result_type) + ", not a matrix";
      return false;
    }
    return true;
  }

  std::string url_;
  std::string selector_;
  HttpFetch fetch_;
  double timeout_;
  double history_;
  std::optional<double> since_;  // `now` of the last good poll
  // (host, gpu, uuid) -> the local index it was given, first seen first.
  std::map<std::tuple<std::string, std::string, std::string>, unsigned> index_;
  std::map<unsigned, double> last_;  // newest sample time taken, per index
  std::map<unsigned, double> last_util_;
};

}  // namespace

std::shared_ptr<GpuSource> make_prometheus_source(std::string url, std::string selector,
                                                  HttpFetch fetch, double timeout_seconds,
                                                  double history_seconds) {
  return std::make_shared<PrometheusSource>(std::move(url), std::move(selector), std::move(fetch),
                                            timeout_seconds, history_seconds);
}

}  // namespace ckptmon
