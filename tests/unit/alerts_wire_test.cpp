// The alert wire formats (api/alerts_wire.hpp): the /api/v1/alerts body
// and the Alertmanager v2 payload, parsed back and compared with values
// worked out by hand.

#include "api/alerts_wire.hpp"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ckptmon {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr auto kPe = AlertState::kPending;
constexpr auto kFi = AlertState::kFiring;

AlertInstance instance(std::string tier, std::string job, AlertState st) {
  AlertInstance a;
  a.labels = {"CheckpointPartial", "warning", std::move(tier), std::move(job)};
  a.state = st;
  a.active_at = 1'700'000'000;
  a.fired_at = st == kFi ? 1'700'000'060 : 0;
  a.value = 2;
  a.summary = "sum";
  a.description = "desc";
  a.runbook_url = "docs/runbook.md#checkpointpartial";
  return a;
}

TEST(AlertRendering, ApiJsonLooksLikePrometheus) {
  std::vector<AlertInstance> v{instance("rapid", "a\xff", kPe), instance("rapid", "", kFi)};
  v[1].value = kInf;
  auto j = nlohmann::json::parse(alerts_json(v));
  EXPECT_EQ(j["status"], "success");
  auto& alerts = j["data"]["alerts"];
  ASSERT_EQ(alerts.size(), 2u);
  EXPECT_EQ(alerts[0]["state"], "pending");
  // The label sanitiser: invalid UTF-8 replaced, "~" + SHA-256 prefix of the
  // raw bytes (from sha256sum), as on the ckpt_alert series.
  EXPECT_EQ(alerts[0]["labels"]["training_job"], "a\xef\xbf\xbd~8dd06b5a");
  EXPECT_EQ(alerts[0]["activeAt"], "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(alerts[0]["value"], "2");
  EXPECT_EQ(alerts[0]["annotations"]["runbook_url"], "docs/runbook.md#checkpointpartial");
  EXPECT_FALSE(alerts[1]["labels"].contains("training_job"));
  EXPECT_EQ(alerts[1]["value"], "+Inf");
  EXPECT_EQ(nlohmann::json::parse(alerts_json({}))["data"]["alerts"].size(), 0u);
}

TEST(AlertRendering, AlertmanagerPayload) {
  std::vector<AlertInstance> firing{instance("rapid", "a", kFi)};
  std::vector<AlertInstance> resolved{instance("staging", "", kFi)};
  resolved[0].resolved_at = 1'700'000'100;
  auto j = nlohmann::json::parse(alertmanager_payload(firing, resolved, 1'700'000'200, 60,
                                                      "http://node1:10025/api/v1/alerts"));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["labels"], (nlohmann::json{{"alertname", "CheckpointPartial"},
                                            {"severity", "warning"},
                                            {"tier", "rapid"},
                                            {"training_job", "a"}}));
  EXPECT_EQ(j[0]["startsAt"], "2023-11-14T22:14:20.000Z");
  EXPECT_EQ(j[0]["endsAt"], "2023-11-14T22:20:40.000Z");  // now (22:16:40) + 4 x 60 s
  EXPECT_EQ(j[0]["generatorURL"], "http://node1:10025/api/v1/alerts");
  EXPECT_EQ(j[0]["annotations"]["summary"], "sum");
  EXPECT_FALSE(j[1]["labels"].contains("training_job"));
  EXPECT_EQ(j[1]["endsAt"], "2023-11-14T22:15:00.000Z");
}

}  // namespace
}  // namespace ckptmon
