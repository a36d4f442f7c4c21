#include "config/config.hpp"

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

constexpr const char* kTiers = "tiers:\n  - {name: a, path: /a, role: rapid}\n";

LoadResult load(const std::string& gpu) { return parse_config(std::string(kTiers) + gpu, "g.yml"); }

std::vector<std::string> errors_of(const std::string& gpu) {
  LoadResult r = load(gpu);
  std::vector<std::string> out;
  for (const auto& e : r.errors) out.push_back(e.to_string());
  EXPECT_EQ(r.config.has_value(), out.empty());
  return out;
}

TEST(GpuConfig, OffByDefault) {
  LoadResult r = load("");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->gpu.source, GpuSourceKind::kNone);
  EXPECT_FALSE(r.config->gpu.enabled());
  EXPECT_EQ(r.config->gpu.interval, std::chrono::seconds(1));
  EXPECT_EQ(r.config->gpu.nvml_library, "libnvidia-ml.so.1");
  EXPECT_EQ(r.config->gpu.dcgm_url, "http://127.0.0.1:9400/metrics");
}

TEST(GpuConfig, ReadsTheIssueExample) {
  LoadResult r = load(R"(gpu:
  source: nvml
  interval: 2s
  nvml_library: /opt/fake/libnvidia-ml.so.1
  dcgm_url: http://127.0.0.1:9400/metrics
  prometheus: {url: http://prometheus:9090, selector: '{cluster="a"}'}
  job_mapping_dir: /run/ckptmon/gpu-jobs
  job_map: {"0": llama-70b, "1": llama-70b, "3": other}
)");
  ASSERT_TRUE(r.config) << r.errors.at(0).to_string();
  const GpuConfig& g = r.config->gpu;
  EXPECT_EQ(g.source, GpuSourceKind::kNvml);
  EXPECT_EQ(g.interval, std::chrono::seconds(2));
  EXPECT_EQ(g.nvml_library, "/opt/fake/libnvidia-ml.so.1");
  EXPECT_EQ(g.prometheus_url, "http://prometheus:9090");
  EXPECT_EQ(g.prometheus_selector, "{cluster=\"a\"}");
  EXPECT_EQ(g.job_mapping_dir, "/run/ckptmon/gpu-jobs");
  ASSERT_EQ(g.job_map.size(), 3u);
  EXPECT_EQ(g.job_map.at(0), "llama-70b");
  EXPECT_EQ(g.job_map.at(3), "other");
}

TEST(GpuConfig, ErrorsAreLocated) {
  EXPECT_EQ(
      errors_of("gpu: {source: cuda}\n"),
      std::vector<std::string>{
          "g.yml:3:15: gpu.source: expected one of nvml, dcgm, prometheus, none, got \"cuda\""});
  auto e = errors_of("gpu:\n  source: nvml\n  job_map: {\"64\": a, x: b}\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_NE(e[0].find("g.yml:5:13: gpu.job_map: expected a GPU index from 0 to 63"),
            std::string::npos)
      << e[0];
  EXPECT_NE(e[1].find("g.yml:5:22:"), std::string::npos) << e[1];
  // The client settings: tls_config only for an https source, one kind of
  // credentials, headers that are tokens and not the client's own.
  e = errors_of("gpu: {dcgm_url: http://x:9400/metrics, tls_config: {ca_file: /ca.pem}}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("gpu.tls_config: needs an https:// gpu.dcgm_url"), std::string::npos) << e[0];
  e = errors_of(
      "gpu: {source: prometheus, prometheus: {url: \"http://p:9090\"}, tls_config: {}}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("needs an https:// gpu.prometheus.url"), std::string::npos) << e[0];
  e = errors_of("gpu: {basic_auth: {username: u, password: p}, authorization: {credentials: t}}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("gpu.authorization: at most one of basic_auth and authorization"),
            std::string::npos)
      << e[0];
  e = errors_of("gpu: {headers: {\"Bad Name\": x, Authorization: y, X-Ok: \"a\\nb\"}}\n");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_NE(e[0].find("gpu.headers.Bad Name: a header name is an HTTP token"), std::string::npos)
      << e[0];
  EXPECT_NE(e[1].find("gpu.headers.Authorization: Authorization is the client's own header"),
            std::string::npos)
      << e[1];
  EXPECT_NE(e[2].find("gpu.headers.X-Ok: a header value may not hold control characters"),
            std::string::npos)
      << e[2];
  e = errors_of("gpu: {source: prometheus}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("gpu.source: source prometheus needs gpu.prometheus.url"), std::string::npos);
  e = errors_of("gpu: {job_mapping_dir: relative/dir}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("gpu.job_mapping_dir: expected an absolute path"), std::string::npos);
  e = errors_of("gpu: {interval: 10ms}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("gpu.interval: must be at least 100ms"), std::string::npos) << e[0];
  e = errors_of("gpu: {prometheus: {url: http://p:9090, selector: 'cluster=\"a\"'}}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("gpu.prometheus.selector: expected label matchers in braces"),
            std::string::npos);
  e = errors_of("gpu: {sourc: nvml}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("gpu.sourc"), std::string::npos) << e[0];
  e = errors_of("gpu: nvml\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("gpu"), std::string::npos) << e[0];
}

// An https dcgm-exporter behind a proxy that wants a token and a tenant.
TEST(GpuConfig, ReadsTheClientSettingsOfAnHttpsSource) {
  LoadResult r = parse_config(R"(tiers: [{name: a, path: /a, role: rapid}]
gpu:
  source: dcgm
  dcgm_url: https://dcgm.example:9400/metrics
  tls_config: {ca_file: /etc/ssl/dcgm-ca.pem, server_name: dcgm.internal}
  authorization: {credentials_file: /run/secrets/dcgm-token}
  headers: {X-Scope-OrgID: team-a, X-Extra: "v 1"}
)",
                              "g.yml");
  ASSERT_TRUE(r.config) << r.errors.at(0).to_string();
  const HttpClientConfig& c = r.config->gpu.client;
  EXPECT_EQ(r.config->gpu.dcgm_url, "https://dcgm.example:9400/metrics");
  EXPECT_EQ(c.tls.ca_file, "/etc/ssl/dcgm-ca.pem");
  EXPECT_EQ(c.tls.server_name, "dcgm.internal");
  EXPECT_EQ(c.auth.type, "Bearer");
  EXPECT_EQ(c.auth.credentials_file, "/run/secrets/dcgm-token");
  using H = std::pair<std::string, std::string>;
  EXPECT_EQ(c.headers, (std::vector<H>{H{"X-Scope-OrgID", "team-a"}, H{"X-Extra", "v 1"}}));
}

}  // namespace
}  // namespace ckptmon
