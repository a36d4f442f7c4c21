// `ckptmon plan`'s arithmetic: what-ifs worked by hand, the daemon's own
// figures when nothing is overridden, the flags' checks and the per-parameter
// bytes of a model not yet run.

#include "rules/plan.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rules/evaluate.hpp"
#include "rules_fixtures.hpp"
#include "tools/review/plan_command.hpp"

namespace ckptmon {
namespace {

using testing::Ck;
using testing::tier_state;

constexpr double TiB = 1024.0 * 1024 * 1024 * 1024;

// Three measured jobs, latest checkpoint 1.2 TiB each, on a 100 TiB tier.
PlanInputs three_jobs() {
  PlanInputs in;
  in.tier = "rapid";
  in.has_stats = true;
  in.size_bytes = 100 * TiB;
  in.avail_bytes = 60 * TiB;
  in.concurrent_jobs = 1;
  in.concurrent_writers = 1;
  for (const char* name : {"a", "b", "c"}) {
    PlanJob j;
    j.job = name;
    j.latest_bytes = 1.2 * TiB;
    j.p90_bytes = 1.2 * TiB;
    j.retained_versions = 3;
    j.ranks = 64;
    in.jobs.push_back(j);
  }
  return in;
}

TEST(RulesPlan, ThreeJobsFourRetainedTwoReplicasTenPercentTempFivePercentGrowth) {
  PlanWhatIfs w;
  w.retain = 4;
  w.replicas = 2;
  w.temp_allowance_ratio = 0.10;
  w.growth_ratio = 0.05;
  w.jobs = 3;
  w.window_seconds = 120;
  const TierPlan p = make_plan(three_jobs(), w);
  // By hand: retained 3 x 1.2 TiB x 4 x 2 = 28.8 TiB; temp 10 % of the three
  // concurrent jobs' 1.2 TiB = 0.36 TiB; growth 5 % of 28.8 = 1.44 TiB;
  // no residue: 28.8 + 0.36 + 1.44 = 30.6 TiB.
  EXPECT_NEAR(p.terms.retained_required_bytes, 28.8 * TiB, 1);
  EXPECT_NEAR(p.terms.temp_write_allowance_bytes, 0.36 * TiB, 1);
  EXPECT_NEAR(p.terms.growth_headroom_bytes, 1.44 * TiB, 1);
  EXPECT_EQ(p.terms.residue_bytes, 0);
  EXPECT_NEAR(p.terms.required_bytes, 30.6 * TiB, 1);
  ASSERT_EQ(p.terms.job_required_bytes.size(), 3u);
  EXPECT_NEAR(p.terms.job_required_bytes[0], 9.6 * TiB, 1);
  // Against the 100 TiB tier: 30.6 % of it, 69.4 TiB to spare.
  EXPECT_NEAR(*p.shortfall_bytes, -69.4 * TiB, 1);
  EXPECT_NEAR(*p.required_to_size_ratio, 0.306, 1e-12);
  // Bandwidth: 1.2 TiB / 120 s x 3 writers x 1.1 = 0.033 TiB/s; the writers'
  // 3 x 64 ranks at 8 per node are 24 nodes: 0.001375 TiB/s each.
  EXPECT_NEAR(p.required_write_bytes_per_second, 1.2 * TiB / 120 * 3 * 1.1, 1e-3);
  EXPECT_EQ(p.nodes, 24);
  EXPECT_EQ(p.nodes_source, "ranks");
  EXPECT_NEAR(*p.required_write_bytes_per_second_per_node, 1.2 * TiB / 120 * 3 * 1.1 / 24, 1e-3);
  EXPECT_EQ(p.overridden.size(), 6u);
}

TEST(RulesPlan, MoreJobsThanMeasuredAreCopiesOfTheBiggest) {
  PlanInputs in = three_jobs();
  in.jobs[1].latest_bytes = 2 * TiB;  // b is the biggest
  PlanWhatIfs w;
  w.jobs = 5;
  w.nodes = 10;
  const TierPlan p = make_plan(in, w);
  ASSERT_EQ(p.jobs.size(), 5u);
  // a 1.2, b 2, c 1.2 and two more like b: 8.4 TiB x 3 retained x 1 replica.
  EXPECT_NEAR(p.terms.retained_required_bytes, 8.4 * TiB * 3, 1);
  // Temp allowance 100 % of all five (5 concurrent): 8.4 TiB; growth 20 %.
  EXPECT_NEAR(p.terms.temp_write_allowance_bytes, 8.4 * TiB, 1);
  EXPECT_NEAR(p.terms.growth_headroom_bytes, 0.2 * 25.2 * TiB, 1);
  // Mean of the 5 writers' checkpoints: 8.4 / 5 TiB.
  EXPECT_NEAR(p.bytes_per_checkpoint, 8.4 * TiB / 5, 1);
  EXPECT_NEAR(*p.required_write_bytes_per_second_per_node, 8.4 * TiB / 5 / 120 * 5 * 1.1 / 10,
              1e-3);
  EXPECT_EQ(p.nodes_source, "--nodes");
  // Fewer: the biggest ones.
  w.jobs = 1;
  const TierPlan one = make_plan(in, w);
  ASSERT_EQ(one.jobs.size(), 1u);
  EXPECT_EQ(one.jobs[0].job, "b");
}

TEST(RulesPlan, AModelNotYetRunFromParametersAndBytesPerParameter) {
  EXPECT_EQ(*bytes_per_param("bf16", "adam"), 14);  // 2 weights + 4 fp32 master + 8 moments
  EXPECT_EQ(*bytes_per_param("fp32", "adam"), 12);  // 4 weights + 8 moments, no master copy
  EXPECT_EQ(*bytes_per_param("bf16", "none"), 2);
  EXPECT_EQ(*bytes_per_param("fp16", "sgd"), 10);  // 2 + 4 + 4
  EXPECT_EQ(*bytes_per_param("fp8", "adamw"), 13);
  EXPECT_FALSE(bytes_per_param("int3", "adam"));
  EXPECT_FALSE(bytes_per_param("bf16", "lion"));

  PlanWhatIfs w;
  std::string error;
  PlanFlags f;
  f.model_params = "70e9";
  f.bytes_per_param = "16";
  f.jobs = "2";
  f.retain = "4";
  ASSERT_TRUE(parse_plan_flags(f, &w, &error)) << error;
  EXPECT_EQ(*w.model_bytes, 70e9 * 16);
  const TierPlan p = make_plan(three_jobs(), w);
  ASSERT_EQ(p.jobs.size(), 2u);
  EXPECT_TRUE(p.jobs[0].hypothetical);
  // 2 x 1.12e12 x 4 x 1 = 8.96e12; temp 100 % of both = 2.24e12; growth 20 %
  // of 8.96e12 = 1.792e12; measured residue does not apply: 12.992e12.
  EXPECT_DOUBLE_EQ(p.terms.retained_required_bytes, 8.96e12);
  EXPECT_DOUBLE_EQ(p.terms.temp_write_allowance_bytes, 2.24e12);
  EXPECT_DOUBLE_EQ(p.terms.required_bytes, 8.96e12 + 2.24e12 + 1.792e12);

  f = {};
  f.model_params = "7e9";
  f.precision = "bf16";
  f.optimizer = "adam";
  ASSERT_TRUE(parse_plan_flags(f, &w, &error)) << error;
  EXPECT_EQ(*w.model_bytes, 7e9 * 14);
}

TEST(RulesPlan, WithoutWhatIfsThePlanIsTheDaemonsFigures) {
  // The same catalog through evaluate_rules (what the daemon exports) and
  // through plan_inputs + make_plan (what `ckptmon plan` prints).
  constexpr double GB = 1e9;
  std::vector<Checkpoint> cks{
      Ck("rapid", "a", 100).committed(static_cast<std::uint64_t>(90 * GB), 10, 20),
      Ck("rapid", "a", 200).committed(static_cast<std::uint64_t>(100 * GB), 110, 120),
      Ck("rapid", "a", 150).partial(static_cast<std::uint64_t>(10 * GB), 60, 70),
      Ck("rapid", "b", 7).committed(static_cast<std::uint64_t>(40 * GB), 15, 118),
  };
  RulesPolicy policy;
  TierPolicy& tp = policy.tiers["rapid"];
  tp.sizing.replicas = 1.25;
  tp.sizing.temp_write_allowance_ratio = 0.5;
  tp.retention.keep_last = 2;
  std::map<std::string, TierState> tiers{
      {"rapid", tier_state("rapid", TierRole::kRapid, "", 2000 * GB, 880 * GB)}};
  const RuleFigures fig = evaluate_rules(tiers, cks, {}, {}, policy, 1000);
  const std::vector<PlanInputs> in = plan_inputs_of(fig, cks, policy);
  ASSERT_EQ(in.size(), 1u);
  const TierPlan p = make_plan(in[0], {});
  EXPECT_EQ(p.terms.required_bytes, fig.capacity[0].required_bytes);
  EXPECT_EQ(p.terms.temp_write_allowance_bytes, fig.capacity[0].temp_write_allowance_bytes);
  EXPECT_EQ(p.terms.residue_bytes, 10 * GB);
  EXPECT_EQ(p.required_write_bytes_per_second, fig.bandwidth[0].required_bytes_per_second);
  EXPECT_GT(p.required_write_bytes_per_second, 0);
  // p90 of a's two committed checkpoints (nearest rank: the 2nd of 2).
  EXPECT_EQ(in[0].jobs[0].p90_bytes, 100 * GB);
  // Through the JSON of /api/v1/plan and back: the same plan.
  std::string error;
  auto back = plan_inputs_from_json(plan_inputs_json(in[0]), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(make_plan(*back, {}).terms.required_bytes, p.terms.required_bytes);
}

TEST(RulesPlan, RestoreTimeAgainstTheObjective) {
  // 100 GiB in 100 files at the configured 2 GiB/s read bandwidth: 50 s +
  // 100 x 3 / 1000 ops/s = 50.3 s, against objectives of 60 s (job a) and
  // 30 s (job b, its own override).
  constexpr double GiB = 1024.0 * 1024 * 1024;
  Checkpoint a = Ck("rapid", "a", 100).committed(static_cast<std::uint64_t>(100 * GiB), 10, 20);
  Checkpoint b = Ck("rapid", "b", 100).committed(static_cast<std::uint64_t>(100 * GiB), 10, 20);
  a.files = b.files = 100;
  std::vector<Checkpoint> cks{a, b};
  RulesPolicy policy;
  TierPolicy& tp = policy.tiers["rapid"];
  tp.storage_path.read_bandwidth = 2 * GiB;
  tp.storage_path.recovery_time_objective_seconds = 60;
  tp.job_storage_path["b"] = tp.storage_path;
  tp.job_storage_path["b"].recovery_time_objective_seconds = 30;
  std::map<std::string, TierState> tiers{{"rapid", tier_state("rapid", TierRole::kRapid)}};
  RuleFigures fig = evaluate_rules(tiers, cks, {}, {}, policy, 1000);
  StoragePathTracker tracker;
  fig.storage_path = tracker.update(cks, {"rapid"}, {}, nullptr, nullptr, {}, policy, 1000);
  const std::vector<PlanInputs> in = plan_inputs_of(fig, cks, policy);
  ASSERT_EQ(in.size(), 1u);
  ASSERT_EQ(in[0].restores.size(), 2u);
  EXPECT_EQ(in[0].restores[0].job, "a");
  ASSERT_TRUE(in[0].restores[0].estimated_seconds);
  EXPECT_DOUBLE_EQ(*in[0].restores[0].estimated_seconds, 50.3);
  EXPECT_EQ(in[0].restores[0].read_source, "configured");
  EXPECT_EQ(in[0].restores[1].objective_seconds, 30);

  const nlohmann::json j = tier_plan_json(make_plan(in[0], {}));
  ASSERT_EQ(j["restore"].size(), 2u);
  EXPECT_EQ(j["restore"][0]["meets_objective"], true);
  EXPECT_EQ(j["restore"][1]["meets_objective"], false);
  EXPECT_DOUBLE_EQ(j["restore"][1]["estimated_seconds"].get<double>(), 50.3);
  // Through the JSON of /api/v1/plan and back (plan --from).
  std::string error;
  auto back = plan_inputs_from_json(plan_inputs_json(in[0]), &error);
  ASSERT_TRUE(back) << error;
  ASSERT_EQ(back->restores.size(), 2u);
  EXPECT_EQ(back->restores[1].objective_seconds, 30);
  EXPECT_DOUBLE_EQ(*back->restores[1].estimated_seconds, 50.3);

  // Without a read bandwidth: unknown, shown as null, not 0.
  tp.storage_path.read_bandwidth = 0;
  tp.job_storage_path.clear();
  fig.storage_path = tracker.update(cks, {"rapid"}, {}, nullptr, nullptr, {}, policy, 1000);
  const nlohmann::json u = tier_plan_json(make_plan(plan_inputs_of(fig, cks, policy)[0], {}));
  EXPECT_TRUE(u["restore"][0]["estimated_seconds"].is_null());
  EXPECT_TRUE(u["restore"][0]["meets_objective"].is_null());
}

// What-ifs on the jobs replace the measured restore rows (issue 33 item 4):
// --model-params gives each hypothetical job its bytes at the best measured
// read rate; --jobs 1 keeps only the job it keeps.
TEST(RulesPlan, WhatIfJobsGetTheirOwnRestoreRows) {
  PlanInputs in = three_jobs();
  in.jobs[0].latest_bytes = 2 * TiB;  // a: the biggest
  for (const char* name : {"a", "b", "c"}) {
    PlanRestore r;
    r.job = name;
    r.step = 100;
    r.bytes = 1.2 * TiB;
    r.files = 10;
    r.read_bytes_per_second =
        std::string(name) == "b" ? 4.0 * 1024 * 1024 * 1024 : 1024.0 * 1024 * 1024;
    r.read_source = std::string(name) == "b" ? "drill" : "counters";
    r.estimated_seconds = r.bytes / *r.read_bytes_per_second;
    r.objective_seconds = 600;
    in.restores.push_back(r);
  }
  EXPECT_EQ(make_plan(in, {}).restores.size(), 3u);  // no what-if: the measured rows

  PlanWhatIfs model;
  model.model_bytes = 0.5 * TiB;
  model.jobs = 2;
  const TierPlan m = make_plan(in, model);
  ASSERT_EQ(m.restores.size(), 2u);
  for (const PlanRestore& r : m.restores) {
    EXPECT_EQ(r.step, -1) << r.job;
    EXPECT_EQ(r.bytes, 0.5 * TiB);
    EXPECT_EQ(r.read_source, "drill");  // b's 4 GiB/s, the fastest measured
    ASSERT_TRUE(r.estimated_seconds);
    EXPECT_DOUBLE_EQ(*r.estimated_seconds, 0.5 * 1024 / 4.0);  // 512 GiB at 4 GiB/s = 128 s
    EXPECT_EQ(r.objective_seconds, 600);                       // shared by every measured row
  }
  EXPECT_EQ(m.restores[0].job, "model-1");

  PlanWhatIfs one;
  one.jobs = 1;
  const TierPlan o = make_plan(in, one);
  ASSERT_EQ(o.restores.size(), 1u);
  EXPECT_EQ(o.restores[0].job, "a");  // the biggest, kept with its measured row
  EXPECT_EQ(o.restores[0].step, 100);
  EXPECT_EQ(tier_plan_json(o)["restore"].size(), 1u);
}

TEST(RulesPlan, BadWhatIfsNameTheFlag) {
  auto error_of = [](PlanFlags f) {
    PlanWhatIfs w;
    std::string error;
    EXPECT_FALSE(parse_plan_flags(f, &w, &error));
    return error;
  };
  PlanFlags f;
  f.replicas = "0";
  EXPECT_EQ(error_of(f).substr(0, 12), "--replicas: ");
  f = {};
  f.retain = "-1";
  EXPECT_EQ(error_of(f), "--retain: expected a whole number from 1 to 100000, got \"-1\"");
  f = {};
  f.retain = "2.5";
  EXPECT_EQ(error_of(f).substr(0, 10), "--retain: ");
  f = {};
  f.jobs = "1e9";
  EXPECT_EQ(error_of(f).substr(0, 8), "--jobs: ");
  f = {};
  f.growth = "2000%";
  EXPECT_EQ(error_of(f).substr(0, 10), "--growth: ");
  f = {};
  f.temp_allowance = "-10%";
  EXPECT_EQ(error_of(f).substr(0, 18), "--temp-allowance: ");
  f = {};
  f.window = "0s";
  EXPECT_EQ(error_of(f).substr(0, 10), "--window: ");
  f = {};
  f.model_params = "seventy";
  EXPECT_EQ(error_of(f).substr(0, 16), "--model-params: ");
  f = {};
  f.bytes_per_param = "16";
  EXPECT_EQ(error_of(f), "--bytes-per-param: sizes a job not yet run and needs --model-params");
  f = {};
  f.model_params = "70e9";
  f.precision = "int3";
  EXPECT_EQ(error_of(f).substr(0, 13), "--precision: ");
  f = {};
  f.nodes = "0";
  EXPECT_EQ(error_of(f).substr(0, 9), "--nodes: ");
}

}  // namespace
}  // namespace ckptmon
