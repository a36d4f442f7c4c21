#include "model/gpu.hpp"

#include <algorithm>
#include <cmath>

namespace ckptmon {

bool gpu_sample_from_future(double t, double now) {
  return t > now + kGpuMaxFutureSkewSeconds;  // NaN is not from the future: add() drops it
}

bool GpuSeries::add(double t, double ratio) {
  if (!std::isfinite(t) || !std::isfinite(ratio) || capacity_ == 0) return false;
  const double end = std::ceil(t / width_) * width_;
  return add_bucket(end, std::clamp(ratio, 0.0, 1.0), 1);
}

GpuBucket& GpuSeries::writable(std::size_t j) {
  std::shared_ptr<Chunk>& c = chunks_[j / kChunk];
  // use_count 1: no copy holds it (copies are made only from this series or
  // from snapshots, which hold their own count), so writing in place is safe.
  if (c.use_count() > 1) c = std::make_shared<Chunk>(*c);
  return (*c)[j % kChunk];
}

bool GpuSeries::add_bucket(double end, double mean, std::uint32_t samples) {
  if (!std::isfinite(end) || !std::isfinite(mean) || capacity_ == 0 || samples == 0) return false;
  mean = std::clamp(mean, 0.0, 1.0);
  if (size_ > 0) {
    const GpuBucket& newest = back();
    // Bucket ends sit on a grid of `width`; compare with half a width of slack.
    if (std::abs(end - newest.end) < width_ / 2) {
      GpuBucket& last = writable(first_ + size_ - 1);
      const double n = static_cast<double>(last.samples);
      const double m = static_cast<double>(samples);
      last.mean = (last.mean * n + mean * m) / (n + m);
      last.samples += samples;
      return true;
    }
    if (end < newest.end) return false;
  }
  if (size_ == capacity_) {  // drop the oldest, and its chunk once all of it is gone
    ++first_;
    --size_;
    if (first_ == kChunk) {
      chunks_.erase(chunks_.begin());
      first_ = 0;
    }
  }
  const std::size_t j = first_ + size_;
  if (j / kChunk == chunks_.size()) chunks_.push_back(std::make_shared<Chunk>());
  writable(j) = GpuBucket{end, mean, samples};
  ++size_;
  return true;
}

std::size_t GpuSeries::upper(double t) const {
  std::size_t lo = 0;
  std::size_t hi = size_;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if ((*this)[mid].end <= t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

std::optional<double> GpuState::newest() const {
  std::optional<double> t;
  for (const auto& [i, s] : series) {
    if (!s.empty()) t = std::max(t.value_or(s.back().end), s.back().end);
  }
  return t;
}

std::optional<double> GpuState::oldest() const {
  std::optional<double> t;
  for (const auto& [i, s] : series) {
    if (s.empty()) continue;
    const double start = s[0].end - s.width();
    t = std::min(t.value_or(start), start);
  }
  return t;
}

}  // namespace ckptmon
