// What the event catalog refuses (model/events.cpp, EventLimits): job names
// and tier names from event logs become label values, so their number is
// bounded (issue 27 item 6: 100,000 distinct job names made 3.3 million
// series and 1.49 GB of RSS).

#include <gtest/gtest.h>

#include <string>

#include "model/events.hpp"

namespace ckptmon {
namespace {

std::string start(const std::string& job, int step, const std::string& tier = "") {
  return "{\"v\":1,\"ts\":1000,\"event\":\"checkpoint_start\",\"job\":\"" + job +
         "\",\"step\":" + std::to_string(step) +
         (tier.empty() ? "" : ",\"tier\":\"" + tier + "\"") + "}\n";
}

// Parses `text` as the tailer does and folds every line into `agg`.
void feed(EventAggregator& agg, const std::string& text, std::string_view tier) {
  EventParser parser;
  ParseCursor cursor;
  ChunkResult r;
  parser.parse_chunk(text, cursor, r);
  ASSERT_EQ(r.consumed, text.size());
  for (const auto& l : r.lines()) agg.add(l, tier);
}

std::uint64_t count(const EventCatalog& cat, RejectReason r) {
  return cat.totals.errors[static_cast<std::size_t>(r)];
}

std::size_t jobs_of(const EventCatalog& cat, const std::string& tier) {
  std::size_t n = 0;
  for (const auto& [key, _] : cat.jobs) n += key.first == tier ? 1 : 0;
  return n;
}

TEST(EventLimits, NewJobsBeyondTheCapPerTierAreRefusedAndCountedKnownOnesGoOn) {
  EventCatalog cat;
  EventLimits limits;
  limits.max_jobs_per_tier = 3;
  limits.tiers = {"rapid", "staging"};
  EventAggregator agg(cat, kEventStepsPerJob, &limits);
  std::string text;
  for (int j = 0; j < 5; ++j) text += start("job" + std::to_string(j), 1);
  feed(agg, text, "rapid");
  EXPECT_EQ(jobs_of(cat, "rapid"), 3u);
  EXPECT_EQ(count(cat, RejectReason::kTooManyJobs), 2u);
  EXPECT_EQ(cat.totals.lines[static_cast<std::size_t>(LineStatus::kRejected)], 2u);
  EXPECT_EQ(cat.totals.lines[static_cast<std::size_t>(LineStatus::kOk)], 3u);
  EXPECT_EQ(cat.steps.size(), 3u);

  // A job it has goes on (a new step); the cap is per tier: another tier has room.
  feed(agg, start("job0", 2) + start("job4", 1, "staging") + start("job9", 3), "rapid");
  EXPECT_NE(cat.find("rapid", "job0", 2), nullptr);
  EXPECT_NE(cat.find("staging", "job4", 1), nullptr);
  EXPECT_EQ(cat.find("rapid", "job9", 3), nullptr);
  EXPECT_EQ(count(cat, RejectReason::kTooManyJobs), 3u);

  // The first refusals are kept for the log, naming tier and job.
  ASSERT_FALSE(agg.refusals().empty());
  EXPECT_EQ(agg.refusals()[0].reason, RejectReason::kTooManyJobs);
  EXPECT_EQ(agg.refusals()[0].tier, "rapid");
  EXPECT_EQ(agg.refusals()[0].job, "job3");
}

// The catalog loaded from the state database counts: a restart does not
// make room for another 1,000.
TEST(EventLimits, JobsAlreadyInTheCatalogCountTowardsTheCap) {
  EventCatalog cat;
  cat.jobs[{"rapid", "old1"}];
  cat.jobs[{"rapid", "old2"}];
  cat.jobs[{"other", "x"}];
  EventLimits limits;
  limits.max_jobs_per_tier = 3;
  EventAggregator agg(cat, kEventStepsPerJob, &limits);
  feed(agg, start("new1", 1) + start("new2", 1) + start("old1", 5), "rapid");
  EXPECT_EQ(jobs_of(cat, "rapid"), 3u);
  EXPECT_EQ(count(cat, RejectReason::kTooManyJobs), 1u);
  EXPECT_NE(cat.find("rapid", "old1", 5), nullptr);
}

TEST(EventLimits, AnEventNamingATierThatIsNotConfiguredIsRefused) {
  EventCatalog cat;
  EventLimits limits;
  limits.tiers = {"rapid"};
  EventAggregator agg(cat, kEventStepsPerJob, &limits);
  feed(agg, start("a", 1, "nosuchtier") + start("b", 1) + start("c", 1), "rapid");
  // The glob's own tier may be unconfigured too (a reload removed it).
  feed(agg, start("d", 1), "gone");
  EXPECT_EQ(count(cat, RejectReason::kUnconfiguredTier), 2u);
  EXPECT_EQ(cat.jobs.size(), 2u);
  EXPECT_FALSE(cat.jobs.contains({"nosuchtier", "a"}));
  ASSERT_EQ(agg.refusals().size(), 2u);
  EXPECT_EQ(agg.refusals()[0].tier, "nosuchtier");
  EXPECT_EQ(agg.refusals()[1].tier, "gone");
}

// Without limits (tools that configure no tiers) nothing is refused.
TEST(EventLimits, NoLimitsRefuseNothing) {
  EventCatalog cat;
  EventAggregator agg(cat);
  std::string text;
  for (int j = 0; j < 1200; ++j) text += start("j" + std::to_string(j), 1, "t");
  feed(agg, text, "rapid");
  EXPECT_EQ(cat.jobs.size(), 1200u);
  EXPECT_EQ(count(cat, RejectReason::kTooManyJobs), 0u);
}

}  // namespace
}  // namespace ckptmon
