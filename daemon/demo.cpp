#include "daemon/demo.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <boost/asio/steady_timer.hpp>

#include "daemon/daemon.hpp"
#include "util/log.hpp"

namespace ckptmon {

namespace fs = std::filesystem;

int run_demo(const DemoOptions& opts) {
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
        << ", role: staging, drains_to: rapid}\n"
        << "  - {name: rapid, path: " << (base / "rapid").string() << ", role: rapid}\n";
  }

  ServeOptions so;
  so.config_file = cfg.string();
  so.listen_address = opts.listen_address;
  so.on_listening = [](const boost::asio::ip::tcp::endpoint& ep) {
    std::cout << "ckptmon demo is running: open http://localhost:" << ep.port() << "/\n"
              << "  metrics: http://localhost:" << ep.port() << "/metrics\n"
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
  std::cout << "Demo tiers under " << base.string() << std::endl;
  boost::asio::steady_timer deadline(daemon->io());
  if (opts.exit_after.count() > 0) {
    deadline.expires_after(opts.exit_after);
    deadline.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) daemon->stop();
    });
  }
  const int rc = daemon->run();
  daemon.reset();
  if (!opts.keep) {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
  return rc;
}

}  // namespace ckptmon
