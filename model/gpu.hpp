#pragma once
// What the GPU source (collectors/gpu.cpp) observed: the devices, their last
// readings, and per GPU a ring buffer of utilisation means over fixed buckets
// of the sampling interval, long enough for the longest checkpoint window and
// its baseline. Published to State as an immutable snapshot; plain data, not
// thread-safe by itself.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckptmon {

// Utilisation over the bucket (end - width, end], as a ratio 0..1.
struct GpuBucket {
  double end = 0;
  double mean = 0;
  std::uint32_t samples = 0;  // raw samples folded into `mean`
};

// How far past the clock a GPU sample may be dated (clock skew between the
// daemon and a dcgm exporter, a Prometheus, a GPU's own clock). One kept from
// further out would make every later sample "older than the newest bucket",
// dropped, and so every later checkpoint's GPU cost unknown until that date:
// the collector refuses it instead, counts it and logs it.
inline constexpr double kGpuMaxFutureSkewSeconds = 60;
// True when a sample dated `t` is further past `now` than that.
bool gpu_sample_from_future(double t, double now);

// A fixed-capacity ring of buckets in time order. Buckets older than the last
// one are dropped (a clock stepping back does not rewrite history).
//
// Copies share: the buckets live in chunks of kChunk behind shared pointers,
// and only the newest chunk is ever written (a bucket is appended or the
// last one folded into). Copying a series copies the chunk pointers; the
// first write after a copy clones the newest chunk alone. So the collector's
// copy-and-update of the GPU state on every poll costs one chunk per GPU, not
// the whole ring, and published snapshots keep reading theirs. A series is
// written by one thread; its copies may be read by any.
class GpuSeries {
 public:
  static constexpr std::size_t kChunk = 64;

  GpuSeries() = default;
  GpuSeries(std::size_t capacity, double width) : capacity_(capacity), width_(width) {}

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  double width() const { return width_; }
  bool empty() const { return size_ == 0; }
  // i-th bucket, oldest first.
  const GpuBucket& operator[](std::size_t i) const {
    const std::size_t j = first_ + i;
    return (*chunks_[j / kChunk])[j % kChunk];
  }
  const GpuBucket& back() const { return (*this)[size_ - 1]; }

  // Folds one raw sample taken at `t` (covering the time just before it) into
  // the bucket (k*width, (k+1)*width] holding t. Returns false when it is
  // older than the newest bucket's start (dropped) or not finite.
  bool add(double t, double ratio);
  // Appends a whole bucket mean (a source that already averages).
  bool add_bucket(double end, double mean, std::uint32_t samples);

  // Index of the first bucket whose end is > t (size() when none).
  std::size_t upper(double t) const;

 private:
  using Chunk = std::array<GpuBucket, kChunk>;
  // The chunk holding bucket index j (counted from chunks_[0][0]), cloned
  // first when a copy shares it.
  GpuBucket& writable(std::size_t j);

  std::vector<std::shared_ptr<Chunk>> chunks_;
  std::size_t first_ = 0;  // the oldest bucket's index in chunks_[0]
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  double width_ = 1;
};

// One GPU as the source names it. Strings from outside are sanitised
// (collectors/gpu_labels.hpp) before they land here.
struct GpuDevice {
  unsigned index = 0;
  std::string uuid;
  std::string model;
  std::optional<double> utilization;  // last reading, ratio
  std::optional<double> memory_used_bytes;
  std::string source_job;  // job the source's own labels name (dcgm hpc_job/pod), or empty
};

struct GpuState {
  std::string source;  // "nvml", "dcgm", "prometheus"
  bool up = false;
  std::string error;                 // why the source is down (the last error), empty when up
  std::uint64_t errors = 0;          // failed polls and per-call errors since start
  std::uint64_t mapping_errors = 0;  // job mapping files rejected
  std::uint64_t future_samples = 0;  // samples refused as dated in the future
  // When refused future samples were last logged (unix seconds, the injected
  // clock), and the count then: logged at most once per kGpuFutureLogInterval.
  double future_logged_at = 0;
  std::uint64_t future_samples_logged = 0;
  std::vector<GpuDevice> devices;        // by index
  std::map<unsigned, GpuSeries> series;  // by GPU index
  // From job_mapping_dir: GPU index -> job ids in its file (absent: no usable file).
  std::map<unsigned, std::vector<std::string>> mapped_jobs;
  double last_poll = 0;  // when the last successful poll ended (unix seconds)

  // The end of the newest bucket over all GPUs; nullopt without any.
  std::optional<double> newest() const;
  // The start of the oldest bucket still held over all GPUs; nullopt without any.
  std::optional<double> oldest() const;
};

}  // namespace ckptmon
