#include "collectors/gpu.hpp"

#include <algorithm>
#include <cmath>

#include "collectors/gpu_job_mapping.hpp"
#include "util/log.hpp"
#include "util/time_format.hpp"

namespace ckptmon {
namespace {

// Distinct error messages remembered for "log once"; past this the set is
// cleared, so a source that invents a new message every poll cannot grow it.
constexpr std::size_t kMaxRemembered = 256;

// A source that is down reads nothing: the last readings are dropped (the
// gauges disappear, unknown rather than stale); identities and rings stay.
void forget_readings(GpuState& g) {
  for (GpuDevice& d : g.devices) {
    d.utilization.reset();
    d.memory_used_bytes.reset();
  }
}

void log_once(std::set<std::string>& logged, const std::string& what, const std::string& msg) {
  if (logged.size() >= kMaxRemembered) logged.clear();
  if (logged.insert(what + "\n" + msg).second) log::error(what, {{"err", msg}});
}

// Refused samples dated in the future are logged at most this often (each
// poll may bring more: a source whose clock is off stays off).
constexpr double kFutureLogIntervalSeconds = 600;

// Counts the samples of this poll dated past now + kGpuMaxFutureSkewSeconds
// and logs them (rate-limited), naming the source and the first timestamp.
void note_future_samples(GpuState& g, std::uint64_t refused, unsigned gpu, double first,
                         double now) {
  if (refused == 0) return;
  g.future_samples += refused;
  if (g.future_samples_logged != 0 && now >= g.future_logged_at &&
      now - g.future_logged_at < kFutureLogIntervalSeconds) {
    return;
  }
  log::warn(
      "GPU samples dated in the future refused (the source's clock is ahead, or it lies); "
      "they are counted in ckptmon_gpu_future_samples_total",
      {{"source", g.source},
       {"gpu", gpu},
       // Past the year 9999 (or infinite) a date would not print.
       {"timestamp", first < 253402300800.0 ? format_rfc3339(first) : std::string("beyond 9999")},
       {"unix_seconds", first},
       {"now", format_rfc3339(now)},
       {"max_skew_seconds", kGpuMaxFutureSkewSeconds},
       {"refused_since_last_log", g.future_samples - g.future_samples_logged}});
  g.future_logged_at = now;
  g.future_samples_logged = g.future_samples;
}

}  // namespace

std::size_t GpuCollector::ring_capacity(const GpuConfig& cfg) {
  const double width = std::chrono::duration<double>(cfg.interval).count();
  const double span = 3 * std::chrono::duration<double>(cfg.max_window).count();
  return static_cast<std::size_t>(std::ceil(span / width)) + 2;
}

double GpuCollector::fetch_timeout(const GpuConfig& cfg) {
  const double interval = std::chrono::duration<double>(cfg.interval).count();
  const double timeout = std::chrono::duration<double>(cfg.timeout).count();
  return 0.8 * std::min(interval, timeout);
}

void GpuCollector::configure(const Config& cfg) {
  cfg_ = cfg.gpu;
  {
    HttpFetch fresh = http_fetch_ ? http_fetch_(cfg_.client) : HttpFetch{};
    const std::lock_guard lock(fetch_->mu);
    fetch_->fetch = std::move(fresh);
  }
  // What the sources call: the fetch of the newest configuration (none in
  // a tool without HTTP, and the source says so).
  HttpFetch fetch;
  if (http_fetch_) {
    fetch = [shared = fetch_](const std::string& url, double timeout, std::size_t max) {
      HttpFetch f;
      {
        const std::lock_guard lock(shared->mu);
        f = shared->fetch;
      }
      return f(url, timeout, max);
    };
  }
  std::string key = std::string(to_string(cfg_.source)) + "|" + cfg_.nvml_library + "|" +
                    cfg_.dcgm_url + "|" + cfg_.prometheus_url + "|" + cfg_.prometheus_selector +
                    "|" + std::to_string(fetch_timeout(cfg_)) + "|" +
                    std::to_string(ring_capacity(cfg_));
  if (key == source_key_ && source_) return;
  source_.reset();
  source_key_ = key;
  if (cfg_.source == GpuSourceKind::kNvml) source_ = make_nvml_source(cfg_.nvml_library);
  if (cfg_.source == GpuSourceKind::kDcgm) {
    source_ = make_dcgm_source(cfg_.dcgm_url, fetch, fetch_timeout(cfg_));
  }
  if (cfg_.source == GpuSourceKind::kPrometheus) {
    // The first poll fills the whole ring: windows that ended before the
    // daemon started are joined too.
    const double history = static_cast<double>(ring_capacity(cfg_) - 2) *
                           std::chrono::duration<double>(cfg_.interval).count();
    source_ = make_prometheus_source(cfg_.prometheus_url, cfg_.prometheus_selector, fetch,
                                     fetch_timeout(cfg_), history);
  }
}

std::vector<std::string> GpuCollector::targets() const {
  if (!cfg_.enabled()) return {};
  return {"gpu"};
}

Job GpuCollector::prepare(const std::string& /*target*/, const State& /*state*/) {
  return [source = source_, cfg = cfg_, clock = clock_, logged = logged_]() -> Update {
    const double started = clock->now();
    GpuPoll poll;
    if (source) {
      poll = source->poll(started);
    } else {
      poll.error =
          "gpu.source " + std::string(to_string(cfg.source)) + " is not available in this build";
    }
    std::optional<JobMappingRead> mapping;
    if (!cfg.job_mapping_dir.empty()) mapping = read_job_mapping_dir(cfg.job_mapping_dir);
    const double done = clock->now();
    return [poll = std::move(poll), mapping = std::move(mapping), cfg, done, logged](State& state) {
      auto next = state.gpu ? std::make_shared<GpuState>(*state.gpu) : std::make_shared<GpuState>();
      next->source = std::string(to_string(cfg.source));
      const double width = std::chrono::duration<double>(cfg.interval).count();
      const std::size_t capacity = GpuCollector::ring_capacity(cfg);
      if (!poll.ok) {
        ++next->errors;
        next->up = false;
        next->error = poll.error;
        forget_readings(*next);
        log_once(*logged, "GPU source down", poll.error);
      } else {
        if (!next->up && !next->error.empty()) {
          log::info("GPU source up", {{"source", next->source}});
          logged->clear();  // a later failure is news again
        }
        next->up = true;
        next->error.clear();
        next->last_poll = done;
        next->devices.clear();
        std::uint64_t refused = 0;
        double first_future = 0;
        unsigned future_gpu = 0;
        for (const GpuReading& r : poll.gpus) {
          if (r.index >= kMaxGpus) continue;
          GpuDevice d;
          d.index = r.index;
          d.uuid = r.uuid;
          d.model = r.model;
          d.utilization = r.utilization;
          d.memory_used_bytes = r.memory_used_bytes;
          d.source_job = r.job;
          next->devices.push_back(std::move(d));
          auto it = next->series.find(r.index);
          if (it == next->series.end() || it->second.capacity() != capacity ||
              it->second.width() != width) {
            it = next->series.insert_or_assign(r.index, GpuSeries(capacity, width)).first;
          }
          for (const auto& [t, v] : r.samples) {
            if (gpu_sample_from_future(t, done)) {
              if (refused++ == 0) {
                first_future = t;
                future_gpu = r.index;
              }
              continue;
            }
            it->second.add(t, v);
          }
        }
        note_future_samples(*next, refused, future_gpu, first_future, done);
        std::erase_if(next->series, [&](const auto& kv) {
          for (const GpuDevice& d : next->devices) {
            if (d.index == kv.first) return false;
          }
          return true;
        });
      }
      // After the up/down handling: a source coming back up forgets what was
      // logged, and this poll's call errors must not be logged again next poll.
      for (const std::string& e : poll.call_errors) {
        ++next->errors;
        log_once(*logged, "GPU source call failed", e);
      }
      if (mapping) {
        for (const std::string& e : mapping->errors) {
          ++next->mapping_errors;
          log_once(*logged, "GPU job mapping file rejected", e);
        }
        next->mapped_jobs = mapping->jobs;  // the callback is const: a copy
      } else {
        next->mapped_jobs.clear();
      }
      state.gpu = std::move(next);
    };
  };
}

void GpuCollector::down(State& state, const std::string& error) {
  auto next = state.gpu ? std::make_shared<GpuState>(*state.gpu) : std::make_shared<GpuState>();
  next->source = std::string(to_string(cfg_.source));
  next->up = false;
  next->error = error;
  forget_readings(*next);
  ++next->errors;
  log_once(*logged_, "GPU source down", error);
  state.gpu = std::move(next);
}

void GpuCollector::on_deadline(const std::string& /*target*/, State& state) {
  down(state, "poll did not return within " + format_duration(cfg_.timeout));
}

void GpuCollector::on_failure(const std::string& /*target*/, const std::string& error,
                              State& state) {
  down(state, error);
}

}  // namespace ckptmon
