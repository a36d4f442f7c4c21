#include "daemon/daemon.hpp"

#include <csignal>

#include <prometheus/text_serializer.h>
#include <boost/asio/ip/host_name.hpp>
#include <boost/asio/post.hpp>

#include "daemon/metrics.hpp"
#include "daemon/systemd_notify.hpp"
#include "daemon/web.hpp"
#include "daemon/web_security.hpp"

#include "util/log.hpp"
#include "util/text.hpp"
#include "util/version.hpp"

namespace ckptmon {

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

}  // namespace

Daemon::Daemon(ServeOptions opts, std::shared_ptr<const Clock> clock)
    : opts_(std::move(opts)),
      clock_(std::move(clock)),
      server_(io_, opts_.limits),
      web_(std::make_unique<WebSecurity>(io_, server_, opts_.web_config_file)),
      signals_(io_),
      watchdog_timer_(io_),
      registry_(std::make_shared<prometheus::Registry>()) {
  prometheus::BuildGauge()
      .Name("ckptmon_build_info")
      .Help("Version and revision ckptmon was built from. Always 1.")
      .Register(*registry_)
      .Add({{"version", kVersion}, {"revision", kRevision}})
      .Set(1);
  reload_ok_ = &prometheus::BuildGauge()
                    .Name("ckptmon_config_last_reload_successful")
                    .Help("1 when the last configuration (re)load succeeded.")
                    .Register(*registry_)
                    .Add({});
  reload_ts_ = &prometheus::BuildGauge()
                    .Name("ckptmon_config_last_reload_success_timestamp_seconds")
                    .Help("When the configuration was last loaded successfully.")
                    .Register(*registry_)
                    .Add({});
  http_requests_ = &prometheus::BuildCounter()
                        .Name("ckptmon_http_requests_total")
                        .Help("HTTP requests answered, by route and status code.")
                        .Register(*registry_);
  server_.set_observer([this](const std::string& route, unsigned status) {
    http_requests_->Add({{"handler", route}, {"code", std::to_string(status)}}).Increment();
  });
}

Daemon::~Daemon() {
  server_.close();
  wakes_.clear();
  // The runner closes its inbox first, so jobs still blocked on a hung mount
  // drop their results; then the pool detaches those threads.
  runner_.reset();
  pool_.reset();
  rules_.reset();  // before the store: it queues history writes
  store_.reset();  // finishes queued writes
}

bool Daemon::start(std::string* error) {
  started_at_ = clock_->now();
  LoadResult loaded = load_config_file(opts_.config_file);
  auto web = web_->prepare(&loaded.errors);
  if (!loaded.config || !web) {
    std::string msg;
    for (const auto& e : loaded.errors) msg += e.to_string() + "\n";
    *error = msg;
    return false;
  }
  auto cfg = std::make_shared<const Config>(std::move(*loaded.config));
  store_ = Store::open(cfg->global.state_dir, error);
  if (!store_) return false;
  pool_ = std::make_unique<WorkerPool>(static_cast<std::size_t>(cfg->global.worker_threads));
  runner_ = std::make_unique<CollectorRunner>(io_, *pool_, state_, [this] { changed(); });
  runner_->set_collectors(make_collectors(CollectorEnv{clock_, store_}));
  for (const auto& c : runner_->collectors()) {
    auto w = std::make_unique<WakeWatch>(io_, c, *runner_, state_);
    if (w->start()) wakes_.push_back(std::move(w));
  }
  rules_ = std::make_unique<RulesCycle>(
      io_, clock_, store_.get(), state_, [this] { return ready_; }, [this] { changed(); });

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
  load_catalog();
  rules_->load();
  reload_ok_->Set(1);
  reload_ts_->Set(clock_->now());
  if (opts_.handle_signals) wait_signals();
  publish();
  runner_->start();
  schedule_watchdog();
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
    server_.close();
    signals_.cancel();
    runner_->stop();
    rules_->stop();
    for (auto& w : wakes_) w->stop();
    watchdog_timer_.cancel();
    io_.stop();
  });
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
    TierCatalog& cat = state_.catalogs[tier];
    for (const auto& c : checkpoints) cat.jobs.insert(c.job);
    n += checkpoints.size();
    cat.checkpoints = std::move(checkpoints);
    cat.scanned = true;
  }
  log::info("catalog loaded", {{"db", store_->path()}, {"checkpoints", static_cast<int>(n)}});
}

void Daemon::persist_changes() {
  const double now = clock_->now();
  for (auto& [tier, cat] : state_.catalogs) {
    if (cat.changed.empty() && cat.removed.empty()) continue;
    if (store_) store_->save_catalog(tier, std::move(cat.changed), std::move(cat.removed), now);
    cat.changed.clear();
    cat.removed.clear();
  }
}

void Daemon::apply_config(std::shared_ptr<const Config> cfg) {
  state_.apply_config(cfg);
  for (auto& c : runner_->collectors()) c->configure(*cfg);
  rules_->configure(*cfg, self_url());
  rules_->start(cfg->global.scan_interval);
  changed();
}

std::string Daemon::self_url() const {
  return (server_.tls() ? "https://" : "http://") + self_authority_;
}

Daemon::ReloadOutcome Daemon::reload() {
  systemd::reloading();
  LoadResult loaded = load_config_file(opts_.config_file);
  auto web = web_->prepare(&loaded.errors);  // certificates rotated on disk are re-read
  ReloadOutcome out;
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
  auto cfg = std::make_shared<const Config>(std::move(*loaded.config));
  if (cfg->global.state_dir != state_.config->global.state_dir ||
      cfg->global.worker_threads != state_.config->global.worker_threads) {
    log::warn("state_dir and worker_threads take effect at the next restart");
  }
  // The web config first: whether TLS is on decides the scheme of self_url(),
  // which apply_config hands to the rules.
  web_->apply(std::move(*web));
  apply_config(cfg);
  reload_ok_->Set(1);
  reload_ts_->Set(clock_->now());
  log::info("configuration reloaded", {{"file", opts_.config_file},
                                       {"tiers", static_cast<int>(cfg->tiers.size())}});
  // Probe new tiers now rather than at the end of the current interval, and
  // pick up changed intervals.
  runner_->start();
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

void Daemon::wait_signals() {
  signals_.add(SIGHUP);
  signals_.add(SIGTERM);
  signals_.add(SIGINT);
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      log::info("SIGHUP received, reloading configuration");
      reload();
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
  if (!ready_ && runner_ && runner_->all_reported()) {
    ready_ = true;
    log::info("first collection finished; ready");
    // The first figures as soon as there is something to judge; then every interval.
    if (rules_) rules_->trigger();
  }
  if (publish_pending_) return;
  publish_pending_ = true;
  asio::post(io_, [this] { publish(); });
}

void Daemon::publish() {
  publish_pending_ = false;
  persist_changes();
  auto snap = std::make_shared<Snapshot>();
  snap->state = state_;
  snap->metrics_text = serialize(state_families(state_));
  if (rules_) snap->rules = rules_->output();
  if (snap->rules) snap->metrics_text += snap->rules->metrics_text;
  snap->taken_at = clock_->now();
  snapshot_ = std::move(snap);
}

std::string Daemon::render_metrics() const {
  std::string out = snapshot_ ? snapshot_->metrics_text : std::string();
  auto families = registry_->Collect();
  auto live = process_families(state_.config ? state_.config->global.proc_path : "/proc",
                               started_at_);
  FamilyBuilder conns("ckptmon_http_connections", "Open HTTP connections.",
                      prometheus::MetricType::Gauge);
  conns.add({}, static_cast<double>(server_.connections()));
  append(live, std::move(conns));
  FamilyBuilder rejected("ckptmon_http_connections_rejected_total",
                         "Connections refused because the connection limit was reached.",
                         prometheus::MetricType::Counter);
  rejected.add({}, static_cast<double>(server_.rejected_connections()));
  append(live, std::move(rejected));
  web_->append_metrics(&live);
  if (store_) {
    FamilyBuilder errs("ckptmon_store_errors_total",
                       "Writes to the state database that failed (disk full, I/O error).",
                       prometheus::MetricType::Counter);
    errs.add({}, static_cast<double>(store_->errors()));
    append(live, std::move(errs));
    FamilyBuilder txs("ckptmon_store_transactions_total",
                      "Transactions committed to the state database.",
                      prometheus::MetricType::Counter);
    txs.add({}, static_cast<double>(store_->transactions()));
    append(live, std::move(txs));
  }
  if (pool_) {
    FamilyBuilder threads("ckptmon_worker_threads",
                          "Worker threads for blocking storage calls, by state.",
                          prometheus::MetricType::Gauge);
    const auto busy = pool_->busy();
    threads.add({{"state", "busy"}}, static_cast<double>(busy));
    const auto total = pool_->threads();  // a spare may exit between the two reads
    threads.add({{"state", "idle"}}, static_cast<double>(total > busy ? total - busy : 0));
    append(live, std::move(threads));
    FamilyBuilder stuck("ckptmon_worker_threads_stuck",
                        "Worker threads running a job past its deadline (a hung mount); each "
                        "allows one spare thread above global.worker_threads, at most "
                        "worker_threads spares.",
                        prometheus::MetricType::Gauge);
    stuck.add({}, static_cast<double>(pool_->stuck()));
    append(live, std::move(stuck));
  }
  families.insert(families.end(), std::make_move_iterator(live.begin()),
                  std::make_move_iterator(live.end()));
  out += serialize(families);
  return out;
}

void Daemon::add_routes() {
  server_.route("/metrics", {"GET"}, [this](const HttpRequest&) {
    HttpResponse r;
    r.content_type = kMetricsContentType;
    r.body = render_metrics();
    return r;
  });
  server_.route("/-/healthy", {"GET"}, [](const HttpRequest&) {
    return HttpResponse::text(200, "ckptmon is Healthy.\n");
  });
  server_.route("/-/ready", {"GET"}, [this](const HttpRequest&) {
    if (!ready_) return HttpResponse::text(503, "ckptmon is not ready: first collection running\n");
    return HttpResponse::text(200, "ckptmon is Ready.\n");
  });
  server_.route("/-/reload", {"POST", "PUT"}, [this](const HttpRequest&) {
    auto out = reload();
    return HttpResponse::text(out.ok ? 200 : 500, out.message);
  });
  server_.route("/", {"GET"}, [this](const HttpRequest&) {
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = render_landing_page(*snapshot_, ready_, reload_ok_->Value() == 1);
    return r;
  });
  server_.route("/api/v1/tiers", {"GET"}, [this](const HttpRequest&) {
    return HttpResponse::json(200, render_tiers_json(*snapshot_));
  });
  server_.route("/api/v1/checkpoints", {"GET"}, [this](const HttpRequest& req) {
    return query_response(render_checkpoints_json, *snapshot_, req);
  });
  server_.route("/api/v1/findings", {"GET"}, [this](const HttpRequest& req) {
    return query_response(render_findings_json, *snapshot_, req);
  });
  server_.route("/api/v1/jobs", {"GET"}, [this](const HttpRequest&) {
    return HttpResponse::json(200, render_jobs_json(*snapshot_));
  });
  server_.route("/api/v1/alerts", {"GET"}, [this](const HttpRequest&) {
    const auto& rules = snapshot_->rules;
    return HttpResponse::json(200, rules ? rules->alerts_json : alerts_json({}));
  });
  server_.route("/api/v1/events/summary", {"GET"}, [this](const HttpRequest& req) {
    return query_response(render_events_summary_json, *snapshot_, req);
  });
  server_.route("/api/v1/events/checkpoints", {"GET"}, [this](const HttpRequest& req) {
    return HttpResponse::json(200, render_event_checkpoints_json(*snapshot_, req.query));
  });
}

}  // namespace ckptmon
