// The NVML source against the fake libnvidia-ml.so.1 the build makes
// (tests/fake_nvml), loaded by path like a real driver's.
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include <gtest/gtest.h>

#include "collectors/gpu.hpp"
#include "collectors/gpu_job_mapping.hpp"
#include "collectors/gpu_source.hpp"
#include "config/config.hpp"
#include "temp_dir.hpp"
#include "tests/test_paths.hpp"

namespace ckptmon {
namespace {

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class Script {
 public:
  explicit Script(const std::string& text) : path_(dir_.file("script")) {
    std::ofstream(path_) << text;
    ::setenv("FAKE_NVML_SCRIPT", path_.c_str(), 1);
  }
  ~Script() { ::unsetenv("FAKE_NVML_SCRIPT"); }

 private:
  testing::TempDir dir_;
  std::string path_;
};

TEST(GpuNvml, ReadsDevicesMemoryAndEverySampleOnce) {
  const double now = wall_now();
  Script s(
      "gpus 2\nname 0 NVIDIA H100 80GB HBM3\nuuid 1 GPU-abc\nmemory 0 100 40\n"
      "period_ms 500\nbuffer_s 30\nepoch " +
      std::to_string(now) + "\nutil * -100 90\nutil 1 -10 10\n");
  auto src = make_nvml_source(CKPTMON_FAKE_NVML);
  GpuPoll p = src->poll(now);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.call_errors.empty());
  ASSERT_EQ(p.gpus.size(), 2u);
  EXPECT_EQ(p.gpus[0].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p.gpus[0].uuid, "GPU-fake-0000");
  EXPECT_EQ(p.gpus[1].uuid, "GPU-abc");
  EXPECT_EQ(p.gpus[0].memory_used_bytes, 40.0);
  // 30 s of samples every 0.5 s: about 60 (the buffer's edges may add one).
  ASSERT_GE(p.gpus[1].samples.size(), 59u);
  ASSERT_LE(p.gpus[1].samples.size(), 61u);
  for (const auto& [t, v] : p.gpus[1].samples) {
    // Each sample holds the value at the middle of the 0.5 s before it.
    const double mid = t - 0.25;
    if (mid < now - 10.01) {
      EXPECT_DOUBLE_EQ(v, 0.9) << t - now;
    }
    if (mid > now - 9.99) {
      EXPECT_DOUBLE_EQ(v, 0.1) << t - now;
    }
  }
  EXPECT_EQ(p.gpus[1].utilization, 0.1);
  EXPECT_EQ(p.gpus[0].utilization, 0.9);
  // The next poll continues after the last timestamp seen: nothing twice.
  const double last = p.gpus[1].samples.back().first;
  GpuPoll q = src->poll(wall_now());
  ASSERT_TRUE(q.ok);
  for (const auto& [t, v] : q.gpus[1].samples) EXPECT_GT(t, last);
}

TEST(GpuNvml, FallsBackToUtilizationRatesWithoutSamples) {
  Script s("gpus 1\nno_samples\nutil 0 0 70\n");
  auto src = make_nvml_source(CKPTMON_FAKE_NVML);
  GpuPoll p = src->poll(1234.5);
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.gpus.size(), 1u);
  ASSERT_EQ(p.gpus[0].samples.size(), 1u);
  EXPECT_EQ(p.gpus[0].samples[0].first, 1234.5);
  EXPECT_DOUBLE_EQ(p.gpus[0].samples[0].second, 0.7);
}

TEST(GpuNvml, BadLibrariesAndErrorsAreReportedNotFatal) {
  auto missing = make_nvml_source("/nonexistent/libnvidia-ml.so.1");
  GpuPoll p = missing->poll(1);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << p.error;
  auto old = make_nvml_source(CKPTMON_FAKE_NVML_OLD);
  p = old->poll(1);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("lacks nvmlInit_v2, nvmlDeviceGetCount_v2, "
                         "nvmlDeviceGetHandleByIndex_v2"),
            std::string::npos)
      << p.error;
  {
    Script s("fail nvmlInit_v2 9\n");
    p = make_nvml_source(CKPTMON_FAKE_NVML)->poll(1);
    EXPECT_FALSE(p.ok);
    EXPECT_EQ(p.error, "nvmlInit_v2: Driver Not Loaded (NVML error 9)");
  }
  {
    Script s(
        "gpus 2\nfail nvmlDeviceGetMemoryInfo 15\nfail nvmlDeviceGetSamples 999\nutil * 0 50\n");
    p = make_nvml_source(CKPTMON_FAKE_NVML)->poll(1);
    ASSERT_TRUE(p.ok) << p.error;
    ASSERT_EQ(p.gpus.size(), 2u);
    // Per call: memory lost, samples failed (then the rates answer).
    ASSERT_EQ(p.call_errors.size(), 4u);
    EXPECT_EQ(p.call_errors[0], "nvmlDeviceGetMemoryInfo (GPU 0): GPU is lost (NVML error 15)");
    EXPECT_EQ(p.call_errors[1], "nvmlDeviceGetSamples (GPU 0): Unknown Error (NVML error 999)");
    EXPECT_FALSE(p.gpus[0].memory_used_bytes);
    EXPECT_EQ(p.gpus[0].utilization, 0.5);
  }
}

TEST(GpuLabels, ValuesFromOutsideAreValidUtf8AndBounded) {
  EXPECT_EQ(gpu_label_value("llama-70b"), "llama-70b");
  EXPECT_EQ(gpu_label_value("caf\xe9"), "caf\xEF\xBF\xBD");  // latin-1 byte
  EXPECT_EQ(gpu_label_value("a\nb\x01"), "a_b_");
  EXPECT_EQ(gpu_label_value("\xC3\xA9t\xC3\xA9"), "\xC3\xA9t\xC3\xA9");
  EXPECT_EQ(gpu_label_value(std::string(1000, 'x')).size(), 128u);
  EXPECT_EQ(gpu_label_value("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(GpuJobMapping, ReadsDcgmStyleFilesAndRejectsBadOnesLocated) {
  testing::TempDir d;
  d.write_text("0", "llama-70b\n");
  d.write_text("1", "job-a job-b\n");
  d.write_text("2", "");
  d.write_text("3", std::string("ab\0cd", 5));
  std::string many;
  for (int i = 0; i < 10'000; ++i) many += "j" + std::to_string(i) + "\n";
  d.write_text("4", many.substr(0, 4000));  // hundreds of jobs, under the size cap
  d.write_text("5", many);                  // over the size cap
  d.write_text("6", "caf\xe9\n");
  d.write_text(".hidden", "x\n");
  d.write_text("99", "x\n");
  ASSERT_EQ(::mkfifo(d.file("7").c_str(), 0600), 0);
  JobMappingRead r = read_job_mapping_dir(d.str());
  EXPECT_EQ(r.jobs.at(0), std::vector<std::string>{"llama-70b"});
  EXPECT_EQ(r.jobs.at(1), (std::vector<std::string>{"job-a", "job-b"}));
  EXPECT_TRUE(r.jobs.at(2).empty());  // empty: no job on that GPU
  EXPECT_FALSE(r.jobs.contains(3));
  EXPECT_FALSE(r.jobs.contains(4));
  EXPECT_FALSE(r.jobs.contains(5));
  EXPECT_FALSE(r.jobs.contains(6));
  EXPECT_FALSE(r.jobs.contains(7));
  std::string all;
  for (const auto& e : r.errors) all += e + "\n";
  EXPECT_EQ(r.errors.size(), 7u) << all;
  EXPECT_NE(all.find(d.file("2") + ": empty (no job on GPU 2)"), std::string::npos) << all;
  EXPECT_NE(all.find(d.file("3") + ": binary content"), std::string::npos) << all;
  EXPECT_NE(all.find(d.file("4") + ": names "), std::string::npos) << all;
  EXPECT_NE(all.find(d.file("5") + ": larger than 4096 bytes"), std::string::npos) << all;
  EXPECT_NE(all.find(d.file("6") + ": job id 1 is not valid UTF-8"), std::string::npos) << all;
  EXPECT_NE(all.find(d.file("7") + ": not a regular file"), std::string::npos) << all;
  EXPECT_NE(all.find(d.file("99") + ": GPU index 99 is not below 64"), std::string::npos) << all;
  r = read_job_mapping_dir(d.file("missing"));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("cannot list"), std::string::npos);
}

TEST(GpuCollector, FoldsPollsIntoStateAndCountsErrorsOnce) {
  const double now = wall_now();
  Script s("gpus 1\nperiod_ms 250\nbuffer_s 20\nutil 0 0 80\n");
  LoadResult cfg = parse_config(std::string("tiers: [{name: a, path: /a, role: rapid}]\n"
                                            "gpu: {source: nvml, nvml_library: ") +
                                    CKPTMON_FAKE_NVML + ", interval: 1s, max_window: 1m}\n",
                                "c.yml");
  ASSERT_TRUE(cfg.config) << cfg.errors.at(0).to_string();
  auto clock = std::make_shared<FakeClock>(now);
  GpuCollector c(clock);
  c.configure(*cfg.config);
  ASSERT_EQ(c.targets(), std::vector<std::string>{"gpu"});
  EXPECT_EQ(c.interval(), std::chrono::seconds(1));
  EXPECT_EQ(GpuCollector::ring_capacity(cfg.config->gpu), 182u);  // 3 x 60 s / 1 s + 2
  State st;
  c.prepare("gpu", st)()(st);
  ASSERT_TRUE(st.gpu);
  EXPECT_TRUE(st.gpu->up);
  ASSERT_EQ(st.gpu->devices.size(), 1u);
  const GpuSeries& ring = st.gpu->series.at(0);
  // 20 s of samples into 1 s buckets: 20 or 21 buckets, each 0.8.
  EXPECT_GE(ring.size(), 20u);
  EXPECT_LE(ring.size(), 21u);
  EXPECT_DOUBLE_EQ(ring.back().mean, 0.8);
  // on_deadline publishes a new GpuState: `ring` refers into the old one.
  const std::size_t ring_size = ring.size();
  c.on_deadline("gpu", st);
  EXPECT_FALSE(st.gpu->up);
  EXPECT_EQ(st.gpu->error, "poll did not return within 5s");
  EXPECT_EQ(st.gpu->errors, 1u);
  EXPECT_EQ(st.gpu->series.at(0).size(), ring_size);  // the ring survives a failed poll
}

}  // namespace
}  // namespace ckptmon
