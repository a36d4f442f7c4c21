#include "tools/review/plan_command.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include "collectors/tier_stats.hpp"
#include "collectors/tree_scan.hpp"
#include "config/config.hpp"
#include "http/http_client.hpp"
#include "serve/rules_cycle.hpp"
#include "store/history.hpp"
#include "store/store.hpp"
#include "tools/review/report_prometheus.hpp"
#include "util/columns.hpp"
#include "util/duration.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

using nlohmann::json;

std::string fmt(const char* f, double v) {
  char buf[64];
  static_cast<void>(std::snprintf(buf, sizeof buf, f, v));
  return buf;
}

// "30.6 %", "0.5 %", "1234 %": three significant digits, never an exponent
// (%.3g writes 1234 as "1.23e+03").
std::string percent(double ratio) {
  const double v = ratio * 100;
  const double a = std::fabs(v);
  if (a > 0 && a < 1e-4) return "< 0.0001 %";
  return fmt(a >= 1000 ? "%.0f" : "%.3g", v) + " %";
}

std::string rate(double bytes_per_second) { return human_bytes(bytes_per_second) + "/s"; }

// A number as typed: decimal or exponent ("70e9"), finite.
std::optional<double> parse_number(std::string_view text) {
  text = trim(text);
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// "30%" or "0.3".
std::optional<double> parse_ratio(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.back() == '%') {
    auto v = parse_number(text.substr(0, text.size() - 1));
    if (!v) return std::nullopt;
    return *v / 100;
  }
  return parse_number(text);
}

bool flag_error(std::string* error, const char* flag, const std::string& what,
                const std::string& got) {
  *error = std::string(flag) + ": " + what + ", got \"" + got + "\"";
  return false;
}

// A whole number in [lo, hi].
bool parse_count(const std::string& text, const char* flag, std::int64_t lo, std::int64_t hi,
                 std::optional<std::int64_t>* out, std::string* error) {
  if (text.empty()) return true;
  auto v = parse_number(text);
  if (!v || *v != std::floor(*v) || *v < static_cast<double>(lo) || *v > static_cast<double>(hi)) {
    return flag_error(
        error, flag,
        "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi), text);
  }
  *out = static_cast<std::int64_t>(*v);
  return true;
}

bool parse_ratio_flag(const std::string& text, const char* flag, double hi,
                      std::optional<double>* out, std::string* error) {
  if (text.empty()) return true;
  auto v = parse_ratio(text);
  if (!v || *v < 0 || *v > hi) {
    return flag_error(
        error, flag,
        "expected a percentage from 0 % to " + fmt("%g", hi * 100) + " % (\"10%\" or 0.1)", text);
  }
  *out = *v;
  return true;
}

}  // namespace

bool parse_plan_flags(const PlanFlags& f, PlanWhatIfs* out, std::string* error) {
  PlanWhatIfs w;
  std::optional<std::int64_t> retain;
  if (!parse_count(f.retain, "--retain", 1, 100000, &retain, error)) return false;
  if (retain) w.retain = static_cast<double>(*retain);
  if (!parse_count(f.jobs, "--jobs", 1, 1000000, &w.jobs, error)) return false;
  if (!f.replicas.empty()) {
    auto v = parse_number(f.replicas);
    if (!v || *v < 1 || *v > 16) {
      return flag_error(error, "--replicas",
                        "expected copies per byte from 1 to 16 (1 = a single copy, 1.25 for 8+2 "
                        "erasure coding)",
                        f.replicas);
    }
    w.replicas = *v;
  }
  if (!f.window.empty()) {
    auto d = parse_duration(f.window);
    if (!d || to_seconds(*d) <= 0 || to_seconds(*d) > 7 * 86400.0) {
      return flag_error(error, "--window", "expected a duration from 1ms to 7d (such as 2m)",
                        f.window);
    }
    w.window_seconds = to_seconds(*d);
  }
  if (!parse_ratio_flag(f.growth, "--growth", 10, &w.growth_ratio, error)) return false;
  if (!parse_ratio_flag(f.temp_allowance, "--temp-allowance", 10, &w.temp_allowance_ratio, error)) {
    return false;
  }
  if (!parse_count(f.nodes, "--nodes", 1, 1000000, &w.nodes, error)) return false;
  if (!f.gpus_per_node.empty()) {
    std::optional<std::int64_t> g;
    if (!parse_count(f.gpus_per_node, "--gpus-per-node", 1, 1024, &g, error)) return false;
    w.gpus_per_node = static_cast<double>(*g);
  }
  const bool model_detail =
      !f.bytes_per_param.empty() || !f.precision.empty() || !f.optimizer.empty();
  if (f.model_params.empty()) {
    if (model_detail) {
      *error = std::string(!f.bytes_per_param.empty() ? "--bytes-per-param"
                           : !f.precision.empty()     ? "--precision"
                                                      : "--optimizer") +
               ": sizes a job not yet run and needs --model-params";
      return false;
    }
  } else {
    auto params = parse_number(f.model_params);
    if (!params || *params < 1 || *params > 1e15) {
      return flag_error(error, "--model-params",
                        "expected a parameter count from 1 to 1e15 (such as 70e9)", f.model_params);
    }
    double per_param = 0;
    if (!f.bytes_per_param.empty()) {
      if (!f.precision.empty() || !f.optimizer.empty()) {
        *error = "--bytes-per-param: give it or --precision/--optimizer, not both";
        return false;
      }
      auto b = parse_number(f.bytes_per_param);
      if (!b || *b <= 0 || *b > 64) {
        return flag_error(error, "--bytes-per-param", "expected bytes from more than 0 to 64",
                          f.bytes_per_param);
      }
      per_param = *b;
    } else {
      const std::string precision = f.precision.empty() ? "bf16" : f.precision;
      const std::string optimizer = f.optimizer.empty() ? "adam" : f.optimizer;
      if (!bytes_per_param(precision, "none")) {
        return flag_error(error, "--precision", "expected fp32, bf16, fp16 or fp8", precision);
      }
      auto b = bytes_per_param(precision, optimizer);
      if (!b) {
        return flag_error(error, "--optimizer", "expected adam, adamw, sgd or none", optimizer);
      }
      per_param = *b;
    }
    w.model_bytes = *params * per_param;
  }
  *out = w;
  return true;
}

namespace {

// ---- rendering ----------------------------------------------------------

struct TermRow {
  std::string term, value, how;
};

std::vector<TermRow> term_rows(const TierPlan& p) {
  std::vector<TermRow> rows;
  const std::size_t n = p.jobs.size();
  rows.push_back(
      {"retained versions x replicas", human_bytes(p.terms.retained_required_bytes),
       std::to_string(n) + (n == 1 ? " job" : " jobs") + ", replicas " + fmt("%g", p.replicas)});
  rows.push_back(
      {"temporary-write allowance", human_bytes(p.terms.temp_write_allowance_bytes),
       percent(p.temp_write_allowance_ratio) + " of the " + std::to_string(p.concurrent_jobs) +
           " concurrent jobs' checkpoints" +
           (p.inputs.concurrency_observed && p.overridden.empty() ? " (observed)" : "")});
  rows.push_back({"failed-run residue", human_bytes(p.terms.residue_bytes),
                  "partial checkpoints on the tier"});
  rows.push_back({"growth headroom", human_bytes(p.terms.growth_headroom_bytes),
                  percent(p.growth_headroom_ratio) + " of the retained term"});
  std::string vs = "tier size unknown";
  if (p.shortfall_bytes && p.required_to_size_ratio) {
    vs = percent(*p.required_to_size_ratio) + " of the tier's " + human_bytes(p.inputs.size_bytes) +
         "; " +
         (*p.shortfall_bytes > 0 ? human_bytes(*p.shortfall_bytes) + " more needed"
                                 : human_bytes(-*p.shortfall_bytes) + " to spare");
    // The rule sizes the tier against what checkpoints need; what else lives
    // on the file system takes space too. Where less is free now than the
    // rule spares, say so: "to spare" alone reads as free space.
    if (*p.shortfall_bytes <= 0 && p.inputs.has_stats && p.inputs.size_bytes > 0 &&
        p.inputs.avail_bytes < -*p.shortfall_bytes) {
      vs += " by the sizing rule, but only " + human_bytes(p.inputs.avail_bytes) + " free now (" +
            percent(1 - p.inputs.avail_bytes / p.inputs.size_bytes) + " used)";
    }
  }
  rows.push_back({"required capacity", human_bytes(p.terms.required_bytes), vs});
  std::string bw = human_bytes(p.bytes_per_checkpoint) + " per checkpoint / " +
                   format_duration(Duration(
                       static_cast<std::int64_t>(std::llround(p.allowed_window_seconds * 1000)))) +
                   " x " + std::to_string(p.concurrent_writers) + " writers x (1 + " +
                   percent(p.overhead_ratio) + " overhead)";
  rows.push_back({"required write bandwidth", rate(p.required_write_bytes_per_second), bw});
  if (p.required_write_bytes_per_second_per_node) {
    rows.push_back({"per node", rate(*p.required_write_bytes_per_second_per_node),
                    std::to_string(p.nodes) + " nodes (" +
                        (p.nodes_source == "ranks" ? std::string("from the writers' ranks")
                                                   : std::string("--nodes")) +
                        ")"});
  } else {
    rows.push_back({"per node", "-", "nodes unknown: give --nodes"});
  }
  if (p.inputs.observed_write_bytes_per_second) {
    rows.push_back({"observed write bandwidth", rate(*p.inputs.observed_write_bytes_per_second),
                    "committed checkpoints of the observe window"});
  }
  rows.push_back({"logical / allocated",
                  p.logical_to_allocated_ratio ? fmt("%.2f", *p.logical_to_allocated_ratio) : "-",
                  "of the latest checkpoints (above 1: the tier compresses)"});
  return rows;
}

std::vector<std::vector<std::string>> job_rows(const TierPlan& p) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < p.jobs.size(); ++i) {
    const PlanJob& j = p.jobs[i];
    rows.push_back(
        {j.job + (j.hypothetical ? " (what-if)" : ""), human_bytes(j.latest_bytes),
         j.p90_bytes > 0 ? human_bytes(j.p90_bytes) : "-", fmt("%g", j.retained_versions),
         human_bytes(i < p.terms.job_required_bytes.size() ? p.terms.job_required_bytes[i] : 0)});
  }
  return rows;
}

// Restore time against the objective per job: JOB STEP SIZE ESTIMATE OBJECTIVE VERDICT.
std::vector<std::vector<std::string>> restore_rows(const TierPlan& p) {
  auto secs = [](double v) { return fmt(v >= 1 ? "%.1f s" : "%.3g s", v); };
  std::vector<std::vector<std::string>> rows;
  for (const PlanRestore& r : p.restores) {
    std::string est = "unknown (no read throughput)";
    if (r.estimated_seconds) {
      est = secs(*r.estimated_seconds) + " at " + rate(r.read_bytes_per_second.value_or(0)) + " (" +
            r.read_source + ")";
    }
    std::string verdict = "-";
    if (r.estimated_seconds && r.objective_seconds > 0) {
      verdict = *r.estimated_seconds <= r.objective_seconds ? "meets" : "MISSES";
    }
    rows.push_back({r.job, r.step >= 0 ? std::to_string(r.step) : "-",
                    human_bytes(r.bytes) + ", " +
                        (r.step < 0 && r.files == 0 ? std::string("files not known (what-if)")
                                                    : fmt("%.0f", r.files) + " files"),
                    est, r.objective_seconds > 0 ? secs(r.objective_seconds) : "none", verdict});
  }
  return rows;
}

std::string tier_heading(const TierPlan& p) {
  std::string h = "tier " + p.inputs.tier;
  if (p.inputs.has_stats) {
    h += " (size " + human_bytes(p.inputs.size_bytes) + ", available " +
         human_bytes(p.inputs.avail_bytes) + ")";
  } else {
    h += " (size unknown: the tier was not probed)";
  }
  if (p.inputs.shard_count > 1) {
    h += " - partial: shard " + std::to_string(p.inputs.shard_index) + "/" +
         std::to_string(p.inputs.shard_count) +
         ", this instance's jobs only (tier:ckpt_tier_required_capacity_bytes:sum has the tier)";
  }
  return h;
}

std::string render_table(const std::vector<TierPlan>& plans) {
  std::string out;
  for (const TierPlan& p : plans) {
    if (!out.empty()) out += "\n";
    out += tier_heading(p) + "\n";
    if (!p.overridden.empty()) {
      std::string w;
      for (const auto& o : p.overridden) w += (w.empty() ? "" : ", ") + o;
      out += "  what-ifs: " + w + "\n";
    }
    auto jobs = job_rows(p);
    if (jobs.empty()) {
      out += "  (no jobs)\n";
    } else {
      jobs.insert(jobs.begin(), {"JOB", "LATEST", "P90", "RETAINED", "REQUIRED"});
      out += text_columns(jobs, "  ");
    }
    std::vector<std::vector<std::string>> terms;
    for (const TermRow& r : term_rows(p)) terms.push_back({r.term, r.value, r.how});
    out += text_columns(terms, "  ");
    if (auto restores = restore_rows(p); !restores.empty()) {
      restores.insert(restores.begin(),
                      {"RESTORE", "STEP", "CHECKPOINT", "ESTIMATE", "OBJECTIVE", "VERDICT"});
      out += text_columns(restores, "  ");
    }
  }
  if (plans.empty()) out += "(no tiers)\n";
  return out;
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string render_markdown(const std::vector<TierPlan>& plans) {
  std::string out = "# Capacity plan\n";
  for (const TierPlan& p : plans) {
    out += "\n## " + md_cell(tier_heading(p)) + "\n\n";
    if (!p.overridden.empty()) {
      std::string w;
      for (const auto& o : p.overridden) w += (w.empty() ? "" : ", ") + ("`" + o + "`");
      out += "What-ifs: " + w + ".\n\n";
    }
    if (!p.jobs.empty()) {
      out += "| job | latest | p90 | retained | required |\n| --- | ---: | ---: | ---: | ---: |\n";
      for (const auto& r : job_rows(p)) {
        out += "| " + md_cell(r[0]) + " | " + r[1] + " | " + r[2] + " | " + r[3] + " | " + r[4] +
               " |\n";
      }
      out += "\n";
    }
    out += "| term | value | how |\n| --- | ---: | --- |\n";
    for (const TermRow& r : term_rows(p)) {
      out += "| " + r.term + " | " + r.value + " | " + md_cell(r.how) + " |\n";
    }
    if (auto restores = restore_rows(p); !restores.empty()) {
      out +=
          "\n| restore of job | step | checkpoint | estimate | objective | verdict |\n"
          "| --- | ---: | ---: | --- | ---: | --- |\n";
      for (const auto& r : restores) {
        out += "| " + md_cell(r[0]) + " | " + r[1] + " | " + r[2] + " | " + r[3] + " | " + r[4] +
               " | " + r[5] + " |\n";
      }
    }
  }
  return out;
}

// ---- sources ------------------------------------------------------------

struct Source {
  std::vector<PlanInputs> inputs;
  double evaluated_at = 0;
};

bool from_daemon(const PlanCommandOptions& o, Source* src, std::string* error) {
  std::string e;
  auto url = parse_http_url(o.from, &e);
  if (!url) {
    *error = "--from: " + e;
    return false;
  }
  HttpClientResponse r = http_get(*url, "/api/v1/plan", o.timeout_seconds);
  if (!r.ok) {
    *error = "--from " + o.from + ": " + r.error;
    return false;
  }
  if (r.status != 200) {
    *error = "--from " + o.from + ": GET /api/v1/plan answered " + std::to_string(r.status) +
             (r.status == 404 ? " (a ckptmon older than `plan`, or not ckptmon)" : "") + ": " +
             std::string(trim(r.body.substr(0, 200)));
    return false;
  }
  json doc = json::parse(r.body, nullptr, false);
  if (!doc.is_object() || !doc.contains("tiers") || !doc["tiers"].is_array()) {
    *error = "--from " + o.from + ": GET /api/v1/plan did not answer a plan";
    return false;
  }
  src->evaluated_at = doc.value("evaluated_at", 0.0);
  for (const json& t : doc["tiers"]) {
    auto in = t.contains("inputs") ? plan_inputs_from_json(t["inputs"], &e) : std::nullopt;
    if (!in) {
      *error = "--from " + o.from + ": /api/v1/plan: " + (e.empty() ? "no inputs" : e);
      return false;
    }
    src->inputs.push_back(std::move(*in));
  }
  return true;
}

void evaluate_into(const std::map<std::string, TierState>& tiers,
                   const std::vector<Checkpoint>& checkpoints, const RulesHistory& history,
                   const RulesPolicy& policy, double now, Source* src) {
  RuleFigures figures = evaluate_rules(tiers, checkpoints, history, {}, policy, now);
  // Restore estimates: without the daemon's event log and counters only a
  // configured read_bandwidth gives one.
  std::set<std::string> names, deletion;
  for (const auto& [name, t] : tiers) {
    names.insert(name);
    if (t.config.role == TierRole::kDeletion) deletion.insert(name);
  }
  StoragePathTracker tracker;
  figures.storage_path =
      tracker.update(checkpoints, names, deletion, nullptr, nullptr, {}, policy, now);
  src->inputs = plan_inputs_of(figures, checkpoints, policy, &tiers);
  src->evaluated_at = now;
}

bool from_state_dir(const PlanCommandOptions& o, double now, Source* src, std::string* error) {
  std::optional<Config> cfg;
  if (!o.config_file.empty() && !load_policy(o.config_file, &cfg, error)) return false;
  std::string e;
  auto db = open_state_readonly(o.state_dir, &e);
  if (!db) {
    *error = "--state-dir: " + e;
    return false;
  }
  const RulesPolicy policy = cfg ? rules_policy(*cfg) : RulesPolicy{};
  std::map<std::string, std::vector<Checkpoint>> catalog;
  RulesHistory history;
  try {
    catalog = read_catalog(*db);
    // The newest sample of every tier, whatever its age, gives size and avail.
    history.tiers = load_tier_samples(*db, 0, false);
  } catch (const std::exception& ex) {
    *error = "--state-dir " + o.state_dir + ": " + ex.what();
    return false;
  }
  std::map<std::string, TierState> tiers;
  std::set<std::string> names;
  if (cfg) {
    for (const TierConfig& t : cfg->tiers) names.insert(t.name);
  } else {
    for (const auto& [n, c] : catalog) names.insert(n);
    for (const auto& [n, s] : history.tiers) names.insert(n);
  }
  for (const std::string& n : names) {
    TierState t;
    if (cfg && cfg->find_tier(n)) t.config = *cfg->find_tier(n);
    t.config.name = n;
    auto h = history.tiers.find(n);
    if (h != history.tiers.end() && !h->second.empty()) {
      const TierSample& last = h->second.back();
      t.up = true;
      t.has_stats = true;
      t.stats.size_bytes = last.size_bytes;
      t.stats.avail_bytes = last.avail_bytes;
      t.last_success = last.t;
    }
    tiers[n] = std::move(t);
  }
  std::vector<Checkpoint> all;
  for (auto& [n, cs] : catalog) {
    if (!tiers.contains(n)) continue;
    for (auto& c : cs) all.push_back(std::move(c));
  }
  evaluate_into(tiers, all, history, policy, now, src);
  return true;
}

bool from_scan(const PlanCommandOptions& o, double now, Source* src, std::string* error,
               std::ostream& err) {
  std::optional<Config> cfg;
  if (!load_policy(o.config_file, &cfg, error)) return false;
  std::map<std::string, TierState> tiers;
  std::vector<Checkpoint> all;
  for (const TierConfig& t : cfg->tiers) {
    if (!o.tiers.empty() && std::find(o.tiers.begin(), o.tiers.end(), t.name) == o.tiers.end()) {
      continue;
    }
    TierState st;
    st.config = t;
    TierProbe probe = probe_tier(t.path, cfg->global.proc_path, cfg->global.sys_path);
    if (probe.ok) {
      st.up = true;
      st.has_stats = true;
      st.stats = probe.stats;
      st.last_success = now;
    } else {
      st.down_reason = probe.error;
      err << "ckptmon plan: tier " << t.name << ": " << probe.error << "\n";
    }
    bool drains = !t.drains_to.empty();
    for (const auto& other : cfg->tiers) drains = drains || other.drains_to == t.name;
    TierScanner scanner(t, drains);
    ScanOutcome r = scanner.scan(now);
    if (!r.root_ok) {
      err << "ckptmon plan: tier " << t.name << ": " << r.error << "\n";
    } else {
      for (auto& c : r.checkpoints) all.push_back(std::move(c));
    }
    tiers[t.name] = std::move(st);
  }
  evaluate_into(tiers, all, {}, rules_policy(*cfg), now, src);
  return true;
}

// The fleet's series, with the policy of --config.file (tools/review/report_prometheus.cpp).
bool from_prometheus(const PlanCommandOptions& o, double now, Source* src, std::string* error,
                     std::ostream& err) {
  std::optional<Config> cfg;
  if (!o.config_file.empty() && !load_policy(o.config_file, &cfg, error)) return false;
  const RulesPolicy policy = cfg ? rules_policy(*cfg) : RulesPolicy{};
  std::vector<std::string> notes;
  if (!prometheus_plan_inputs(
          {"--prometheus", o.prometheus, o.prometheus_client, o.timeout_seconds}, now, policy,
          &src->inputs, &notes, error)) {
    return false;
  }
  for (const std::string& n : notes)
    err << "ckptmon plan: --prometheus " << o.prometheus << ": " << n << "\n";
  src->evaluated_at = now;
  return true;
}

}  // namespace

bool load_policy(const std::string& file, std::optional<Config>* cfg, std::string* error) {
  LoadResult loaded = load_config_file(file);
  if (!loaded.config) {
    std::string msg;
    for (const auto& e : loaded.errors) msg += "\n  " + e.to_string();
    *error = "--config.file " + file + ":" + msg;
    return false;
  }
  *cfg = std::move(*loaded.config);
  return true;
}

std::optional<std::vector<PlanInputs>> plan_inputs_from_state_dir(const std::string& state_dir,
                                                                  const std::string& config_file,
                                                                  double now, std::string* error) {
  PlanCommandOptions o;
  o.state_dir = state_dir;
  o.config_file = config_file;
  Source src;
  if (!from_state_dir(o, now, &src, error)) return std::nullopt;
  return std::move(src.inputs);
}

int run_plan_command(const PlanCommandOptions& o, const Clock& clock, std::ostream& out,
                     std::ostream& err) {
  std::string error;
  PlanWhatIfs what_ifs;
  if (!parse_plan_flags(o.flags, &what_ifs, &error)) {
    err << "ckptmon plan: " << error << "\n";
    return 2;
  }
  const int sources =
      (o.from.empty() ? 0 : 1) + (o.state_dir.empty() ? 0 : 1) + (o.prometheus.empty() ? 0 : 1);
  if (sources > 1 || (!o.from.empty() && !o.config_file.empty())) {
    err << "ckptmon plan: give one source: --from URL, --state-dir DIR or --prometheus URL (both "
           "with an optional --config.file for the policy) or --config.file alone (a one-shot "
           "scan)\n";
    return 2;
  }
  if (sources == 0 && o.config_file.empty()) {
    err << "ckptmon plan: no source: give --from http://host:port, --state-dir DIR, "
           "--prometheus http://host:9090 or --config.file FILE\n";
    return 2;
  }
  const double now = o.now.value_or(clock.now());
  Source src;
  bool ok = false;
  if (!o.from.empty()) {
    ok = from_daemon(o, &src, &error);
  } else if (!o.prometheus.empty()) {
    ok = from_prometheus(o, now, &src, &error, err);
  } else if (!o.state_dir.empty()) {
    ok = from_state_dir(o, now, &src, &error);
  } else {
    ok = from_scan(o, now, &src, &error, err);
  }
  if (!ok) {
    err << "ckptmon plan: " << error << "\n";
    return 2;
  }
  std::vector<TierPlan> plans;
  for (const PlanInputs& in : src.inputs) {
    if (!o.tiers.empty() && std::find(o.tiers.begin(), o.tiers.end(), in.tier) == o.tiers.end()) {
      continue;
    }
    plans.push_back(make_plan(in, what_ifs));
  }
  for (const std::string& t : o.tiers) {
    if (std::none_of(plans.begin(), plans.end(),
                     [&](const TierPlan& p) { return p.inputs.tier == t; })) {
      err << "ckptmon plan: --tier: no tier \"" << t << "\" in the source\n";
      return 2;
    }
  }
  if (o.format == "json") {
    out << render_plan_json(plans, src.evaluated_at) << "\n";
  } else if (o.format == "markdown") {
    out << render_markdown(plans);
  } else {
    out << render_table(plans);
  }
  return 0;
}

}  // namespace ckptmon
