#include "api/plan.hpp"

#include <algorithm>

namespace ckptmon {
namespace {

using nlohmann::json;

json opt_json(const std::optional<double>& v) { return v ? json(*v) : json(); }

std::optional<double> opt_from(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

std::vector<PlanInputs> plan_inputs_of(const RuleFigures& figures,
                                       const CheckpointView& checkpoints, const RulesPolicy& policy,
                                       const std::map<std::string, TierState>* tiers) {
  std::vector<PlanInputs> out;
  for (std::size_t i = 0; i < figures.capacity.size() && i < figures.bandwidth.size(); ++i) {
    out.push_back(plan_inputs(figures.capacity[i], figures.bandwidth[i], checkpoints,
                              policy.for_tier(figures.capacity[i].tier)));
    if (tiers != nullptr) {
      auto t = tiers->find(out.back().tier);
      if (t != tiers->end()) {
        out.back().shard_index = t->second.config.shard_index;
        out.back().shard_count = std::max<std::uint32_t>(1, t->second.config.shard_count);
      }
    }
    for (const RestoreFigures& r : figures.storage_path.restore) {
      if (r.tier != out.back().tier || (r.objective_seconds <= 0 && !r.estimate)) continue;
      PlanRestore pr;
      pr.job = r.job;
      pr.step = r.step;
      pr.bytes = r.bytes;
      pr.files = r.files;
      pr.objective_seconds = r.objective_seconds;
      if (r.estimate) {
        pr.estimated_seconds = r.estimate->seconds;
        pr.read_bytes_per_second = r.estimate->read_bytes_per_second;
        pr.read_source = std::string(to_string(r.estimate->read_source));
      }
      out.back().restores.push_back(std::move(pr));
    }
  }
  return out;
}

namespace {

json restores_json(const std::vector<PlanRestore>& restores) {
  json out = json::array();
  for (const PlanRestore& r : restores) {
    json o{{"job", r.job},
           {"step", r.step >= 0 ? json(r.step) : json()},
           {"bytes", r.bytes},
           {"files", r.files},
           {"estimated_seconds", opt_json(r.estimated_seconds)},
           {"read_bytes_per_second", opt_json(r.read_bytes_per_second)},
           {"read_source", r.read_source.empty() ? json() : json(r.read_source)},
           {"objective_seconds", r.objective_seconds > 0 ? json(r.objective_seconds) : json()}};
    // Whether the estimate meets the objective; null when either is unknown.
    o["meets_objective"] = r.estimated_seconds && r.objective_seconds > 0
                               ? json(*r.estimated_seconds <= r.objective_seconds)
                               : json();
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

json plan_inputs_json(const PlanInputs& in) {
  json jobs = json::array();
  for (const PlanJob& j : in.jobs) {
    jobs.push_back({{"job", j.job},
                    {"latest_bytes", j.latest_bytes},
                    {"p90_bytes", j.p90_bytes},
                    {"latest_allocated_bytes", j.latest_allocated_bytes},
                    {"retained_versions", j.retained_versions},
                    {"ranks", j.ranks}});
  }
  return {{"tier", in.tier},
          {"has_stats", in.has_stats},
          {"size_bytes", in.size_bytes},
          {"avail_bytes", in.avail_bytes},
          {"replicas", in.replicas},
          {"temp_write_allowance_ratio", in.temp_write_allowance_ratio},
          {"growth_headroom_ratio", in.growth_headroom_ratio},
          {"concurrent_jobs", in.concurrent_jobs},
          {"concurrency_observed", in.concurrency_observed},
          {"residue_bytes", in.residue_bytes},
          {"keep_last", in.keep_last},
          {"allowed_window_seconds", in.allowed_window_seconds},
          {"overhead_ratio", in.overhead_ratio},
          {"concurrent_writers", in.concurrent_writers},
          {"writers_observed", in.writers_observed},
          {"observed_write_bytes_per_second", opt_json(in.observed_write_bytes_per_second)},
          {"shard_index", in.shard_index},
          {"shard_count", in.shard_count},
          {"jobs", std::move(jobs)},
          {"restores", restores_json(in.restores)}};
}

std::optional<PlanInputs> plan_inputs_from_json(const json& j, std::string* error) {
  try {
    PlanInputs in;
    in.tier = j.at("tier").get<std::string>();
    in.has_stats = j.at("has_stats").get<bool>();
    in.size_bytes = j.at("size_bytes").get<double>();
    in.avail_bytes = j.at("avail_bytes").get<double>();
    in.replicas = j.at("replicas").get<double>();
    in.temp_write_allowance_ratio = j.at("temp_write_allowance_ratio").get<double>();
    in.growth_headroom_ratio = j.at("growth_headroom_ratio").get<double>();
    in.concurrent_jobs = j.at("concurrent_jobs").get<std::int64_t>();
    in.concurrency_observed = j.at("concurrency_observed").get<bool>();
    in.residue_bytes = j.at("residue_bytes").get<double>();
    in.keep_last = j.at("keep_last").get<double>();
    in.allowed_window_seconds = j.at("allowed_window_seconds").get<double>();
    in.overhead_ratio = j.at("overhead_ratio").get<double>();
    in.concurrent_writers = j.at("concurrent_writers").get<std::int64_t>();
    in.writers_observed = j.at("writers_observed").get<bool>();
    in.observed_write_bytes_per_second = opt_from(j, "observed_write_bytes_per_second");
    in.shard_index = j.value("shard_index", 0u);
    in.shard_count = std::max(1u, j.value("shard_count", 1u));
    for (const json& o : j.at("jobs")) {
      PlanJob p;
      p.job = o.at("job").get<std::string>();
      p.latest_bytes = o.at("latest_bytes").get<double>();
      p.p90_bytes = o.at("p90_bytes").get<double>();
      p.latest_allocated_bytes = o.at("latest_allocated_bytes").get<double>();
      p.retained_versions = o.at("retained_versions").get<double>();
      p.ranks = o.at("ranks").get<std::uint64_t>();
      in.jobs.push_back(std::move(p));
    }
    if (j.contains("restores")) {  // older daemons do not send it
      for (const json& o : j.at("restores")) {
        PlanRestore r;
        r.job = o.at("job").get<std::string>();
        r.step = o.at("step").is_null() ? -1 : o.at("step").get<std::int64_t>();
        r.bytes = o.at("bytes").get<double>();
        r.files = o.at("files").get<double>();
        r.estimated_seconds = opt_from(o, "estimated_seconds");
        r.read_bytes_per_second = opt_from(o, "read_bytes_per_second");
        if (!o.at("read_source").is_null()) r.read_source = o.at("read_source").get<std::string>();
        r.objective_seconds = opt_from(o, "objective_seconds").value_or(0);
        in.restores.push_back(std::move(r));
      }
    }
    return in;
  } catch (const json::exception& e) {
    *error = std::string("not a plan's inputs: ") + e.what();
    return std::nullopt;
  }
}

json tier_plan_json(const TierPlan& p) {
  json jobs = json::array();
  for (std::size_t i = 0; i < p.jobs.size(); ++i) {
    const PlanJob& j = p.jobs[i];
    jobs.push_back({{"job", j.job},
                    {"latest_bytes", j.latest_bytes},
                    {"p90_bytes", j.p90_bytes},
                    {"latest_allocated_bytes", j.latest_allocated_bytes},
                    {"retained_versions", j.retained_versions},
                    {"ranks", j.ranks},
                    {"hypothetical", j.hypothetical},
                    {"required_bytes",
                     i < p.terms.job_required_bytes.size() ? p.terms.job_required_bytes[i] : 0.0}});
  }
  const PlanInputs& in = p.inputs;
  return {{"tier", in.tier},
          {"what_ifs", p.overridden},
          {"partial", in.shard_count > 1},
          {"shard", std::to_string(in.shard_index) + "/" + std::to_string(in.shard_count)},
          {"has_stats", in.has_stats},
          {"size_bytes", in.has_stats ? json(in.size_bytes) : json()},
          {"avail_bytes", in.has_stats ? json(in.avail_bytes) : json()},
          {"jobs", std::move(jobs)},
          {"replicas", p.replicas},
          {"temp_write_allowance_ratio", p.temp_write_allowance_ratio},
          {"growth_headroom_ratio", p.growth_headroom_ratio},
          {"concurrent_jobs", p.concurrent_jobs},
          {"retained_required_bytes", p.terms.retained_required_bytes},
          {"temp_write_allowance_bytes", p.terms.temp_write_allowance_bytes},
          {"residue_bytes", p.terms.residue_bytes},
          {"growth_headroom_bytes", p.terms.growth_headroom_bytes},
          {"required_capacity_bytes", p.terms.required_bytes},
          {"shortfall_bytes", opt_json(p.shortfall_bytes)},
          {"required_to_size_ratio", opt_json(p.required_to_size_ratio)},
          {"logical_to_allocated_ratio", opt_json(p.logical_to_allocated_ratio)},
          {"bandwidth",
           {{"allowed_window_seconds", p.allowed_window_seconds},
            {"overhead_ratio", p.overhead_ratio},
            {"concurrent_writers", p.concurrent_writers},
            {"bytes_per_checkpoint", p.bytes_per_checkpoint},
            {"required_write_bytes_per_second", p.required_write_bytes_per_second},
            {"nodes", p.nodes > 0 ? json(p.nodes) : json()},
            {"nodes_source", p.nodes > 0 ? json(p.nodes_source) : json()},
            {"required_write_bytes_per_second_per_node",
             opt_json(p.required_write_bytes_per_second_per_node)},
            {"observed_write_bytes_per_second", opt_json(in.observed_write_bytes_per_second)}}},
          {"restore", restores_json(p.restores)},
          {"inputs", plan_inputs_json(in)}};
}

std::string render_plan_json(const std::vector<TierPlan>& plans, double evaluated_at) {
  json tiers = json::array();
  for (const TierPlan& p : plans) tiers.push_back(tier_plan_json(p));
  json out{{"evaluated_at", evaluated_at}, {"tiers", std::move(tiers)}};
  return out.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace ckptmon
