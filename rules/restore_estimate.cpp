#include "rules/restore_estimate.hpp"

namespace ckptmon {

std::string_view to_string(ReadSource s) {
  switch (s) {
    case ReadSource::kRestores:
      return "restores";
    case ReadSource::kCounters:
      return "counters";
    case ReadSource::kDrill:
      return "drill";
    case ReadSource::kConfigured:
      break;
  }
  return "configured";
}

std::string_view to_string(MetadataSource s) {
  switch (s) {
    case MetadataSource::kLatency:
      return "latency";
    case MetadataSource::kDrill:
      return "drill";
    case MetadataSource::kRate:
      break;
  }
  return "rate";
}

std::optional<RestoreEstimate> estimate_restore(const RestoreInputs& in) {
  RestoreEstimate e;
  if (in.drill_read_bytes_per_second && *in.drill_read_bytes_per_second > 0 &&
      in.drill_metadata_seconds_per_file && *in.drill_metadata_seconds_per_file >= 0) {
    e.read_bytes_per_second = *in.drill_read_bytes_per_second;
    e.read_source = ReadSource::kDrill;
    e.metadata_source = MetadataSource::kDrill;
    e.metadata_latency_seconds = *in.drill_metadata_seconds_per_file;
    e.transfer_seconds = in.bytes / e.read_bytes_per_second;
    e.metadata_seconds = in.files * e.metadata_latency_seconds;
    e.seconds = e.transfer_seconds + e.metadata_seconds;
    return e;
  }
  if (in.measured_read_bytes_per_second && *in.measured_read_bytes_per_second > 0) {
    e.read_bytes_per_second = *in.measured_read_bytes_per_second;
    e.read_source = ReadSource::kRestores;
  } else if (in.counter_read_bytes_per_second && *in.counter_read_bytes_per_second > 0) {
    e.read_bytes_per_second = *in.counter_read_bytes_per_second;
    e.read_source = ReadSource::kCounters;
  } else if (in.configured_read_bytes_per_second > 0) {
    e.read_bytes_per_second = in.configured_read_bytes_per_second;
    e.read_source = ReadSource::kConfigured;
  } else {
    return std::nullopt;
  }
  e.metadata_ops_per_second = in.configured_metadata_ops_per_second;
  if (in.counter_metadata_ops_per_second &&
      *in.counter_metadata_ops_per_second > e.metadata_ops_per_second) {
    e.metadata_ops_per_second = *in.counter_metadata_ops_per_second;
  }
  e.transfer_seconds = in.bytes / e.read_bytes_per_second;
  if (in.metadata_latency_seconds && *in.metadata_latency_seconds > 0) {
    e.metadata_source = MetadataSource::kLatency;
    e.metadata_latency_seconds = *in.metadata_latency_seconds;
    e.metadata_seconds = in.files * kRestoreOpsPerFile * e.metadata_latency_seconds;
  } else {
    if (e.metadata_ops_per_second <= 0) return std::nullopt;
    e.metadata_seconds = in.files * kRestoreOpsPerFile / e.metadata_ops_per_second;
  }
  e.seconds = e.transfer_seconds + e.metadata_seconds;
  return e;
}

}  // namespace ckptmon
