#include "serve/rules_cycle.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <set>
#include <tuple>

#include "api/alerts_wire.hpp"
#include "api/plan.hpp"
#include "config/rules_config.hpp"
#include "exporter/family.hpp"
#include "exporter/gpu.hpp"
#include "exporter/rules.hpp"
#include "store/store.hpp"
#include "util/log.hpp"

namespace ckptmon {

namespace {

// CPU time of the calling thread: the loop's own cost of a cycle, whatever
// else the machine is doing.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Pruning reads every stored sample older than raw_retention; once every few
// minutes is plenty for buckets of five minutes and more.
constexpr double kPruneIntervalSeconds = 300;

bool same_options(const AlertmanagerOptions& a, const AlertmanagerOptions& b) {
  return std::tie(a.url.host, a.url.port, a.url.path, a.url.tls, a.timeout_seconds,
                  a.resend_interval_seconds, a.resolved_retry_seconds, a.generator_url,
                  a.client.headers) == std::tie(b.url.host, b.url.port, b.url.path, b.url.tls,
                                                b.timeout_seconds, b.resend_interval_seconds,
                                                b.resolved_retry_seconds, b.generator_url,
                                                b.client.headers);
}

}  // namespace

RulesPolicy rules_policy(const Config& cfg) {
  RulesPolicy p;
  for (const TierConfig& t : cfg.tiers) {
    TierPolicy& tp = p.tiers[t.name] = t.policy;
    tp.retention.cleanup_verify_after_seconds =
        tp.retention.cleanup_verify_after(to_seconds(cfg.global.scan_interval));
  }
  p.alerting = cfg.alerting;
  p.history = cfg.history;
  p.estate = cfg.estate;
  return p;
}

RulesCycle::RulesCycle(boost::asio::io_context& io, std::shared_ptr<const Clock> clock,
                       Store* store, const State& state, std::function<bool()> ready,
                       std::function<void()> on_evaluated)
    : io_(io),
      clock_(std::move(clock)),
      store_(store),
      state_(state),
      ready_(std::move(ready)),
      on_evaluated_(std::move(on_evaluated)),
      timers_(io, clock_) {
  // Slow checkpoints committed before this process started were counted by
  // the previous one (ckpt_slow_checkpoints_total restarts from 0).
  storage_path_.set_count_from(clock_->now());
}

RulesCycle::~RulesCycle() { stop(); }

void RulesCycle::configure(const Config& cfg, const std::string& self_url) {
  policy_ = rules_policy(cfg);
  gpu_enabled_ = cfg.gpu.enabled();
  gpu_job_map_ = cfg.gpu.job_map;
  // A window's samples arrive within a poll or two; past a few polls and the
  // deadline they are not coming.
  gpu_grace_seconds_ = 5 * std::chrono::duration<double>(cfg.gpu.interval).count() +
                       std::chrono::duration<double>(cfg.gpu.timeout).count();
  tier_keep_seconds_ = SizingPolicy{}.trend_window_seconds;
  drain_keep_seconds_ = DrainPolicy{}.rate_window_seconds;
  for (const auto& [name, p] : policy_.tiers) {
    tier_keep_seconds_ = std::max(tier_keep_seconds_, p.sizing.trend_window_seconds);
    drain_keep_seconds_ = std::max(drain_keep_seconds_, p.drain.rate_window_seconds);
  }

  std::optional<AlertmanagerOptions> opts;
  const AlertingConfig& a = cfg.alerting;
  if (!a.alertmanager_url.empty()) {
    std::string error;
    if (auto url = parse_http_url(a.alertmanager_url, &error)) {
      AlertmanagerOptions o;
      o.url = *url;
      o.client = a.client;
      o.timeout_seconds = a.timeout_seconds;
      o.resend_interval_seconds = a.resend_interval_seconds;
      std::string base = a.external_url.empty() ? self_url : a.external_url;
      while (!base.empty() && base.back() == '/') base.pop_back();
      if (!base.empty()) o.generator_url = base + "/api/v1/alerts";
      opts = o;
    } else {
      // The config reader already rejects such a URL; keep going without a push.
      log::error("alerting.alertmanager_url is not usable",
                 {{"url", a.alertmanager_url}, {"err", error}});
    }
  }
  // With TLS or credentials the client is rebuilt at every reload, so that
  // rotated certificate, password and token files are read again.
  const bool reads_files = opts && (opts->url.tls || opts->client.auth.any());
  const bool changed = opts.has_value() != alertmanager_options_.has_value() ||
                       (opts && !same_options(*opts, *alertmanager_options_)) || reads_files;
  if (changed) {
    alertmanager_.reset();
    if (opts) {
      alertmanager_ = std::make_unique<AlertmanagerClient>(io_, *opts);
      log::info("pushing alerts to Alertmanager",
                {{"url", a.alertmanager_url}, {"generator_url", opts->generator_url}});
    }
    alertmanager_options_ = opts;
  }
}

void RulesCycle::load() {
  if (store_ == nullptr) return;
  const double now = clock_->now();
  const double since = now - tier_keep_seconds_;
  try {
    auto samples = store_->call<std::map<std::string, std::vector<TierSample>>>(
        [since](sql::Db& db) { return load_tier_samples(db, since, false); });
    const double drain_since = now - drain_keep_seconds_;
    auto drain = store_->call<DrainHistory>(
        [drain_since](sql::Db& db) { return load_drain_samples(db, drain_since); });
    auto active = store_->call<std::vector<AlertInstance>>(
        [](sql::Db& db) { return load_active_alerts(db); });
    std::size_t n = 0;
    for (auto& [tier, series] : samples) {
      n += series.size();
      history_.tiers[tier] = std::move(series);
    }
    history_.drain = std::move(drain);
    evaluator_.restore(active);
    saved_active_ = !active.empty();
    log::info("rules history loaded", {{"tier_samples", static_cast<int>(n)},
                                       {"drains", static_cast<int>(history_.drain.size())},
                                       {"active_alerts", static_cast<int>(active.size())}});
  } catch (const std::exception& e) {
    log::error("cannot read the rules history; starting without it", {{"err", e.what()}});
  }
}

void RulesCycle::start(Duration interval) {
  if (running_ && timer_ != 0) {
    if (interval == interval_) return;  // a reload that changed nothing here
    interval_ = interval;
    arm(to_seconds(interval_), armed_at_);  // where the new interval ends, from the same start
    return;
  }
  interval_ = interval;
  running_ = true;
  arm(to_seconds(interval_));
}

void RulesCycle::stop() {
  running_ = false;
  timers_.cancel(timer_);
  timer_ = 0;
}

void RulesCycle::trigger() {
  if (!running_) return;
  arm(0);
}

void RulesCycle::arm(double after, std::optional<double> began) {
  timers_.cancel(timer_);  // a cancelled timer is never called
  const double now = timers_.clock().monotonic();
  armed_at_ = began.value_or(now);
  timer_ = timers_.after(std::max(0.0, armed_at_ + after - now), [this] {
    timer_ = 0;
    tick();
  });
}

void RulesCycle::tick() {
  if (ready_ && ready_()) {
    evaluate();
    if (on_evaluated_) on_evaluated_();
  }
  if (running_) arm(to_seconds(interval_));
}

void RulesCycle::sample_tiers(double now, HistoryWrite& write) {
  for (const auto& [name, t] : state_.tiers) {
    // One sample per successful probe: a down tier's figures are stale, and
    // sampling the same probe twice would flatten the trend.
    if (!t.up || !t.has_stats || t.last_success <= 0) continue;
    double& sampled = sampled_probe_[name];
    if (t.last_success == sampled) continue;
    sampled = t.last_success;
    TierSample s;
    s.t = t.last_success;
    s.size_bytes = t.stats.size_bytes;
    s.avail_bytes = t.stats.avail_bytes;
    auto cat = state_.catalogs.find(name);
    if (cat != state_.catalogs.end() && cat->second->scanned) {
      for (const Checkpoint& c : cat->second->checkpoints) {
        s.job_stored_bytes[c.job] += static_cast<double>(c.bytes);
      }
    }
    // The rules read only size and avail; per-job bytes go to the store.
    history_.tiers[name].push_back(TierSample{s.t, s.size_bytes, s.avail_bytes, {}});
    write.samples.emplace_back(name, std::move(s));
  }
  for (auto it = history_.tiers.begin(); it != history_.tiers.end();) {
    if (!state_.tiers.contains(it->first)) {
      it = history_.tiers.erase(it);
      continue;
    }
    std::erase_if(it->second, [&](const TierSample& s) { return s.t < now - tier_keep_seconds_; });
    ++it;
  }
  std::erase_if(sampled_probe_, [&](const auto& kv) { return !state_.tiers.contains(kv.first); });
}

// The figures of this cycle kept with the tier samples it took (schema 6),
// for reports over past periods. Only for a walked tier: before its first
// walk the catalog says nothing of cleanup, partials or the sizing rule.
void RulesCycle::record_tier_figures(const RuleFigures& figures, HistoryWrite& write) const {
  for (auto& [name, s] : write.samples) {
    auto cat = state_.catalogs.find(name);
    if (cat == state_.catalogs.end() || !cat->second->scanned) continue;
    double pending = 0, partial = 0;
    for (const RetentionFigures& r : figures.retention) {
      if (r.tier == name) pending += static_cast<double>(r.pending_bytes());
    }
    for (const JobTierFigures& j : figures.job_tiers) {
      if (j.tier == name) partial += static_cast<double>(j.partial_bytes);
    }
    s.cleanup_pending_bytes = pending;
    s.partial_bytes = partial;
    if (auto age = figures.cleanup_oldest_age_seconds.find(name);
        age != figures.cleanup_oldest_age_seconds.end()) {
      s.cleanup_oldest_age_seconds = age->second;
    }
    for (const CapacityFigures& c : figures.capacity) {
      if (c.tier == name) s.required_capacity_bytes = c.required_bytes;
    }
  }
}

void RulesCycle::evaluate() {
  const auto started = std::chrono::steady_clock::now();
  const double cpu_started = thread_cpu_seconds();
  const double now = clock_->now();         // what the cycle reports
  const double mono = clock_->monotonic();  // what it measures
  try {
    HistoryWrite write;
    sample_tiers(now, write);

    // Every tier's records where its catalog holds them (the loop thread
    // owns the catalogs, and nothing edits them during the cycle).
    CheckpointView checkpoints;
    for (const auto& [name, cat] : state_.catalogs) {
      // A tier not walked yet has no catalog: its drains and capacity would
      // read "nothing there", not "not known".
      if (!cat->scanned || !state_.tiers.contains(name)) continue;
      checkpoints.add(cat->checkpoints);
    }

    const Verifications verified = verifications_of(state_, checkpoints);
    RuleFigures figures = evaluate_rules(state_.tiers, checkpoints, history_, verified, policy_,
                                         now, drained_totals_of(state_), state_.events.get());
    apply_monotonic_ages(figures.drain, pending_anchors_, now, mono);
    figures.integrity_known = state_.integrity != nullptr;
    cleanup_counter_.observe(figures.unverified_cleanups);
    figures.unverified_cleanup_totals = cleanup_counter_.totals();
    for (const auto& [name, t] : state_.tiers) {
      AccessFigures a;
      a.tier = name;
      auto cat = state_.catalogs.find(name);
      if (cat != state_.catalogs.end() && cat->second->scanned && cat->second->findings) {
        a.known = true;
        a.by_kind = count_by_kind(*cat->second->findings);
      }
      figures.access.push_back(std::move(a));
    }
    {
      std::set<std::string> names, deletion;
      for (const auto& [name, t] : state_.tiers) {
        names.insert(name);
        if (t.config.role == TierRole::kDeletion) deletion.insert(name);
      }
      figures.storage_path =
          storage_path_.update(checkpoints, names, deletion, state_.events.get(), state_.io.get(),
                               verified, policy_, now, state_.drills.get());
      // Where the tier's counters measured the save windows, that is the
      // observed bandwidth; the mtime-derived figure keeps its own name.
      for (BandwidthFigures& b : figures.bandwidth) {
        figures.storage_path.mtime_write_bytes_per_second[b.tier] = b.observed_bytes_per_second;
        auto m = figures.storage_path.measured_write_bytes_per_second.find(b.tier);
        if (m != figures.storage_path.measured_write_bytes_per_second.end()) {
          b.observed_bytes_per_second = m->second;
        }
      }
    }
    {
      std::vector<TierPlan> plans;
      plan_inputs_ = plan_inputs_of(figures, checkpoints, policy_, &state_.tiers);
      for (const PlanInputs& in : plan_inputs_) plans.push_back(make_plan(in, {}));
      plan_json_ = render_plan_json(plans, now);
    }
    record_tier_figures(figures, write);
    write.drain = record_drain_samples(history_.drain, figures.drain, now, drain_keep_seconds_);
    SelfHealth self;
    if (store_ != nullptr) {
      self.store_consecutive_errors = store_->consecutive_errors();
      self.store_failing_after = Store::kFailingAfter;
      self.store_path = store_->path();
      self.store_last_error = store_->last_error();
    }
    if (gpu_enabled_ && state_.gpu && state_.events) {
      gpu_costs_.update(*state_.events, *state_.gpu, gpu_job_map_, gpu_grace_seconds_, now);
      write.gpu_costs = gpu_costs_.take_joined();  // for `ckptmon report`
      figures.gpu_jobs = gpu_job_figures(gpu_costs_, now, policy_.alerting.rules);
    }
    if (state_.drills) {
      // Only tiers whose drills are still on: a drill turned off stops alerting.
      for (const auto& [key, d] : state_.drills->last) {
        auto t = state_.tiers.find(key.first);
        if (t != state_.tiers.end() && t->second.config.policy.restore_drill.enabled()) {
          figures.drills.push_back(d);
        }
      }
    }
    const std::vector<AlertCondition> conditions =
        alert_conditions(figures, state_.tiers, policy_.alerting, self);
    write.transitions = evaluator_.evaluate(conditions, now, mono);
    for (const AlertTransition& t : write.transitions) {
      if (t.to == AlertState::kPending) continue;  // pending is too chatty for the log
      log::info(t.to == AlertState::kFiring ? "alert firing" : "alert inactive",
                {{"alertname", t.labels.alertname},
                 {"tier", t.labels.tier},
                 {"job", t.labels.job},
                 {"from", to_string(t.from)},
                 {"value", t.value},
                 {"summary", t.summary}});
    }
    std::vector<AlertInstance> active = evaluator_.active();
    if (!write.transitions.empty() || !active.empty() || saved_active_) {
      write.active = active;
      saved_active_ = !active.empty();
    }

    if (store_ != nullptr) {
      if (!write.empty()) {
        store_->post([write = std::move(write)](sql::Db& db) { write_history(db, write); });
      }
      if (last_prune_ == 0 || now - last_prune_ >= kPruneIntervalSeconds || now < last_prune_) {
        prune_history(*store_, now, policy_.history);
        const double before = now - drain_keep_seconds_;
        store_->post([before](sql::Db& db) { delete_drain_samples_before(db, before); });
        last_prune_ = now;
      }
    }

    if (alertmanager_) {
      const std::vector<AlertInstance> firing = evaluator_.firing();
      alertmanager_->update(firing, evaluator_.resolved(), now);
    }
    ++cycles_;
    last_duration_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    render(figures, active, now);
    log::debug(
        "rules evaluated",
        {{"checkpoints", static_cast<int>(checkpoints.size())},
         {"alerts_active", static_cast<int>(active.size())},
         {"evaluation_seconds", last_duration_},
         {"cpu_seconds", thread_cpu_seconds() - cpu_started},
         {"total_seconds",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}});
  } catch (const std::exception& e) {
    // Nothing in the rules should throw; if something does, the daemon keeps
    // serving the last output rather than dying on its loop thread.
    ++errors_;
    log::error("rules evaluation failed", {{"err", e.what()}});
  }
}

void RulesCycle::render(const RuleFigures& figures, const std::vector<AlertInstance>& active,
                        double now) {
  std::vector<AlertInstance> firing;
  for (const AlertInstance& a : active) {
    if (a.state == AlertState::kFiring) firing.push_back(a);
  }
  std::vector<prometheus::MetricFamily> families = rule_families(figures);
  if (gpu_enabled_) {
    for (auto& f : gpu_cost_families(gpu_costs_)) families.push_back(std::move(f));
  }
  for (auto& f : alert_families(firing)) families.push_back(std::move(f));
  if (alertmanager_) {
    for (auto& f : alertmanager_families(alertmanager_->stats())) families.push_back(std::move(f));
  }
  RulesCycleFigures self;
  self.cycles = cycles_;
  self.errors = errors_;
  self.last_duration_seconds = last_duration_;
  self.evaluated_at = now;
  self.pending_alerts = active.size() - firing.size();
  rules_cycle_families(self, families);

  auto out = std::make_shared<RulesOutput>();
  out->metrics_text = serialize(families);
  out->active = active;
  out->alerts_json = alerts_json(out->active);
  out->plan_json = plan_json_;
  out->plan_inputs = plan_inputs_;
  out->storage_path = storage_path_.snapshot();
  out->evaluated_at = now;
  for (const RecoveryPoint& p : figures.recovery) out->recovery[p.job].any = p;
  for (const DurabilityFigures& d : figures.durability) out->recovery[d.job].durability = d;
  {
    std::map<std::string, std::vector<AccessFinding>> by_tier;
    for (const CapacityFigures& c : figures.capacity) by_tier[c.tier];  // every tier
    for (const AccessFinding& f : figures.estate_findings) by_tier[f.tier].push_back(f);
    for (auto& [tier, list] : by_tier) {
      out->estate_findings.emplace(
          tier, std::make_shared<const std::vector<AccessFinding>>(std::move(list)));
    }
  }
  if (gpu_enabled_) {
    for (const auto& [job, c] : gpu_costs_.jobs()) {
      GpuJobSummary g;
      g.gpus = c.gpus;
      g.lost_total = c.lost_total;
      g.joined = c.joined;
      g.unknown = c.unknown;
      if (!c.recent.empty()) {
        const CheckpointGpuCost& k = c.recent.back();
        g.last_step = k.step;
        g.last_lost = k.lost_gpu_seconds;
        g.last_during = k.during;
        g.last_baseline = k.baseline;
        g.last_drop = k.drop_ratio();
      }
      out->gpu_jobs.emplace(job, g);
    }
  }
  output_ = std::move(out);
}

}  // namespace ckptmon
