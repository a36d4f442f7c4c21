// Scrapes while the loop is busy (issue 16 item 10): the daemon in-process
// on a configuration of your choice, CLIENTS keep-alive scrapers asking for
// /metrics with Accept-Encoding: gzip as Prometheus does, in alternating
// phases:
//   idle: the loop does what the daemon does (walk merges, rules cycles);
//   busy: on top of that, the loop is held HOLD_MS out of every
//         HOLD_MS + GAP_MS (a task that sleeps on the loop thread, standing
//         for a long rules cycle or a big walk's merge).
// Peer: the idle phases of the same run. A server whose scrapes wait for the
// loop shows busy p99 >= HOLD_MS; one that answers from its own thread shows
// busy p99 close to idle p99. Results: docs/performance.md.
//
// Usage: scrape_bench CONFIG [SECONDS_PER_PHASE=5] [ROUNDS=3] [CLIENTS=8]
//                     [HOLD_MS=50] [GAP_MS=50]
// CONFIG: e.g. the one bench/load_test.sh writes (WORK/c.yml, before it
// adds the big tier).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "serve/daemon.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// One keep-alive connection; returns the status of each GET.
class Scraper {
 public:
  explicit Scraper(std::uint16_t port) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
  unsigned get(const std::string& target, bool gzip) {
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (gzip) req.set(http::field::accept_encoding, "gzip");
    req.keep_alive(true);
    http::write(socket_, req);
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::uint64_t{256} * 1024 * 1024);
    http::read(socket_, buffer_, parser);
    return parser.get().result_int();
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

struct Phase {
  std::string name;
  std::vector<double> ms;  // latency of each scrape
  std::size_t errors = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  return v[i];
}

Phase run_phase(const std::string& name, std::uint16_t port, int clients, double seconds) {
  Phase ph{name, {}, 0};
  std::vector<std::vector<double>> per(static_cast<std::size_t>(clients));
  std::atomic<std::size_t> errors{0};
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(clients));
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      try {
        Scraper s(port);
        while (Clock::now() < end) {
          const auto t0 = Clock::now();
          const unsigned status = s.get("/metrics", true);
          const auto t1 = Clock::now();
          if (status != 200) ++errors;
          per[static_cast<std::size_t>(c)].push_back(
              std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& v : per) ph.ms.insert(ph.ms.end(), v.begin(), v.end());
  ph.errors = errors.load();
  return ph;
}

// Holds the loop `hold` out of every `hold + gap` until `*on` is false.
void hog(asio::io_context& io, const std::shared_ptr<asio::steady_timer>& timer,
         const std::shared_ptr<std::atomic<bool>>& on, std::chrono::milliseconds hold,
         std::chrono::milliseconds gap) {
  timer->expires_after(gap);
  timer->async_wait([&io, timer, on, hold, gap](const boost::system::error_code& ec) {
    if (ec || !*on) return;
    std::this_thread::sleep_for(hold);
    hog(io, timer, on, hold, gap);
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    (void)std::fprintf(stderr,
                       "usage: scrape_bench CONFIG [SECONDS=5] [ROUNDS=3] [CLIENTS=8] [HOLD_MS=50] "
                       "[GAP_MS=50]\n");
    return 2;
  }
  const double seconds = argc > 2 ? std::atof(argv[2]) : 5;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  const int clients = argc > 4 ? std::atoi(argv[4]) : 8;
  const std::chrono::milliseconds hold(argc > 5 ? std::atoi(argv[5]) : 50);
  const std::chrono::milliseconds gap(argc > 6 ? std::atoi(argv[6]) : 50);

  ckptmon::ServeOptions o;
  o.config_file = argv[1];
  o.listen_address = "127.0.0.1:0";
  o.handle_signals = false;
  std::uint16_t port = 0;
  o.on_listening = [&port](const tcp::endpoint& ep) { port = ep.port(); };
  ckptmon::Daemon d(o, std::make_shared<ckptmon::SystemClock>());
  std::string error;
  if (!d.start(&error)) {
    (void)std::fprintf(stderr, "scrape_bench: %s\n", error.c_str());
    return 1;
  }
  std::thread loop([&d] { d.run(); });
  // Ready: the first collection is done and the first rules cycle ran.
  for (int i = 0; i < 6000; ++i) {
    auto snap = d.snapshot();
    if (snap && snap->rules) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  std::vector<Phase> phases;
  for (int r = 0; r < rounds; ++r) {
    phases.push_back(run_phase("idle", port, clients, seconds));
    auto on = std::make_shared<std::atomic<bool>>(true);
    auto timer = std::make_shared<asio::steady_timer>(d.io());
    asio::post(d.io(), [&d, timer, on, hold, gap] { hog(d.io(), timer, on, hold, gap); });
    phases.push_back(run_phase("busy", port, clients, seconds));
    *on = false;
    asio::post(d.io(), [timer] { timer->cancel(); });
  }
  d.stop();
  loop.join();

  std::printf("clients %d, %.0f s per phase, loop held %lld ms of every %lld ms when busy\n",
              clients, seconds, static_cast<long long>(hold.count()),
              static_cast<long long>((hold + gap).count()));
  std::printf("%-5s %9s %9s %9s %9s %9s %7s\n", "phase", "scrapes", "p50 ms", "p90 ms", "p99 ms",
              "max ms", "errors");
  std::vector<double> idle_all;
  std::vector<double> busy_all;
  for (const auto& ph : phases) {
    std::printf("%-5s %9zu %9.2f %9.2f %9.2f %9.2f %7zu\n", ph.name.c_str(), ph.ms.size(),
                percentile(ph.ms, 0.5), percentile(ph.ms, 0.9), percentile(ph.ms, 0.99),
                percentile(ph.ms, 1.0), ph.errors);
    auto& all = ph.name == "idle" ? idle_all : busy_all;
    all.insert(all.end(), ph.ms.begin(), ph.ms.end());
  }
  const double ip99 = percentile(idle_all, 0.99);
  const double bp99 = percentile(busy_all, 0.99);
  std::printf("all idle p99 %.2f ms, all busy p99 %.2f ms, busy/idle p99 %.2f\n", ip99, bp99,
              ip99 > 0 ? bp99 / ip99 : 0);
  return 0;
}
