#include "exporter/io.hpp"

#include "exporter/family.hpp"

namespace ckptmon {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

void io_families(const State& state, std::vector<prometheus::MetricFamily>& out) {
  if (!state.io) return;
  const IoState& io = *state.io;
  FamilyBuilder read =
      counter("ckpt_tier_read_bytes_total",
              "Bytes read from the tier's storage: 512-byte sectors of its block "
              "devices, NFS server read bytes, Lustre llite read_bytes. Tiers on one "
              "device share its counters (ckpt_tier_io_source_info's shared_with).");
  FamilyBuilder written = counter("ckpt_tier_written_bytes_total",
                                  "Bytes written to the tier's storage (same sources as "
                                  "ckpt_tier_read_bytes_total).");
  FamilyBuilder meta =
      counter("ckpt_tier_metadata_operations_total",
              "Metadata operations the tier's NFS mount or Lustre client sent, by op "
              "(a fixed set; others are summed into other). Absent for block devices.");
  FamilyBuilder info =
      gauge("ckpt_tier_io_source_info",
            "Where the tier's I/O counters come from: source block, nfs, lustre or "
            "none; devices read; other tiers sharing them. Always 1.");
  FamilyBuilder inflight = gauge("ckpt_tier_device_inflight_requests",
                                 "Requests in flight on the tier's block devices at the last "
                                 "read (diskstats field 9, summed over members).");
  FamilyBuilder busy = counter("ckpt_tier_device_io_seconds_total",
                               "Seconds the tier's block devices were busy (diskstats field 10, "
                               "summed over members).");
  FamilyBuilder weighted =
      counter("ckpt_tier_device_weighted_io_seconds_total",
              "Request seconds weighted by the requests in flight (diskstats field 11, summed "
              "over members): its rate is the average queue depth.");
  FamilyBuilder op_seconds =
      counter("ckpt_tier_metadata_operation_seconds_total",
              "Execute time (queued, sent, answered) of the tier's NFS metadata operations, by "
              "op as in ckpt_tier_metadata_operations_total; its rate over the operations' "
              "rate is the mean latency. NFS only (mountstats per-op statistics).");
  FamilyBuilder op_rtt =
      counter("ckpt_tier_metadata_operation_rtt_seconds_total",
              "Round-trip time of the tier's NFS metadata operations, by op (the server's "
              "share of the execute time). NFS only.");
  FamilyBuilder op_retrans =
      counter("ckpt_tier_metadata_operation_retransmissions_total",
              "Transmissions of the tier's NFS metadata operations beyond one per operation, "
              "by op: a lossy or overloaded path. NFS only.");
  for (const auto& [name, t] : io.tiers) {
    // A tier whose mount was never resolved (root down) has no known source:
    // unknown, not "none".
    if (t.source == IoSource::kNone && !t.ok) continue;
    info.add({{"tier", name},
              {"source", std::string(to_string(t.source))},
              {"devices", joined(t.devices)},
              {"shared_with", joined(t.shared_with)}},
             1);
    if (!t.has_totals) continue;
    const Labels tier{{"tier", name}};
    read.add(tier, t.totals.read_bytes);
    written.add(tier, t.totals.written_bytes);
    if (t.has_device_times) {
      busy.add(tier, t.totals.device_busy_seconds);
      weighted.add(tier, t.totals.device_weighted_seconds);
      if (t.ok && t.device_in_flight) inflight.add(tier, *t.device_in_flight);
    }
    if (!t.has_metadata_ops) continue;
    for (std::size_t i = 0; i < kMetaOpCount; ++i) {
      const Labels l{{"tier", name}, {"op", std::string(kMetaOpNames[i])}};
      meta.add(l, t.totals.metadata_ops[i]);
      if (t.has_metadata_seconds) {
        op_seconds.add(l, t.totals.metadata_seconds[i]);
        op_rtt.add(l, t.metadata_rtt_seconds[i]);
        op_retrans.add(l, t.metadata_retransmissions[i]);
      }
    }
  }
  append(out, {&read, &written, &meta, &op_seconds, &op_rtt, &op_retrans, &info, &inflight, &busy,
               &weighted});

  FamilyBuilder rx =
      counter("ckpt_network_receive_bytes_total",
              "Bytes received by the interface (InfiniBand ports: port_rcv_data x 4).");
  FamilyBuilder tx =
      counter("ckpt_network_transmit_bytes_total",
              "Bytes transmitted by the interface (InfiniBand ports: port_xmit_data x 4).");
  FamilyBuilder speed =
      gauge("ckpt_network_link_speed_bytes_per_second",
            "Link speed of the interface; absent while the driver does not know it "
            "(speed -1, link down).");
  for (const auto& [name, n] : io.interfaces) {
    const Labels l{{"interface", name}};
    if (n.has_totals) {
      rx.add(l, n.receive_bytes);
      tx.add(l, n.transmit_bytes);
    }
    if (n.ok && n.link_speed_bytes_per_second) speed.add(l, *n.link_speed_bytes_per_second);
  }
  append(out, {&rx, &tx, &speed});

  const NodeIo& node = io.node;
  FamilyBuilder pressure =
      counter("ckpt_node_pressure_seconds_total",
              "Time some (or all: full) runnable tasks of the node stalled on the resource "
              "(/proc/pressure, PSI); absent where the kernel keeps none.");
  for (std::size_t r = 0; r < kPressureResourceNames.size(); ++r) {
    for (std::size_t k = 0; k < 2; ++k) {
      if (const auto& v = node.pressure_seconds[r][k]) {
        pressure.add({{"resource", std::string(kPressureResourceNames[r])},
                      {"kind", k == 0 ? "some" : "full"}},
                     *v);
      }
    }
  }
  FamilyBuilder available =
      gauge("ckpt_node_memory_available_bytes", "MemAvailable of /proc/meminfo.");
  FamilyBuilder dirty = gauge("ckpt_node_memory_dirty_bytes",
                              "Dirty of /proc/meminfo: written, not yet on its way to storage.");
  FamilyBuilder writeback =
      gauge("ckpt_node_memory_writeback_bytes",
            "Writeback of /proc/meminfo: on its way to storage, not yet written.");
  if (node.memory_available_bytes) available.add({}, *node.memory_available_bytes);
  if (node.memory_dirty_bytes) dirty.add({}, *node.memory_dirty_bytes);
  if (node.memory_writeback_bytes) writeback.add({}, *node.memory_writeback_bytes);
  append(out, {&pressure, &available, &dirty, &writeback});

  append_counter(out, "ckptmon_io_read_errors_total",
                 "Failed reads or parses of an I/O counter source (diskstats, "
                 "mountstats, llite stats, interface counters), each logged once.",
                 static_cast<double>(io.read_errors));
  append_counter(out, "ckptmon_io_resets_total",
                 "Raw I/O counters that went backwards (device replaced, module "
                 "reloaded, wrap): counted as resets, never as a negative rate.",
                 static_cast<double>(io.counter_resets));
}

}  // namespace ckptmon
