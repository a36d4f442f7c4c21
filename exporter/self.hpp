#pragma once
// ckptmon's own families: the process, the HTTP server, the state database,
// the worker pool, the build and the configuration reloads. Read at scrape
// time (except the registry-held ones, which the daemon updates in place).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include "http/http_server.hpp"
#include "store/audit_log.hpp"

namespace ckptmon {

// process_* metrics of this process, the way every Prometheus client names
// them: CPU, resident memory, open and maximum file descriptors, start time.
std::vector<prometheus::MetricFamily> process_families(const std::string& proc_path,
                                                       double start_time);

// Registered once in the daemon's registry: ckptmon_build_info,
// ckptmon_config_last_reload_{successful,success_timestamp_seconds},
// ckptmon_http_requests_total{handler,code}.
struct RegistryMetrics {
  prometheus::Gauge* reload_ok = nullptr;
  prometheus::Gauge* reload_ts = nullptr;
  prometheus::Family<prometheus::Counter>* http_requests = nullptr;
};
RegistryMetrics register_self_metrics(prometheus::Registry& registry);

// ckptmon_http_connections, ckptmon_http_connections_rejected{,_per_peer}_total,
// ckptmon_http_idle_connections_closed_total.
void http_connection_families(const HttpFigures& f, std::vector<prometheus::MetricFamily>& out);
// ckptmon_http_auth_failures_total{reason}, ckptmon_http_tls_handshake_failures_total.
void http_security_families(const HttpFigures& f, std::vector<prometheus::MetricFamily>& out);

// ckptmon_audit_log_{enabled,records_total,write_errors_total,rotations_total}.
void audit_families(const AuditLog::Stats& f, bool enabled,
                    std::vector<prometheus::MetricFamily>& out);

struct StoreFigures {
  std::uint64_t errors = 0;
  std::uint64_t transactions = 0;
  std::uint64_t rebuilt = 0;
  std::uint64_t consecutive_errors = 0;
};
// ckptmon_store_{errors,transactions,rebuilt}_total, ckptmon_store_consecutive_errors.
void store_families(const StoreFigures& f, std::vector<prometheus::MetricFamily>& out);

struct WorkerFigures {
  std::size_t busy = 0;
  std::size_t threads = 0;
  std::size_t stuck = 0;
};
// ckptmon_worker_threads{state}, ckptmon_worker_threads_stuck.
void worker_families(const WorkerFigures& f, std::vector<prometheus::MetricFamily>& out);

}  // namespace ckptmon
