// `ckptmon report --state-dir` over a state database filled here with a
// known growth rate and fill date: the report's growth rate, time to full and
// alert durations against the numbers worked out below; markdown and CSV
// carry the JSON's numbers; bad sources and flags exit 2 with a message.

#include "tools/review/report_command.hpp"

#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "store/history.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

using testing::TempDir;

constexpr double TiB = 1024.0 * 1024 * 1024 * 1024;
constexpr double kDay = 86400;
constexpr double kNow = 1767225600;  // 2026-01-01T00:00:00Z

// Tier "rapid", 100 TiB: every hour for 30 days avail falls by 0.5 TiB per
// day from 50 TiB, so at now it is 35 TiB and the tier is full 70 days later.
// `wiggle` adds +w/-w on alternate samples (the fit must see through it).
// Job "llm" stores 0.1 TiB per day more. CheckpointTierFillingUp fired 10
// days ago for 1 hour.
void fill(const std::string& state_dir, double wiggle, int hours = 30 * 24) {
  std::string error;
  auto store = Store::open(state_dir, &error);
  ASSERT_TRUE(store) << error;
  HistoryWrite w;
  const double t0 = kNow - hours * 3600.0;
  for (int i = 0; i <= hours; ++i) {
    TierSample s;
    s.t = t0 + 3600.0 * i;
    s.size_bytes = 100 * TiB;
    const double age_days = (s.t - t0) / kDay;
    s.avail_bytes = 50 * TiB - 0.5 * TiB * age_days + (i % 2 == 0 ? wiggle : -wiggle);
    s.job_stored_bytes["llm"] = 10 * TiB + 0.1 * TiB * age_days;
    w.samples.emplace_back("rapid", s);
  }
  AlertTransition fire;
  fire.labels = {"CheckpointTierFillingUp", "warning", "rapid", ""};
  fire.from = AlertState::kPending;
  fire.to = AlertState::kFiring;
  fire.at = kNow - 10 * kDay;
  fire.summary = "rapid fills";
  AlertTransition clear = fire;
  clear.from = AlertState::kFiring;
  clear.to = AlertState::kInactive;
  clear.at = fire.at + 3600;
  w.transitions = {fire, clear};
  store->post([w](sql::Db& db) { write_history(db, w); });
  store->flush();
}

struct ReportRun {
  int rc = -1;
  std::string out, err;
};

ReportRun report(ReportCommandOptions o) {
  o.now = kNow;
  std::ostringstream out, err;
  SystemClock clock;
  ReportRun r;
  r.rc = run_report_command(o, clock, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

ReportCommandOptions state_dir_opts(const std::string& dir, const std::string& format) {
  ReportCommandOptions o;
  o.state_dir = dir;
  o.format = format;
  return o;
}

TEST(Report, GrowthRateAndTimeToFullOfAKnownLinearFill) {
  TempDir dir;
  fill(dir.str() + "/state", 0);
  ReportRun r = report(state_dir_opts(dir.str() + "/state", "json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tiers"].size(), 1u);
  const auto& t = j["tiers"][0];
  EXPECT_EQ(t["samples"], 721);
  EXPECT_NEAR(t["growth_bytes_per_day"].get<double>(), 0.5 * TiB, 0.5 * TiB * 1e-9);
  EXPECT_NEAR(t["time_to_full_seconds"].get<double>(), 70 * kDay, 1e-3);
  EXPECT_EQ(t["avail_bytes"], 35 * TiB);
  ASSERT_EQ(t["jobs"].size(), 1u);
  EXPECT_NEAR(t["jobs"][0]["growth_bytes_per_day"].get<double>(), 0.1 * TiB, 0.1 * TiB * 1e-9);
  ASSERT_EQ(j["alerts"].size(), 1u);
  EXPECT_EQ(j["alerts"][0]["duration_seconds"], 3600);
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0],
            "rapid fills in 70.0 days at the 30-day growth rate (512.0 GiB per day)");
}

// A young install: the default period is 30 days, the data 10 hours; the
// rate is named by the span it was fitted over (issue 33 item 3).
TEST(Report, TheGrowthRateSaysTheSpanItWasFittedOver) {
  TempDir dir;
  fill(dir.str() + "/state", 0, 10);
  ReportRun r = report(state_dir_opts(dir.str() + "/state", "json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["findings"].empty());
  // 50 TiB falling by 0.5 TiB a day: 50 - 10/48 TiB left, 100 days less 10 hours.
  EXPECT_EQ(j["findings"][0],
            "rapid fills in 99.6 days at the 10-hour growth rate (512.0 GiB per day)");
}

// A tier that is full and no longer grows is full, not "fills in 0.0 days".
TEST(Report, AFullTierThatStoppedGrowingSaysSo) {
  TempDir dir;
  {
    std::string error;
    auto store = Store::open(dir.str() + "/state", &error);
    ASSERT_TRUE(store) << error;
    HistoryWrite w;
    for (int i = 0; i <= 48; ++i) {
      TierSample s;
      s.t = kNow - 48 * 3600.0 + 3600.0 * i;
      s.size_bytes = 100 * TiB;
      s.avail_bytes = 0;
      w.samples.emplace_back("rapid", s);
    }
    store->post([w](sql::Db& db) { write_history(db, w); });
    store->flush();
  }
  ReportRun r = report(state_dir_opts(dir.str() + "/state", "json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tiers"][0]["time_to_full_seconds"], 0);
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0],
            "rapid is full (0 B available), and stopped growing over the 2-day fit");
  for (const auto& f : j["findings"]) {
    EXPECT_EQ(f.get<std::string>().find("fills in"), std::string::npos) << f;
  }
}

TEST(Report, TheFitSeesThroughNoiseAndGivesItsSpread) {
  TempDir dir;
  fill(dir.str() + "/state", 0.2 * TiB);  // +-200 GiB on alternate hours
  ReportRun r = report(state_dir_opts(dir.str() + "/state", "json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto t = nlohmann::json::parse(r.out)["tiers"][0];
  EXPECT_NEAR(t["growth_bytes_per_day"].get<double>(), 0.5 * TiB, 0.5 * TiB * 0.01);
  EXPECT_NEAR(t["time_to_full_seconds"].get<double>(), 70 * kDay, 70 * kDay * 0.01);
  // The residuals are +-0.2 TiB around the line.
  EXPECT_NEAR(t["growth_residual_stddev_bytes"].get<double>(), 0.2 * TiB, 0.2 * TiB * 0.01);
  EXPECT_GT(t["growth_stderr_bytes_per_day"].get<double>(), 0);
}

TEST(Report, MarkdownAndCsvCarryTheJsonsNumbers) {
  TempDir dir;
  fill(dir.str() + "/state", 0.2 * TiB);
  const std::string state = dir.str() + "/state";
  const auto j = nlohmann::json::parse(report(state_dir_opts(state, "json")).out);
  const auto& t = j["tiers"][0];
  ReportRun csv = report(state_dir_opts(state, "csv"));
  ASSERT_EQ(csv.rc, 0) << csv.err;
  for (const char* k : {"growth_bytes_per_day", "growth_stderr_bytes_per_day",
                        "time_to_full_seconds", "avail_bytes", "size_bytes"}) {
    const std::string line = std::string("tier,rapid,,") + k + "," + t[k].dump() + "\n";
    EXPECT_NE(csv.out.find(line), std::string::npos) << line << csv.out;
  }
  EXPECT_NE(csv.out.find("alert,rapid,,CheckpointTierFillingUp.duration_seconds," +
                         j["alerts"][0]["duration_seconds"].dump() + "\n"),
            std::string::npos)
      << csv.out;
  ReportRun md = report(state_dir_opts(state, "markdown"));
  ASSERT_EQ(md.rc, 0) << md.err;
  const std::string row = "| rapid | " + t["growth_bytes_per_day"].dump() + " | " +
                          t["growth_stderr_bytes_per_day"].dump() + " | " +
                          t["time_to_full_seconds"].dump() + " | ";
  EXPECT_NE(md.out.find(row), std::string::npos) << row << "\n" << md.out;
  EXPECT_NE(md.out.find("| CheckpointTierFillingUp | warning | rapid |"), std::string::npos);
}

TEST(Report, BadInputExitsTwoNamingWhatIsWrong) {
  TempDir dir;
  const std::string state = dir.str() + "/state";
  {
    // Three samples a minute apart.
    std::string error;
    auto store = Store::open(state, &error);
    ASSERT_TRUE(store) << error;
    HistoryWrite w;
    for (int i = 0; i < 3; ++i) {
      TierSample s;
      s.t = kNow - 120 + 60.0 * i;
      s.size_bytes = 10;
      s.avail_bytes = 5;
      w.samples.emplace_back("rapid", s);
    }
    store->post([w](sql::Db& db) { write_history(db, w); });
    store->flush();
  }
  ReportRun r = report(state_dir_opts(state, "json"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("not enough history: 3 samples over 2 minutes"), std::string::npos) << r.err;
  // And what to do about it (issue 33 item 3).
  EXPECT_NE(r.err.find("with a shorter --min-history, e.g. --min-history 10m"), std::string::npos)
      << r.err;

  ReportCommandOptions o = state_dir_opts(state, "json");
  o.since = "tomorrow";
  r = report(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--since: expected a duration"), std::string::npos) << r.err;
  o.since = std::to_string(static_cast<long>(kNow + 86400));
  r = report(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--since: 2026-01-02T00:00:00.000Z is in the future"), std::string::npos)
      << r.err;
  r = report(state_dir_opts(dir.str() + "/nothing", "json"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--state-dir: "), std::string::npos) << r.err;
  o = {};
  o.from = "http://127.0.0.1:1";
  r = report(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--from http://127.0.0.1:1: cannot connect"), std::string::npos) << r.err;
  o = state_dir_opts(state, "json");
  o.tiers = {"nope"};
  r = report(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--tier: no history of tier \"nope\""), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ckptmon
