// gpu.source dcgm (collectors/gpu_dcgm.cpp): dcgm-exporter's text read into
// GPU readings, and the source and the collector over an injected HttpFetch.
// The HTTP itself is real in tests/integration/test_gpu_dcgm.py.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "collectors/gpu.hpp"
#include "collectors/gpu_source.hpp"
#include "config/config.hpp"
#include "tests/test_paths.hpp"
#include "util/log.hpp"

#include "log_capture.hpp"

namespace ckptmon {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(CKPTMON_SOURCE_DIR) + "/tests/fixtures/dcgm/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GpuDcgm, ReadsTheExporterFixture) {
  GpuPoll p = dcgm_readings(fixture("h100-2gpu.prom"), 1000.0);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.call_errors.empty());
  ASSERT_EQ(p.gpus.size(), 2u);
  const GpuReading& g0 = p.gpus[0];
  EXPECT_EQ(g0.index, 0u);
  EXPECT_EQ(g0.uuid, "GPU-5a1b0c7e-2f3d-4e5a-9b8c-7d6e5f4a3b21");
  EXPECT_EQ(g0.model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g0.host, "gpu-node-07");
  EXPECT_EQ(g0.job, "llama-70b");
  // GR_ENGINE_ACTIVE wins over SM_ACTIVE (0.801155) and GPU_UTIL (100 %).
  ASSERT_TRUE(g0.utilization);
  EXPECT_DOUBLE_EQ(*g0.utilization, 0.873412);
  ASSERT_EQ(g0.samples.size(), 1u);
  EXPECT_EQ(g0.samples[0], std::make_pair(1000.0, 0.873412));
  EXPECT_DOUBLE_EQ(*g0.memory_used_bytes, 76752.0 * 1024 * 1024);
  EXPECT_EQ(p.gpus[1].job, "");  // pod="" and no hpc_job: no job of its own
  EXPECT_DOUBLE_EQ(*p.gpus[1].utilization, 0.0);
  EXPECT_DOUBLE_EQ(*p.gpus[1].memory_used_bytes, 0.0);
}

TEST(GpuDcgm, FallsBackSmActiveThenPercentAndReadsPodLabels) {
  GpuPoll p = dcgm_readings(
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",hostname=\"n1\",namespace=\"train\",pod=\"llama-0\"} 64\n"
      "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",hostname=\"n1\"} 0.5\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",hostname=\"n1\",pod=\"solo\"} 37 1700000000500\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",hostname=\"n1\"} NaN\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"2\",hostname=\"n1\"} 1\n",
      50.0);
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.gpus.size(), 3u);
  EXPECT_DOUBLE_EQ(*p.gpus[0].utilization, 0.5);
  EXPECT_EQ(p.gpus[0].job, "train/llama-0");
  EXPECT_EQ(p.gpus[0].host, "n1");
  EXPECT_DOUBLE_EQ(*p.gpus[1].utilization, 0.37);
  EXPECT_EQ(p.gpus[1].samples.at(0).first, 1700000000.5);  // the series' own timestamp
  EXPECT_EQ(p.gpus[1].job, "solo");
  EXPECT_FALSE(p.gpus[2].utilization);  // NaN is unknown, not 0
  EXPECT_TRUE(p.gpus[2].samples.empty());
  EXPECT_DOUBLE_EQ(*p.gpus[2].memory_used_bytes, 1048576.0);
}

TEST(GpuDcgm, BadSeriesAreCallErrorsAndBadTextFailsThePoll) {
  GpuPoll p = dcgm_readings(
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"a\"} 10\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"64\",Hostname=\"a\"} 10\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"x\",Hostname=\"a\"} 10\n"
      "DCGM_FI_DEV_GPU_UTIL{Hostname=\"a\"} 10\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"b\"} 90\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"a\",weird_label=\"\\\"\"} 20\n",
      1.0);
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(*p.gpus[0].utilization, 0.1);  // host b's GPU 0 is not taken
  EXPECT_DOUBLE_EQ(*p.gpus[1].utilization, 0.2);  // unknown labels are ignored
  ASSERT_EQ(p.call_errors.size(), 2u);
  EXPECT_EQ(p.call_errors[0],
            "DCGM_FI_DEV_GPU_UTIL: series whose gpu label is no GPU index below 64 ignored");
  EXPECT_NE(p.call_errors[1].find("GPU 0 is named by hosts \"a\" and \"b\""), std::string::npos);

  p = dcgm_readings("<html><body>Sign in</body></html>\n", 1.0);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "line 1: expected a metric name");
  p = dcgm_readings("# HELP up x\nup 1\n", 1.0);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("no DCGM_FI_PROF_GR_ENGINE_ACTIVE"), std::string::npos);
  std::string many;
  for (int i = 0; i <= 20000; ++i)
    many += "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",x=\"" + std::to_string(i) + "\"} 1\n";
  p = dcgm_readings(many, 1.0);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "line 20001: more than 20000 series");
}

struct Recorded {
  std::string url;
  double timeout = 0;
  std::size_t max_bytes = 0;
};

TEST(GpuDcgm, SourceAsksWithADeadlineAndCapAndReportsBadAnswers) {
  auto rec = std::make_shared<Recorded>();
  auto answer = std::make_shared<FetchResult>();
  HttpFetch fetch = [rec, answer](const std::string& url, double timeout, std::size_t max) {
    *rec = Recorded{url, timeout, max};
    return *answer;
  };
  auto src = make_dcgm_source("http://127.0.0.1:9400/metrics", fetch, 0.8);
  EXPECT_EQ(src->name(), "dcgm");
  *answer = FetchResult{true, 200, "text/plain; version=0.0.4",
                        "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\"} 50\n", ""};
  GpuPoll p = src->poll(5.0);
  EXPECT_TRUE(p.ok);
  EXPECT_EQ(rec->url, "http://127.0.0.1:9400/metrics");
  EXPECT_DOUBLE_EQ(rec->timeout, 0.8);
  EXPECT_EQ(rec->max_bytes, 16u << 20);
  ASSERT_EQ(p.gpus.size(), 1u);
  EXPECT_EQ(p.gpus[0].index, 3u);

  *answer = FetchResult{false, 0, "", "", "timed out after 0.8 s"};
  p = src->poll(6.0);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "http://127.0.0.1:9400/metrics: timed out after 0.8 s");
  *answer = FetchResult{true, 503, "text/plain", "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\"} 50\n", ""};
  EXPECT_EQ(src->poll(7.0).error, "http://127.0.0.1:9400/metrics: answered HTTP 503");
  *answer = FetchResult{true, 200, "text/html; charset=utf-8", "DCGM_FI_DEV_GPU_UTIL 1\n", ""};
  EXPECT_NE(src->poll(8.0).error.find("answered text/html; charset=utf-8, not the Prometheus"),
            std::string::npos);
  *answer =
      FetchResult{true, 200, "text/plain", "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 5\n\xfe\xff\n", ""};
  EXPECT_EQ(src->poll(9.0).error,
            "http://127.0.0.1:9400/metrics: line 2: not UTF-8 text (binary or another encoding)");

  auto none = make_dcgm_source("http://x/metrics", HttpFetch{}, 1.0);
  EXPECT_EQ(none->poll(1.0).error, "no HTTP client in this tool");
}

// The source's requests are made with gpu's client settings, and a reload
// that changes them swaps the fetch under the same source: the ring of
// readings survives, the next poll goes through the new fetch.
TEST(GpuCollector, AReloadSwapsTheHttpClientAndKeepsTheRing) {
  auto load = [](const char* tenant) {
    LoadResult cfg = parse_config(
        std::string("tiers: [{name: a, path: /a, role: rapid}]\n"
                    "gpu: {source: dcgm, dcgm_url: \"https://dcgm:9400/metrics\", interval: 2s, "
                    "max_window: 1m, headers: {X-Scope-OrgID: ") +
            tenant + "}}\n",
        "c.yml");
    EXPECT_TRUE(cfg.config) << (cfg.errors.empty() ? "" : cfg.errors[0].to_string());
    return *cfg.config;
  };
  auto made = std::make_shared<std::vector<std::string>>();    // tenant per fetch made
  auto polled = std::make_shared<std::vector<std::string>>();  // tenant per request
  HttpFetchFactory factory = [made, polled](const HttpClientConfig& client) {
    const std::string tenant = client.headers.empty() ? "" : client.headers[0].second;
    made->push_back(tenant);
    return HttpFetch([polled, tenant](const std::string& url, double, std::size_t) {
      polled->push_back(tenant + " " + url);
      return FetchResult{true, 200, "text/plain",
                         "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",UUID=\"GPU-a\"} 0.5\n", ""};
    });
  };
  auto clock = std::make_shared<FakeClock>(1000.0);
  GpuCollector c(clock, factory);
  c.configure(load("team-a"));
  State st;
  c.prepare("gpu", st)()(st);
  c.configure(load("team-b"));
  clock->advance(2.0);
  c.prepare("gpu", st)()(st);
  EXPECT_EQ(*made, (std::vector<std::string>{"team-a", "team-b"}));
  EXPECT_EQ(*polled, (std::vector<std::string>{"team-a https://dcgm:9400/metrics",
                                               "team-b https://dcgm:9400/metrics"}));
  ASSERT_TRUE(st.gpu);
  EXPECT_EQ(st.gpu->series.at(0).size(), 2u);  // one source throughout: the ring kept both
}

TEST(GpuCollector, DcgmSourceFillsTheRingAndGoesDownOnBadAnswers) {
  LoadResult cfg = parse_config(
      "tiers: [{name: a, path: /a, role: rapid}]\n"
      "gpu: {source: dcgm, dcgm_url: \"http://127.0.0.1:1/metrics\", interval: 2s, max_window: "
      "1m}\n",
      "c.yml");
  ASSERT_TRUE(cfg.config) << cfg.errors.at(0).to_string();
  auto body = std::make_shared<std::string>();
  auto timeouts = std::make_shared<std::vector<double>>();
  HttpFetch fetch = [body, timeouts](const std::string&, double timeout, std::size_t) {
    timeouts->push_back(timeout);
    if (body->empty()) return FetchResult{false, 0, "", "", "connection refused"};
    return FetchResult{true, 200, "text/plain", *body, ""};
  };
  auto clock = std::make_shared<FakeClock>(1000.0);
  GpuCollector c(clock, [fetch](const HttpClientConfig&) { return fetch; });
  c.configure(*cfg.config);
  // 0.8 x min(interval 2 s, timeout 5 s): a slow exporter fails before the next poll.
  EXPECT_DOUBLE_EQ(GpuCollector::fetch_timeout(cfg.config->gpu), 1.6);
  State st;
  *body = "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"H100\"} 0.9\n";
  c.prepare("gpu", st)()(st);
  clock->advance(2.0);
  *body = "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"H100\"} 0.1\n";
  c.prepare("gpu", st)()(st);
  ASSERT_TRUE(st.gpu);
  EXPECT_TRUE(st.gpu->up);
  EXPECT_EQ(st.gpu->source, "dcgm");
  ASSERT_EQ(st.gpu->devices.size(), 1u);
  EXPECT_EQ(st.gpu->devices[0].uuid, "GPU-a");
  const GpuSeries& ring = st.gpu->series.at(0);
  ASSERT_EQ(ring.size(), 2u);
  EXPECT_DOUBLE_EQ(ring[0].mean, 0.9);
  EXPECT_DOUBLE_EQ(ring[1].mean, 0.1);
  EXPECT_EQ(timeouts->front(), 1.6);

  body->clear();
  c.prepare("gpu", st)()(st);
  EXPECT_FALSE(st.gpu->up);
  EXPECT_EQ(st.gpu->error, "http://127.0.0.1:1/metrics: connection refused");
  EXPECT_EQ(st.gpu->errors, 1u);
  EXPECT_EQ(st.gpu->series.at(0).size(), 2u);  // the ring survives
}

// One sample dated 2100 (dcgm-exporter's optional timestamp, in ms) is
// refused, counted and logged, naming the source and the date; it does not
// become the newest bucket, so every later sample still lands. Refusals
// keep counting, the log line comes at most every 10 minutes of the clock.
TEST(GpuCollector, ASampleFromTheFutureIsRefusedCountedAndLoggedNotTheNewestBucket) {
  LoadResult cfg = parse_config(
      "tiers: [{name: a, path: /a, role: rapid}]\n"
      "gpu: {source: dcgm, dcgm_url: \"http://127.0.0.1:1/metrics\", interval: 2s, max_window: "
      "1m}\n",
      "c.yml");
  ASSERT_TRUE(cfg.config) << cfg.errors.at(0).to_string();
  auto body = std::make_shared<std::string>();
  HttpFetch fetch = [body](const std::string&, double, std::size_t) {
    return FetchResult{true, 200, "text/plain", *body, ""};
  };
  testing::LogCapture logged;
  auto clock = std::make_shared<FakeClock>(1000.0);
  GpuCollector c(clock, [fetch](const HttpClientConfig&) { return fetch; });
  c.configure(*cfg.config);
  State st;
  const std::string series = "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",UUID=\"GPU-a\"} ";
  *body = series + "0.9\n";
  c.prepare("gpu", st)()(st);
  clock->advance(2.0);
  *body = series + "0.5 4102444800000\n";  // 2100-01-01T00:00:00Z
  c.prepare("gpu", st)()(st);
  ASSERT_TRUE(st.gpu);
  EXPECT_TRUE(st.gpu->up);
  EXPECT_EQ(st.gpu->future_samples, 1u);
  EXPECT_NE(logged.str().find("GPU samples dated in the future refused"), std::string::npos)
      << logged.str();
  EXPECT_NE(logged.str().find("source=dcgm"), std::string::npos) << logged.str();
  EXPECT_NE(logged.str().find("2100-01-01T00:00:00.000Z"), std::string::npos) << logged.str();
  for (int i = 0; i < 3; ++i) {
    clock->advance(2.0);
    *body = series + "0.1\n";
    c.prepare("gpu", st)()(st);
  }
  const GpuSeries& ring = st.gpu->series.at(0);
  ASSERT_EQ(ring.size(), 4u);  // 1000, then the three after the refused one
  EXPECT_DOUBLE_EQ(ring[0].mean, 0.9);
  EXPECT_DOUBLE_EQ(ring.back().end, 1008);
  EXPECT_DOUBLE_EQ(ring.back().mean, 0.1);

  // 59 s ahead is clock skew, taken; 61 s ahead is refused.
  clock->advance(2.0);  // 1010
  *body = series + "0.2 1069000\n" +
          "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"1\",UUID=\"GPU-b\"} 0.3 1071000\n";
  c.prepare("gpu", st)()(st);
  EXPECT_EQ(st.gpu->future_samples, 2u);
  EXPECT_DOUBLE_EQ(st.gpu->series.at(0).back().end, 1070);
  EXPECT_TRUE(st.gpu->series.at(1).empty());
  // Counted every time, logged once within 10 minutes.
  const auto lines = [&] { return logged.count("dated in the future"); };
  EXPECT_EQ(lines(), 1u);
  clock->advance(600.0);
  *body = series + "0.2 4102444800000\n";
  c.prepare("gpu", st)()(st);
  EXPECT_EQ(st.gpu->future_samples, 3u);
  EXPECT_EQ(lines(), 2u);
  EXPECT_NE(logged.str().find("refused_since_last_log=2"), std::string::npos) << logged.str();
}

}  // namespace
}  // namespace ckptmon
