#pragma once
// `ckptmon serve`: wires configuration, collectors, the worker pool, the HTTP
// server and signals together. Two threads of its own:
//  - the loop (run()): collectors' results, the rules cycle, publishing,
//    reloads, signals, timers; everything below runs there unless it says so;
//  - the HTTP thread (started by start()): the server, TLS and basic auth.
//    It answers from the last published snapshot and never waits for the
//    loop, so a rules cycle or a walk's merge does not delay a scrape. The
//    few routes that need the loop's live objects (/-/reload,
//    /api/v1/history) are posted to the loop and answered back on the HTTP
//    thread.
// stop() may be called from anywhere.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.hpp"
#include "http/http_server.hpp"
#include "http/web_security.hpp"
#include "model/state.hpp"
#include "serve/collector_runner.hpp"
#include "serve/config_loader.hpp"
#include "serve/publisher.hpp"
#include "serve/rules_cycle.hpp"
#include "serve/wake_watch.hpp"
#include "store/audit_log.hpp"
#include "store/state_lock.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"
#include "util/worker_pool.hpp"

namespace ckptmon {

// 10025: the 9100-9999 range of the Prometheus default port allocations is
// fully given away; new exporters are allocated from 10000 upward and 10025
// is not taken there (docs/operations.md).
inline constexpr const char* kDefaultListenAddress = ":10025";

struct ServeOptions {
  std::string config_file;
  std::string listen_address = kDefaultListenAddress;
  // exporter-toolkit web config (TLS, basic auth); empty: plain HTTP, no auth.
  std::string web_config_file;
  HttpLimits limits;
  // When positive, the configuration file is stat()ed this often (on a
  // worker) and reloaded when it changed: a new inode (a Kubernetes ConfigMap
  // update swaps a symlink; editors rename), size or mtime. A broken new file
  // is rejected like a SIGHUP reload: the running configuration stays.
  Duration config_watch_interval{0};
  // Deadline for reading --config.file and --web.config.file (and the
  // certificates it names), at start and at every reload.
  std::chrono::milliseconds config_read_timeout = std::chrono::seconds(10);
  bool handle_signals = true;
  // Called once the server listens, with the bound endpoint (tests, demo).
  std::function<void(const boost::asio::ip::tcp::endpoint&)> on_listening;
};

class Daemon {
 public:
  Daemon(ServeOptions opts, std::shared_ptr<const Clock> clock);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Loads the configuration and binds the listener. On failure returns false
  // and sets `error` (every config error on its own line).
  bool start(std::string* error);
  // Runs the loop until stop(). Returns the process exit code.
  int run();
  // Thread-safe.
  void stop();

  struct ReloadOutcome {
    bool ok = false;
    std::string message;
  };
  // Who asked for a reload, for the audit log: "sighup", "file_watch",
  // "http" (with the client's address and its basic-auth user), "start".
  struct ReloadTrigger {
    std::string source = "internal";
    std::string peer;
    std::string user;
  };
  // Re-reads both configuration files on a thread of their own (see
  // DeadlineReader) and calls `done` on the loop with the outcome; the loop
  // keeps serving meanwhile. A refused file keeps the running configuration.
  // Calls while a reload runs are coalesced into one reload after it, whose
  // outcome each of them gets. Loop thread.
  void reload(std::function<void(ReloadOutcome)> done, ReloadTrigger trigger);
  void reload(std::function<void(ReloadOutcome)> done = {}) {
    reload(std::move(done), ReloadTrigger{});
  }

  boost::asio::io_context& io() { return io_; }
  // The last published snapshot; thread-safe.
  std::shared_ptr<const Snapshot> snapshot() const;
  // The state database; null before start(). Loop thread (and tests).
  Store* store() const { return store_.get(); }
  // Where the server can be reached, for links in pushed alerts (generatorURL):
  // https:// while TLS is on, else http://, then host:port. Thread-safe.
  std::string self_url() const;

  // API queries of the state database (history, report): threads of their
  // own, how many history queries may run at once (more get 503 with
  // Retry-After), and the deadline a query is stopped at (SQLITE_INTERRUPT).
  static constexpr std::size_t kQueryThreads = 2;
  static constexpr int kQueriesInFlight = 4;
  static constexpr std::chrono::milliseconds kQueryDeadline = std::chrono::seconds(10);

 private:
  // Both configuration files, read and checked; errors of either in config.errors.
  struct LoadedConfig {
    LoadResult config;
    std::optional<WebSecurity::Prepared> web;
  };
  static LoadedConfig read_configs(const std::string& config_file,
                                   const std::string& web_config_file);
  struct ReloadWaiter {
    ReloadTrigger trigger;
    std::function<void(ReloadOutcome)> done;  // may be empty
  };
  void start_reload(std::vector<ReloadWaiter> waiters);
  ReloadOutcome finish_reload(std::optional<LoadedConfig> loaded, const std::string& error);
  // One audit record per trigger of a load (a start or a reload).
  void audit_config_load(const std::vector<ReloadWaiter>& waiters, const ReloadOutcome& out,
                         std::size_t errors);
  void apply_config(const std::shared_ptr<const Config>& cfg);
  void load_catalog();
  void persist_changes();
  // Findings opened and closed since the last publish, to the audit log.
  void audit_findings();
  static constexpr std::size_t kMaxAuditPathBytes = 1024;
  void schedule_watchdog();
  void schedule_config_watch();
  void wait_signals();
  void changed();
  void publish();
  void add_routes();
  // A route whose handler needs the loop's objects: it runs on the loop, and
  // its answer is carried back to the HTTP thread.
  void route_on_loop(std::string path, std::vector<std::string> methods, AsyncHttpHandler handler);
  // Hands `r` to `respond` on the HTTP thread (respond holds the connection,
  // a HTTP-thread object: it is moved there, never dropped elsewhere).
  void answer_on_http(HttpRespond respond, HttpResponse r);
  // Closes the server and ends the HTTP thread; any thread. Idempotent.
  void stop_http();
  // The families read at scrape time (process, HTTP, store, workers), text.
  // HTTP thread: `snap` is the snapshot being served.
  std::string render_live(const Snapshot* snap) const;

  ServeOptions opts_;
  std::shared_ptr<const Clock> clock_;
  // The audit log (audit: in the configuration); any thread may record.
  std::unique_ptr<AuditLog> audit_;
  FindingsAudit findings_audit_;         // loop thread: the walks' findings
  FindingsAudit estate_findings_audit_;  // loop thread: the rules' (residency of copies)
  // Declared before io_ so that it outlives it: answers queued on the loop
  // hold connections whose sockets belong to http_io_.
  boost::asio::io_context http_io_;
  boost::asio::io_context io_;
  std::unique_ptr<WorkerPool> pool_;
  // GET /api/v1/history and /api/v1/report: their own threads, so queries
  // cannot take the collectors' workers (worker_threads: 1) or the store's.
  std::unique_ptr<WorkerPool> query_pool_ = std::make_unique<WorkerPool>(kQueryThreads, 0);
  std::shared_ptr<std::atomic<int>> queries_in_flight_ = std::make_shared<std::atomic<int>>(0);
  std::atomic<std::uint64_t> queries_refused_{0};
  // Held from start() until the daemon is gone (declared before the store so
  // that it outlives it).
  std::unique_ptr<StateDirLock> state_lock_;
  // Shared with collectors that commit through it (manifest_tail): a job still
  // blocked on a hung mount at shutdown keeps it alive until it returns.
  std::shared_ptr<Store> store_;
  State state_;
  std::unique_ptr<CollectorRunner> runner_;
  std::unique_ptr<RulesCycle> rules_;
  std::string self_authority_;    // host:port the server listens on (set by start(), then constant)
  std::atomic<bool> tls_{false};  // whether the web config in force has TLS (self_url())
  std::vector<std::unique_ptr<WakeWatch>> wakes_;  // collectors that ask to run early (inotify)
  HttpServer server_;                              // HTTP thread
  std::unique_ptr<WebSecurity> web_;               // guards server_; goes before it. HTTP thread
  DeadlineReader<LoadedConfig> config_reader_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer watchdog_timer_;
  boost::asio::steady_timer config_watch_timer_;
  std::string config_identity_;  // the config file's stat() as last seen
  // A reload is running; requests meanwhile wait in reload_waiters_ for the
  // one reload that follows it (reload_again_).
  bool reloading_ = false;
  bool reload_again_ = false;
  std::vector<ReloadWaiter> reload_waiters_;
  // Where work that returns late from a worker posts its result (a
  // config-watch stat() to the loop; a GET /api/v1/report or
  // /api/v1/history answer to the HTTP thread, report_inbox_); closed at
  // destruction (the collector runner's pattern).
  struct Inbox {
    std::mutex mu;
    boost::asio::io_context* io = nullptr;
  };
  std::shared_ptr<Inbox> watch_inbox_ = std::make_shared<Inbox>();
  std::shared_ptr<Inbox> report_inbox_ = std::make_shared<Inbox>();
  SnapshotPublisher publisher_;
  std::shared_ptr<const Snapshot> snapshot_;  // loop thread
  // What the HTTP thread serves: snapshot_ as last published.
  mutable std::mutex served_mu_;
  std::shared_ptr<const Snapshot> served_;
  // HTTP thread: the served snapshot's metrics_text compressed once, for
  // every scrape that accepts gzip; gzip_of_ is the snapshot it was made from.
  std::shared_ptr<const Snapshot> gzip_of_;
  std::shared_ptr<const std::string> gzip_text_;
  // HTTP thread. The GET /api/v1/report being built (one at a time): its
  // connection, answered when the worker is done.
  HttpRespond report_respond_;
  bool publish_pending_ = false;
  // The least time between two trims of the free heap (release_free_heap),
  // and the monotonic time of the last one (negative: none yet).
  static constexpr double kTrimEverySeconds = 10;
  double last_trim_ = -1;
  std::atomic<bool> ready_{false};
  bool ready_on_publish_ = false;  // the first collection reported; the next publish serves it
  bool stopping_ = false;
  double started_at_ = 0;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> http_work_{
      http_io_.get_executor()};
  std::thread http_thread_;

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* reload_ok_ = nullptr;
  prometheus::Gauge* reload_ts_ = nullptr;
  prometheus::Family<prometheus::Counter>* http_requests_ = nullptr;
};

}  // namespace ckptmon
