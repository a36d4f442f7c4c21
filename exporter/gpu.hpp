#pragma once
// GPU families: the devices and the source's health (from State::gpu, part of
// state_families) and what checkpoints cost the GPUs (from the rules cycle's
// GpuCostTracker). Pure functions of their inputs; thread-safe.

#include <vector>

#include <prometheus/metric_family.h>

#include "model/state.hpp"
#include "rules/gpu_cost.hpp"

namespace ckptmon {

// ckpt_gpu_utilization_ratio{gpu}, ckpt_gpu_memory_used_bytes{gpu},
// ckpt_gpu_info{gpu,uuid,model,source}, ckptmon_gpu_source_up,
// ckptmon_gpu_source_errors_total, ckptmon_gpu_job_mapping_errors_total.
// Nothing while gpu.source is none.
void gpu_families(const State& state, std::vector<prometheus::MetricFamily>& out);

// ckpt_checkpoint_gpu_{utilization,baseline_utilization}_ratio{job} (last
// checkpoint with a known cost), ckpt_checkpoint_gpu_idle_seconds_total{job},
// ckpt_checkpoint_gpu_idle_seconds{job} (histogram), ckpt_checkpoint_gpu_unknown_total{job},
// ckpt_checkpoint_gpu_window_info{job,window},
// ckpt_checkpoint_gpu_attribution_info{job,attribution}, ckpt_checkpoint_gpus{job}.
std::vector<prometheus::MetricFamily> gpu_cost_families(const GpuCostTracker& tracker);

}  // namespace ckptmon
