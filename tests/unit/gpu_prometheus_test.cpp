// gpu.source prometheus (collectors/gpu_prometheus.cpp) over an injected
// HttpFetch answering what Prometheus's HTTP API answers. The real
// Prometheus is in tests/integration/test_gpu_prometheus.py.
#include <gtest/gtest.h>

#include "collectors/gpu_source.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

struct Api {
  std::vector<std::string> urls;
  std::vector<double> timeouts;
  FetchResult next{true, 200, "application/json", "", ""};
};

HttpFetch fetch_of(std::shared_ptr<Api> api) {
  return [api](const std::string& url, double timeout, std::size_t) {
    api->urls.push_back(url);
    api->timeouts.push_back(timeout);
    return api->next;
  };
}

std::string matrix(const std::string& series) {
  return R"({"status":"success","data":{"resultType":"matrix","result":[)" + series + "]}}";
}

TEST(GpuPrometheus, OneQueryOfRawSamplesBestFieldPerGpuNothingTwice) {
  auto api = std::make_shared<Api>();
  auto src =
      make_prometheus_source("http://prom:9090/", "{cluster=\"a\", }", fetch_of(api), 0.8, 600);
  EXPECT_EQ(src->name(), "prometheus");
  const std::string gr0 =
      R"({"metric":{"__name__":"DCGM_FI_PROF_GR_ENGINE_ACTIVE","gpu":"0","UUID":"GPU-a","Hostname":"n1","modelName":"H100","hpc_job":"llama"},"values":[[1000,"0.9"],[1001,"0.1"],[1002,"NaN"]]})";
  const std::string sm0 =
      R"({"metric":{"__name__":"DCGM_FI_PROF_SM_ACTIVE","gpu":"0","UUID":"GPU-a","Hostname":"n1"},"values":[[1000,"0.5"]]})";
  const std::string util1 =
      R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","UUID":"GPU-b","Hostname":"n2","namespace":"train","pod":"llama-1"},"values":[[1000,"64"]]})";
  api->next.body = matrix(gr0 + "," + sm0 + "," + util1);
  GpuPoll p = src->poll(1010.0);
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(api->urls.size(), 1u);
  const std::string want =
      "{__name__=~\"DCGM_FI_PROF_GR_ENGINE_ACTIVE|DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_DEV_GPU_UTIL\","
      "cluster=\"a\"}[610s]";  // 600 s of history + 10 s of slack
  EXPECT_EQ(api->urls[0],
            "http://prom:9090/api/v1/query?query=" + url_encode(want) + "&time=1010.000");
  EXPECT_DOUBLE_EQ(api->timeouts[0], 0.8);
  ASSERT_EQ(p.gpus.size(), 2u);
  // GPU 0 of n1 and GPU 0 of n2 are two GPUs: local indexes 0 and 1.
  EXPECT_EQ(p.gpus[0].index, 0u);
  EXPECT_EQ(p.gpus[0].uuid, "GPU-a");
  EXPECT_EQ(p.gpus[0].model, "H100");
  EXPECT_EQ(p.gpus[0].job, "llama");
  // GR_ENGINE_ACTIVE, not SM_ACTIVE's 0.5; NaN skipped (unknown, not 0).
  EXPECT_EQ(p.gpus[0].samples, (std::vector<std::pair<double, double>>{{1000, 0.9}, {1001, 0.1}}));
  EXPECT_EQ(p.gpus[1].index, 1u);
  EXPECT_EQ(p.gpus[1].job, "train/llama-1");
  EXPECT_EQ(p.gpus[1].samples, (std::vector<std::pair<double, double>>{{1000, 0.64}}));

  // The next poll asks from the last one on, and takes no sample twice.
  api->next.body = matrix(
      R"({"metric":{"__name__":"DCGM_FI_PROF_GR_ENGINE_ACTIVE","gpu":"0","UUID":"GPU-a","Hostname":"n1"},"values":[[1001,"0.1"],[1012,"0.8"]]})");
  p = src->poll(1013.0);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_NE(api->urls[1].find(url_encode("[13s]")), std::string::npos);  // 3 s + 10 s of slack
  ASSERT_EQ(p.gpus.size(), 1u);
  EXPECT_EQ(p.gpus[0].samples, (std::vector<std::pair<double, double>>{{1012, 0.8}}));
}

TEST(GpuPrometheus, ErrorsHtmlAndEmptyAnswersFailThePoll) {
  auto api = std::make_shared<Api>();
  auto src = make_prometheus_source("http://prom:9090", "", fetch_of(api), 1.0, 60);
  api->next =
      FetchResult{true, 422, "application/json",
                  R"({"status":"error","errorType":"execution","error":"too many samples"})", ""};
  EXPECT_EQ(src->poll(100).error,
            "http://prom:9090: HTTP 422: Prometheus answered execution: too many samples");
  EXPECT_EQ(api->urls.back(),
            "http://prom:9090/api/v1/query?query=" +
                url_encode("{__name__=~\"DCGM_FI_PROF_GR_ENGINE_ACTIVE|DCGM_FI_PROF_SM_ACTIVE|"
                           "DCGM_FI_DEV_GPU_UTIL\"}[70s]") +  // 60 s of history + 10 s
                "&time=100.000");
  api->next = FetchResult{true, 200, "text/html; charset=utf-8", "<html></html>", ""};
  EXPECT_EQ(src->poll(101).error,
            "http://prom:9090: answered HTTP 200 text/html; charset=utf-8, not the Prometheus "
            "HTTP API");
  api->next = FetchResult{false, 0, "", "", "timed out"};
  EXPECT_EQ(src->poll(102).error, "http://prom:9090: timed out");
  api->next = FetchResult{true, 200, "application/json", matrix(""), ""};
  GpuPoll p = src->poll(103);
  EXPECT_FALSE(p.ok);
  // A failed poll does not move the start on: still 60 + 10 s.
  EXPECT_NE(p.error.find("series match in the last 70 s"), std::string::npos) << p.error;
  api->next.body = R"({"status":"success","data":{"resultType":"vector","result":[]}})";
  EXPECT_EQ(src->poll(104).error, "http://prom:9090: answered a vector, not a matrix");
  // A long outage later, the question still reaches back no further than
  // the ring: 60 + 10 s.
  api->next.body =
      matrix(R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"values":[[99999,"50"]]})");
  ASSERT_TRUE(src->poll(100000).ok);
  api->next.body = matrix(
      R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"values":[[199999,"50"]]})");
  ASSERT_TRUE(src->poll(200000).ok);
  EXPECT_NE(api->urls.back().find(url_encode("[70s]")), std::string::npos) << api->urls.back();
  EXPECT_EQ(make_prometheus_source("http://p", "", HttpFetch{}, 1, 1)->poll(1).error,
            "no HTTP client in this tool");
}

TEST(GpuPrometheus, AtMost64Gpus) {
  auto api = std::make_shared<Api>();
  auto src = make_prometheus_source("http://prom:9090", "", fetch_of(api), 1.0, 60);
  std::string series;
  for (int i = 0; i < 70; ++i) {
    series += (i ? "," : "") +
              std::string(R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":")") +
              std::to_string(i % 8) + R"(","Hostname":"n)" + std::to_string(i / 8) +
              R"("},"values":[[99,"50"]]})";
  }
  api->next.body = matrix(series);
  GpuPoll p = src->poll(100);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.gpus.size(), 64u);
  EXPECT_EQ(p.gpus.back().index, 63u);
  ASSERT_EQ(p.call_errors.size(), 1u);
  EXPECT_EQ(p.call_errors[0],
            "more than 64 GPUs match the selector; the first 64 seen are watched");
}

// A sample dated 2100 from a Prometheus (a remote-written series with a bad
// clock) is handed on for the collector to refuse and count, but is not
// taken as the newest sample seen: the next poll's samples still come.
TEST(GpuPrometheus, ASampleFromTheFutureDoesNotHideLaterOnes) {
  auto api = std::make_shared<Api>();
  auto src = make_prometheus_source("http://prom:9090", "", fetch_of(api), 1.0, 600);
  const std::string labels =
      R"("metric":{"__name__":"DCGM_FI_PROF_GR_ENGINE_ACTIVE","gpu":"0","UUID":"GPU-a","Hostname":"n1"})";
  api->next.body = matrix("{" + labels + R"(,"values":[[1000,"0.9"],[4102444800,"0.5"]]})");
  GpuPoll p = src->poll(1010.0);
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.gpus.size(), 1u);
  EXPECT_EQ(p.gpus[0].samples,
            (std::vector<std::pair<double, double>>{{1000, 0.9}, {4102444800, 0.5}}));
  EXPECT_EQ(p.gpus[0].utilization, 0.9);  // the last reading dated now, not 2100's
  api->next.body = matrix("{" + labels + R"(,"values":[[1000,"0.9"],[1012,"0.2"]]})");
  p = src->poll(1013.0);
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.gpus.size(), 1u);
  EXPECT_EQ(p.gpus[0].samples, (std::vector<std::pair<double, double>>{{1012, 0.2}}));
}

}  // namespace
}  // namespace ckptmon
