#pragma once
// Reading the storage-path counters of one mount or one network interface
// from procfs and sysfs (both settings, so tests point them at fixture trees).
// Blocking file reads of kernel files only: never touches anything under a
// tier. Used on workers by collectors/tier_io.cpp.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/mountinfo.hpp"
#include "model/io.hpp"

namespace ckptmon {

// Which source fits a mount: nfs/nfs4 -> nfs, lustre -> lustre, a file
// system on a block device (a real major number, or a /dev/ source for
// btrfs' anonymous device numbers) -> block, anything else (tmpfs, overlay,
// fuse.*, zfs...) -> none.
IoSource io_source_for(const MountInfo& m);

struct SourceRead {
  bool ok = false;
  std::string error;
  // Block device kernel names, the NFS export, or the llite instance.
  std::vector<std::string> devices;
  IoCounters raw;                 // raw kernel counters, summed over `devices`
  bool has_metadata_ops = false;  // block devices have none
  // NFS: raw.metadata_seconds, and these per-op totals, are figures.
  bool has_metadata_seconds = false;
  std::array<double, kMetaOpCount> rtt_seconds{}, retransmissions{};
  // Block devices whose every member has the time fields (raw.device_*
  // seconds are figures), and their requests in flight now.
  bool has_device_times = false;
  double device_in_flight = 0;
  // What was left out and why, not errors (the collector logs each once):
  // llite counters this ckptmon does not know.
  std::vector<std::string> unknown;
};

// The member block devices of the device `major:minor` (`source` is the
// mount source, used when the number is 0:N, as on btrfs): the kernel name
// from `<sys>/dev/block/M:m/uevent`, then `<sys>/class/block/<name>/slaves/`
// followed down (device-mapper, md) to devices without slaves. A partition
// is its own member. Sorted, unique. Empty with `error` when unresolvable.
std::vector<std::string> block_members(const std::string& sys, unsigned major, unsigned minor,
                                       const std::string& source, std::string& error);

// The device `major:minor` and every device below it (its slaves, followed
// down as block_members does): a device-mapper or md stack whole, for
// asking each layer what it is (a dm-crypt target). Sorted, unique. Empty
// with `error` when unresolvable.
std::vector<std::string> block_stack(const std::string& sys, unsigned major, unsigned minor,
                                     const std::string& source, std::string& error);

// `<proc>/diskstats` summed over block_members(): 512-byte sectors read and
// written.
SourceRead read_block_source(const std::string& proc, const std::string& sys, const MountInfo& m);

// The mount's block of `<proc>/self/mountstats`, matched by mount point
// (and, among several, by device).
SourceRead read_nfs_source(const std::string& proc, const MountInfo& m);

// The llite instance of a Lustre mount under `<proc>/fs/lustre/llite/` or
// `<sys>/kernel/debug/lustre/llite/`: instances are named
// `<fsname>-<superblock id>`; the fsname comes from the mount source
// (`mgs@tcp:/fsname`). One instance of that fsname is the mount's; several
// are told apart by an option of the mount (per-mount or superblock) naming
// the instance in full; otherwise it is ambiguous, an error.
SourceRead read_lustre_source(const std::string& proc, const std::string& sys, const MountInfo& m);

struct NetRead {
  bool ok = false;
  std::string error;
  bool infiniband = false;  // counters from an InfiniBand port
  // The port exists but its hardware keeps no data counters (`N/A (no
  // PMA)`, iWARP ports such as Intel i40iw): ok, with its link speed, and
  // traffic unknown. Not a read error.
  bool counters_unsupported = false;
  // What is not known and why, not errors (the collector logs each once):
  // counters the hardware does not keep, a rate text not understood.
  std::vector<std::string> unknown;
  std::uint64_t receive_bytes = 0;
  std::uint64_t transmit_bytes = 0;
  std::optional<double> link_speed_bytes_per_second;
};

// A configured interface: a netdev name (`eth0`, `ib0`) from
// `<sys>/class/net/<name>/statistics/{rx,tx}_bytes` and `speed` (Mb/s, -1 or
// unreadable = unknown); a netdev backed by an InfiniBand port (IPoIB)
// reads that port instead, which also sees RDMA traffic; `hca:port`
// (`mlx5_0:1`) names an InfiniBand port directly:
// `<sys>/class/infiniband/<hca>/ports/<port>/counters/port_{rcv,xmit}_data`
// (4-byte words) and `rate`.
NetRead read_net_interface(const std::string& sys, const std::string& name);

// The node's memory and pressure: `<proc>/pressure/{memory,io,cpu}` and
// `<proc>/meminfo`. PSI absent (no `pressure` directory: an old kernel,
// psi=0) is not an error: its figures stay unknown and `unknown` says so;
// likewise no meminfo (a procfs fixture tree) or a line of it missing. A file that exists and does
// not parse is an error (the rest is still read).
struct NodeRead {
  bool ok = false;
  std::string error;
  NodeIo node;
  std::vector<std::string> unknown;
};
NodeRead read_node_pressure(const std::string& proc);

// A kernel text file, at most `max_bytes`.
bool read_kernel_file(const std::string& path, std::string& out, std::string& error,
                      std::size_t max_bytes = std::size_t{64} * 1024 * 1024);

}  // namespace ckptmon
