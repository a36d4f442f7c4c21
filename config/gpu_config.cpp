#include "config/gpu_config.hpp"

#include <charconv>

#include "config/http_client_config.hpp"
#include "config/rules_config.hpp"

namespace ckptmon {

namespace {

void url_key(YamlMap& m, std::string_view key, std::string& out, ErrorSink& sink) {
  YamlField f = m.get(key);
  if (!f.present()) return;
  auto v = read_string(f, sink);
  if (!v) return;
  std::string error;
  auto url = parse_http_url(*v, &error);
  if (!url) {
    sink.add(f.mark(), f.path, error + ", got " + describe(f.value));
    return;
  }
  out = *v;
}

void read_job_map(const YamlField& f, std::map<unsigned, std::string>& out, ErrorSink& sink) {
  if (!f.value.IsMap()) {
    sink.add(f.mark(), f.path,
             "expected a mapping of GPU index to job, such as {\"0\": llama-70b}, got " +
                 describe(f.value));
    return;
  }
  for (YAML::const_iterator it = f.value.begin(); it != f.value.end(); ++it) {
    const YAML::detail::iterator_value kv = *it;
    const YAML::Node k = kv.first;
    const std::string key_text = k.IsScalar() ? k.Scalar() : std::string();
    unsigned index = 0;
    auto [p, ec] = std::from_chars(key_text.data(), key_text.data() + key_text.size(), index);
    if (!k.IsScalar() || key_text.empty() || ec != std::errc() ||
        p != key_text.data() + key_text.size() || index >= kMaxGpus) {
      sink.add(k.Mark(), f.path,
               "expected a GPU index from 0 to " + std::to_string(kMaxGpus - 1) + " as key, got " +
                   describe(k));
      continue;
    }
    YamlField item{kv.second, k.Mark(), f.path + "." + key_text};
    auto job = read_string(item, sink);
    if (!job) continue;
    if (job->empty() || job->size() > 256) {
      sink.add(item.mark(), item.path,
               "expected a job name of 1-256 bytes, got " + describe(kv.second));
      continue;
    }
    if (!out.emplace(index, *job).second) {
      sink.add(k.Mark(), item.path, "GPU " + key_text + " is mapped twice");
    }
  }
}

}  // namespace

void read_gpu(YamlMap& m, GpuConfig& out, ErrorSink& sink) {
  if (auto f = m.get("source"); f.present()) {
    if (auto v = read_enum(f, sink, {"nvml", "dcgm", "prometheus", "none"})) {
      out.source = *v == "nvml"         ? GpuSourceKind::kNvml
                   : *v == "dcgm"       ? GpuSourceKind::kDcgm
                   : *v == "prometheus" ? GpuSourceKind::kPrometheus
                                        : GpuSourceKind::kNone;
    }
  }
  duration_key(m, "interval", out.interval, sink, std::chrono::milliseconds(100));
  duration_key(m, "timeout", out.timeout, sink, std::chrono::milliseconds(100));
  duration_key(m, "max_window", out.max_window, sink, std::chrono::seconds(1));
  if (auto f = m.get("max_window"); f.present() && out.max_window > std::chrono::hours(6)) {
    sink.add(f.mark(), f.path, "must be at most 6h, got " + describe(f.value));
  }
  if (auto f = m.get("nvml_library"); f.present()) {
    if (auto v = read_string(f, sink)) {
      if (v->empty()) {
        sink.add(f.mark(), f.path, "expected a library name or path, got an empty string");
      } else {
        out.nvml_library = *v;
      }
    }
  }
  url_key(m, "dcgm_url", out.dcgm_url, sink);
  if (auto f = m.get("prometheus"); f.present()) {
    YamlMap pm(f.value, f.path, sink);
    if (pm.ok()) {
      url_key(pm, "url", out.prometheus_url, sink);
      string_key(pm, "selector", out.prometheus_selector, sink);
      const std::string& s = out.prometheus_selector;
      if (!s.empty() && (s.front() != '{' || s.back() != '}')) {
        YamlField sf = pm.get("selector");
        sink.add(
            sf.mark(), sf.path,
            "expected label matchers in braces such as {cluster=\"a\"}, got " + describe(sf.value));
      }
      pm.finish();
    }
  }
  if (auto f = m.get("job_mapping_dir"); f.present()) {
    if (auto v = read_abs_path(f, sink)) out.job_mapping_dir = *v;
  }
  if (auto f = m.get("job_map"); f.present()) read_job_map(f, out.job_map, sink);
  // The client settings serve whichever HTTP source is chosen.
  const bool prometheus = out.source == GpuSourceKind::kPrometheus;
  read_http_client(m, (prometheus ? out.prometheus_url : out.dcgm_url).starts_with("https://"),
                   prometheus ? "gpu.prometheus.url" : "gpu.dcgm_url", out.client, sink);
  if (out.source == GpuSourceKind::kPrometheus && out.prometheus_url.empty()) {
    YamlField f = m.get("source");
    sink.add(f.mark(), f.path, "source prometheus needs gpu.prometheus.url");
  }
  if (out.interval > out.max_window) {
    YamlField f = m.get("interval");
    sink.add(f.mark(), f.path,
             "must be at most max_window (" + format_duration(out.max_window) + "), got " +
                 describe(f.value));
  }
  m.finish();
}

}  // namespace ckptmon
