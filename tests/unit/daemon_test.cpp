#include "serve/daemon.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>
#include "loop_helpers.hpp"

#include "tests/unit/http_client.hpp"
#include "tests/unit/tls_fixture.hpp"

namespace ckptmon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test_http::RawClient;
using ::testing::HasSubstr;
using ::testing::Not;

// The whole daemon in-process on 127.0.0.1:0, loop on its own thread, tiers
// and configuration in a temporary directory.
class DaemonTest : public ::testing::Test {
 protected:
  DaemonTest() {
    std::string tmpl = (fs::temp_directory_path() / "ckptmon-daemon-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = fs::canonical(tmpl);
    fs::create_directories(dir_ / "a");
    fs::create_directories(dir_ / "c");
    config_ = dir_ / "ckptmon.yml";
  }
  ~DaemonTest() override {
    if (loop_.joinable()) {
      daemon_->stop();
      loop_.join();
    }
    daemon_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The tiers are directories under the host's /tmp: how full that file
  // system is belongs to the host, not to the test (a CI machine's shared
  // disk once passed 95 % and made CheckpointTierAlmostFull pending beside the
  // one alert a test expected). The two rules that read it are off.
  void write_config(const std::string& tiers) {
    std::ofstream(config_) << "global:\n  scan_interval: 1h\n  probe_timeout: 5s\n"
                           << "  state_dir: " << (dir_ / "state").string() << "\n"
                           << "alerting:\n  rules:\n"
                           << "    CheckpointTierAlmostFull: {enabled: false}\n"
                           << "    CheckpointTierFillingUp: {enabled: false}\n"
                           << "tiers:\n"
                           << tiers;
  }
  std::string tier_line(const std::string& name, const std::string& sub) {
    return "  - {name: " + name + ", path: " + (dir_ / sub).string() + ", role: rapid}\n";
  }

  bool start(std::string* error) {
    ServeOptions o;
    o.config_file = config_.string();
    o.web_config_file = web_config_file_;
    o.listen_address = "127.0.0.1:0";
    o.handle_signals = false;
    o.on_listening = [this](const boost::asio::ip::tcp::endpoint& ep) { port_ = ep.port(); };
    daemon_ = std::make_unique<Daemon>(o, std::make_shared<SystemClock>());
    if (!daemon_->start(error)) return false;
    loop_ = std::thread([this] { exit_code_ = daemon_->run(); });
    return true;
  }

  // Daemon::reload() from the loop, waiting for its outcome.
  Daemon::ReloadOutcome reload() {
    std::promise<Daemon::ReloadOutcome> p;
    auto f = p.get_future();
    boost::asio::post(daemon_->io(), [&] {
      daemon_->reload([&](Daemon::ReloadOutcome out) { p.set_value(std::move(out)); });
    });
    return f.get();
  }

  template <typename Fn>
  auto on_loop(Fn fn) {
    return testing::run_on(daemon_->io(), std::move(fn));
  }

  test_http::Response fetch(const std::string& path, const std::string& method = "GET") {
    RawClient c(port_);
    c.send(test_http::request(path, method,
                              method == "POST" ? "Content-Length: 0\r\n" : std::string()));
    auto r = c.read_response();
    if (!r) throw std::runtime_error("no response for " + path);
    return *r;
  }

  // Polls until `pred` holds (bounded; nothing asserted about the time).
  template <typename Pred>
  bool eventually(Pred pred) {
    const auto cap = std::chrono::steady_clock::now() + 10s;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > cap) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  fs::path dir_;
  fs::path config_;
  std::string web_config_file_;  // empty: no --web.config.file
  std::unique_ptr<Daemon> daemon_;
  std::thread loop_;
  std::uint16_t port_ = 0;
  int exit_code_ = -1;
};

TEST_F(DaemonTest, ServesTiersAndBecomesReady) {
  write_config(tier_line("a", "a") + tier_line("b", "missing"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  ASSERT_NE(port_, 0);
  ASSERT_TRUE(eventually([&] { return fetch("/-/ready").result_int() == 200; }));
  const std::string m = fetch("/metrics").body();
  EXPECT_THAT(m, HasSubstr("ckpt_tier_up{tier=\"a\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_tier_up{tier=\"b\"} 0\n"));
  EXPECT_THAT(m, HasSubstr("ckptmon_config_last_reload_successful 1\n"));
  EXPECT_THAT(m, HasSubstr("ckptmon_build_info{"));
  EXPECT_THAT(m, HasSubstr("ckptmon_collector_success{collector=\"tier_stats\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("process_start_time_seconds "));
  auto tiers = nlohmann::json::parse(fetch("/api/v1/tiers").body(), nullptr, false);
  ASSERT_TRUE(tiers.is_array());
  ASSERT_EQ(tiers.size(), 2u);
  EXPECT_EQ(tiers[0]["name"], "a");
  EXPECT_EQ(tiers[0]["up"], true);
  EXPECT_EQ(tiers[1]["name"], "b");
  EXPECT_EQ(tiers[1]["up"], false);
  EXPECT_EQ(tiers[1]["down_reason"], "path does not exist");
  EXPECT_EQ(fetch("/-/healthy").result_int(), 200u);
  EXPECT_EQ(fetch("/-/reload").result_int(), 405u);
}

TEST_F(DaemonTest, EvaluatesTheRulesOnceReadyAndServesAlerts) {
  // scan_interval is 1h: only the evaluation triggered by readiness can run.
  write_config(tier_line("a", "a") + tier_line("b", "missing"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  ASSERT_TRUE(eventually([&] {
    return fetch("/metrics").body().find("ckptmon_rules_evaluations_total 1\n") !=
           std::string::npos;
  }));
  const std::string m = fetch("/metrics").body();
  EXPECT_THAT(m, HasSubstr("ckpt_tier_required_capacity_bytes{tier=\"a\"} 0\n"));
  EXPECT_THAT(m, HasSubstr("ckptmon_alerts_pending 1\n")) << fetch("/api/v1/alerts").body();
  // Exactly one family of each name, whoever renders it.
  std::size_t pos = 0;
  std::map<std::string, int> types;
  while ((pos = m.find("# TYPE ", pos)) != std::string::npos) {
    pos += 7;
    ++types[m.substr(pos, m.find(' ', pos) - pos)];
  }
  // The scan's families and the rules' are both among them.
  for (const char* family : {"ckpt_tier_up", "ckpt_tier_required_capacity_bytes"}) {
    EXPECT_TRUE(types.contains(family)) << family;
  }
  for (const auto& [name, n] : types) EXPECT_EQ(n, 1) << name;

  auto r = fetch("/api/v1/alerts");
  EXPECT_EQ(r.result_int(), 200u);
  auto doc = nlohmann::json::parse(r.body(), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.body();
  EXPECT_EQ(doc["status"], "success");
  ASSERT_EQ(doc["data"]["alerts"].size(), 1u) << r.body();
  const auto& a = doc["data"]["alerts"][0];
  EXPECT_EQ(a["labels"]["alertname"], "CheckpointTierDown");
  EXPECT_EQ(a["labels"]["tier"], "b");
  EXPECT_EQ(a["state"], "pending");  // for: 2m
  EXPECT_THAT(fetch("/").body(), HasSubstr("No alerts firing. 1 pending"));
}

TEST_F(DaemonTest, ABrokenReloadKeepsTheRunningConfiguration) {
  write_config(tier_line("a", "a"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  ASSERT_TRUE(eventually([&] { return fetch("/-/ready").result_int() == 200; }));

  write_config("  - {name: c, path: " + (dir_ / "c").string() + ", role: fastest}\n");
  auto out = reload();
  EXPECT_FALSE(out.ok);
  EXPECT_THAT(out.message, HasSubstr(config_.string() + ":"));
  EXPECT_THAT(out.message, HasSubstr("tiers[0].role: expected one of"));
  auto snap = on_loop([this] { return daemon_->snapshot(); });
  ASSERT_EQ(snap->state.tiers.size(), 1u);
  EXPECT_TRUE(snap->state.tiers.contains("a"));
  std::string m = fetch("/metrics").body();
  EXPECT_THAT(m, HasSubstr("ckptmon_config_last_reload_successful 0\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_tier_up{tier=\"a\"} 1\n"));
  EXPECT_THAT(m, Not(HasSubstr("tier=\"c\"")));

  // The same through HTTP: 500 with the message.
  auto r = fetch("/-/reload", "POST");
  EXPECT_EQ(r.result_int(), 500u);
  EXPECT_THAT(r.body(), HasSubstr("tiers[0].role"));

  write_config(tier_line("a", "a") + tier_line("c", "c"));
  r = fetch("/-/reload", "POST");
  EXPECT_EQ(r.result_int(), 200u);
  ASSERT_TRUE(eventually([&] {
    return fetch("/metrics").body().find("ckpt_tier_up{tier=\"c\"} 1\n") != std::string::npos;
  }));
  m = fetch("/metrics").body();
  EXPECT_THAT(m, HasSubstr("ckptmon_config_last_reload_successful 1\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_tier_up{tier=\"a\"} 1\n"));
}

// A FIFO in place of the configuration would block the loop on open(2):
// refused at once, the old configuration kept, and the loop keeps answering.
TEST_F(DaemonTest, AReloadOfAFifoIsRefusedAndTheLoopKeepsServing) {
  write_config(tier_line("a", "a"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  fs::remove(config_);
  ASSERT_EQ(::mkfifo(config_.c_str(), 0600), 0);
  auto r = fetch("/-/reload", "POST");
  EXPECT_EQ(r.result_int(), 500u);
  EXPECT_THAT(r.body(), HasSubstr(config_.string() + ": is a FIFO, not a regular file"));
  EXPECT_EQ(fetch("/-/healthy").result_int(), 200u);
  std::string m = fetch("/metrics").body();
  EXPECT_THAT(m, HasSubstr("ckptmon_config_last_reload_successful 0\n"));
  EXPECT_THAT(m, HasSubstr("ckpt_tier_up{tier=\"a\"}"));
}

TEST_F(DaemonTest, ADirectoryAsConfigAtStartSaysSo) {
  fs::create_directories(config_);
  std::string error;
  EXPECT_FALSE(start(&error));
  EXPECT_EQ(error, config_.string() +
                       ": is a directory, not a regular file; a configuration must be a regular "
                       "file\n");
}

// Writes to the state database that keep failing (here SQLITE_FULL: the
// database may not grow) make /-/ready fail with the reason; one write that
// succeeds makes it ready again.
//
// The daemon writes too (history, prunes that queue follow-up deletes from
// the store thread), and any of its writes that succeeds resets the count. So
// the three failing writes are queued back to back while the store thread is
// held and the loop is inside this test's call, and the check runs while a
// fourth task holds the store thread after them.
TEST_F(DaemonTest, PersistentStateWriteFailuresMakeItNotReady) {
  write_config(tier_line("a", "a"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  ASSERT_TRUE(eventually([&] { return fetch("/-/ready").result_int() == 200; }));
  Store* store = on_loop([this] { return daemon_->store(); });
  ASSERT_NE(store, nullptr);
  store->flush();
  store->post([](sql::Db& db) { db.exec("PRAGMA max_page_count=1"); });

  // Releases the store thread on every way out of the test, a failed check included.
  struct Release {
    std::promise<void> p;
    bool done = false;
    void operator()() {
      if (!done) p.set_value();
      done = true;
    }
    ~Release() { (*this)(); }
  };
  std::promise<void> held_first;
  std::promise<void> held_after;
  Release release_first;
  Release release_after;
  std::shared_future<void> release_first_f = release_first.p.get_future().share();
  std::shared_future<void> release_after_f = release_after.p.get_future().share();
  store->post([&held_first, release_first_f](sql::Db&) {
    held_first.set_value();
    release_first_f.wait();
  });
  held_first.get_future().wait();
  on_loop([&] {
    for (int i = 0; i < 3; ++i) {
      store->post([](sql::Db& db) {
        db.exec(
            "CREATE TABLE IF NOT EXISTS filler(x); INSERT INTO filler VALUES(zeroblob(100000))");
      });
    }
    store->post([&held_after, release_after_f](sql::Db&) {
      held_after.set_value();
      release_after_f.wait();
    });
    return 0;
  });
  release_first();
  held_after.get_future().wait();

  auto r = fetch("/-/ready");
  EXPECT_EQ(r.result_int(), 503u);
  EXPECT_THAT(r.body(), HasSubstr("the last 3 writes to the state database " +
                                  (dir_ / "state" / "ckptmon.db").string() + " failed: "));
  EXPECT_THAT(r.body(), HasSubstr("full"));
  EXPECT_EQ(fetch("/-/healthy").result_int(), 200u);
  EXPECT_THAT(fetch("/metrics").body(), HasSubstr("ckptmon_store_consecutive_errors 3\n"));
  release_after();
  store->post([](sql::Db& db) { db.exec("PRAGMA max_page_count=1073741823"); });
  store->flush();
  EXPECT_EQ(fetch("/-/ready").result_int(), 200u);
}

// Reloads asked for while one runs (a storm of POST /-/reload, SIGHUPs,
// the config watch) are coalesced: they wait for the one reload after it
// and get its outcome, never "an earlier read ... has not returned yet
// (hung mount?)" without a hung mount.
TEST_F(DaemonTest, ReloadsAskedForWhileOneRunsAreCoalescedIntoTheNextOne) {
  write_config(tier_line("a", "a"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  ASSERT_TRUE(eventually([&] { return fetch("/-/ready").result_int() == 200; }));
  const auto generation = [&] { return daemon_->snapshot()->state.config->generation; };
  ASSERT_EQ(generation(), 1u);
  constexpr int kReloads = 5;
  std::vector<std::promise<Daemon::ReloadOutcome>> outcomes(kReloads);
  // All asked for in one turn of the loop: the first read cannot have
  // returned before the others are asked for.
  on_loop([&] {
    for (auto& p : outcomes) {
      daemon_->reload([&p](Daemon::ReloadOutcome out) { p.set_value(std::move(out)); });
    }
    return 0;
  });
  for (auto& p : outcomes) {
    const Daemon::ReloadOutcome out = p.get_future().get();
    EXPECT_TRUE(out.ok) << out.message;
    EXPECT_EQ(out.message, "configuration reloaded\n");
  }
  // The first reload and one more for the four that came while it ran.
  ASSERT_TRUE(eventually([&] { return generation() >= 3; }));
  EXPECT_EQ(generation(), 3u);
}

TEST_F(DaemonTest, AConfigThatCannotBeLoadedAtStartIsAnError) {
  write_config("  - {name: a, path: relative/path, role: rapid}\n");
  std::string error;
  EXPECT_FALSE(start(&error));
  EXPECT_THAT(error, HasSubstr(config_.string() + ":"));
  EXPECT_THAT(error, HasSubstr("tiers[0].path"));
}

TEST_F(DaemonTest, AQueryValueThatIsNotUtf8IsA400WithAJsonError) {
  write_config(tier_line("a", "a"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  for (const char* path : {"/api/v1/checkpoints?state=%FF", "/api/v1/findings?kind=%FF",
                           "/api/v1/events/summary?top=%FF"}) {
    auto r = fetch(path);
    EXPECT_EQ(r.result_int(), 400u) << path;
    auto doc = nlohmann::json::parse(r.body(), nullptr, false);
    ASSERT_TRUE(doc.is_object()) << path << ": " << r.body();
    ASSERT_TRUE(doc["error"].is_string()) << path << ": " << r.body();
    EXPECT_THAT(doc["error"].get<std::string>(), HasSubstr("\xEF\xBF\xBD")) << path;
  }
  auto error_of = [&](const std::string& path) {
    auto r = fetch(path);
    EXPECT_EQ(r.result_int(), 400u) << path;
    auto doc = nlohmann::json::parse(r.body(), nullptr, false);
    return doc.is_object() ? doc.value("error", std::string()) : r.body();
  };
  EXPECT_EQ(error_of("/api/v1/checkpoints?state=x"),
            "unknown state \"x\"; expected in_progress, committed or partial");
  EXPECT_EQ(error_of("/api/v1/findings?kind=x"),
            "unknown kind \"x\"; expected world_readable, world_writable, foreign_owner, "
            "outside_namespace, residency, unreadable, too_deep, readable_outside_project, "
            "acl_invalid, not_encrypted or cleanup_unverified");
}

TEST_F(DaemonTest, ServesTheStoredHistoryFromTheStoreThread) {
  write_config(tier_line("a", "a"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  // The first cycle samples tier a; the store writes the sample behind it.
  nlohmann::json doc;
  ASSERT_TRUE(eventually([&] {
    auto r = fetch("/api/v1/history?tier=a&since=1h&series=avail_bytes");
    if (r.result_int() != 200) return false;
    doc = nlohmann::json::parse(r.body(), nullptr, false);
    return doc.is_object() && doc["series"].size() == 1;
  }));
  EXPECT_EQ(doc["series"][0]["tier"], "a");
  EXPECT_EQ(doc["series"][0]["series"], "avail_bytes");
  ASSERT_GE(doc["series"][0]["points"].size(), 1u);
  EXPECT_GT(doc["series"][0]["points"][0][1].get<double>(), 0);
  EXPECT_EQ(doc["step_seconds"], 0);
  EXPECT_EQ(doc["resolutions"][0]["resolution"], "raw");

  auto bad = fetch("/api/v1/history?since=tomorrow");
  EXPECT_EQ(bad.result_int(), 400u);
  EXPECT_THAT(bad.body(), HasSubstr("since: expected a duration"));
  EXPECT_EQ(fetch("/api/v1/history", "POST").result_int(), 405u);
  // HEAD answers from the store thread too, with the GET's length and no body.
  RawClient c(port_);
  c.send(test_http::request("/api/v1/history?tier=a", "HEAD", ""));
  auto head = c.read_response(true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->result_int(), 200u);
}

// Issue 27 item 9: history queries ran on the store's only thread, so a
// flood of them stalled every write behind them (event ingestion 0.06 s ->
// 33-60 s). They run on query threads over read-only connections of their
// own: with the store thread held, a query is still answered.
TEST_F(DaemonTest, AHistoryQueryIsAnsweredWhileTheStoreThreadIsBusy) {
  write_config(tier_line("a", "a"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  ASSERT_TRUE(eventually([&] {
    auto r = fetch("/api/v1/history?tier=a&since=1h&series=avail_bytes");
    return r.result_int() == 200 && r.body().find("\"points\":[[") != std::string::npos;
  }));
  Store* store = on_loop([this] { return daemon_->store(); });
  std::promise<void> held;
  std::promise<void> release;
  std::shared_future<void> release_f = release.get_future().share();
  store->post([&held, release_f](sql::Db&) {
    held.set_value();
    release_f.wait();
  });
  held.get_future().wait();
  struct Releaser {
    std::promise<void>& p;
    ~Releaser() { p.set_value(); }
  } releaser{release};
  auto r = fetch("/api/v1/history?tier=a&since=1h&series=avail_bytes");
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_THAT(r.body(), HasSubstr("\"tier\":\"a\""));
}

TEST_F(DaemonTest, SelfUrlFollowsTlsAcrossReloads) {
  write_config(tier_line("a", "a"));
  test_tls::make_tls_files(dir_);
  web_config_file_ = (dir_ / "web.yml").string();
  std::ofstream(web_config_file_) << "{}\n";
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  const std::string authority = "127.0.0.1:" + std::to_string(port_);
  EXPECT_EQ(on_loop([this] { return daemon_->self_url(); }), "http://" + authority);

  std::ofstream(web_config_file_) << "tls_server_config: {cert_file: server.crt, key_file: "
                                     "server.key}\n";
  auto out = reload();
  ASSERT_TRUE(out.ok) << out.message;
  EXPECT_EQ(on_loop([this] { return daemon_->self_url(); }), "https://" + authority);

  std::ofstream(web_config_file_) << "{}\n";
  out = reload();
  ASSERT_TRUE(out.ok) << out.message;
  EXPECT_EQ(on_loop([this] { return daemon_->self_url(); }), "http://" + authority);
}

// The HTTP thread answers from the published snapshot: while the loop is
// held (as a long rules cycle or a walk's merge would hold it), scrapes and
// the snapshot's API are still answered; a route that needs the loop
// (/-/reload) is answered once the loop is free.
TEST_F(DaemonTest, ScrapesAreAnsweredWhileTheLoopIsBusy) {
  write_config(tier_line("a", "a"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  ASSERT_TRUE(eventually([&] { return fetch("/-/ready").result_int() == 200; }));

  std::promise<void> held;
  std::promise<void> release;
  auto released = release.get_future().share();
  boost::asio::post(daemon_->io(), [&held, released] {
    held.set_value();
    released.wait();
  });
  held.get_future().wait();

  auto metrics = fetch("/metrics");
  EXPECT_EQ(metrics.result_int(), 200u);
  EXPECT_THAT(metrics.body(), HasSubstr("ckpt_tier_up{tier=\"a\"} 1"));
  EXPECT_THAT(metrics.body(), HasSubstr("ckptmon_http_requests_total"));
  EXPECT_EQ(fetch("/-/ready").result_int(), 200u);
  auto tiers = fetch("/api/v1/tiers");
  EXPECT_EQ(tiers.result_int(), 200u);
  EXPECT_THAT(tiers.body(), HasSubstr("\"a\""));

  // Sent while the loop is held; answered after.
  RawClient reloader(port_);
  reloader.send(test_http::request("/-/reload", "POST", "Content-Length: 0\r\n"));
  release.set_value();
  auto reloaded = reloader.read_response();
  ASSERT_TRUE(reloaded);
  EXPECT_EQ(reloaded->result_int(), 200u);
  EXPECT_THAT(reloaded->body(), HasSubstr("configuration reloaded"));
}

TEST_F(DaemonTest, StopEndsRunWithZero) {
  write_config(tier_line("a", "a"));
  std::string error;
  ASSERT_TRUE(start(&error)) << error;
  daemon_->stop();  // from another thread than the loop
  loop_.join();
  EXPECT_EQ(exit_code_, 0);
}

}  // namespace
}  // namespace ckptmon
