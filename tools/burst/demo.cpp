#include "tools/burst/demo.hpp"

#include <sys/mount.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "config/web_config.hpp"
#include "serve/daemon.hpp"
#include "tools/burst/burst.hpp"
#include "util/log.hpp"

namespace ckptmon {

namespace fs = std::filesystem;

namespace {

// The demo's compressed timeline, in seconds at speed 1 (docs/operations.md
// lists it): saves every 3-6 s, uncommitted saves partial after 6 s, alerts
// after 5-10 s instead of 5-30 minutes, so that within two minutes alerts
// fire for a partial checkpoint, a growing drain backlog and a tier that fills.
struct Timeline {
  explicit Timeline(double speed_factor) : speed(speed_factor) {}
  double speed;
  // A time of the speed-1 timeline at this speed, and a rate.
  double at(double seconds) const { return seconds / speed; }
  std::uint64_t rate(double per_second) const {
    return static_cast<std::uint64_t>(per_second * speed);
  }

  double scan_interval = at(2);
  double partial_after = at(6);
  double partial_for = at(5);
  double backlog_for = at(10);
  double too_slow_for = at(10);
  double too_slow_pending_age = at(20);
  double fill_for = at(5);
  double rate_window = at(20);
  double trend_window = at(120);
  double min_trend_span = at(20);
  // The estate: a commit should be on a durable tier (rapid) this soon, and
  // off staging (a copy on rapid) this long after it.
  double durable_within = at(10);
  double not_durable_for = at(5);
  double move_after = at(12);
  double dcp_interval = at(4);
  double hf_interval = at(6);
  double megatron_interval = at(3);
  std::uint64_t dcp_drain_rate = rate(192 * 1024);  // 2 MiB saves every 4 s: the backlog grows
  std::uint64_t hf_drain_rate = rate(1 << 20);
};

std::string dur(double seconds) {
  const long long ms = std::llround(seconds * 1000);
  return std::to_string(std::max<long long>(ms, 100)) + "ms";
}

// The GPU source of the demo: the fake NVML library the build makes
// (tests/fake_nvml/README.md), found beside the binary (build/fake_nvml/) or
// named by CKPTMON_DEMO_NVML_LIBRARY, scripted with two GPUs at 90 % that
// dip to 10 % for a third of every `period` seconds, the DCP job's
// checkpoint interval (the dips are periodic, not tied to each save). No
// library (an installed binary): no GPU section, said once.
std::string gpu_section(const fs::path& base, double period) {
  fs::path lib;
  if (const char* env = std::getenv("CKPTMON_DEMO_NVML_LIBRARY"); env != nullptr && *env != 0) {
    lib = env;
  } else {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) lib = exe.parent_path() / "fake_nvml" / "libnvidia-ml.so.1";
  }
  std::error_code ec;
  if (lib.empty() || !fs::is_regular_file(lib, ec)) {
    log::info("demo without GPUs: no fake NVML library beside the binary",
              {{"looked_for", lib.string()}});
    return "";
  }
  const fs::path script = base / "fake_nvml.script";
  const long long p = std::max(3LL, std::llround(period));
  {
    std::ofstream out(script);
    out << "# Written by `ckptmon demo` (tests/fake_nvml/README.md).\n"
        << "gpus 2\nepoch " << static_cast<long long>(std::time(nullptr)) << "\n"
        << "util * -3600 90\n"
        << "dip * " << p << " " << std::max(1LL, p / 3) << " 10\n"
        << "memory 0 85899345920 42949672960\nmemory 1 85899345920 21474836480\n";
  }
  // Before any thread starts: the library reads it on every call.
  // NOLINTNEXTLINE(concurrency-mt-unsafe): no other thread exists yet (above).
  ::setenv("FAKE_NVML_SCRIPT", script.c_str(), 1);
  return "gpu:\n  source: nvml\n  interval: 1s\n  nvml_library: " + lib.string() + "\n";
}

// A tmpfs for the capacity tier, so that it really fills; only as root.
bool mount_small_tmpfs(const fs::path& dir, std::uint64_t bytes) {
  if (::geteuid() != 0) return false;
  const std::string opts = "size=" + std::to_string(bytes) + ",mode=0755";
  return ::mount("ckptmon-demo", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) == 0;
}

// One job of the demo: a burst engine on its own thread until stopped.
class DemoJob {
 public:
  DemoJob(burst::Options o, const Clock& clock) : opts_(std::move(o)), clock_(clock) {
    thread_ = std::thread([this] {
      burst::Burst b(opts_, clock_, pacer_);
      burst::Result r;
      if (!b.run(r) && !pacer_.stopped()) {
        log::warn("demo job stopped", {{"job", opts_.job_names[0]}, {"err", r.error}});
      } else if (r.fill_reached) {
        log::info("demo job stopped at the tier's fill limit", {{"job", opts_.job_names[0]}});
      }
    });
  }
  ~DemoJob() {
    pacer_.stop();
    thread_.join();
  }

 private:
  burst::Options opts_;
  const Clock& clock_;
  burst::RealPacer pacer_;
  std::thread thread_;
};

}  // namespace

int run_demo(const DemoOptions& opts) {
  // Read here for the scheme of the URLs printed below, and so that a bad file
  // is not mistaken for a busy port; the daemon reads it again for itself.
  const WebConfigResult web = opts.web_config_file.empty()
                                  ? WebConfigResult{WebConfig{}, {}}
                                  : load_web_config_file(opts.web_config_file);
  if (!web.config) {
    for (const auto& e : web.errors) std::cerr << "ckptmon demo: " << e.to_string() << "\n";
    return 1;
  }
  const double speed = std::clamp(opts.speed, 1.0, 20.0);
  const Timeline t(speed);

  std::string tmpl = (fs::temp_directory_path() / "ckptmon-demo-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("ckptmon demo: mkdtemp");
    return 1;
  }
  const fs::path base = tmpl;
  for (const char* d :
       {"staging", "rapid", "capacity", "state", "events/staging", "events/capacity"}) {
    fs::create_directories(base / d);
  }
  // 24 MiB: the Megatron job's 2 MiB saves fill it in about half a minute.
  const std::uint64_t capacity_size = 24ull << 20;
  const bool capacity_limited = mount_small_tmpfs(base / "capacity", capacity_size);
  const fs::path cfg = base / "ckptmon.yml";
  // Time to full from a short trend, so that its panel has data in the demo.
  const std::string sizing = "{trend_window: " + dur(std::max(60.0, t.trend_window)) +
                             ", min_trend_span: " + dur(t.min_trend_span) + "}";
  {
    std::ofstream out(cfg);
    out << "# Written by `ckptmon demo`; tiers are temporary directories.\n"
        << "# Policy timings are compressed (docs/operations.md#the-demo).\n"
        << "global:\n"
        << "  state_dir: " << (base / "state").string() << "\n"
        << "  scan_interval: " << dur(t.scan_interval) << "\n"
        << "  probe_timeout: 1s\n"
        << "  tail_interval: " << dur(std::min(1.0, t.scan_interval / 2)) << "\n"
        << "tiers:\n"
        // Node-local staging (role staging: durable false), draining slowly
        // to the shared rapid tier: steps at risk grow.
        << "  - name: staging\n    path: " << (base / "staging").string()
        << "\n    role: staging\n    drains_to: rapid\n    partial_after: " << dur(t.partial_after)
        << "\n    retention: {keep_last: 4, partial_window: 10m}\n"
        << "    sizing: " << sizing << "\n"
        << "    drain: {rate_window: " << dur(t.rate_window)
        << ", move_after: " << dur(t.move_after)
        << "}\n"
        // Every tier in one residency that every job may live in: the
        // residency of each copy is checked (and found allowed).
        << "    residency: eu-west\n"
        << "    namespaces:\n      '.': {residency: [eu-west]}\n"
        // Slow-checkpoint verdicts and a restore estimate (docs/rules.md#the-storage-path).
        << "    storage_path: {checkpoint_window: 1m, read_bandwidth: 1GiB, "
           "recovery_time_objective: 10m}\n"
        // A scheduled restore drill of each job's newest copy on rapid
        // (docs/rules.md#restore-drills): read back cold, capped, timed
        // against the objective.
        << "  - {name: rapid, path: " << (base / "rapid").string()
        << ", role: rapid, residency: eu-west, partial_after: " << dur(t.partial_after)
        << ",\n     restore_drill: {every: 10m, rate: 64MiB, deadline: 1m},"
           " storage_path: {recovery_time_objective: 10m}}\n"
        << "  - {name: capacity, path: " << (base / "capacity").string()
        << ", role: capacity, residency: eu-west, partial_after: " << dur(t.partial_after)
        << ", sizing: " << sizing << "}\n"
        << "estate: {durable_within: " << dur(t.durable_within) << "}\n"
        << "manifests:\n"
        << "  - {glob: \"" << (base / "events/staging").string() << "/*.jsonl\", tier: staging}\n"
        << "  - {glob: \"" << (base / "events/capacity").string() << "/*.jsonl\", tier: capacity}\n"
        << "integrity: {enabled: true, bytes_per_second: 64MiB, interval: 1s}\n"
        << "alerting:\n  rules:\n"
        << "    CheckpointPartial: {for: " << dur(t.partial_for) << "}\n"
        << "    CheckpointDrainBacklogGrowing: {for: " << dur(t.backlog_for) << "}\n"
        << "    CheckpointDrainTooSlow: {for: " << dur(t.too_slow_for)
        << ", max_pending_age: " << dur(t.too_slow_pending_age)
        << ", max_time_to_empty: " << dur(t.too_slow_pending_age) << "}\n"
        << "    CheckpointNextWontFit: {for: " << dur(t.fill_for) << "}\n"
        << "    CheckpointRecoveryPointNotDurable: {for: " << dur(t.not_durable_for) << "}\n"
        << "    CheckpointTierAlmostFull: {for: " << dur(t.fill_for)
        << ", used_ratio: 0.9, clear_used_ratio: 0.85}\n"
        << gpu_section(base, t.dcp_interval);
  }

  ServeOptions so;
  so.config_file = cfg.string();
  so.listen_address = opts.listen_address;
  so.web_config_file = opts.web_config_file;
  const std::string scheme = web.config && web.config->tls ? "https" : "http";
  so.on_listening = [scheme](const boost::asio::ip::tcp::endpoint& ep) {
    std::cout << "ckptmon demo is running: open " << scheme << "://localhost:" << ep.port() << "/\n"
              << "  metrics: " << scheme << "://localhost:" << ep.port() << "/metrics\n"
              << "Press Ctrl-C to stop." << std::endl;
  };
  auto cleanup = [&] {
    if (capacity_limited) ::umount2((base / "capacity").c_str(), MNT_DETACH);
    if (!opts.keep) {
      std::error_code ec;
      fs::remove_all(base, ec);
    }
  };
  auto clock = std::make_shared<SystemClock>();
  auto daemon = std::make_unique<Daemon>(so, clock);
  std::string error;
  if (!daemon->start(&error)) {
    // The default port may be taken on a developer machine: use any free one.
    if (opts.listen_address != "127.0.0.1:0") {
      log::warn("demo: cannot listen; trying a free port", {{"err", error}});
      so.listen_address = "127.0.0.1:0";
      daemon = std::make_unique<Daemon>(so, clock);
      error.clear();
    }
    if (!daemon->start(&error)) {
      std::cerr << "ckptmon demo: " << error << "\n";
      cleanup();
      return 1;
    }
  }
  std::cout << "Demo tiers under " << base.string() << ":\n"
            << "  llama-dcp     PyTorch DCP, 8 ranks, on staging every " << dur(t.dcp_interval)
            << "; drained to rapid too slowly (the backlog grows, and with it the steps a "
               "node loss would cost: staging is node-local); rank 5 of its 3rd save is "
               "killed\n"
            << "  bert-hf       Hugging Face Trainer, 2 ranks, on staging every "
            << dur(t.hf_interval) << ", drained to rapid, restored every 2nd save\n"
            << "  gpt-megatron  Megatron torch_dist, 4 ranks, on capacity every "
            << dur(t.megatron_interval)
            << (capacity_limited ? " until its 24 MiB tmpfs is 97% full"
                                 : " (not root: capacity is not size-limited, 12 saves only)")
            << "\n  restore drills on rapid every 10m: each job's newest copy read back cold "
               "(ckpt_restore_drill_*; a job whose copy is still landing waits)"
            << std::endl;
  int rc = 0;
  {
    auto job = [&](std::string name, burst::Layout layout, const char* tier, int ranks,
                   std::uint64_t shard, double interval) {
      burst::Options o;
      o.target = (base / tier).string();
      o.tier = tier;
      o.layout = layout;
      o.job_names = {std::move(name)};
      o.jobs = 1;
      o.ranks = ranks;
      o.shard_size = shard;
      o.checkpoints = 0;
      o.interval = interval;
      o.fsync = false;
      o.events = (base / "events" / tier / (o.job_names[0] + ".jsonl")).string();
      o.key_file = (base / "burst.key").string();  // goes with the demo's directory
      return o;
    };
    std::vector<std::unique_ptr<DemoJob>> jobs;
    {
      burst::Options o = job("llama-dcp", burst::Layout::kDcp, "staging", 8,
                             std::uint64_t{256} * 1024, t.dcp_interval);
      o.drain_to = (base / "rapid").string();
      o.drain_tier = "rapid";
      o.drain_rate = t.dcp_drain_rate;
      o.keep_last = 4;
      o.restore_every = 3;
      o.fail = {{5, 3}};
      jobs.push_back(std::make_unique<DemoJob>(o, *clock));
    }
    {
      burst::Options o = job("bert-hf", burst::Layout::kHf, "staging", 2, 1 << 20, t.hf_interval);
      o.drain_to = (base / "rapid").string();
      o.drain_tier = "rapid";
      o.drain_rate = t.hf_drain_rate;
      o.keep_last = 3;
      o.restore_every = 2;
      jobs.push_back(std::make_unique<DemoJob>(o, *clock));
    }
    {
      burst::Options o = job("gpt-megatron", burst::Layout::kMegatron, "capacity", 4,
                             std::uint64_t{512} * 1024, t.megatron_interval);
      if (capacity_limited) {
        o.fill_to = 0.97;
      } else {
        o.checkpoints = 12;
      }
      jobs.push_back(std::make_unique<DemoJob>(o, *clock));
    }
    std::optional<boost::asio::steady_timer> deadline;
    if (opts.exit_after.count() > 0) {
      deadline.emplace(daemon->io(), opts.exit_after);
      deadline->async_wait([&](const boost::system::error_code& ec) {
        if (!ec) daemon->stop();
      });
    }
    rc = daemon->run();
    deadline.reset();  // before the io_context it belongs to
    jobs.clear();      // stops the writers before their tiers go
    daemon.reset();
  }
  cleanup();
  return rc;
}

}  // namespace ckptmon
