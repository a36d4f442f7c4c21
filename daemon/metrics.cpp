#include "daemon/metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <prometheus/text_serializer.h>

namespace ckptmon {

FamilyBuilder::FamilyBuilder(std::string name, std::string help, prometheus::MetricType type) {
  family_.name = std::move(name);
  family_.help = std::move(help);
  family_.type = type;
}

FamilyBuilder& FamilyBuilder::add(const Labels& labels, double value) {
  prometheus::ClientMetric m;
  for (const auto& [k, v] : labels) m.label.push_back({k, v});
  switch (family_.type) {
    case prometheus::MetricType::Counter: m.counter.value = value; break;
    case prometheus::MetricType::Gauge: m.gauge.value = value; break;
    default: m.untyped.value = value; break;
  }
  family_.metric.push_back(std::move(m));
  return *this;
}

void append(std::vector<prometheus::MetricFamily>& out, FamilyBuilder&& b) {
  if (!b.empty()) out.push_back(b.take());
}

std::vector<prometheus::MetricFamily> state_families(const State& state) {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;

  FamilyBuilder up("ckpt_tier_up",
                   "1 when the tier root answered its last probe in time, 0 when it is missing, "
                   "unreadable or stuck.",
                   MetricType::Gauge);
  FamilyBuilder info("ckpt_tier_info",
                     "Tier identity: role and the mount it lives on. Always 1.",
                     MetricType::Gauge);
  FamilyBuilder size("ckpt_tier_size_bytes", "Size of the file system holding the tier.",
                     MetricType::Gauge);
  FamilyBuilder avail("ckpt_tier_avail_bytes",
                      "Space available to unprivileged writers on the tier's file system.",
                      MetricType::Gauge);
  FamilyBuilder free_b("ckpt_tier_free_bytes",
                       "Free space on the tier's file system, root-reserved blocks included.",
                       MetricType::Gauge);
  FamilyBuilder files("ckpt_tier_files", "Inodes (file nodes) of the tier's file system.",
                      MetricType::Gauge);
  FamilyBuilder files_free("ckpt_tier_files_free",
                           "Free inodes of the tier's file system.", MetricType::Gauge);
  FamilyBuilder ro("ckpt_tier_readonly",
                   "1 when the tier's file system is mounted read-only (superblock options).",
                   MetricType::Gauge);
  FamilyBuilder last_ok("ckpt_tier_last_success_timestamp_seconds",
                        "When the tier last answered a probe successfully.", MetricType::Gauge);

  for (const auto& [name, t] : state.tiers) {
    const Labels tier{{"tier", name}};
    up.add(tier, t.up ? 1 : 0);
    info.add({{"tier", name},
              {"role", std::string(to_string(t.config.role))},
              {"mountpoint", t.has_stats ? t.stats.mountpoint : ""},
              {"fstype", t.has_stats ? t.stats.fstype : ""},
              {"device", t.has_stats ? t.stats.device : ""}},
             1);
    if (t.last_success > 0) last_ok.add(tier, t.last_success);
    // Like node_exporter for a stuck mount: no figures rather than stale ones.
    if (!t.up || !t.has_stats) continue;
    size.add(tier, t.stats.size_bytes);
    avail.add(tier, t.stats.avail_bytes);
    free_b.add(tier, t.stats.free_bytes);
    files.add(tier, t.stats.files);
    files_free.add(tier, t.stats.files_free);
    ro.add(tier, t.stats.readonly ? 1 : 0);
  }
  append(out, std::move(up));
  append(out, std::move(info));
  append(out, std::move(size));
  append(out, std::move(avail));
  append(out, std::move(free_b));
  append(out, std::move(files));
  append(out, std::move(files_free));
  append(out, std::move(ro));
  append(out, std::move(last_ok));

  FamilyBuilder dur("ckptmon_collector_duration_seconds",
                    "Duration of the slowest target of the collector's last run (up to its "
                    "deadline while still running).",
                    MetricType::Gauge);
  FamilyBuilder ok("ckptmon_collector_success",
                   "1 when every target of the collector's last run succeeded in time.",
                   MetricType::Gauge);
  FamilyBuilder timeouts("ckptmon_collector_timeouts_total",
                         "Collector runs that passed their deadline.", MetricType::Counter);
  FamilyBuilder skipped("ckptmon_collector_skipped_total",
                        "Collector runs not started because the previous run of the same "
                        "target was still in flight.",
                        MetricType::Counter);
  FamilyBuilder errors("ckptmon_collector_errors_total", "Collector runs that failed.",
                       MetricType::Counter);
  for (const auto& [name, c] : state.collectors) {
    const Labels l{{"collector", name}};
    dur.add(l, c.duration_seconds());
    ok.add(l, c.success() ? 1 : 0);
    timeouts.add(l, static_cast<double>(c.timeouts));
    skipped.add(l, static_cast<double>(c.skipped));
    errors.add(l, static_cast<double>(c.errors));
  }
  append(out, std::move(dur));
  append(out, std::move(ok));
  append(out, std::move(timeouts));
  append(out, std::move(skipped));
  append(out, std::move(errors));
  return out;
}

std::vector<prometheus::MetricFamily> process_families(const std::string& proc_path,
                                                       double start_time) {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  std::ifstream in(proc_path + "/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
      FamilyBuilder c("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                      MetricType::Counter);
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

std::string serialize(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, families);
  return os.str();
}

}  // namespace ckptmon
