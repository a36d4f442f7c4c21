#include "daemon/demo.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/steady_timer.hpp>

#include "config/web_config.hpp"
#include "daemon/daemon.hpp"
#include "util/log.hpp"

namespace ckptmon {

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& p, std::size_t bytes, char fill) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  const std::string chunk(64 * 1024, fill);
  for (std::size_t done = 0; done < bytes; done += chunk.size()) {
    out.write(chunk.data(), static_cast<std::streamsize>(std::min(chunk.size(), bytes - done)));
  }
}

// Writes checkpoints the way two real frameworks lay them out, into the
// demo's own temporary tiers: a PyTorch DCP job that saves to staging and is
// drained (copied) to rapid one save later, and a Hugging Face Trainer job
// whose every third save is abandoned without its trainer_state.json.
class DemoWorkload {
 public:
  DemoWorkload(fs::path staging, fs::path rapid) : staging_(std::move(staging)), rapid_(std::move(rapid)) {
    thread_ = std::thread([this] { run(); });
  }
  ~DemoWorkload() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void run() {
    int round = 0;
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      try {
        save_dcp(round);
        save_hf(round);
      } catch (const std::exception& e) {
        log::warn("demo workload: write failed", {{"err", e.what()}});
      }
      ++round;
      lock.lock();
      cv_.wait_for(lock, std::chrono::seconds(4), [&] { return stop_; });
    }
  }

  void save_dcp(int round) {
    const int step = (round + 1) * 100;
    const fs::path job = staging_ / "llama-dcp";
    const fs::path dir = job / ("step-" + std::to_string(step));
    fs::create_directories(dir);
    for (int r = 0; r < 8; ++r) {
      write_file(dir / ("__" + std::to_string(r) + "_0.distcp"), (256 + 32 * r) * 1024, 'm');
    }
    write_file(dir / ".metadata.tmp", 4096, 'x');
    fs::rename(dir / ".metadata.tmp", dir / ".metadata");
    // Drain the previous save to rapid, one save behind, and keep 3 on staging.
    if (round > 0) {
      const std::string prev = "step-" + std::to_string(step - 100);
      fs::create_directories(rapid_ / "llama-dcp");
      fs::copy(job / prev, rapid_ / "llama-dcp" / prev,
               fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    }
    if (round >= 3) fs::remove_all(job / ("step-" + std::to_string(step - 300)));
  }

  void save_hf(int round) {
    const int step = (round + 1) * 50;
    const fs::path dir = staging_ / "bert-hf" / ("checkpoint-" + std::to_string(step));
    fs::create_directories(dir);
    write_file(dir / "model.safetensors", 512 * 1024, 'w');
    write_file(dir / "optimizer.pt", 1024 * 1024, 'o');
    write_file(dir / "scheduler.pt", 1024, 's');
    write_file(dir / "rng_state.pth", 16 * 1024, 'r');
    if (round % 3 == 2) return;  // abandoned: no trainer_state.json, becomes partial
    std::ofstream(dir / "trainer_state.json") << "{\"global_step\": " << step << "}\n";
  }

  fs::path staging_;
  fs::path rapid_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
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
  std::string tmpl = (fs::temp_directory_path() / "ckptmon-demo-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("ckptmon demo: mkdtemp");
    return 1;
  }
  const fs::path base = tmpl;
  fs::create_directories(base / "staging");
  fs::create_directories(base / "rapid");
  fs::create_directories(base / "state");
  const fs::path cfg = base / "ckptmon.yml";
  {
    std::ofstream out(cfg);
    out << "# Written by `ckptmon demo`; tiers are temporary directories.\n"
        << "global:\n"
        << "  state_dir: " << (base / "state").string() << "\n"
        << "  scan_interval: 2s\n"
        << "  probe_timeout: 1s\n"
        << "tiers:\n"
        << "  - {name: staging, path: " << (base / "staging").string()
        << ", role: staging, drains_to: rapid, partial_after: 20s}\n"
        << "  - {name: rapid, path: " << (base / "rapid").string() << ", role: rapid}\n";
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
  auto daemon = std::make_unique<Daemon>(so, std::make_shared<SystemClock>());
  std::string error;
  if (!daemon->start(&error)) {
    // The default port may be taken on a developer machine: use any free one.
    if (opts.listen_address != "127.0.0.1:0") {
      log::warn("demo: cannot listen; trying a free port", {{"err", error}});
      so.listen_address = "127.0.0.1:0";
      daemon = std::make_unique<Daemon>(so, std::make_shared<SystemClock>());
      error.clear();
    }
    if (!daemon->start(&error)) {
      std::cerr << "ckptmon demo: " << error << "\n";
      return 1;
    }
  }
  std::cout << "Demo tiers under " << base.string()
            << " (a DCP job and a Hugging Face job save every 4s)" << std::endl;
  int rc = 0;
  {
    DemoWorkload workload(base / "staging", base / "rapid");
    std::optional<boost::asio::steady_timer> deadline;
    if (opts.exit_after.count() > 0) {
      deadline.emplace(daemon->io(), opts.exit_after);
      deadline->async_wait([&](const boost::system::error_code& ec) {
        if (!ec) daemon->stop();
      });
    }
    rc = daemon->run();
    deadline.reset();  // before the io_context it belongs to
    daemon.reset();
  }  // stops the workload before its tiers are removed
  if (!opts.keep) {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
  return rc;
}

}  // namespace ckptmon
