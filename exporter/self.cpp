#include "exporter/self.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "exporter/family.hpp"
#include "util/version.hpp"

namespace ckptmon {

std::vector<prometheus::MetricFamily> process_families(const std::string& proc_path,
                                                       double start_time) {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  std::ifstream in(proc_path + "/self/stat");
  std::ostringstream read;
  read << in.rdbuf();
  const std::string stat = std::move(read).str();
  // Fields after the command name, which is in parentheses and may hold spaces.
  auto close = stat.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(stat.substr(close + 2));
    std::vector<std::string> f;
    for (std::string tok; rest >> tok;) f.push_back(tok);
    // f[0] is field 3 (state): utime is field 14, stime 15, rss 24.
    auto num = [](const std::string& t) {
      double v = 0;
      std::from_chars(t.data(), t.data() + t.size(), v);
      return v;
    };
    if (f.size() > 21) {
      const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
      const double cpu = (num(f[11]) + num(f[12])) / ticks;
      const double rss = num(f[21]) * static_cast<double>(sysconf(_SC_PAGESIZE));
      FamilyBuilder c("process_cpu_seconds_total",
                      "Total user and system CPU time spent in seconds.", MetricType::Counter);
      c.add({}, cpu);
      append(out, std::move(c));
      FamilyBuilder r("process_resident_memory_bytes", "Resident memory size in bytes.",
                      MetricType::Gauge);
      r.add({}, rss);
      append(out, std::move(r));
    }
  }
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator(proc_path + "/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++fds;
  }
  if (!ec) {
    FamilyBuilder f("process_open_fds", "Number of open file descriptors.", MetricType::Gauge);
    f.add({}, fds);
    append(out, std::move(f));
  }
  struct rlimit rl {};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    FamilyBuilder f("process_max_fds", "Maximum number of open file descriptors.",
                    MetricType::Gauge);
    f.add({}, static_cast<double>(rl.rlim_cur));
    append(out, std::move(f));
  }
  FamilyBuilder st("process_start_time_seconds",
                   "Start time of the process since unix epoch in seconds.", MetricType::Gauge);
  st.add({}, start_time);
  append(out, std::move(st));
  return out;
}

RegistryMetrics register_self_metrics(prometheus::Registry& registry) {
  prometheus::BuildGauge()
      .Name("ckptmon_build_info")
      .Help("Version and revision ckptmon was built from. Always 1.")
      .Register(registry)
      .Add({{"version", kVersion}, {"revision", kRevision}})
      .Set(1);
  RegistryMetrics m;
  m.reload_ok = &prometheus::BuildGauge()
                     .Name("ckptmon_config_last_reload_successful")
                     .Help("1 when the last configuration (re)load succeeded.")
                     .Register(registry)
                     .Add({});
  m.reload_ts = &prometheus::BuildGauge()
                     .Name("ckptmon_config_last_reload_success_timestamp_seconds")
                     .Help("When the configuration was last loaded successfully.")
                     .Register(registry)
                     .Add({});
  m.http_requests = &prometheus::BuildCounter()
                         .Name("ckptmon_http_requests_total")
                         .Help("HTTP requests answered, by route and status code.")
                         .Register(registry);
  return m;
}

void http_connection_families(const HttpFigures& f, std::vector<prometheus::MetricFamily>& out) {
  FamilyBuilder conns("ckptmon_http_connections", "Open HTTP connections.",
                      prometheus::MetricType::Gauge);
  conns.add({}, static_cast<double>(f.connections));
  append(out, std::move(conns));
  FamilyBuilder rejected("ckptmon_http_connections_rejected_total",
                         "Connections refused because the connection limit was reached.",
                         prometheus::MetricType::Counter);
  rejected.add({}, static_cast<double>(f.rejected));
  append(out, std::move(rejected));
  FamilyBuilder per_peer("ckptmon_http_connections_rejected_per_peer_total",
                         "Connections refused because their client address had "
                         "--web.max-connections-per-peer open already.",
                         prometheus::MetricType::Counter);
  per_peer.add({}, static_cast<double>(f.rejected_per_peer));
  append(out, std::move(per_peer));
  FamilyBuilder idle_closed("ckptmon_http_idle_connections_closed_total",
                            "Idle keep-alive connections closed to admit a new one at the "
                            "connection limit.",
                            prometheus::MetricType::Counter);
  idle_closed.add({}, static_cast<double>(f.idle_closed));
  append(out, std::move(idle_closed));
  FamilyBuilder slow_heads("ckptmon_http_slow_heads_closed_total",
                           "Connections still sending the head of their first request, "
                           "closed (the oldest first) to admit a new one at the connection "
                           "limit when none was idle.",
                           prometheus::MetricType::Counter);
  slow_heads.add({}, static_cast<double>(f.slow_heads_closed));
  append(out, std::move(slow_heads));
  FamilyBuilder history_refused("ckptmon_history_queries_refused_total",
                                "GET /api/v1/history answered 503 because as many history "
                                "queries as may run at once were running.",
                                prometheus::MetricType::Counter);
  history_refused.add({}, static_cast<double>(f.history_queries_refused));
  append(out, std::move(history_refused));
}

void http_security_families(const HttpFigures& f, std::vector<prometheus::MetricFamily>& out) {
  FamilyBuilder failures("ckptmon_http_auth_failures_total",
                         "Requests answered 401 because basic-auth credentials were missing "
                         "(reason=\"missing\") or malformed or wrong (reason=\"invalid\").",
                         prometheus::MetricType::Counter);
  failures.add({{"reason", "missing"}}, static_cast<double>(f.auth_missing));
  failures.add({{"reason", "invalid"}}, static_cast<double>(f.auth_invalid));
  append(out, std::move(failures));
  FamilyBuilder handshakes("ckptmon_http_tls_handshake_failures_total",
                           "TLS handshakes that failed or timed out: plain HTTP on the TLS "
                           "port, a missing or untrusted client certificate, no common "
                           "protocol version.",
                           prometheus::MetricType::Counter);
  handshakes.add({}, static_cast<double>(f.tls_handshake_failures));
  append(out, std::move(handshakes));
}

void audit_families(const AuditLog::Stats& f, bool enabled,
                    std::vector<prometheus::MetricFamily>& out) {
  FamilyBuilder on("ckptmon_audit_log_enabled",
                   "1 when audit.log_file is set (the audit log is on), else 0.",
                   prometheus::MetricType::Gauge);
  on.add({}, enabled ? 1 : 0);
  append(out, std::move(on));
  FamilyBuilder records("ckptmon_audit_log_records_total",
                        "Audit records by outcome: written (and fsynced), dropped_queue_full "
                        "(more were waiting than the writer's queue holds), dropped_write_error "
                        "(lost with a write that failed: disk full, I/O error).",
                        prometheus::MetricType::Counter);
  records.add({{"outcome", "written"}}, static_cast<double>(f.written));
  records.add({{"outcome", "dropped_queue_full"}}, static_cast<double>(f.dropped_queue_full));
  records.add({{"outcome", "dropped_write_error"}}, static_cast<double>(f.dropped_write_error));
  append(out, std::move(records));
  FamilyBuilder errors("ckptmon_audit_log_write_errors_total",
                       "open, write, fsync or rename calls on the audit log that failed.",
                       prometheus::MetricType::Counter);
  errors.add({}, static_cast<double>(f.write_errors));
  append(out, std::move(errors));
  FamilyBuilder rotations("ckptmon_audit_log_rotations_total",
                          "Times the audit log reached audit.max_size and was rotated.",
                          prometheus::MetricType::Counter);
  rotations.add({}, static_cast<double>(f.rotations));
  append(out, std::move(rotations));
}

void store_families(const StoreFigures& f, std::vector<prometheus::MetricFamily>& out) {
  FamilyBuilder errs("ckptmon_store_errors_total",
                     "Writes to the state database that failed (disk full, I/O error).",
                     prometheus::MetricType::Counter);
  errs.add({}, static_cast<double>(f.errors));
  append(out, std::move(errs));
  FamilyBuilder txs("ckptmon_store_transactions_total",
                    "Transactions committed to the state database.",
                    prometheus::MetricType::Counter);
  txs.add({}, static_cast<double>(f.transactions));
  append(out, std::move(txs));
  FamilyBuilder rebuilt("ckptmon_store_rebuilt_total",
                        "State databases found corrupt at start, moved aside and rebuilt.",
                        prometheus::MetricType::Counter);
  rebuilt.add({}, static_cast<double>(f.rebuilt));
  append(out, std::move(rebuilt));
  FamilyBuilder failing("ckptmon_store_consecutive_errors",
                        "Writes to the state database that failed in a row since the last "
                        "that succeeded; from 3 on /-/ready fails.",
                        prometheus::MetricType::Gauge);
  failing.add({}, static_cast<double>(f.consecutive_errors));
  append(out, std::move(failing));
}

void worker_families(const WorkerFigures& f, std::vector<prometheus::MetricFamily>& out) {
  FamilyBuilder threads("ckptmon_worker_threads",
                        "Worker threads for blocking storage calls, by state.",
                        prometheus::MetricType::Gauge);
  threads.add({{"state", "busy"}}, static_cast<double>(f.busy));
  // A spare may exit between reading busy and threads.
  threads.add({{"state", "idle"}},
              static_cast<double>(f.threads > f.busy ? f.threads - f.busy : 0));
  append(out, std::move(threads));
  FamilyBuilder stuck("ckptmon_worker_threads_stuck",
                      "Worker threads running a job past its deadline (a hung mount); each "
                      "allows one spare thread above global.worker_threads, at most "
                      "worker_threads spares.",
                      prometheus::MetricType::Gauge);
  stuck.add({}, static_cast<double>(f.stuck));
  append(out, std::move(stuck));
}

}  // namespace ckptmon
