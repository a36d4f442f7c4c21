// The golden /metrics scrape: the whole daemon in-process under a FakeClock
// on a fixture tree this test writes (two tiers, staging drains to rapid,
// DCP checkpoints of known sizes, one event log), scraped once the first
// collection and the first rules cycle are done, and compared line by line
// with tests/fixtures/golden/metrics.txt (like node_exporter's
// e2e-output.txt). Every family and every series is in the file; the values
// of the series that depend on the machine or on real time are masked
// (kMachineFamilies below, docs/operations.md "Tests").
//
// Regenerate after an intended change of the exposition:
//   CKPTMON_UPDATE_GOLDEN=1 build/tests/ckptmon_unit_tests --gtest_filter='GoldenScrape*'
// then review `git diff tests/fixtures/golden/metrics.txt`.
//
// The key values are also asserted on their own, computed by hand from the
// fixture sizes, so a regenerated golden file cannot hide a wrong figure.

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loop_helpers.hpp"
#include "serve/daemon.hpp"
#include "tests/test_paths.hpp"
#include "tests/unit/http_client.hpp"
#include "util/clock.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr double kT0 = 1'700'000'000.0;  // the FakeClock's start
const std::string kGolden = std::string(CKPTMON_SOURCE_DIR) + "/tests/fixtures/golden/metrics.txt";

// Families whose sample values depend on the machine or on real time: the
// file system the temporary directory lives on (statvfs sizes, inodes and
// the figures derived from free space, st_blocks), durations measured on
// the real monotonic clock and what adapts to them (the walk's concurrency,
// how the store writer batched its transactions), the process's own
// resources, the build revision and the worker pool's size. Their series
// stay in the golden file (names and labels are checked); their values read
// `<machine>`.
const std::set<std::string, std::less<>> kMachineFamilies = {
    // statvfs and st_blocks of the temporary directory's file system
    "ckpt_tier_size_bytes", "ckpt_tier_avail_bytes", "ckpt_tier_free_bytes", "ckpt_tier_files",
    "ckpt_tier_files_free", "ckpt_tier_info", "ckpt_tier_capacity_headroom_ratio",
    "ckpt_tier_growth_headroom_bytes", "ckpt_tier_readonly", "ckpt_last_checkpoint_allocated_bytes",
    // real time
    "ckptmon_scan_duration_seconds", "ckptmon_scan_call_duration_seconds",
    "ckptmon_scan_calls_per_second", "ckptmon_scan_walk_concurrency",
    "ckptmon_collector_duration_seconds", "ckptmon_rules_evaluation_duration_seconds",
    "ckptmon_store_transactions_total",
    // the process and the build
    "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
    "process_max_fds", "process_start_time_seconds", "ckptmon_build_info",
    "ckptmon_worker_threads"};

// The family a sample line belongs to: its name, less a histogram suffix
// when the family without it is masked.
std::string_view family_of(std::string_view line) {
  const auto end = line.find_first_of("{ ");
  std::string_view name = line.substr(0, end);
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      std::string_view base = name.substr(0, name.size() - suffix.size());
      if (kMachineFamilies.count(base) != 0) return base;
    }
  }
  return name;
}

// The exposition with masked values: a masked family's sample keeps its
// name; ckpt_tier_info also loses its label values (mount point, file
// system type and device of the machine's temporary directory), and
// ckptmon_build_info its revision label (the commit built).
std::string normalize(const std::string& text) {
  std::istringstream in(text);
  std::ostringstream out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') {
      out << line << '\n';
      continue;
    }
    const std::string_view family = family_of(line);
    if (kMachineFamilies.count(family) == 0) {
      out << line << '\n';
      continue;
    }
    std::string series = line.substr(0, line.rfind(' '));
    if (family == "ckptmon_build_info") {
      // The revision label is the commit built: every commit has its own.
      const auto at = series.find("revision=\"");
      if (at != std::string::npos) {
        const auto end = series.find('"', at + 10);
        series = series.substr(0, at + 10) + "<machine>" + series.substr(end);
      }
    }
    if (family == "ckpt_tier_info") {
      // Keep tier and role, mask the machine's mount.
      const auto cut = series.find(",mountpoint=");
      if (cut != std::string::npos) series = series.substr(0, cut) + ",<machine>}";
    }
    out << series << " <machine>\n";
  }
  return out.str();
}

// Modes set explicitly (0644 files, 0755 directories): the access audit's
// counts must not follow the umask of whoever runs the test.
void write_file(const fs::path& p, std::size_t size, double mtime) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << std::string(size, 'x');
  ASSERT_EQ(::chmod(p.c_str(), 0644), 0) << p;
  const auto t =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(mtime));
  struct timespec ts[2];
  ts[0].tv_sec = ts[1].tv_sec = static_cast<time_t>(t.count() / 1'000'000'000);
  ts[0].tv_nsec = ts[1].tv_nsec = static_cast<long>(t.count() % 1'000'000'000);
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), ts, 0), 0) << p;
}

// Directory mtimes too (the scanner's change detection reads them).
void set_dir_mtimes(const fs::path& root, double mtime) {
  const auto t = static_cast<time_t>(mtime);
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_directory()) continue;
    ::chmod(e.path().c_str(), 0755);
    ::utimensat(AT_FDCWD, e.path().c_str(), ts, 0);
  }
  ::chmod(root.c_str(), 0755);
  ::utimensat(AT_FDCWD, root.c_str(), ts, 0);
}

class GoldenScrapeTest : public ::testing::Test {
 protected:
  GoldenScrapeTest() {
    std::string tmpl = (fs::temp_directory_path() / "ckptmon-golden-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = fs::canonical(tmpl);
  }
  ~GoldenScrapeTest() override {
    if (loop_.joinable()) {
      daemon_->stop();
      loop_.join();
    }
    daemon_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The fixture: llama's step-100 committed on staging (300000 + 200000 +
  // 1234 bytes), its step-200 still being written (4096 bytes, no
  // .metadata); rapid holds step-100's first shard and .metadata, not the
  // second shard (200000 bytes of backlog), and bert's step-5 (8192 + 8192 +
  // 100 bytes). The event log says llama's step 100 started and committed.
  void write_fixture() {
    const fs::path staging = dir_ / "staging";
    const fs::path rapid = dir_ / "rapid";
    write_file(staging / "llama/step-100/__0_0.distcp", 300000, kT0 - 600);
    write_file(staging / "llama/step-100/__1_0.distcp", 200000, kT0 - 600);
    write_file(staging / "llama/step-100/.metadata", 1234, kT0 - 600);
    write_file(staging / "llama/step-200/__0_0.distcp", 4096, kT0 - 60);
    write_file(rapid / "llama/step-100/__0_0.distcp", 300000, kT0 - 300);
    write_file(rapid / "llama/step-100/.metadata", 1234, kT0 - 300);
    write_file(rapid / "bert/step-5/__0_0.distcp", 8192, kT0 - 3600);
    write_file(rapid / "bert/step-5/__1_0.distcp", 8192, kT0 - 3600);
    write_file(rapid / "bert/step-5/.metadata", 100, kT0 - 3600);
    set_dir_mtimes(staging, kT0 - 60);
    set_dir_mtimes(rapid, kT0 - 300);
    fs::create_directories(dir_ / "events");
    std::ofstream(dir_ / "events" / "llama.jsonl")
        << R"({"v":1,"ts":1699999400,"event":"checkpoint_start","job":"llama","step":100})"
        << "\n"
        << R"({"v":1,"ts":1699999400,"event":"checkpoint_commit","job":"llama","step":100,)"
        << R"("files":3,"bytes":501234})"
        << "\n";
    // Empty procfs and sysfs: no block device or mount table of this machine.
    fs::create_directories(dir_ / "proc");
    fs::create_directories(dir_ / "sys");
    std::ofstream(dir_ / "ckptmon.yml")
        << "global:\n  scan_interval: 1h\n  probe_timeout: 5s\n  worker_threads: 4\n"
        << "  state_dir: " << (dir_ / "state").string() << "\n"
        << "  procfs: " << (dir_ / "proc").string() << "\n"
        << "  sysfs: " << (dir_ / "sys").string() << "\n"
        << "tiers:\n"
        << "  - {name: staging, path: " << staging.string()
        << ", role: staging, drains_to: rapid}\n"
        << "  - {name: rapid, path: " << rapid.string() << ", role: rapid}\n"
        << "manifests:\n"
        << "  - {glob: \"" << (dir_ / "events").string() << "/*.jsonl\", tier: staging}\n";
  }

  void start() {
    ServeOptions o;
    o.config_file = (dir_ / "ckptmon.yml").string();
    o.listen_address = "127.0.0.1:0";
    o.handle_signals = false;
    o.on_listening = [this](const boost::asio::ip::tcp::endpoint& ep) { port_ = ep.port(); };
    daemon_ = std::make_unique<Daemon>(o, clock_);
    std::string error;
    ASSERT_TRUE(daemon_->start(&error)) << error;
    loop_ = std::thread([this] { daemon_->run(); });
  }

  std::string fetch(const std::string& path) {
    test_http::RawClient c(port_);
    c.send(test_http::request(path, "GET", std::string()));
    auto r = c.read_response();
    if (!r) throw std::runtime_error("no response for " + path);
    return r->body();
  }

  // Waits, reading the published snapshot on the loop (not over HTTP: the
  // scrape must be the only request, ckptmon_http_requests_total is in the
  // file), until the first collection and the first rules cycle are in it.
  // Bounded; nothing asserted about the time.
  bool wait_for_first_cycle() {
    return testing::eventually_on(daemon_->io(), [this] {
      const auto snap = daemon_->snapshot();
      return snap && snap->rules &&
             snap->metrics_text.find("ckptmon_rules_evaluations_total 1\n") != std::string::npos &&
             snap->metrics_text.find("ckpt_drain_backlog_bytes{") != std::string::npos;
    });
  }

  fs::path dir_;
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>(kT0);
  std::unique_ptr<Daemon> daemon_;
  std::thread loop_;
  std::uint16_t port_ = 0;
};

TEST_F(GoldenScrapeTest, MetricsMatchTheGoldenFile) {
  write_fixture();
  start();
  ASSERT_NE(port_, 0);
  // Ready (every collector reported once) and the first rules cycle done;
  // the clock does not move, so nothing runs again.
  ASSERT_TRUE(wait_for_first_cycle());
  const std::string m = fetch("/metrics");

  // The key values, by hand from the fixture.
  EXPECT_THAT(m, HasSubstr("ckpt_checkpoints{tier=\"staging\",training_job=\"llama\","
                           "state=\"committed\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_checkpoints{tier=\"staging\",training_job=\"llama\","
                           "state=\"in_progress\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_checkpoints{tier=\"rapid\",training_job=\"bert\","
                           "state=\"committed\"} 1\n"));
  // 300000 + 200000 + 1234 (step-100) + 4096 (step-200)
  EXPECT_THAT(m, HasSubstr("ckpt_job_stored_bytes{tier=\"staging\",training_job=\"llama\"} "
                           "505330\n"));
  // 8192 + 8192 + 100
  EXPECT_THAT(m, HasSubstr("ckpt_job_stored_bytes{tier=\"rapid\",training_job=\"bert\"} 16484\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_latest_committed_step{tier=\"staging\",training_job=\"llama\"} "
                           "100\n"));
  // step-100's second shard is not on rapid.
  EXPECT_THAT(m, HasSubstr("ckpt_drain_backlog_bytes{tier=\"staging\",to_tier=\"rapid\","
                           "training_job=\"llama\"} 200000\n"));

  const std::string got = normalize(m);
  if (const char* u = std::getenv("CKPTMON_UPDATE_GOLDEN"); u != nullptr && std::string(u) == "1") {
    std::ofstream(kGolden, std::ios::binary) << got;
    GTEST_SKIP() << "wrote " << kGolden;
  }
  std::ifstream in(kGolden, std::ios::binary);
  ASSERT_TRUE(in) << kGolden << " is missing; CKPTMON_UPDATE_GOLDEN=1 writes it";
  std::ostringstream read;  // not istreambuf_iterator: g++ 12 -Wnull-dereference
  read << in.rdbuf();
  const std::string want = read.str();
  // Line by line, so a failure names the first line that differs.
  std::istringstream a(want), b(got);
  std::string wl, gl;
  int n = 0;
  while (true) {
    const bool more_w = static_cast<bool>(std::getline(a, wl));
    const bool more_g = static_cast<bool>(std::getline(b, gl));
    ++n;
    if (!more_w && !more_g) break;
    ASSERT_EQ(more_g ? gl : "<end of scrape>", more_w ? wl : "<end of golden file>")
        << "line " << n << " of " << kGolden
        << " (CKPTMON_UPDATE_GOLDEN=1 regenerates it after an intended change)";
  }
}

}  // namespace
}  // namespace ckptmon
