#include "rules/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "rules/inputs.hpp"

namespace ckptmon {
namespace {

std::string number(double v) {
  char buf[64];
  static_cast<void>(std::snprintf(buf, sizeof buf, "%g", v));
  return buf;
}

}  // namespace

PlanInputs plan_inputs(const CapacityFigures& capacity, const BandwidthFigures& bandwidth,
                       const CheckpointView& all, const TierPolicy& policy) {
  PlanInputs in;
  in.tier = capacity.tier;
  in.has_stats = capacity.has_stats;
  in.size_bytes = capacity.size_bytes;
  in.avail_bytes = capacity.avail_bytes;
  in.replicas = policy.sizing.replicas;
  in.temp_write_allowance_ratio = policy.sizing.temp_write_allowance_ratio;
  in.growth_headroom_ratio = policy.sizing.growth_headroom_ratio;
  in.concurrent_jobs = capacity.concurrent_jobs;
  in.concurrency_observed = capacity.concurrency_observed;
  in.residue_bytes = capacity.residue_bytes;
  in.keep_last = static_cast<double>(std::max<std::int64_t>(1, policy.retention.keep_last));
  in.allowed_window_seconds = policy.bandwidth.allowed_window_seconds;
  in.overhead_ratio = policy.bandwidth.overhead_ratio;
  in.concurrent_writers = bandwidth.concurrent_writers;
  in.writers_observed = bandwidth.concurrency_observed;
  in.observed_write_bytes_per_second = bandwidth.observed_bytes_per_second;
  const JobCheckpoints jobs = group_by_job(all, capacity.tier);
  for (const JobCapacity& j : capacity.jobs) {
    PlanJob p;
    p.job = j.job;
    p.latest_bytes = static_cast<double>(j.latest_bytes);
    p.retained_versions = j.retained_versions;
    auto it = jobs.find(j.job);
    if (it != jobs.end()) {
      const std::vector<const Checkpoint*> committed = committed_oldest_first(it->second);
      std::vector<double> sizes;
      sizes.reserve(committed.size());
      for (const Checkpoint* c : committed) sizes.push_back(static_cast<double>(c->bytes));
      std::sort(sizes.begin(), sizes.end());
      if (!sizes.empty()) {
        // Nearest rank: the smallest value with at least 90 % at or below it.
        const auto rank =
            static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(sizes.size())));
        p.p90_bytes = sizes[std::max<std::size_t>(rank, 1) - 1];
      }
      const Checkpoint* latest = committed.empty() ? nullptr : committed.back();
      if (latest != nullptr) {
        p.latest_allocated_bytes = static_cast<double>(latest->allocated_bytes);
        p.ranks = latest->expected_files;
      }
    }
    in.jobs.push_back(std::move(p));
  }
  return in;
}

std::optional<double> bytes_per_param(std::string_view precision, std::string_view optimizer) {
  double weights = 0;
  if (precision == "fp32") {
    weights = 4;
  } else if (precision == "bf16" || precision == "fp16") {
    weights = 2;
  } else if (precision == "fp8") {
    weights = 1;
  } else {
    return std::nullopt;
  }
  double state = 0;
  if (optimizer == "adam" || optimizer == "adamw") {
    state = 8;
  } else if (optimizer == "sgd") {
    state = 4;
  } else if (optimizer != "none") {
    return std::nullopt;
  }
  const double master = (state > 0 && weights < 4) ? 4 : 0;
  return weights + master + state;
}

namespace {

// The restore rows follow the planned jobs: without a what-if on the jobs
// they are the measured ones; with one, a dropped job has none, a kept one
// keeps its own, and a hypothetical one (--model-params, or a copy --jobs
// adds) is its bytes at the best read rate a measured row used, with no
// metadata term (its files are not known) and the objective the measured
// rows share (none when they differ).
std::vector<PlanRestore> plan_restores(const PlanInputs& in, const std::vector<PlanJob>& jobs,
                                       const PlanWhatIfs& w) {
  if (!w.model_bytes && !w.jobs) return in.restores;
  const PlanRestore* fastest = nullptr;
  std::optional<double> objective;
  bool shared = true;
  std::map<std::string, const PlanRestore*> measured;
  for (const PlanRestore& r : in.restores) {
    measured[r.job] = &r;
    if (r.read_bytes_per_second && *r.read_bytes_per_second > 0 &&
        (fastest == nullptr || *r.read_bytes_per_second > *fastest->read_bytes_per_second)) {
      fastest = &r;
    }
    if (!objective) {
      objective = r.objective_seconds;
    } else if (*objective != r.objective_seconds) {
      shared = false;
    }
  }
  std::vector<PlanRestore> out;
  for (const PlanJob& j : jobs) {
    if (!j.hypothetical) {
      if (auto it = measured.find(j.job); it != measured.end()) out.push_back(*it->second);
      continue;
    }
    PlanRestore r;
    r.job = j.job;
    r.bytes = j.latest_bytes;
    if (fastest != nullptr) {
      r.read_bytes_per_second = fastest->read_bytes_per_second;
      r.read_source = fastest->read_source;
      r.estimated_seconds = j.latest_bytes / *fastest->read_bytes_per_second;
    }
    r.objective_seconds = shared ? objective.value_or(0) : 0;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

TierPlan make_plan(const PlanInputs& in, const PlanWhatIfs& w) {
  TierPlan p;
  p.inputs = in;
  p.replicas = w.replicas.value_or(in.replicas);
  p.temp_write_allowance_ratio = w.temp_allowance_ratio.value_or(in.temp_write_allowance_ratio);
  p.growth_headroom_ratio = w.growth_ratio.value_or(in.growth_headroom_ratio);
  p.allowed_window_seconds = w.window_seconds.value_or(in.allowed_window_seconds);
  p.overhead_ratio = in.overhead_ratio;
  p.concurrent_jobs = in.concurrent_jobs;
  p.concurrent_writers = in.concurrent_writers;
  if (w.replicas) p.overridden.push_back("--replicas " + number(*w.replicas));
  if (w.temp_allowance_ratio) {
    p.overridden.push_back("--temp-allowance " + number(*w.temp_allowance_ratio * 100) + "%");
  }
  if (w.growth_ratio) p.overridden.push_back("--growth " + number(*w.growth_ratio * 100) + "%");
  if (w.window_seconds) p.overridden.push_back("--window " + number(*w.window_seconds) + "s");

  // The jobs: measured, or the what-if's.
  std::vector<PlanJob> jobs = in.jobs;
  double residue = in.residue_bytes;
  if (w.model_bytes) {
    // A job not yet run: `--jobs` of them (one by default), nothing measured.
    p.overridden.push_back("--model-params (" + number(*w.model_bytes) + " bytes per checkpoint)");
    const std::int64_t n = w.jobs.value_or(1);
    const double keep = in.keep_last;
    jobs.clear();
    for (std::int64_t i = 0; i < n; ++i) {
      PlanJob j;
      j.job = "model-" + std::to_string(i + 1);
      j.latest_bytes = *w.model_bytes;
      j.p90_bytes = *w.model_bytes;
      j.retained_versions = keep;
      j.hypothetical = true;
      jobs.push_back(std::move(j));
    }
    residue = 0;
  } else if (w.jobs) {
    // The N biggest measured jobs; copies of the biggest when N is more.
    std::stable_sort(jobs.begin(), jobs.end(), [](const PlanJob& a, const PlanJob& b) {
      return a.latest_bytes > b.latest_bytes;
    });
    if (jobs.size() > static_cast<std::size_t>(*w.jobs))
      jobs.resize(static_cast<std::size_t>(*w.jobs));
    const PlanJob biggest = jobs.empty() ? PlanJob{} : jobs.front();
    for (std::int64_t i = static_cast<std::int64_t>(jobs.size()); i < *w.jobs; ++i) {
      PlanJob j = biggest;
      j.job = "like-" + (biggest.job.empty() ? std::string("none") : biggest.job) + "-" +
              std::to_string(i + 1);
      j.hypothetical = true;
      jobs.push_back(std::move(j));
    }
    std::sort(jobs.begin(), jobs.end(),
              [](const PlanJob& a, const PlanJob& b) { return a.job < b.job; });
  }
  if (w.jobs) {
    p.overridden.push_back("--jobs " + std::to_string(*w.jobs));
    p.concurrent_jobs = *w.jobs;
    p.concurrent_writers = *w.jobs;
  } else if (w.model_bytes) {
    p.concurrent_jobs = 1;
    p.concurrent_writers = 1;
  }
  if (w.retain) {
    p.overridden.push_back("--retain " + number(*w.retain));
    for (PlanJob& j : jobs) j.retained_versions = *w.retain;
  }

  std::vector<SizedJob> sized;
  std::vector<double> sizes;
  double logical = 0, allocated = 0;
  for (const PlanJob& j : jobs) {
    sized.push_back({j.latest_bytes, j.retained_versions});
    sizes.push_back(j.latest_bytes);
    if (!j.hypothetical && j.latest_allocated_bytes > 0) {
      logical += j.latest_bytes;
      allocated += j.latest_allocated_bytes;
    }
  }
  p.terms = sizing_terms(sized, p.replicas, p.temp_write_allowance_ratio, p.growth_headroom_ratio,
                         p.concurrent_jobs, residue);
  if (in.has_stats) {
    p.shortfall_bytes = p.terms.required_bytes - in.size_bytes;
    if (in.size_bytes > 0) p.required_to_size_ratio = p.terms.required_bytes / in.size_bytes;
  }
  if (allocated > 0) p.logical_to_allocated_ratio = logical / allocated;

  p.required_write_bytes_per_second =
      required_write_bandwidth(sizes, p.concurrent_writers, p.allowed_window_seconds,
                               p.overhead_ratio, &p.bytes_per_checkpoint);
  if (w.nodes) {
    p.nodes = *w.nodes;
    p.nodes_source = "--nodes";
  } else {
    // The writers' ranks: those of the `concurrent_writers` biggest jobs.
    std::vector<const PlanJob*> by_size;
    by_size.reserve(jobs.size());
    for (const PlanJob& j : jobs) by_size.push_back(&j);
    std::stable_sort(by_size.begin(), by_size.end(), [](const PlanJob* a, const PlanJob* b) {
      return a->latest_bytes > b->latest_bytes;
    });
    double nodes = 0;
    bool known = !by_size.empty() && p.concurrent_writers > 0;
    for (std::size_t i = 0;
         i < by_size.size() && static_cast<std::int64_t>(i) < p.concurrent_writers; ++i) {
      if (by_size[i]->ranks == 0) known = false;
      nodes += std::ceil(static_cast<double>(by_size[i]->ranks) / w.gpus_per_node);
    }
    if (known && nodes > 0) {
      p.nodes = static_cast<std::int64_t>(nodes);
      p.nodes_source = "ranks";
    }
  }
  if (p.nodes > 0) {
    p.required_write_bytes_per_second_per_node =
        p.required_write_bytes_per_second / static_cast<double>(p.nodes);
  }
  p.restores = plan_restores(in, jobs, w);
  p.jobs = std::move(jobs);
  return p;
}

}  // namespace ckptmon
