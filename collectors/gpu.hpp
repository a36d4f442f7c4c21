#pragma once
// gpu: polls the configured GPU source (gpu.source) every gpu.interval on a
// worker with a deadline of gpu.timeout, reads gpu.job_mapping_dir, and folds
// the readings into State::gpu: devices, last readings, and per GPU a ring
// of utilisation buckets of gpu.interval covering 3 x gpu.max_window. Errors
// are counted every time and logged once per distinct message; a source that
// fails is down (ckptmon_gpu_source_up 0) and the rest of the daemon goes on.

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/gpu_source.hpp"

namespace ckptmon {

// Thread-compatible: members are touched on the loop thread only; the
// source itself is used by one job at a time.
class GpuCollector final : public Collector {
 public:
  explicit GpuCollector(std::shared_ptr<const Clock> clock, HttpFetchFactory http_fetch = {})
      : clock_(std::move(clock)), http_fetch_(std::move(http_fetch)) {}
  std::string_view name() const override { return "gpu"; }
  void configure(const Config& cfg) override;
  Duration interval() const override { return cfg_.interval; }
  Duration deadline() const override { return cfg_.timeout; }
  std::vector<std::string> targets() const override;
  Job prepare(const std::string& target, const State& state) override;
  void on_deadline(const std::string& target, State& state) override;
  void on_failure(const std::string& target, const std::string& error, State& state) override;

  // Deadline of one dcgm scrape: below both gpu.interval and gpu.timeout, so
  // a slow exporter fails the poll before the next one is due.
  static double fetch_timeout(const GpuConfig& cfg);
  // Buckets kept per GPU for `cfg`.
  static std::size_t ring_capacity(const GpuConfig& cfg);

 private:
  void down(State& state, const std::string& error);

  // The fetch a source calls, swapped at each configure() (so rotated
  // certificate and token files are read again) without rebuilding the
  // source and its state.
  struct SharedFetch {
    std::mutex mu;
    HttpFetch fetch;
  };

  std::shared_ptr<const Clock> clock_;
  HttpFetchFactory http_fetch_;
  std::shared_ptr<SharedFetch> fetch_ = std::make_shared<SharedFetch>();
  GpuConfig cfg_;
  std::shared_ptr<GpuSource> source_;
  std::string source_key_;  // what source_ was made from
  // Messages logged already (logged once each, counted every time).
  std::shared_ptr<std::set<std::string>> logged_ = std::make_shared<std::set<std::string>>();
};

}  // namespace ckptmon
