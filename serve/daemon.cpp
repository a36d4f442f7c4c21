#include "serve/daemon.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <csignal>

#include <prometheus/text_serializer.h>
#include <boost/asio/ip/host_name.hpp>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "api/alerts_wire.hpp"
#include "api/report.hpp"
#include "api/web.hpp"
#include "config/config_warnings.hpp"
#include "exporter/metrics.hpp"
#include "http/gzip.hpp"
#include "http/http_client.hpp"
#include "http/web_security.hpp"
#include "serve/malloc_tuning.hpp"
#include "serve/systemd_notify.hpp"
#include "store/drill_ledger.hpp"
#include "store/event_journal.hpp"
#include "store/verification_ledger.hpp"

#include "util/label.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace ckptmon {

namespace {

// The configuration file as stat() sees it through symlinks: device, inode,
// size and mtime, or the errno when it cannot be stat()ed.
std::string config_file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "errno " + std::to_string(errno);
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

// config_warnings(), at start and on each reload: they do not stop either.
void log_config_warnings(const Config& cfg) {
  for (const std::string& w : config_warnings(cfg)) log::warn("configuration", {{"warning", w}});
}

}  // namespace

namespace asio = boost::asio;

namespace {

using QueryRenderer = bool (*)(const Snapshot&, const std::map<std::string, std::string>&,
                               std::string* body, std::string* error);

// A JSON view that may refuse its query: 200 with the body, or 400 with
// {"error": ...}. The error echoes the user's value, which need not be UTF-8:
// json_quote replaces bad bytes where nlohmann's dump() would throw.
HttpResponse query_response(QueryRenderer render, const Snapshot& snap, const HttpRequest& req) {
  std::string body;
  std::string error;
  if (!render(snap, req.query, &body, &error)) {
    return HttpResponse::json(400, "{\"error\":" + json_quote(error) + "}");
  }
  return HttpResponse::json(200, std::move(body));
}

// GET /api/v1/history's answer, on a query thread: a read-only connection
// of its own, stopped at Daemon::kQueryDeadline.
HttpResponse answer_history(const std::string& state_dir, const HistoryQuery& q, double now,
                            const HistoryPolicy& policy) {
  std::string err;
  auto db = open_state_readonly(state_dir, &err);
  if (!db) return HttpResponse::json(500, "{\"error\":" + json_quote(err) + "}");
  db->set_deadline(std::chrono::steady_clock::now() + Daemon::kQueryDeadline);
  try {
    const HistoryResult result = query_history(*db, q);
    if (result.too_many_points) {
      return HttpResponse::json(
          400, "{\"error\":" +
                   json_quote("the answer would hold " + std::to_string(*result.too_many_points) +
                              " points, more than the limit of " + std::to_string(q.max_points) +
                              "; narrow tier=, job= or series=, shorten the range or raise "
                              "step=") +
                   "}");
    }
    return HttpResponse::json(200, render_history_json(q, result, now, policy));
  } catch (const std::exception& e) {
    if (db->error_code() == SQLITE_INTERRUPT) {
      return HttpResponse::json(
          503, "{\"error\":" +
                   json_quote("the query ran past " +
                              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                 Daemon::kQueryDeadline)
                                                 .count()) +
                              "s and was stopped; narrow tier=, job= or series=, or shorten "
                              "the range") +
                   "}");
    }
    return HttpResponse::json(
        500, "{\"error\":" + json_quote(std::string("state database: ") + e.what()) + "}");
  }
}

}  // namespace

Daemon::Daemon(ServeOptions opts, std::shared_ptr<const Clock> clock)
    : opts_(std::move(opts)),
      clock_(std::move(clock)),
      server_(http_io_, opts_.limits),
      web_(std::make_unique<WebSecurity>(http_io_, server_, opts_.web_config_file)),
      config_reader_(io_, "the configuration", opts_.config_read_timeout),
      signals_(io_),
      watchdog_timer_(io_),
      config_watch_timer_(io_),
      registry_(std::make_shared<prometheus::Registry>()) {
  audit_ = std::make_unique<AuditLog>(clock_);
  const RegistryMetrics m = register_self_metrics(*registry_);
  reload_ok_ = m.reload_ok;
  reload_ts_ = m.reload_ts;
  http_requests_ = m.http_requests;
  server_.set_observer([this](const std::string& route, unsigned status) {
    http_requests_->Add({{"handler", route}, {"code", std::to_string(status)}}).Increment();
  });
  server_.set_access_observer([this](const HttpAccess& a) {
    if (!audit_->http_access()) return;
    // The path without its query string: a query may carry a token.
    std::string path = display_name(a.request.path);
    if (path.size() > kMaxAuditPathBytes) path.resize(kMaxAuditPathBytes);
    audit_->record("http_request", {{"peer", a.request.remote},
                                    {"user", a.request.user},
                                    {"method", a.request.method},
                                    {"path", path},
                                    {"status", a.status},
                                    {"bytes", a.bytes},
                                    {"duration_seconds", a.seconds}});
  });
}

Daemon::~Daemon() {
  stop_http();
  {
    std::lock_guard lock(watch_inbox_->mu);
    watch_inbox_->io = nullptr;
  }
  {
    std::lock_guard lock(report_inbox_->mu);
    report_inbox_->io = nullptr;
  }
  server_.close();  // the HTTP thread has ended: this thread owns the server now
  wakes_.clear();
  // The runner closes its inbox first, so jobs still blocked on a hung mount
  // drop their results; then the pool detaches those threads.
  runner_.reset();
  pool_.reset();
  query_pool_.reset();
  rules_.reset();  // before the store: it queues history writes
  store_.reset();  // finishes queued writes
}

Daemon::LoadedConfig Daemon::read_configs(const std::string& config_file,
                                          const std::string& web_config_file) {
  LoadedConfig out;
  out.config = load_config_file(config_file);
  out.web = WebSecurity::prepare_file(web_config_file, &out.config.errors);
  return out;
}

bool Daemon::start(std::string* error) {
  started_at_ = clock_->now();
  std::string read_error;
  auto loaded = config_reader_.load_now(
      [c = opts_.config_file, w = opts_.web_config_file] { return read_configs(c, w); },
      &read_error);
  if (!loaded) {
    *error = opts_.config_file + ": " + read_error + "\n";
    return false;
  }
  if (!loaded->config.config || !loaded->web) {
    std::string msg;
    for (const auto& e : loaded->config.errors) msg += e.to_string() + "\n";
    *error = msg;
    return false;
  }
  auto web = std::move(loaded->web);
  tls_ = web->tls != nullptr;
  stamp_generation(*loaded->config.config, nullptr);
  auto cfg = std::make_shared<const Config>(std::move(*loaded->config.config));
  log_config_warnings(*cfg);
  state_lock_ = StateDirLock::acquire(cfg->global.state_dir, error);
  if (!state_lock_) return false;
  store_ = Store::open(cfg->global.state_dir, error);
  if (!store_) return false;
  if (store_->rebuilt() > 0) {
    log::warn(
        "state database rebuilt: catalog, event-log positions and history start empty; "
        "every tier is walked and every event log read again from its start",
        {{"db", store_->path()}, {"corrupt_copy", store_->moved_aside()}});
  }
  pool_ = std::make_unique<WorkerPool>(static_cast<std::size_t>(cfg->global.worker_threads));
  runner_ = std::make_unique<CollectorRunner>(io_, *pool_, state_, clock_, [this] { changed(); });
  // The store implements the collectors' persistence ports.
  runner_->set_collectors(make_collectors(CollectorEnv{
      clock_, make_event_journal(store_), make_verification_ledger(store_),
      [](const HttpClientConfig& c) { return make_http_fetch(c); }, make_drill_ledger(store_)}));
  for (const auto& c : runner_->collectors()) {
    auto w = std::make_unique<WakeWatch>(io_, c, *runner_, state_);
    if (w->start()) wakes_.push_back(std::move(w));
  }
  rules_ = std::make_unique<RulesCycle>(
      io_, clock_, store_.get(), state_, [this] { return ready_.load(); }, [this] { changed(); });

  // Listen before the configuration is applied: the rules need the bound
  // address for the generatorURL of pushed alerts. Nothing is served before run().
  add_routes();
  web_->apply(std::move(*web));
  asio::ip::tcp::endpoint bound;
  if (!server_.listen(opts_.listen_address, &bound, error)) return false;
  log::info("listening", {{"address", bound.address().to_string()},
                          {"port", static_cast<int>(bound.port())},
                          {"config", opts_.config_file}});
  {
    // A wildcard address is no place to click on: name the host instead.
    boost::system::error_code ec;
    std::string host = bound.address().to_string();
    if (bound.address().is_unspecified()) {
      std::string name = asio::ip::host_name(ec);
      host = ec || name.empty() ? "localhost" : name;
    } else if (bound.address().is_v6()) {
      host = "[" + host + "]";
    }
    self_authority_ = host + ":" + std::to_string(bound.port());
  }
  if (opts_.on_listening) opts_.on_listening(bound);

  apply_config(cfg);
  audit_config_load({ReloadWaiter{ReloadTrigger{"start", {}, {}}, {}}},
                    ReloadOutcome{true, "configuration loaded\n"}, 0);
  load_catalog();
  rules_->load();
  reload_ok_->Set(1);
  reload_ts_->Set(clock_->now());
  if (opts_.handle_signals) wait_signals();
  publish();
  runner_->start();
  schedule_watchdog();
  report_inbox_->io = &http_io_;
  if (opts_.config_watch_interval.count() > 0) {
    watch_inbox_->io = &io_;
    config_identity_ = config_file_identity(opts_.config_file);
    schedule_config_watch();
  }
  // From here on the server and web_ belong to the HTTP thread.
  http_thread_ = std::thread([this] {
    try {
      http_io_.run();
    } catch (const std::exception& e) {
      log::error("the HTTP thread stopped", {{"err", e.what()}});
    }
  });
  systemd::ready();
  return true;
}

int Daemon::run() {
  io_.run();
  return 0;
}

void Daemon::stop() {
  asio::post(io_, [this] {
    if (stopping_) return;
    stopping_ = true;
    log::info("stopping");
    systemd::stopping();
    stop_http();
    signals_.cancel();
    runner_->stop();
    rules_->stop();
    for (auto& w : wakes_) w->stop();
    watchdog_timer_.cancel();
    config_watch_timer_.cancel();
    io_.stop();
  });
}

void Daemon::stop_http() {
  asio::post(http_io_, [this] {
    server_.close();
    http_work_.reset();
    http_io_.stop();
  });
  // The HTTP thread never waits for the loop, so the loop may join it.
  if (http_thread_.joinable() && std::this_thread::get_id() != http_thread_.get_id()) {
    http_thread_.join();
  }
}

std::shared_ptr<const Snapshot> Daemon::snapshot() const {
  std::lock_guard lock(served_mu_);
  return served_;
}

void Daemon::load_catalog() {
  std::map<std::string, std::vector<Checkpoint>> stored;
  try {
    stored = store_->load_catalog();
  } catch (const std::exception& e) {
    log::error("cannot read the stored catalog; starting empty", {{"err", e.what()}});
    return;
  }
  std::size_t n = 0;
  for (auto& [tier, checkpoints] : stored) {
    if (!state_.tiers.contains(tier)) continue;
    TierCatalog& cat = state_.catalogs[tier].edit();
    for (const auto& c : checkpoints) cat.jobs.insert(c.job);
    n += checkpoints.size();
    cat.checkpoints = std::move(checkpoints);
    cat.scanned = true;
  }
  log::info("catalog loaded", {{"db", store_->path()}, {"checkpoints", static_cast<int>(n)}});
}

void Daemon::persist_changes() {
  const double now = clock_->now();
  for (auto& [tier, shared] : state_.catalogs) {
    if (shared->changed.empty() && shared->removed.empty()) continue;
    TierCatalog& cat = shared.edit();
    if (store_) store_->save_catalog(tier, std::move(cat.changed), std::move(cat.removed), now);
    cat.changed.clear();
    cat.removed.clear();
  }
}

void Daemon::apply_config(const std::shared_ptr<const Config>& cfg) {
  state_.apply_config(cfg);
  for (auto& c : runner_->collectors()) c->configure(*cfg);
  rules_->configure(*cfg, self_url());
  rules_->start(cfg->global.scan_interval);
  changed();
}

std::string Daemon::self_url() const { return (tls_ ? "https://" : "http://") + self_authority_; }

void Daemon::reload(std::function<void(ReloadOutcome)> done, ReloadTrigger trigger) {
  if (reloading_) {
    // Coalesced: every request that comes while a reload runs joins the one
    // reload that follows it (which reads the files as they are after the
    // request came), and gets its outcome.
    reload_again_ = true;
    reload_waiters_.push_back(ReloadWaiter{std::move(trigger), std::move(done)});
    return;
  }
  std::vector<ReloadWaiter> waiters;
  waiters.push_back(ReloadWaiter{std::move(trigger), std::move(done)});
  start_reload(std::move(waiters));
}

void Daemon::audit_config_load(const std::vector<ReloadWaiter>& waiters, const ReloadOutcome& out,
                               std::size_t errors) {
  // Which settings are in force after this load: a rejected reload keeps
  // the running ones, so the record goes to the file they name.
  audit_->configure(state_.config ? state_.config->audit : AuditConfig{});
  for (const auto& w : waiters) {
    nlohmann::json j = {{"source", w.trigger.source},
                        {"outcome", out.ok ? "applied" : "rejected"},
                        {"config_file", opts_.config_file},
                        {"web_config_file", opts_.web_config_file},
                        {"errors", errors},
                        {"coalesced", waiters.size() > 1}};
    if (state_.config) j["generation"] = state_.config->generation;
    if (w.trigger.source == "http") {
      j["peer"] = w.trigger.peer;
      j["user"] = w.trigger.user;
    }
    audit_->record("config_load", std::move(j));
  }
}

void Daemon::start_reload(std::vector<ReloadWaiter> waiters) {
  reloading_ = true;
  systemd::reloading();
  // Certificates rotated on disk are re-read too.
  config_reader_.load(
      [c = opts_.config_file, w = opts_.web_config_file] { return read_configs(c, w); },
      [this, waiters = std::move(waiters)](std::optional<LoadedConfig> loaded,
                                           const std::string& error) mutable {
        const std::size_t errors = !loaded ? 1 : loaded->config.errors.size();
        auto out = finish_reload(std::move(loaded), error);
        reloading_ = false;
        if (!stopping_) audit_config_load(waiters, out, errors);
        for (auto& w : waiters) {
          if (w.done) w.done(out);
        }
        if (!reload_again_) return;
        reload_again_ = false;
        auto next = std::move(reload_waiters_);
        reload_waiters_.clear();
        if (stopping_) {
          for (auto& w : next) {
            if (w.done) w.done(ReloadOutcome{false, "stopping\n"});
          }
          return;
        }
        start_reload(std::move(next));
      });
}

Daemon::ReloadOutcome Daemon::finish_reload(std::optional<LoadedConfig> read,
                                            const std::string& read_error) {
  ReloadOutcome out;
  if (stopping_) {
    out.message = "stopping\n";
    return out;
  }
  if (!read) {
    reload_ok_->Set(0);
    const std::string err = opts_.config_file + ": " + read_error;
    log::error("config reload rejected; keeping the running configuration", {{"err", err}});
    out.message = err + "\n";
    systemd::ready();
    return out;
  }
  LoadResult& loaded = read->config;
  auto& web = read->web;
  if (!loaded.config || !web) {
    reload_ok_->Set(0);
    for (const auto& e : loaded.errors) {
      log::error("config reload rejected; keeping the running configuration",
                 {{"err", e.to_string()}});
      out.message += e.to_string() + "\n";
    }
    systemd::ready();
    return out;
  }
  // A new generation: results of jobs prepared for a tier this reload
  // re-points are dropped (TierConfig::generation).
  stamp_generation(*loaded.config, state_.config.get());
  auto cfg = std::make_shared<const Config>(std::move(*loaded.config));
  log_config_warnings(*cfg);
  if (cfg->global.state_dir != state_.config->global.state_dir ||
      cfg->global.worker_threads != state_.config->global.worker_threads) {
    log::warn("state_dir and worker_threads take effect at the next restart");
  }
  // The web config first: whether TLS is on decides the scheme of self_url(),
  // which apply_config hands to the rules. The server takes it on its own
  // thread, for connections accepted from then on.
  tls_ = web->tls != nullptr;
  asio::post(http_io_, [this, w = std::make_shared<WebSecurity::Prepared>(std::move(*web))] {
    web_->apply(std::move(*w));
  });
  apply_config(cfg);
  reload_ok_->Set(1);
  reload_ts_->Set(clock_->now());
  log::info("configuration reloaded",
            {{"file", opts_.config_file}, {"tiers", static_cast<int>(cfg->tiers.size())}});
  // Probe new and re-pointed tiers now rather than at the end of the current
  // interval, and pick up changed intervals; the rest keep their schedule.
  runner_->reschedule();
  systemd::ready();
  out.ok = true;
  out.message = "configuration reloaded\n";
  return out;
}

void Daemon::schedule_watchdog() {
  auto interval = systemd::watchdog_interval();
  if (!interval) return;
  systemd::watchdog();
  // Ping at half the interval; the ping comes from the loop, so a blocked
  // loop stops the pings and systemd restarts the daemon.
  watchdog_timer_.expires_after(*interval / 2);
  watchdog_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    schedule_watchdog();
  });
}

void Daemon::schedule_config_watch() {
  config_watch_timer_.expires_after(opts_.config_watch_interval);
  config_watch_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    // stat() on a worker: the file may sit on a slow or hung mount.
    pool_->post([this, inbox = watch_inbox_, path = opts_.config_file] {
      std::string id = config_file_identity(path);
      std::lock_guard lock(inbox->mu);
      if (inbox->io == nullptr) return;  // the daemon is gone
      asio::post(*inbox->io, [this, inbox, id = std::move(id)] {
        if (inbox->io == nullptr || stopping_) return;
        if (id != config_identity_) {
          config_identity_ = id;
          log::info("configuration file changed, reloading", {{"file", opts_.config_file}});
          reload({}, ReloadTrigger{"file_watch", {}, {}});
        }
        schedule_config_watch();
      });
    });
  });
}

void Daemon::wait_signals() {
  signals_.add(SIGHUP);
  signals_.add(SIGTERM);
  signals_.add(SIGINT);
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      log::info("SIGHUP received, reloading configuration");
      reload({}, ReloadTrigger{"sighup", {}, {}});
      wait_signals();
      return;
    }
    log::info("signal received", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    stop();
  });
}

void Daemon::changed() {
  if (!stopping_) {
    for (auto& w : wakes_) w->poke();
  }
  // Ready once the first collection's figures are served: the flag is set
  // by the publish that serves them, so a 200 from /-/ready never answers
  // ahead of the metrics it vouches for.
  if (!ready_ && runner_ && runner_->all_reported()) ready_on_publish_ = true;
  if (publish_pending_) return;
  publish_pending_ = true;
  asio::post(io_, [this] { publish(); });
}

void Daemon::publish() {
  publish_pending_ = false;
  // A publish follows each collector report, whose result (a walk's
  // checkpoints, findings, listings) was freed just before: what it leaves
  // free in the heap goes back to the kernel here rather than staying
  // resident until the next walk reuses it. At most every kTrimEverySeconds:
  // with a short scan_interval the pages given back would be faulted in
  // again by the next walk a second later.
  const double mono = clock_->monotonic();
  if (last_trim_ < 0 || mono - last_trim_ >= kTrimEverySeconds) {
    last_trim_ = mono;
    release_free_heap();
  }
  persist_changes();
  audit_findings();
  snapshot_ = publisher_.publish(state_, rules_ ? rules_->output() : nullptr, clock_->now());
  {
    std::lock_guard lock(served_mu_);
    served_ = snapshot_;
  }
  if (ready_on_publish_) {
    ready_on_publish_ = false;
    ready_ = true;
    log::info("first collection finished; ready");
    // The first figures as soon as there is something to judge; then every interval.
    if (rules_) rules_->trigger();
  }
}

void Daemon::audit_findings() {
  if (!audit_->enabled()) {
    findings_audit_ = FindingsAudit{};  // enabled later: what is open then is news
    estate_findings_audit_ = FindingsAudit{};
    return;
  }
  std::map<std::string, std::shared_ptr<const std::vector<AccessFinding>>> findings;
  for (const auto& [name, cat] : state_.catalogs) {
    if (!state_.tiers.contains(name)) continue;
    findings[name] = cat->scanned ? cat->findings : nullptr;
  }
  findings_audit_.update(findings, *audit_);
  // The estate's findings, from the last rules cycle (a list seen before costs nothing).
  if (const auto out = rules_ ? rules_->output() : nullptr) {
    std::map<std::string, std::shared_ptr<const std::vector<AccessFinding>>> estate;
    for (const auto& [name, list] : out->estate_findings) {
      if (state_.tiers.contains(name)) estate[name] = list;
    }
    estate_findings_audit_.update(estate, *audit_);
  }
}

std::string Daemon::render_live(const Snapshot* snap) const {
  auto families = registry_->Collect();
  const State* state = snap ? &snap->state : nullptr;
  auto live = process_families(state && state->config ? state->config->global.proc_path : "/proc",
                               started_at_);
  HttpFigures http;
  http.connections = server_.connections();
  http.rejected = server_.rejected_connections();
  http.rejected_per_peer = server_.rejected_per_peer();
  http.idle_closed = server_.idle_closed();
  http.slow_heads_closed = server_.slow_heads_closed();
  http.history_queries_refused = queries_refused_.load();
  web_->add_figures(&http);
  http_connection_families(http, live);
  http_security_families(http, live);
  audit_families(audit_->stats(), audit_->enabled(), live);
  if (store_) {
    StoreFigures st;
    st.errors = store_->errors();
    st.transactions = store_->transactions();
    st.rebuilt = store_->rebuilt();
    st.consecutive_errors = store_->consecutive_errors();
    store_families(st, live);
  }
  if (state && state->integrity_progress) {
    integrity_live_families(*state->integrity_progress, clock_->now(), live);
  }
  if (pool_) {
    WorkerFigures w;
    w.busy = pool_->busy();
    w.threads = pool_->threads();
    w.stuck = pool_->stuck();
    worker_families(w, live);
  }
  families.insert(families.end(), std::make_move_iterator(live.begin()),
                  std::make_move_iterator(live.end()));
  return serialize(families);
}

void Daemon::route_on_loop(std::string path, std::vector<std::string> methods,
                           AsyncHttpHandler handler) {
  server_.route_async(
      std::move(path), std::move(methods),
      [this, handler = std::move(handler)](const HttpRequest& req, HttpRespond respond) {
        asio::post(io_, [this, &handler, req, respond = std::move(respond)]() mutable {
          handler(req, [this, respond = std::move(respond)](HttpResponse r) mutable {
            answer_on_http(std::move(respond), std::move(r));
          });
        });
      });
}

void Daemon::answer_on_http(HttpRespond respond, HttpResponse r) {
  asio::post(http_io_,
             [respond = std::move(respond), r = std::move(r)]() mutable { respond(std::move(r)); });
}

// Every handler below runs on the HTTP thread and reads the served snapshot
// (immutable, shared with the loop), except those added by route_on_loop.
void Daemon::add_routes() {
  server_.route("/metrics", {"GET"}, [this](const HttpRequest& req) {
    const auto snap = snapshot();
    HttpResponse r;
    r.content_type = kMetricsContentType;
    r.headers.emplace_back("Vary", "Accept-Encoding");
    // The published part is sent from where it lies (shared, not copied);
    // the few live families are rendered per request and follow it.
    if (!req.accepts_gzip) {
      if (snap) r.shared_body = std::shared_ptr<const std::string>(snap, &snap->metrics_text);
      r.body = render_live(snap.get());
      return r;
    }
    // Compressed once per snapshot; the live families follow as a second
    // gzip member (readers decode a + b as the concatenated text, Go's and
    // Python's gzip included).
    if (gzip_of_ != snap) {
      gzip_text_ = std::make_shared<const std::string>(
          gzip_compress(snap ? snap->metrics_text : std::string()));
      gzip_of_ = snap;
    }
    r.shared_body = gzip_text_;
    r.body = gzip_compress(render_live(snap.get()));
    r.headers.emplace_back("Content-Encoding", "gzip");
    return r;
  });
  server_.route("/-/healthy", {"GET"}, [](const HttpRequest&) {
    return HttpResponse::text(200, "ckptmon is Healthy.\n");
  });
  server_.route("/-/ready", {"GET"}, [this](const HttpRequest&) {
    if (!ready_) return HttpResponse::text(503, "ckptmon is not ready: first collection running\n");
    if (store_ && store_->write_failing()) {
      return HttpResponse::text(503, "ckptmon is not ready: the last " +
                                         std::to_string(store_->consecutive_errors()) +
                                         " writes to the state database " + store_->path() +
                                         " failed: " + store_->last_error() + "\n");
    }
    return HttpResponse::text(200, "ckptmon is Ready.\n");
  });
  route_on_loop("/-/reload", {"POST", "PUT"}, [this](const HttpRequest& req, HttpRespond reply) {
    reload(
        [reply = std::move(reply)](const ReloadOutcome& out) mutable {
          reply(HttpResponse::text(out.ok ? 200 : 500, out.message));
        },
        ReloadTrigger{"http", req.remote, req.user});
  });
  server_.route("/", {"GET"}, [this](const HttpRequest&) {
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = render_landing_page(*snapshot(), ready_, reload_ok_->Value() == 1);
    return r;
  });
  server_.route("/api/v1/tiers", {"GET"}, [this](const HttpRequest&) {
    return HttpResponse::json(200, render_tiers_json(*snapshot()));
  });
  server_.route("/api/v1/checkpoints", {"GET"}, [this](const HttpRequest& req) {
    return query_response(render_checkpoints_json, *snapshot(), req);
  });
  server_.route("/api/v1/versions", {"GET"}, [this](const HttpRequest& req) {
    return query_response(render_versions_json, *snapshot(), req);
  });
  server_.route("/api/v1/findings", {"GET"}, [this](const HttpRequest& req) {
    return query_response(render_findings_json, *snapshot(), req);
  });
  server_.route("/api/v1/jobs", {"GET"}, [this](const HttpRequest&) {
    return HttpResponse::json(200, render_jobs_json(*snapshot()));
  });
  server_.route("/api/v1/alerts", {"GET"}, [this](const HttpRequest&) {
    const auto snap = snapshot();
    return HttpResponse::json(200, snap->rules ? snap->rules->alerts_json : alerts_json({}));
  });
  server_.route("/api/v1/events/summary", {"GET"}, [this](const HttpRequest& req) {
    return query_response(render_events_summary_json, *snapshot(), req);
  });
  server_.route("/api/v1/plan", {"GET"}, [this](const HttpRequest&) {
    const auto snap = snapshot();
    if (!snap->rules) {
      return HttpResponse::json(
          503, "{\"error\":\"rules not evaluated yet: first collection running\"}");
    }
    return HttpResponse::json(200, snap->rules->plan_json);
  });
  // Stored history: parsed on the loop (the rules' history policy); the
  // query runs on a query thread over a read-only connection of its own (a
  // WAL reader), never on the store's writer thread nor on the collectors'
  // workers, so a flood of queries cannot stall event ingestion. At most
  // kQueriesInFlight at once (more get 503), each stopped at kQueryDeadline.
  route_on_loop("/api/v1/history", {"GET"}, [this](const HttpRequest& req, HttpRespond respond) {
    const double now = clock_->now();
    const HistoryPolicy& policy = rules_->policy().history;
    HistoryQuery q;
    std::string error;
    if (!parse_history_query(req.query, now, policy, &q, &error)) {
      respond(HttpResponse::json(400, "{\"error\":" + json_quote(error) + "}"));
      return;
    }
    if (queries_in_flight_->load() >= kQueriesInFlight) {
      ++queries_refused_;
      HttpResponse busy = HttpResponse::json(
          503, "{\"error\":\"" + std::to_string(kQueriesInFlight) +
                   " history queries are running; try again when one is done\"}");
      busy.headers.emplace_back("Retry-After", "1");
      respond(std::move(busy));
      return;
    }
    ++*queries_in_flight_;
    query_pool_->post([q, now, policy, respond = std::move(respond), inbox = report_inbox_,
                       in_flight = queries_in_flight_,
                       dir = snapshot_->state.config->global.state_dir]() mutable {
      HttpResponse r = answer_history(dir, q, now, policy);
      --*in_flight;
      std::lock_guard lock(inbox->mu);
      if (inbox->io == nullptr) return;  // the daemon is gone
      respond(std::move(r));             // carries it to the HTTP thread (route_on_loop)
    });
  });
  // The report of the own state database (tools/review/report_command.hpp), built
  // on a worker over a read-only connection of its own (a WAL reader: the
  // store thread goes on writing); one at a time.
  server_.route_async(
      "/api/v1/report", {"GET"}, [this](const HttpRequest& req, HttpRespond respond) {
        const double now = clock_->now();
        ReportApiRequest q;
        std::string error;
        if (!parse_report_query(req.query, now, &q, &error)) {
          respond(HttpResponse::json(400, "{\"error\":" + json_quote(error) + "}"));
          return;
        }
        const auto snap = snapshot();
        const auto& rules = snap->rules;
        if (!rules || report_respond_) {
          respond(HttpResponse::json(
              503, std::string("{\"error\":\"") +
                       (rules ? "a report is being built; try again when it is done"
                              : "rules not evaluated yet: first collection running") +
                       "\"}"));
          return;
        }
        // The connection waits here, on the HTTP thread, never on the worker.
        report_respond_ = std::move(respond);
        query_pool_->post([this, inbox = report_inbox_, q = std::move(q), plan = rules->plan_inputs,
                           dir = snap->state.config->global.state_dir, cfg = snap->state.config,
                           source = "ckptmon " + self_url()]() mutable {
          ReportApiAnswer a;
          std::string err;
          if (auto db = open_state_readonly(dir, &err)) {
            a = report_api_answer(*db, q, plan, source, &cfg->tiers);
          } else {
            a = {500, "{\"error\":" + json_quote(err) + "}"};
          }
          std::lock_guard lock(inbox->mu);
          if (inbox->io == nullptr) return;  // the daemon is gone
          asio::post(*inbox->io, [this, a = std::move(a)] {
            HttpRespond waiting = std::move(report_respond_);
            report_respond_ = nullptr;
            waiting(HttpResponse::json(a.status, a.body));
          });
        });
      });
  server_.route("/api/v1/events/checkpoints", {"GET"}, [this](const HttpRequest& req) {
    return HttpResponse::json(200, render_event_checkpoints_json(*snapshot(), req.query));
  });
}

}  // namespace ckptmon
