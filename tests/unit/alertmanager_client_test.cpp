// The Alertmanager client against Debian's real prometheus-alertmanager on a
// loopback port, plus its failure paths against local sockets. Skipped when
// the binary is not installed.

#include "serve/alertmanager_client.hpp"

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "util/clock.hpp"

namespace ckptmon {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr const char* kAlertmanagerBin = "/usr/bin/prometheus-alertmanager";

std::uint16_t free_port() {
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

// Runs the loop until `done` holds or `bound` passes; a bound on waiting for
// another process, not an assertion about time.
bool run_until(asio::io_context& io, const std::function<bool()>& done,
               std::chrono::milliseconds bound = std::chrono::seconds(20)) {
  const auto stop = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > stop) return false;
    io.restart();
    io.run_for(std::chrono::milliseconds(20));
  }
  return true;
}

// GET on 127.0.0.1:port through the same loop; nullopt on any failure.
std::optional<std::pair<unsigned, std::string>> get(asio::io_context& io, std::uint16_t port,
                                                    const std::string& target) {
  struct Op {
    beast::tcp_stream stream;
    http::request<http::empty_body> req;
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    bool done = false;
    bool ok = false;
    explicit Op(asio::io_context& i) : stream(i) {}
  };
  auto op = std::make_shared<Op>(io);
  op->req = {http::verb::get, target, 11};
  op->req.set(http::field::host, "127.0.0.1");
  op->stream.expires_after(std::chrono::seconds(5));
  op->stream.async_connect(
      tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [op](beast::error_code ec) {
        if (ec) {
          op->done = true;
          return;
        }
        http::async_write(op->stream, op->req, [op](beast::error_code ec2, std::size_t) {
          if (ec2) {
            op->done = true;
            return;
          }
          http::async_read(op->stream, op->buf, op->res, [op](beast::error_code ec3, std::size_t) {
            op->ok = !ec3;
            op->done = true;
          });
        });
      });
  run_until(
      io, [&] { return op->done; }, std::chrono::seconds(10));
  if (!op->ok) return std::nullopt;
  return std::pair(op->res.result_int(), op->res.body());
}

// A real Alertmanager on 127.0.0.1, stopped with the test.
class AlertmanagerProcess {
 public:
  bool start(std::string* error) {
    char tmpl[] = "/tmp/ckptmon-am-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      *error = "mkdtemp failed";
      return false;
    }
    dir_ = tmpl;
    std::ofstream(dir_ + "/am.yml") << "route:\n  receiver: blackhole\nreceivers:\n"
                                       "  - name: blackhole\n";
    port_ = free_port();
    const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port_);
    const std::string config = "--config.file=" + dir_ + "/am.yml";
    const std::string storage = "--storage.path=" + dir_ + "/data";
    const std::string log = dir_ + "/am.log";
    pid_ = fork();
    if (pid_ < 0) {
      *error = "fork failed";
      return false;
    }
    if (pid_ == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      // An empty cluster address keeps it from gossiping on 0.0.0.0:9094.
      execl(kAlertmanagerBin, kAlertmanagerBin, config.c_str(), storage.c_str(), listen.c_str(),
            "--cluster.listen-address=", "--log.level=warn", static_cast<char*>(nullptr));
      _exit(127);
    }
    return true;
  }
  ~AlertmanagerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  std::uint16_t port() const { return port_; }
  std::string log() const {
    std::ifstream in(dir_ + "/am.log");
    std::ostringstream text;  // not istreambuf_iterator: g++ 12 -Wnull-dereference
    text << in.rdbuf();
    return text.str();
  }

 private:
  pid_t pid_ = -1;
  std::string dir_;
  std::uint16_t port_ = 0;
};

AlertInstance firing_alert(double now) {
  AlertInstance a;
  a.labels = {"CheckpointTierDown", "critical", "rapid-test", ""};
  a.state = AlertState::kFiring;
  a.active_at = now - 120;
  a.fired_at = now - 10;
  a.summary = "Tier rapid-test is down";
  a.description = "statfs timed out after 10s";
  a.runbook_url = "docs/runbook.md#checkpointtierdown";
  return a;
}

// The alerts Alertmanager lists with our alertname and tier.
std::optional<nlohmann::json> listed(asio::io_context& io, std::uint16_t port) {
  auto r = get(io, port, "/api/v2/alerts");
  if (!r || r->first != 200) return std::nullopt;
  auto j = nlohmann::json::parse(r->second, nullptr, false);
  if (!j.is_array()) return std::nullopt;
  nlohmann::json out = nlohmann::json::array();
  for (auto& a : j) {
    if (a["labels"].value("alertname", "") == "CheckpointTierDown" &&
        a["labels"].value("tier", "") == "rapid-test") {
      out.push_back(a);
    }
  }
  return out;
}

TEST(AlertmanagerClient, RealAlertmanagerReceivesFiringAndResolvedAlerts) {
  if (access(kAlertmanagerBin, X_OK) != 0) {
    GTEST_SKIP() << kAlertmanagerBin
                 << " is not installed (apt-get install prometheus-alertmanager)";
  }
  AlertmanagerProcess am;
  std::string error;
  ASSERT_TRUE(am.start(&error)) << error;
  asio::io_context io;
  ASSERT_TRUE(run_until(io,
                        [&] {
                          auto r = get(io, am.port(), "/-/ready");
                          if (!r || r->first != 200)
                            std::this_thread::sleep_for(std::chrono::milliseconds(100));
                          return r && r->first == 200;
                        }))
      << "alertmanager did not become ready:\n"
      << am.log();

  SystemClock clock;  // Alertmanager judges startsAt/endsAt by its own wall clock
  AlertmanagerOptions opts;
  opts.url = {"127.0.0.1", am.port(), ""};
  opts.timeout_seconds = 5;
  opts.resend_interval_seconds = 60;
  opts.generator_url = "http://127.0.0.1:10025/api/v1/alerts";
  AlertmanagerClient client(io, opts);

  const double t0 = clock.now();
  std::vector<AlertInstance> firing{firing_alert(t0)};
  client.update(firing, {}, t0);
  EXPECT_TRUE(client.stats().in_flight);  // update() returned before the POST finished
  ASSERT_TRUE(run_until(io, [&] { return !client.stats().in_flight; }));
  EXPECT_EQ(client.stats().posts_total, 1u);
  EXPECT_EQ(client.stats().post_errors_total, 0u) << client.stats().last_error;
  EXPECT_EQ(client.stats().alerts_sent_total, 1u);

  nlohmann::json seen;
  ASSERT_TRUE(run_until(io, [&] {
    auto l = listed(io, am.port());
    if (l && l->size() == 1) seen = (*l)[0];
    return l && l->size() == 1;
  })) << am.log();
  EXPECT_EQ(seen["labels"]["severity"], "critical");
  EXPECT_FALSE(seen["labels"].contains("training_job"));
  EXPECT_EQ(seen["annotations"]["summary"], "Tier rapid-test is down");
  EXPECT_EQ(seen["annotations"]["runbook_url"], "docs/runbook.md#checkpointtierdown");
  EXPECT_EQ(seen["generatorURL"], "http://127.0.0.1:10025/api/v1/alerts");

  // Still firing within the resend interval: nothing new is sent.
  client.update(firing, {}, t0 + 1);
  EXPECT_FALSE(client.stats().in_flight);
  // After the interval it is sent again.
  client.update(firing, {}, t0 + 61);
  EXPECT_TRUE(client.stats().in_flight);
  ASSERT_TRUE(run_until(io, [&] { return !client.stats().in_flight; }));
  EXPECT_EQ(client.stats().posts_total, 2u);
  EXPECT_EQ(client.stats().post_errors_total, 0u) << client.stats().last_error;

  // Resolved: sent once with endsAt set, and Alertmanager stops listing it.
  AlertInstance done = firing[0];
  done.resolved_at = clock.now();
  std::vector<AlertInstance> resolved{done};
  client.update({}, resolved, clock.now());
  ASSERT_TRUE(run_until(io, [&] { return !client.stats().in_flight; }));
  EXPECT_EQ(client.stats().posts_total, 3u);
  EXPECT_EQ(client.stats().post_errors_total, 0u) << client.stats().last_error;
  EXPECT_EQ(client.pending_resolved(), 0u);
  client.update({}, {}, clock.now());
  EXPECT_FALSE(client.stats().in_flight);  // not sent again
  ASSERT_TRUE(run_until(io,
                        [&] {
                          auto l = listed(io, am.port());
                          const bool gone = l && l->empty();
                          if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
                          return gone;
                        }))
      << "resolved alert still listed:\n"
      << am.log();
}

TEST(AlertmanagerClient, ConnectionRefusedIsCountedAndRetried) {
  asio::io_context io;
  AlertmanagerOptions opts;
  opts.url = {"127.0.0.1", free_port(), ""};  // nothing listens there
  opts.timeout_seconds = 5;
  AlertmanagerClient client(io, opts);
  std::vector<AlertInstance> firing{firing_alert(1000)};
  client.update(firing, {}, 1000);
  ASSERT_TRUE(run_until(io, [&] { return !client.stats().in_flight; }));
  EXPECT_EQ(client.stats().post_errors_total, 1u);
  EXPECT_NE(client.stats().last_error.find("connect"), std::string::npos)
      << client.stats().last_error;
  // Not accepted: the next cycle tries again even within the resend interval.
  client.update(firing, {}, 1001);
  EXPECT_TRUE(client.stats().in_flight);
  ASSERT_TRUE(run_until(io, [&] { return !client.stats().in_flight; }));
  EXPECT_EQ(client.stats().post_errors_total, 2u);
}

TEST(AlertmanagerClient, AServerThatNeverAnswersTimesOut) {
  asio::io_context io;
  // Accepts connections (the kernel does) but never reads or answers.
  tcp::acceptor silent(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  AlertmanagerOptions opts;
  opts.url = {"127.0.0.1", silent.local_endpoint().port(), ""};
  opts.timeout_seconds = 0.2;
  AlertmanagerClient client(io, opts);
  std::vector<AlertInstance> firing{firing_alert(1000)};
  client.update(firing, {}, 1000);
  ASSERT_TRUE(run_until(io, [&] { return !client.stats().in_flight; }));
  EXPECT_EQ(client.stats().post_errors_total, 1u);
  EXPECT_EQ(client.stats().last_error.rfind("timeout: no complete answer from", 0), 0u)
      << client.stats().last_error;
}

TEST(AlertmanagerClient, ResolvedAlertsAreRetriedUntilTooOld) {
  asio::io_context io;
  AlertmanagerOptions opts;
  opts.url = {"127.0.0.1", free_port(), ""};
  opts.resolved_retry_seconds = 900;
  AlertmanagerClient client(io, opts);
  AlertInstance a = firing_alert(1000);
  a.resolved_at = 1000;
  std::vector<AlertInstance> resolved{a};
  client.update({}, resolved, 1000);
  ASSERT_TRUE(run_until(io, [&] { return !client.stats().in_flight; }));
  EXPECT_EQ(client.pending_resolved(), 1u);
  client.update({}, {}, 1000 + 901);  // gave up
  EXPECT_EQ(client.pending_resolved(), 0u);
  EXPECT_FALSE(client.stats().in_flight);
}

TEST(AlertmanagerClient, DestroyingTheClientAbandonsThePostInFlight) {
  asio::io_context io;
  tcp::acceptor silent(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket accepted(io);
  bool accept_done = false;
  beast::error_code accept_ec;
  silent.async_accept(accepted, [&](beast::error_code ec) {
    accept_ec = ec;
    accept_done = true;
  });
  std::string received;
  {
    AlertmanagerOptions opts;
    opts.url = {"127.0.0.1", silent.local_endpoint().port(), ""};
    opts.timeout_seconds = 600;  // only the destruction can end this POST
    AlertmanagerClient client(io, opts);
    std::vector<AlertInstance> firing{firing_alert(1000)};
    client.update(firing, {}, 1000);
    ASSERT_TRUE(run_until(io, [&] { return accept_done; }));
    ASSERT_FALSE(accept_ec) << accept_ec.message();
    // The request's headers arrive; the server never answers.
    bool headers_done = false;
    beast::error_code headers_ec;
    asio::async_read_until(accepted, asio::dynamic_buffer(received), "\r\n\r\n",
                           [&](beast::error_code ec, std::size_t) {
                             headers_ec = ec;
                             headers_done = true;
                           });
    ASSERT_TRUE(run_until(io, [&] { return headers_done; }));
    ASSERT_FALSE(headers_ec) << headers_ec.message();
    EXPECT_TRUE(received.starts_with("POST /api/v2/alerts ")) << received;
    EXPECT_TRUE(client.stats().in_flight);
  }
  // The abandoned request closed its socket: reading the rest of the
  // connection ends at once instead of waiting for the 600 s deadline.
  bool read_done = false;
  beast::error_code read_ec;
  asio::async_read(accepted, asio::dynamic_buffer(received),
                   [&](beast::error_code ec, std::size_t) {
                     read_ec = ec;
                     read_done = true;
                   });
  ASSERT_TRUE(run_until(
      io, [&] { return read_done; }, std::chrono::seconds(10)));
  EXPECT_TRUE(read_ec == asio::error::eof || read_ec == asio::error::connection_reset)
      << read_ec.message();
  // The loop drains the abandoned operations without touching the client.
  io.restart();
  io.run_for(std::chrono::milliseconds(50));
}

}  // namespace
}  // namespace ckptmon
