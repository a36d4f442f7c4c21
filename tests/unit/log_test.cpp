#include "util/log.hpp"

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace ckptmon {
namespace {

// Points the process-wide logger at a string for the test, and back to
// stderr afterwards so that later tests log normally.
class LogTest : public ::testing::Test {
 protected:
  void use(spdlog::level::level_enum level, log::Format format) {
    out_.str("");
    log::init(level, format, std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
  }
  ~LogTest() override { log::init(spdlog::level::info, log::Format::kLogfmt); }

  std::vector<std::string> lines() const {
    std::vector<std::string> v;
    std::istringstream in(out_.str());
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }

  std::ostringstream out_;
};

const std::regex kTs(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");

TEST_F(LogTest, LogfmtQuotesWhatNeedsQuoting) {
  use(spdlog::level::info, log::Format::kLogfmt);
  log::info("config reload rejected", {{"file", "/etc/ckptmon/my config.yml"},
                                       {"err", "say \"hi\"\nand\\leave"},
                                       {"plain", "word"},
                                       {"eq", "a=b"},
                                       {"empty", ""},
                                       {"n", 42},
                                       {"x", 1.5},
                                       {"ok", true}});
  auto l = lines();
  ASSERT_EQ(l.size(), 1u);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(l[0], m, std::regex(R"(ts=(\S+) level=info (.*))"))) << l[0];
  EXPECT_TRUE(std::regex_match(m[1].str(), kTs)) << m[1];
  EXPECT_EQ(m[2].str(),
            "msg=\"config reload rejected\" file=\"/etc/ckptmon/my config.yml\" "
            "err=\"say \\\"hi\\\"\\nand\\\\leave\" plain=word eq=\"a=b\" empty=\"\" n=42 x=1.5 "
            "ok=true");
}

TEST_F(LogTest, LogfmtEscapesControlCharacters) {
  use(spdlog::level::info, log::Format::kLogfmt);
  log::info("m", {{"v", std::string("a\tb\rc\x01") + "d"}});
  auto l = lines();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_TRUE(l[0].ends_with(" msg=m v=\"a\\tb\\rc\\x01d\"")) << l[0];
}

TEST_F(LogTest, JsonLinesParseAndKeepTypes) {
  use(spdlog::level::debug, log::Format::kJson);
  log::warn("collector run failed", {{"collector", "tier_stats"},
                                     {"err", "quote \" backslash \\ newline \n end"},
                                     {"port", 10025},
                                     {"seconds", 0.25},
                                     {"big", static_cast<std::uint64_t>(1) << 40},
                                     {"ok", false}});
  log::debug("second line");
  auto l = lines();
  ASSERT_EQ(l.size(), 2u);
  auto j = nlohmann::json::parse(l[0], nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << l[0];
  ASSERT_TRUE(j["ts"].is_string());
  EXPECT_TRUE(std::regex_match(j["ts"].get<std::string>(), kTs)) << j["ts"];
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["msg"], "collector run failed");
  EXPECT_EQ(j["collector"], "tier_stats");
  EXPECT_EQ(j["err"], "quote \" backslash \\ newline \n end");
  ASSERT_TRUE(j["port"].is_number_integer());
  EXPECT_EQ(j["port"], 10025);
  ASSERT_TRUE(j["seconds"].is_number_float());
  EXPECT_EQ(j["seconds"], 0.25);
  EXPECT_EQ(j["big"], 1099511627776);
  ASSERT_TRUE(j["ok"].is_boolean());
  EXPECT_EQ(j["ok"], false);
  auto j2 = nlohmann::json::parse(l[1], nullptr, false);
  ASSERT_FALSE(j2.is_discarded()) << l[1];
  EXPECT_EQ(j2["level"], "debug");
  EXPECT_EQ(j2["msg"], "second line");
}

TEST_F(LogTest, JsonReplacesInvalidUtf8InsteadOfBreakingTheLine) {
  use(spdlog::level::info, log::Format::kJson);
  log::error("bad path", {{"path", std::string("/mnt/\xff\xfe")}});
  auto l = lines();
  ASSERT_EQ(l.size(), 1u);
  auto j = nlohmann::json::parse(l[0], nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << l[0];
  EXPECT_EQ(j["level"], "error");
  EXPECT_TRUE(j["path"].get<std::string>().starts_with("/mnt/"));
}

TEST_F(LogTest, LevelFilters) {
  use(spdlog::level::warn, log::Format::kLogfmt);
  log::debug("d");
  log::info("i");
  log::warn("w");
  log::error("e");
  auto l = lines();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_NE(l[0].find(" level=warn msg=w"), std::string::npos) << l[0];
  EXPECT_NE(l[1].find(" level=error msg=e"), std::string::npos) << l[1];
}

TEST(LogParse, LevelsAndFormats) {
  EXPECT_EQ(log::parse_level("debug"), spdlog::level::debug);
  EXPECT_EQ(log::parse_level("info"), spdlog::level::info);
  EXPECT_EQ(log::parse_level("warn"), spdlog::level::warn);
  EXPECT_EQ(log::parse_level("error"), spdlog::level::err);
  EXPECT_EQ(log::parse_level("INFO"), std::nullopt);
  EXPECT_EQ(log::parse_level(""), std::nullopt);
  EXPECT_EQ(log::parse_format("logfmt"), log::Format::kLogfmt);
  EXPECT_EQ(log::parse_format("json"), log::Format::kJson);
  EXPECT_EQ(log::parse_format("text"), std::nullopt);
}

TEST(RateLimiter, LetsBurstThroughPerWindowAndCountsTheRest) {
  log::RateLimiter rl(3, 10.0);
  const double t0 = 1'700'000'000.0;
  EXPECT_EQ(rl.allow("k", t0), 0u);
  EXPECT_EQ(rl.allow("k", t0 + 1), 0u);
  EXPECT_EQ(rl.allow("k", t0 + 2), 0u);
  EXPECT_EQ(rl.allow("k", t0 + 3), std::nullopt);
  EXPECT_EQ(rl.allow("k", t0 + 4), std::nullopt);
  EXPECT_EQ(rl.allow("k", t0 + 9.999), std::nullopt);
  // A new window: the first message through says how many were dropped.
  EXPECT_EQ(rl.allow("k", t0 + 10), 3u);
  EXPECT_EQ(rl.allow("k", t0 + 11), 0u);  // the count was handed over once
  EXPECT_EQ(rl.allow("k", t0 + 12), 0u);
  EXPECT_EQ(rl.allow("k", t0 + 13), std::nullopt);
  EXPECT_EQ(rl.allow("k", t0 + 25), 1u);
}

TEST(RateLimiter, KeysAreIndependent) {
  log::RateLimiter rl(1, 60.0);
  const double t0 = 1'700'000'000.0;
  EXPECT_EQ(rl.allow("a", t0), 0u);
  EXPECT_EQ(rl.allow("a", t0), std::nullopt);
  EXPECT_EQ(rl.allow("b", t0), 0u);
  EXPECT_EQ(rl.allow("b", t0 + 1), std::nullopt);
  EXPECT_EQ(rl.allow("a", t0 + 60), 1u);
  EXPECT_EQ(rl.allow("b", t0 + 60), 1u);
}

TEST(RateLimiter, ClockGoingBackwardsStartsANewWindow) {
  log::RateLimiter rl(1, 60.0);
  const double t0 = 1'700'000'000.0;
  EXPECT_EQ(rl.allow("a", t0), 0u);
  EXPECT_EQ(rl.allow("a", t0 + 1), std::nullopt);
  // NTP stepped the clock back: rather than muting the key for an hour, let it through.
  EXPECT_EQ(rl.allow("a", t0 - 3600), 1u);
}

}  // namespace
}  // namespace ckptmon
