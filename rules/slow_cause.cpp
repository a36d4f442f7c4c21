#include "rules/slow_cause.hpp"

#include <charconv>
#include <cmath>

#include "util/text.hpp"

namespace ckptmon {
namespace {

std::string num(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, std::round(v * 100) / 100);
  return std::string(buf, r.ptr);
}

std::string pct(double ratio) { return num(ratio * 100) + "%"; }

std::string secs(double s) { return num(s) + "s"; }

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string millis(double s) { return num(s * 1000) + " ms"; }

// How the write throughput was measured, for the evidence.
std::string measured(const WindowIo& io) {
  switch (io.write_measure) {
    case WriteMeasure::kDevice:
      return "the tier's " + std::string(to_string(io.source)) + " counters";
    case WriteMeasure::kEvents:
      return "the checkpoint's bytes over its event-log window";
    case WriteMeasure::kManifest:
      return "the checkpoint's bytes over its manifest's save window";
    case WriteMeasure::kMtimes:
      break;
  }
  return "the checkpoint's bytes over its shard mtimes";
}

// Why the tier's counters were not the measure, when they were not.
std::string device_note(const WindowIo& io) {
  if (io.write_measure == WriteMeasure::kDevice || !io.device_write_bytes_per_second) return "";
  if (io.absorbed) {
    return io.node.dirty_rise_bytes && *io.node.dirty_rise_bytes > 0
               ? " (dirty memory rose by " + human_bytes(*io.node.dirty_rise_bytes) +
                     ": the device counters show writeback, not the save)"
               : " (the device counters saw less than half the checkpoint's bytes: the rest "
                 "waited in dirty memory)";
  }
  return " (the window is shorter than " + num(kDeviceWindowIntervals) +
         " of the counters' sampling intervals of " + secs(io.sampling_interval_seconds) + ")";
}

}  // namespace

SlowVerdict classify_slow(const SlowInputs& in, const StoragePathPolicy& p) {
  SlowVerdict v;
  const double d = in.io.window.duration();
  v.duration_seconds = d;
  v.window_seconds = p.checkpoint_window_seconds;
  if (p.median_multiple > 0 && in.job_median_seconds && *in.job_median_seconds > 0) {
    v.median_limit_seconds = p.median_multiple * *in.job_median_seconds;
  }
  v.judged = v.window_seconds > 0 || v.median_limit_seconds > 0;
  if (v.window_seconds > 0 && d > v.window_seconds) {
    v.slow = true;
    v.missed = "checkpoint_window";
  } else if (v.median_limit_seconds > 0 && d > v.median_limit_seconds) {
    v.slow = true;
    v.missed = "median_multiple";
  }
  if (!v.slow) return v;

  const std::string took =
      "took " + secs(d) + " (limit " +
      secs(v.missed == "checkpoint_window" ? v.window_seconds : v.median_limit_seconds) + ")";
  const WindowIo& io = in.io;
  if (io.write_bytes_per_second && in.reference_write_bytes_per_second > 0) {
    v.write_ratio = *io.write_bytes_per_second / in.reference_write_bytes_per_second;
  }
  if (in.completion_skew_seconds && d > 0) v.skew_ratio = *in.completion_skew_seconds / d;

  if (v.write_ratio && *v.write_ratio >= p.saturation_ratio) {
    v.cause = SlowCause::kStorageBandwidth;
    v.evidence = took + "; the tier wrote " + human_bytes(*io.write_bytes_per_second) +
                 "/s during the window (" + measured(io) + device_note(io) + "), " +
                 pct(*v.write_ratio) + " of its " +
                 (in.reference_configured ? "configured write_bandwidth " : "best observed ") +
                 human_bytes(in.reference_write_bytes_per_second) + "/s";
    return v;
  }
  if (io.network_utilisation && *io.network_utilisation >= p.saturation_ratio) {
    v.cause = SlowCause::kNetwork;
    v.evidence = took + "; interface " + io.network_interface + " ran at " +
                 pct(*io.network_utilisation) + " of its link speed during the window";
    return v;
  }
  if (io.metadata_ops_per_second) {
    const double m = *io.metadata_ops_per_second;
    const bool over_abs = p.metadata_ops_per_second > 0 && m >= p.metadata_ops_per_second;
    const bool over_usual = in.job_usual_metadata_ops_per_second &&
                            *in.job_usual_metadata_ops_per_second > 0 &&
                            m >= p.metadata_multiple * *in.job_usual_metadata_ops_per_second;
    if (over_abs || over_usual) {
      v.cause = SlowCause::kMetadata;
      v.evidence = took + "; " + num(m) + " metadata operations/s during the window (" +
                   (over_abs ? "threshold " + num(p.metadata_ops_per_second)
                             : "the job's usual " + num(*in.job_usual_metadata_ops_per_second)) +
                   ")";
      if (io.slowest_op_latency_seconds) {
        v.evidence += "; " + upper(to_string(io.slowest_op)) + " latency " +
                      millis(*io.slowest_op_latency_seconds);
      }
      return v;
    }
  }
  const bool skew_usable = io.window.source != WindowSource::kMtimes && v.skew_ratio.has_value();
  if (skew_usable && *v.skew_ratio >= p.straggler_skew_ratio) {
    v.cause = SlowCause::kStraggler;
    v.evidence = took + "; the last shard landed " + secs(*in.completion_skew_seconds) +
                 " after the first (" + pct(*v.skew_ratio) + " of the save)";
    if (!in.slowest_ranks.empty()) {
      v.evidence += "; slowest ranks:";
      for (std::size_t i = 0; i < in.slowest_ranks.size(); ++i) {
        v.evidence += (i == 0 ? " " : ", ") + std::to_string(in.slowest_ranks[i]);
      }
    }
    return v;
  }
  const NodeWindow& node = io.node;
  if (node.memory_full_share || node.io_full_share) {
    const bool memory = node.memory_full_share.value_or(-1) >= node.io_full_share.value_or(-1);
    v.pressure_share = memory ? node.memory_full_share : node.io_full_share;
    v.pressure_resource = memory ? "memory" : "io";
  }
  if (v.pressure_share && *v.pressure_share >= p.node_pressure_ratio) {
    v.cause = SlowCause::kNodePressure;
    v.evidence = took + "; the node's " + v.pressure_resource + " pressure was full for " +
                 pct(*v.pressure_share) + " of the window (threshold " +
                 pct(p.node_pressure_ratio) + "): every runnable task stalled on " +
                 (v.pressure_resource == "memory" ? "memory reclaim" : "I/O");
    if (node.dirty_rise_bytes && *node.dirty_rise_bytes > 0) {
      v.evidence += "; dirty memory rose by " + human_bytes(*node.dirty_rise_bytes);
    }
    return v;
  }
  const bool network_known = io.network_utilisation.has_value() || !io.interfaces_configured;
  const bool pressure_known = v.pressure_share.has_value() || !io.psi_available;
  if (v.write_ratio && io.metadata_ops_per_second && network_known && skew_usable &&
      pressure_known) {
    v.cause = SlowCause::kApplication;
    v.evidence = took + "; the storage path was idle: the tier wrote at " + pct(*v.write_ratio) +
                 " of its reference, " + num(*io.metadata_ops_per_second) +
                 " metadata operations/s, " +
                 (io.network_utilisation ? "network at " + pct(*io.network_utilisation)
                                         : std::string("no interface configured")) +
                 ", shards " + secs(*in.completion_skew_seconds) + " apart, " +
                 (v.pressure_share ? "node pressure " + pct(*v.pressure_share)
                                   : std::string("no pressure stall information on this kernel"));
    return v;
  }
  v.cause = SlowCause::kUnknown;
  std::string missing;
  auto add = [&](const char* what) {
    missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  if (!io.write_bytes_per_second) add("tier write counters or the checkpoint's bytes");
  if (in.reference_write_bytes_per_second <= 0) add("a reference write bandwidth");
  if (!io.metadata_ops_per_second) add("metadata counters");
  if (!network_known) add("network counters");
  if (!pressure_known) add("node pressure samples");
  if (io.window.source == WindowSource::kMtimes)
    add("a save start (only shard mtimes)");
  else if (!in.completion_skew_seconds)
    add("shard completion times");
  v.evidence = took + "; not enough data to tell why: missing " + missing;
  return v;
}

}  // namespace ckptmon
