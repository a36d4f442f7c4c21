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

WindowIo window_io(const SaveWindow& w, const TierIo* tier,
                   const std::map<std::string, NetInterfaceIo>& interfaces) {
  WindowIo out;
  out.window = w;
  if (tier != nullptr && tier->source != IoSource::kNone) {
    out.source = tier->source;
    if (auto r = tier->history.rates(w.start, w.end)) {
      out.write_bytes_per_second = r->written_bytes_per_second;
      out.metadata_ops_per_second = r->metadata_ops_per_second;
    }
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
