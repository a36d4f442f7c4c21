// The landing page's recovery section reads what the rules cycle computed and
// says "not known" before the first cycle, rather than evaluating the rule
// over a copy of every catalog per request (issue 25 item 4).

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "api/web.hpp"

namespace ckptmon {
namespace {

State state_with_a_checkpoint() {
  State s;
  s.tiers["rapid"].config.name = "rapid";
  TierCatalog& cat = s.catalogs["rapid"].edit();
  Checkpoint c;
  c.tier = "rapid";
  c.job = "llm";
  c.step = 100;
  c.path = "llm/step-100";
  c.state = CkptState::kCommitted;
  c.marker_time = 1000;
  cat.checkpoints = {c};
  cat.jobs = {"llm"};
  cat.scanned = true;
  return s;
}

TEST(LandingPage, RecoveryIsNotKnownBeforeTheFirstRulesCycle) {
  Snapshot snap;
  snap.state = state_with_a_checkpoint();
  const std::string page = render_landing_page(snap, true, true);
  EXPECT_NE(page.find("<h2>Recovery point</h2>\n<p>Not known yet: the first rules cycle has "
                      "not run.</p>"),
            std::string::npos)
      << page;
  // The checkpoint the catalog holds is not passed off as the recovery point.
  EXPECT_EQ(page.find("<td>llm</td><td>100</td>"), std::string::npos) << page;
}

TEST(LandingPage, RecoveryShowsTheRulesCyclesFigures) {
  Snapshot snap;
  snap.state = state_with_a_checkpoint();
  auto rules = std::make_shared<RulesOutput>();
  // A figure the catalog alone would not give (step 90 on "durable"): the
  // page shows what the cycle computed, not a recomputation.
  JobRecoverySummary r;
  r.any.job = "llm";
  r.any.restorable = true;
  r.any.step = 90;
  r.any.tier = "durable";
  r.any.timestamp = 0;
  r.any.verified = true;
  rules->recovery["llm"] = r;
  snap.rules = rules;
  const std::string page = render_landing_page(snap, true, true);
  EXPECT_NE(page.find("<tr><td>llm</td><td>90</td><td>1970-01-01T00:00:00.000Z</td><td>durable"
                      "</td><td>yes</td>"),
            std::string::npos)
      << page;
  EXPECT_EQ(page.find("Not known yet"), std::string::npos);
}

// On-call's next question after the recovery point: how long a restore
// takes. The rules cycle's estimate (and its source) next to the last
// scheduled drill, against the objective; a failed drill says why.
TEST(LandingPage, RestoreShowsTheEstimateAndTheLastDrill) {
  Snapshot snap;
  snap.state = state_with_a_checkpoint();
  auto rules = std::make_shared<RulesOutput>();
  PlanInputs in;
  in.tier = "rapid";
  PlanRestore r;
  r.job = "llm";
  r.step = 100;
  r.estimated_seconds = 750;  // over the 10 min objective
  r.read_source = "drill";
  r.objective_seconds = 600;
  in.restores.push_back(r);
  rules->plan_inputs.push_back(in);
  snap.rules = rules;
  auto drills = std::make_shared<DrillState>();
  DrillRecord d;
  d.tier = "rapid";
  d.job = "llm";
  d.step = 100;
  d.finished_at = 0;
  d.failure = "llm/step-100/__1_0.distcp: mismatch";
  drills->last[{"rapid", "llm"}] = d;
  snap.state.drills = drills;
  const std::string page = render_landing_page(snap, true, true);
  EXPECT_NE(page.find("<h2>Restore</h2>"), std::string::npos) << page;
  EXPECT_NE(page.find("<tr><td>rapid</td><td>llm</td><td class=\"down\">12m30s</td><td>drill</td>"
                      "<td>10m</td><td>step 100, 1970-01-01T00:00:00.000Z</td><td>0s</td>"
                      "<td class=\"down\">failed: llm/step-100/__1_0.distcp: mismatch</td></tr>"),
            std::string::npos)
      << page;
  // Without an estimate or a drill there is no section at all.
  Snapshot bare;
  bare.state = state_with_a_checkpoint();
  EXPECT_EQ(render_landing_page(bare, true, true).find("<h2>Restore</h2>"), std::string::npos);
}

// Pending alerts are named, not only counted: on-call sees what is about to
// fire (issue 33 item 2).
TEST(LandingPage, PendingAlertsAreNamed) {
  Snapshot snap;
  snap.state = state_with_a_checkpoint();
  auto rules = std::make_shared<RulesOutput>();
  AlertInstance a;
  a.labels = {"CheckpointPartial", "warning", "rapid", "llm"};
  a.state = AlertState::kPending;
  AlertInstance b;
  b.labels = {"CheckpointTierDown", "critical", "staging", ""};
  b.state = AlertState::kPending;
  rules->active = {a, b};
  snap.rules = rules;
  const std::string page = render_landing_page(snap, true, true);
  EXPECT_NE(page.find("<p>No alerts firing. 2 pending (waiting for their for:): "
                      "CheckpointPartial (rapid, llm), CheckpointTierDown (staging).</p>"),
            std::string::npos)
      << page;
}

}  // namespace
}  // namespace ckptmon
