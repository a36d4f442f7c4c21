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

}  // namespace
}  // namespace ckptmon
