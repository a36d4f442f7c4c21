#include "rules/window_io.hpp"

namespace ckptmon {

std::string_view to_string(WindowSource s) {
  switch (s) {
    case WindowSource::kEvents:
      return "events";
    case WindowSource::kManifest:
      return "manifest";
    case WindowSource::kMtimes:
      break;
  }
  return "mtimes";
}

std::optional<SaveWindow> save_window(const Checkpoint& c, const EventStep* ev) {
  if (ev != nullptr && ev->start_ts > 0 && ev->commit_ts >= ev->start_ts) {
    return SaveWindow{ev->start_ts, ev->commit_ts, WindowSource::kEvents};
  }
  if (c.save_start > 0 && c.save_end >= c.save_start) {
    return SaveWindow{c.save_start, c.save_end, WindowSource::kManifest};
  }
  if (c.first_write > 0 && c.last_write >= c.first_write) {
    return SaveWindow{c.first_write, c.last_write, WindowSource::kMtimes};
  }
  return std::nullopt;
}

std::string_view to_string(WriteMeasure m) {
  switch (m) {
    case WriteMeasure::kDevice:
      return "device";
    case WriteMeasure::kEvents:
      return "events";
    case WriteMeasure::kManifest:
      return "manifest";
    case WriteMeasure::kMtimes:
      break;
  }
  return "mtimes";
}

WindowIo window_io(const SaveWindow& w, double bytes, const TierIo* tier,
                   const std::map<std::string, NetInterfaceIo>& interfaces, const NodeIo* node) {
  WindowIo out;
  out.window = w;
  if (node != nullptr) {
    out.psi_available = node->psi_available;
    out.node = node->over(w.start, w.end);
  }
  std::optional<double> device_bytes;
  if (tier != nullptr && tier->source != IoSource::kNone) {
    out.source = tier->source;
    if (auto r = tier->history.rates(w.start, w.end)) {
      out.device_write_bytes_per_second = r->written_bytes_per_second;
      device_bytes = r->written_bytes;
      if (r->intervals > 0) {
        out.sampling_interval_seconds = (r->end - r->start) / static_cast<double>(r->intervals);
      }
      out.metadata_ops_per_second = r->metadata_ops_per_second;
      if (tier->has_metadata_seconds) {
        for (std::size_t i = 0; i < kMetaOpCount; ++i) {
          if (r->op_count[i] <= 0) continue;
          const double latency = r->op_seconds[i] / r->op_count[i];
          if (!out.slowest_op_latency_seconds || latency > *out.slowest_op_latency_seconds) {
            out.slowest_op_latency_seconds = latency;
            out.slowest_op = static_cast<MetaOp>(i);
          }
        }
      }
    }
  }
  if (bytes > 0) {
    const bool dirty_took_it =
        out.node.dirty_rise_bytes && *out.node.dirty_rise_bytes >= kAbsorbedShare * bytes;
    const bool device_missed_it = device_bytes && *device_bytes < kAbsorbedShare * bytes;
    out.absorbed = dirty_took_it || device_missed_it;
  }
  const bool device_usable =
      out.device_write_bytes_per_second && out.sampling_interval_seconds > 0 &&
      w.duration() >= kDeviceWindowIntervals * out.sampling_interval_seconds && !out.absorbed;
  if (device_usable) {
    out.write_bytes_per_second = out.device_write_bytes_per_second;
    out.write_measure = WriteMeasure::kDevice;
  } else {
    switch (w.source) {
      case WindowSource::kEvents:
        out.write_measure = WriteMeasure::kEvents;
        break;
      case WindowSource::kManifest:
        out.write_measure = WriteMeasure::kManifest;
        break;
      case WindowSource::kMtimes:
        out.write_measure = WriteMeasure::kMtimes;
        break;
    }
    if (bytes > 0 && w.duration() > 0) out.write_bytes_per_second = bytes / w.duration();
  }
  out.interfaces_configured = !interfaces.empty();
  for (const auto& [name, nic] : interfaces) {
    auto u = nic.utilisation(w.start, w.end);
    if (!u) continue;
    if (!out.network_utilisation || *u > *out.network_utilisation) {
      out.network_utilisation = *u;
      out.network_interface = name;
    }
  }
  return out;
}

bool window_io_coverable(const SaveWindow& w, const TierIo* tier) {
  if (tier == nullptr || tier->source == IoSource::kNone) return false;
  // A source that has never been read (its device cannot be resolved, its
  // stats file is unreadable) cannot cover any window until it is: waiting
  // for it would leave the checkpoint unjudged for good.
  if (tier->history.samples.empty()) return tier->ok;
  return tier->history.samples.front().time <= w.start;
}

bool node_window_covered(const SaveWindow& w, const NodeIo& node) {
  return bracket(node.history, w.start, w.end).first != nullptr;
}

bool node_window_coverable(const SaveWindow& w, const NodeIo& node) {
  return !node.history.empty() && node.history.front().time <= w.start;
}

std::optional<double> best_metadata_rate(const IoHistory& h) {
  std::optional<double> best;
  for (std::size_t i = 1; i < h.samples.size(); ++i) {
    const IoSample& a = h.samples[i - 1];
    const IoSample& b = h.samples[i];
    const double dt = b.time - a.time;
    if (dt <= 0) continue;
    const double r = (b.counters.metadata_total() - a.counters.metadata_total()) / dt;
    if (!best || r > *best) best = r;
  }
  return best;
}

}  // namespace ckptmon
