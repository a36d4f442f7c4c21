#pragma once
// The sizing rule's plan as JSON: GET /api/v1/plan, `ckptmon plan --format
// json` and what GET /api/v1/report reads back are one shape
// (docs/rules.md#plan).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/checkpoint_view.hpp"
#include "model/state.hpp"
#include "rules/evaluate.hpp"
#include "rules/plan.hpp"

namespace ckptmon {

// The plan inputs of every tier of one evaluation.
// `tiers` (State::tiers) gives the shard of each tier.
std::vector<PlanInputs> plan_inputs_of(const RuleFigures& figures,
                                       const CheckpointView& checkpoints, const RulesPolicy& policy,
                                       const std::map<std::string, TierState>* tiers = nullptr);

nlohmann::json plan_inputs_json(const PlanInputs& in);
// nullopt with `error` when `j` is not what plan_inputs_json() writes.
std::optional<PlanInputs> plan_inputs_from_json(const nlohmann::json& j, std::string* error);

nlohmann::json tier_plan_json(const TierPlan& p);
// {"evaluated_at": now, "what_ifs": [...], "tiers": [tier_plan_json...]}
std::string render_plan_json(const std::vector<TierPlan>& plans, double evaluated_at);

}  // namespace ckptmon
