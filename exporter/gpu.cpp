#include "exporter/gpu.hpp"

#include "exporter/family.hpp"
#include "util/metric_labels.hpp"

namespace ckptmon {

void gpu_families(const State& state, std::vector<prometheus::MetricFamily>& out) {
  if (!state.config || !state.config->gpu.enabled()) return;
  const GpuState empty;
  const GpuState& g = state.gpu ? *state.gpu : empty;
  append_gauge(out, "ckptmon_gpu_source_up",
               "1 when the last poll of the GPU source (gpu.source) succeeded.", g.up ? 1 : 0);
  append_counter(out, "ckptmon_gpu_source_errors_total",
                 "Failed polls and failed calls of the GPU source (each logged once).",
                 static_cast<double>(g.errors));
  FamilyBuilder future = counter("ckptmon_gpu_future_samples_total",
                                 "GPU samples refused because they are dated more than " +
                                     std::to_string(static_cast<int>(kGpuMaxFutureSkewSeconds)) +
                                     " s past the daemon's clock.");
  future.add(
      {{"source", g.source.empty() ? std::string(to_string(state.config->gpu.source)) : g.source}},
      static_cast<double>(g.future_samples));
  append(out, std::move(future));
  append_counter(out, "ckptmon_gpu_job_mapping_errors_total",
                 "Job mapping files (gpu.job_mapping_dir) rejected: empty, binary, too "
                 "large, too many jobs, unreadable.",
                 static_cast<double>(g.mapping_errors));

  FamilyBuilder util =
      gauge("ckpt_gpu_utilization_ratio",
            "Share of the last sample period the GPU was busy (NVML gpu utilisation, "
            "dcgm GR_ENGINE_ACTIVE), 0..1.");
  FamilyBuilder mem = gauge("ckpt_gpu_memory_used_bytes", "GPU memory in use.");
  FamilyBuilder info = gauge("ckpt_gpu_info", "Identity of each local GPU. Always 1.");
  for (const GpuDevice& d : g.devices) {
    const std::string idx = std::to_string(d.index);
    if (d.utilization) util.add({{"gpu", idx}}, *d.utilization);
    if (d.memory_used_bytes) mem.add({{"gpu", idx}}, *d.memory_used_bytes);
    info.add({{"gpu", idx}, {"uuid", d.uuid}, {"model", d.model}, {"source", g.source}}, 1);
  }
  append(out, {&util, &mem, &info});
}

std::vector<prometheus::MetricFamily> gpu_cost_families(const GpuCostTracker& tracker) {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  FamilyBuilder during =
      gauge("ckpt_checkpoint_gpu_utilization_ratio",
            "Mean GPU utilisation of the job's GPUs during its last checkpoint's "
            "blocking window (with a known cost).");
  FamilyBuilder baseline = gauge("ckpt_checkpoint_gpu_baseline_utilization_ratio",
                                 "Mean GPU utilisation of the job's GPUs over the same length of "
                                 "non-checkpoint time just before its last checkpoint.");
  FamilyBuilder last_lost =
      gauge("ckpt_last_checkpoint_gpu_idle_seconds",
            "GPU-seconds lost to the job's last checkpoint with a known cost.");
  FamilyBuilder total = counter("ckpt_checkpoint_gpu_idle_seconds_total",
                                "GPU-seconds lost to checkpoints: sum over the job's GPUs of "
                                "max(0, baseline - during) x window seconds.");
  FamilyBuilder hist("ckpt_checkpoint_gpu_idle_seconds",
                     "GPU-seconds lost per checkpoint, once per checkpoint with a known cost.",
                     MetricType::Histogram);
  FamilyBuilder unknown = counter("ckpt_checkpoint_gpu_unknown_total",
                                  "Checkpoints whose GPU cost stayed unknown (samples missing).");
  FamilyBuilder window =
      gauge("ckpt_checkpoint_gpu_window_info",
            "Where the last checkpoint's blocking window came from: pause "
            "(pause_start/pause_end) or save (checkpoint_start to commit). Always 1.");
  FamilyBuilder attribution = gauge("ckpt_checkpoint_gpu_attribution_info",
                                    "How the job's GPUs were found: job_map, job_mapping_dir, "
                                    "source_labels or all_local. Always 1.");
  FamilyBuilder gpus =
      gauge("ckpt_checkpoint_gpus", "GPUs attributed to the job at its last checkpoint.");
  for (const auto& [job, c] : tracker.jobs()) {
    const Labels l{{kTrainingJobLabel, job}};
    if (!c.recent.empty()) {
      const CheckpointGpuCost& k = c.recent.back();
      during.add(l, *k.during);
      baseline.add(l, *k.baseline);
      last_lost.add(l, *k.lost_gpu_seconds);
    }
    total.add(l, c.lost_total);
    hist.add_histogram(l, c.lost);
    unknown.add(l, static_cast<double>(c.unknown));
    if (c.last) {
      window.add(
          {{kTrainingJobLabel, job}, {"window", c.last->window.from_pause ? "pause" : "save"}}, 1);
    }
    attribution.add(
        {{kTrainingJobLabel, job}, {"attribution", std::string(to_string(c.attribution))}}, 1);
    gpus.add(l, static_cast<double>(c.gpus));
  }
  append(out,
         {&during, &baseline, &last_lost, &total, &hist, &unknown, &window, &attribution, &gpus});
  return out;
}

}  // namespace ckptmon
