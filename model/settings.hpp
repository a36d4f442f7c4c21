#pragma once
// The daemon's configuration as plain data: what config/ reads from the YAML
// file, validated, with defaults (docs/configuration.md). No YAML here;
// collectors, rules and the model read these types, config/ fills them.
// Immutable once loaded; a reload builds a new Config and swaps it in.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/policy.hpp"
#include "model/tier.hpp"
#include "util/duration.hpp"

namespace ckptmon {

// The top-level `gpu` section: where GPU utilisation comes from, how often it
// is sampled and how GPUs map to training jobs (docs/configuration.md, "gpu").
enum class GpuSourceKind { kNone, kNvml, kDcgm, kPrometheus };
std::string_view to_string(GpuSourceKind k);

// The most GPUs one instance tracks: a bound on the `gpu` label.
inline constexpr unsigned kMaxGpus = 64;

struct GpuConfig {
  GpuSourceKind source = GpuSourceKind::kNone;
  // Sampling period of nvml and dcgm; also the join's granularity (samples
  // are kept as means over buckets of this width).
  Duration interval = std::chrono::seconds(1);
  // Deadline of one poll of the source on its worker.
  Duration timeout = std::chrono::seconds(5);
  // The longest checkpoint window the join covers; the ring buffer keeps
  // three times this (window, baseline and room for excluded windows).
  Duration max_window = std::chrono::minutes(10);
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string dcgm_url = "http://127.0.0.1:9400/metrics";
  // TLS, credentials and headers of the dcgm or prometheus source's requests.
  HttpClientConfig client;
  std::string prometheus_url;               // gpu.prometheus.url
  std::string prometheus_selector;          // gpu.prometheus.selector, e.g. {cluster="a"}
  std::string job_mapping_dir;              // empty: not used
  std::map<unsigned, std::string> job_map;  // GPU index -> job

  bool enabled() const { return source != GpuSourceKind::kNone; }
};

// The top-level `network` section: interfaces whose byte counters and link
// speed are exported next to the tiers' I/O counters (docs/configuration.md,
// "Storage path and network").
// A bound on the `interface` label.
inline constexpr std::size_t kMaxNetworkInterfaces = 32;

struct NetworkConfig {
  // Netdev names (eth0, ib0) or InfiniBand ports written hca:port (mlx5_0:1);
  // default none.
  std::vector<std::string> interfaces;
};

struct GlobalConfig {
  std::string state_dir = "/var/lib/ckptmon";
  Duration scan_interval = std::chrono::seconds(15);
  // Deadline for one blocking probe of one tier (statfs).
  Duration probe_timeout = std::chrono::seconds(10);
  // Deadline for one walk of one tier; past it the tier's catalog is marked
  // stale while the walk goes on in the background.
  Duration scan_timeout = std::chrono::minutes(10);
  // Where procfs and sysfs are mounted (`procfs`, `sysfs`; `proc_path` is
  // the older name of `procfs`); tests point them at fixture trees.
  std::string proc_path = "/proc";
  std::string sys_path = "/sys";
  // Upper bound on threads doing blocking file-system work. A probe stuck on a
  // hung mount holds one thread until the kernel returns.
  int worker_threads = 16;
  // Event logs (manifests) are polled this often; inotify wakes the tailer
  // sooner where it works (local file systems).
  Duration tail_interval = std::chrono::seconds(1);
  // Deadline for one pass of the tailer over one manifest glob.
  Duration tail_timeout = std::chrono::minutes(5);
  // Event lines longer than this (newline not counted) are skipped and
  // counted as too_long.
  std::uint64_t max_line_bytes = std::uint64_t{64} * 1024;
  // Distinct jobs per tier the event catalog takes; events of further jobs
  // are refused (too_many_jobs). Job names become label values.
  std::uint64_t max_jobs_per_tier = 1000;  // kMaxJobsPerTier (model/events.hpp)
};

// Checkpoint event logs to tail (docs/events.md): every regular file matching
// `glob` (glob(7), absolute). Events without a `tier` field belong to `tier`.
struct ManifestConfig {
  std::string glob;
  std::string tier;  // empty: events must name their tier
};

// The background verifier that re-reads shards whose events carry checksums
// and the files listed in Megatron integrity.json manifests.
struct IntegrityConfig {
  bool enabled = true;
  std::uint64_t bytes_per_second = 50ull * 1024 * 1024;  // read budget of the verifier
  Duration interval = std::chrono::seconds(30);          // how often it looks for new work
  // A read that returns no bytes for this long is stuck (hung mount):
  // ckptmon_integrity_stuck_reads, one log line.
  Duration read_deadline = std::chrono::hours(1);
};

// The top-level `audit` section: an opt-in JSON-lines log of security-relevant
// events (docs/operations.md, "Audit log"): findings opened and closed,
// configuration loads and who asked for them, and optionally every HTTP
// request. Never secrets; never a query string.
struct AuditConfig {
  std::string log_file;  // empty: no audit log
  // Past this size the file is rotated: file -> file.1 -> ... -> file.<max_files>.
  std::uint64_t max_bytes = std::uint64_t{100} * 1024 * 1024;
  unsigned max_files = 5;    // rotated files kept
  bool http_access = false;  // one line per HTTP request (peer, user, method, path, status...)

  bool enabled() const { return !log_file.empty(); }
};

struct Config {
  std::string source;  // file the config was read from, for messages
  GlobalConfig global;
  std::vector<TierConfig> tiers;
  HistoryPolicy history;    // top-level `history`: how tier samples age
  EstatePolicy estate;      // top-level `estate`: copies and durability per job
  AlertingConfig alerting;  // top-level `alerting`: thresholds, Alertmanager
  std::vector<ManifestConfig> manifests;
  IntegrityConfig integrity;
  GpuConfig gpu;  // top-level `gpu`: utilisation source and job mapping
  NetworkConfig network;
  AuditConfig audit;  // top-level `audit`
  // Which successful load this is (1 for the first one of a daemon, +1 per
  // reload); 0 when never stamped. See stamp_generation.
  std::uint64_t generation = 0;

  const TierConfig* find_tier(std::string_view name) const;
};

// Stamps `next` as the load that follows `previous` (null: the first load):
// next.generation is previous->generation + 1, and each tier keeps the epoch
// of the same-named tier of `previous` when it has the same root, or takes
// next.generation when it is new or re-pointed (TierConfig::generation).
void stamp_generation(Config& next, const Config* previous);

}  // namespace ckptmon
