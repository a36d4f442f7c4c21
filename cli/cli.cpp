#include "cli/cli.hpp"

#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>
#include <tuple>

// g++ 12 -Wnull-dereference false positive in CLI11's own CLI::detail::split.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <CLI/CLI.hpp>
#pragma GCC diagnostic pop

#include "config/config.hpp"
#include "config/config_warnings.hpp"
#include "events/commands.hpp"
#include "rules/alert_table.hpp"
#include "serve/daemon.hpp"
#include "serve/malloc_tuning.hpp"
#include "tools/burst/burst_command.hpp"
#include "tools/burst/demo.hpp"
#include "tools/review/plan_command.hpp"
#include "tools/review/report_command.hpp"
#include "tools/review/report_prometheus.hpp"
#include "tools/review/restore_drill.hpp"
#include "tools/review/scan_command.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/version.hpp"

namespace ckptmon {
namespace {

// The value of a duration flag of `command`, or nullopt after one line on
// stderr naming the command, the flag, what it expects and what it got.
std::optional<Duration> duration_flag(const char* command, const char* flag,
                                      const std::string& text,
                                      Duration at_least = Duration::zero()) {
  auto d = parse_duration(text);
  if (d && *d >= at_least) return d;
  std::cerr << "ckptmon " << command << ": " << flag << ": expected a duration ";
  if (at_least > Duration::zero()) {
    std::cerr << "of at least " << format_duration(at_least);
  } else {
    std::cerr << "such as 500ms, 30s, 5m or 1h30m";
  }
  std::cerr << ", got \"" << text << "\"\n";
  return std::nullopt;
}

// The --prometheus.* flags of `plan` and `report`: how to reach a
// Prometheus, Thanos or Mimir behind TLS, credentials or a tenant header.
void add_prometheus_client_flags(CLI::App* cmd, PrometheusClientFlags& f) {
  cmd->add_option("--prometheus.ca-file", f.ca_file,
                  "CA bundle (PEM) for an https --prometheus (default: the system's)");
  cmd->add_option("--prometheus.cert-file", f.cert_file, "Client certificate (PEM), with key-file");
  cmd->add_option("--prometheus.key-file", f.key_file, "Key of --prometheus.cert-file (PEM)");
  cmd->add_option("--prometheus.server-name", f.server_name,
                  "Name the server's certificate must carry (default: the URL's host)");
  cmd->add_flag("--prometheus.insecure-skip-verify", f.insecure_skip_verify,
                "Do not verify the server's certificate");
  cmd->add_option("--prometheus.basic-auth-user", f.basic_auth_user,
                  "Basic auth user, with --prometheus.basic-auth-password-file");
  cmd->add_option("--prometheus.basic-auth-password-file", f.basic_auth_password_file,
                  "File holding the basic auth password");
  cmd->add_option("--prometheus.bearer-token-file", f.bearer_token_file,
                  "File holding a bearer token (Authorization: Bearer)");
  cmd->add_option("--prometheus.header", f.headers,
                  "Extra request header NAME=VALUE, e.g. X-Scope-OrgID=team-a (repeatable)");
}

// Checks `flags` into `out`; false after one line on stderr naming the flag.
bool prometheus_client_flags(const char* command, const PrometheusClientFlags& flags,
                             HttpClientConfig& out) {
  std::string error;
  if (prometheus_client_config(flags, &out, &error)) return true;
  std::cerr << "ckptmon " << command << ": " << error << "\n";
  return false;
}

int cmd_serve(ServeOptions opts) {
  tune_malloc_for_daemon();  // before the daemon's threads start
  Daemon daemon(std::move(opts), std::make_shared<SystemClock>());
  std::string error;
  if (!daemon.start(&error)) {
    log::error("cannot start", {{"err", error}});
    std::cerr << "ckptmon: cannot start:\n" << error;
    return 1;
  }
  return daemon.run();
}

int cmd_check_config(const std::string& file) {
  LoadResult r = load_config_file(file);
  if (!r.config) {
    for (const auto& e : r.errors) std::cerr << e.to_string() << "\n";
    std::cerr << file << ": " << r.errors.size() << (r.errors.size() == 1 ? " error" : " errors")
              << "\n";
    return 1;
  }
  const std::vector<std::string> warnings = config_warnings(*r.config);
  for (const std::string& w : warnings) std::cerr << file << ": warning: " << w << "\n";
  std::cout << file << ": OK (" << r.config->tiers.size()
            << (r.config->tiers.size() == 1 ? " tier" : " tiers");
  if (!warnings.empty()) {
    std::cout << ", " << warnings.size() << (warnings.size() == 1 ? " warning" : " warnings");
  }
  std::cout << ")\n";
  return 0;
}

}  // namespace

int cli_main(int argc, char** argv) {
  CLI::App app{"ckptmon: monitor AI training checkpoint storage tiers for Prometheus"};
  app.require_subcommand(1);
  app.fallthrough();
  app.set_version_flag("--version",
                       std::string("ckptmon ") + kVersion + " (revision " + kRevision + ")");
  std::string log_level = "info";
  std::string log_format = "logfmt";
  app.add_option("--log.level", log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--log.format", log_format, "logfmt or json")
      ->check(CLI::IsMember({"logfmt", "json"}))
      ->capture_default_str();

  std::string config_file = "/etc/ckptmon/ckptmon.yml";
  std::string listen = kDefaultListenAddress;
  auto* serve = app.add_subcommand("serve", "Run the daemon");
  serve->add_option("--config.file", config_file, "Configuration file")->capture_default_str();
  serve->add_option("--web.listen-address", listen, "Address to serve HTTP on")
      ->capture_default_str();
  std::string web_config_file;
  const char* web_config_help =
      "Web config file (exporter-toolkit format) enabling TLS and/or basic auth";
  serve->add_option("--web.config.file", web_config_file, web_config_help);
  std::string config_watch = "0s";
  serve
      ->add_option("--config.watch-interval", config_watch,
                   "Reload the configuration file when it changes, checking this often "
                   "(e.g. 10s; 0s: only on SIGHUP or POST /-/reload)")
      ->capture_default_str();
  HttpLimits limits;
  std::string header_timeout = "5s";
  serve
      ->add_option("--web.read-header-timeout", header_timeout,
                   "Deadline for a request head (and the TLS handshake, and an idle "
                   "keep-alive connection)")
      ->capture_default_str();
  std::string read_timeout = "10s";
  serve
      ->add_option("--web.read-timeout", read_timeout,
                   "Deadline for a request body and for writing the response")
      ->capture_default_str();
  serve->add_option("--web.max-connections", limits.max_connections, "Open connections at most")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  serve
      ->add_option("--web.max-connections-per-peer", limits.max_connections_per_peer,
                   "Open connections from one client address at most")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  std::string config_read_timeout = "10s";
  serve
      ->add_option("--config.read-timeout", config_read_timeout,
                   "Deadline for reading the configuration files (a hung mount)")
      ->capture_default_str();

  std::string alerts_format = "text";
  std::string alerts_config;
  auto* alerts = app.add_subcommand(
      "alerts", "Print the alert table: as text, as Prometheus rules, or as the runbook's index");
  alerts->add_option("--format", alerts_format, "text, prometheus-rules or runbook-index")
      ->check(CLI::IsMember({"text", "prometheus-rules", "runbook-index"}))
      ->capture_default_str();
  alerts->add_option("--config.file", alerts_config,
                     "Take thresholds, for:, severities and runbook_url from this configuration");

  std::string check_file;
  auto* check = app.add_subcommand("check-config", "Validate a configuration file and exit");
  check->add_option("file", check_file, "Configuration file")->required();

  DemoOptions demo_opts;
  demo_opts.listen_address = kDefaultListenAddress;
  std::string exit_after;
  auto* demo = app.add_subcommand("demo", "Run the daemon on temporary demo tiers");
  demo->add_option("--web.listen-address", demo_opts.listen_address, "Address to serve HTTP on")
      ->capture_default_str();
  demo->add_option("--web.config.file", demo_opts.web_config_file, web_config_help);
  demo->add_option("--exit-after", exit_after, "Stop after this long (e.g. 30s)");
  demo->add_flag("--keep", demo_opts.keep, "Keep the temporary tiers at exit");
  demo->add_option("--speed", demo_opts.speed,
                   "Run the demo's timeline this many times faster (1-20)")
      ->check(CLI::Range(1.0, 20.0))
      ->capture_default_str();

  ScanCommandOptions scan_opts;
  std::string scan_partial_after = "30m";
  auto* scan = app.add_subcommand("scan", "Walk directories once and list the checkpoints found");
  scan->add_option("paths", scan_opts.paths,
                   "Directories to walk (each a tier named after it, jobs at --job-depth), or "
                   "tier names from --config.file")
      ->required();
  scan->add_option("--config.file", scan_opts.config_file,
                   "Read tier settings (jobs, layout, partial_after) from this configuration");
  scan->add_option("--format", scan_opts.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  scan->add_option("--partial-after", scan_partial_after,
                   "Age after which an uncommitted checkpoint counts as partial")
      ->capture_default_str();
  double scan_now = 0;
  scan->add_option("--now", scan_now,
                   "Evaluate in_progress/partial as of this unix time (reproducible output)");
  scan->add_option("--job-depth", scan_opts.job_depth, "Depth of job directories below each path")
      ->check(CLI::Range(0, 16))
      ->capture_default_str();
  scan->add_option("--walk-concurrency", scan_opts.walk_concurrency,
                   "Metadata calls in flight at once for the paths given (0: from the file "
                   "system type, as walk_concurrency in the configuration)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  RestoreDrillOptions drill_opts;
  std::int64_t drill_step = -1;
  std::string drill_rate;
  std::string drill_objective;
  auto* drill = app.add_subcommand(
      "restore-drill",
      "Read a job's newest committed checkpoint back as its ranks would, phase by phase, "
      "against the recovery time objective (read-only)");
  drill
      ->add_option("tier", drill_opts.tier,
                   "A tier directory (jobs at --job-depth), or a tier name from --config.file")
      ->required();
  drill->add_option("--config.file", drill_opts.config_file,
                    "Tier settings and the job's recovery_time_objective from this configuration");
  drill->add_option("--job", drill_opts.job,
                    "The job (required when several jobs have committed checkpoints)");
  drill->add_option("--step", drill_step, "This step instead of the newest committed one");
  drill
      ->add_option("--ranks", drill_opts.ranks,
                   "Reader ranks (default: the ranks that wrote it); with a DCP .metadata, "
                   "another count reads the byte ranges a resharded load would")
      ->check(CLI::Range(0, 4096));
  drill->add_flag("--cold", drill_opts.cold,
                  "Drop the files' pages from the page cache first (POSIX_FADV_DONTNEED), so the "
                  "figure is the storage's");
  drill->add_option("--rate", drill_rate,
                    "Cap the reading at this many bytes per second over all readers, e.g. "
                    "500MiB/s, so a drill does not starve training I/O");
  drill->add_option("--objective", drill_objective,
                    "Recovery time objective, e.g. 10m (default: the job's "
                    "recovery_time_objective with --config.file)");
  drill->add_option("--format", drill_opts.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  drill->add_option("--job-depth", drill_opts.job_depth, "Depth of job directories below the tier")
      ->check(CLI::Range(0, 16))
      ->capture_default_str();
  drill->add_option("--events", drill_opts.events,
                    "Event logs (glob patterns, repeatable) whose shard_written checksums the "
                    "verify phase compares with the files read");
  PlanCommandOptions plan_opts;
  auto* plan = app.add_subcommand(
      "plan", "Size storage by the sizing rule, term by term per tier, with what-ifs");
  plan->add_option("--from", plan_opts.from, "A running ckptmon: http://host:port");
  plan->add_option("--prometheus", plan_opts.prometheus,
                   "A Prometheus that scraped ckptmon: http://host:9090 (the fleet)");
  plan->add_option("--state-dir", plan_opts.state_dir,
                   "The daemon's state directory, opened read-only");
  plan->add_option("--config.file", plan_opts.config_file,
                   "Policy for --state-dir, or alone: scan these tiers once");
  plan->add_option("--tier", plan_opts.tiers, "Only this tier (repeatable)");
  plan->add_option("--format", plan_opts.format, "table, json or markdown")
      ->check(CLI::IsMember({"table", "json", "markdown"}))
      ->capture_default_str();
  struct PlanFlag {
    const char* flag;
    std::string* field;
    const char* help;
  };
  for (const PlanFlag& f : {
           PlanFlag{"--retain", &plan_opts.flags.retain, "What-if: retained versions per job"},
           PlanFlag{"--jobs", &plan_opts.flags.jobs,
                    "What-if: jobs on the tier, all writing at once"},
           PlanFlag{"--replicas", &plan_opts.flags.replicas,
                    "What-if: copies per byte, e.g. 1.25 for 8+2 EC (default 1)"},
           PlanFlag{"--window", &plan_opts.flags.window,
                    "What-if: allowed write window, e.g. 5m (default 2m)"},
           PlanFlag{"--growth", &plan_opts.flags.growth,
                    "What-if: growth headroom, e.g. 30% (default 20%)"},
           PlanFlag{"--temp-allowance", &plan_opts.flags.temp_allowance,
                    "What-if: temporary-write allowance, e.g. 10% (default 100%)"},
           PlanFlag{"--model-params", &plan_opts.flags.model_params,
                    "What-if: a job not yet run, this many parameters (70e9)"},
           PlanFlag{"--bytes-per-param", &plan_opts.flags.bytes_per_param,
                    "Checkpoint bytes per parameter of --model-params (default from --precision "
                    "and --optimizer: 14 for bf16 + adam)"},
           PlanFlag{"--precision", &plan_opts.flags.precision,
                    "Weights of --model-params: fp32, bf16, fp16, fp8 (default bf16)"},
           PlanFlag{"--optimizer", &plan_opts.flags.optimizer,
                    "Optimizer of --model-params: adam, adamw, sgd, none (default adam)"},
           PlanFlag{"--nodes", &plan_opts.flags.nodes,
                    "Nodes the writers run on (per-node bandwidth)"},
           PlanFlag{"--gpus-per-node", &plan_opts.flags.gpus_per_node,
                    "Ranks per node, for nodes from ranks (default 8)"},
       }) {
    plan->add_option(f.flag, *f.field, f.help);
  }
  PrometheusClientFlags plan_prometheus;
  add_prometheus_client_flags(plan, plan_prometheus);
  double plan_now = 0;
  plan->add_option("--now", plan_now, "Evaluate as of this unix time (reproducible output)");

  ReportCommandOptions report_opts;
  auto* report = app.add_subcommand("report", "Capacity trend review of a daemon's history");
  report->add_option("--from", report_opts.from, "A running ckptmon: http://host:port");
  report->add_option("--prometheus", report_opts.prometheus,
                     "A Prometheus that scraped ckptmon: http://host:9090 (the fleet)");
  report->add_option("--state-dir", report_opts.state_dir,
                     "The daemon's state directory, opened read-only");
  report->add_option("--config.file", report_opts.config_file,
                     "Policy for the required capacity (with --state-dir)");
  report->add_option("--since", report_opts.since, "Start of the period: 30d, or unix seconds")
      ->capture_default_str();
  report->add_option("--tier", report_opts.tiers, "Only this tier (repeatable)");
  report->add_option("--job", report_opts.jobs, "Only this job (repeatable)");
  report->add_option("--format", report_opts.format, "markdown, csv, json or html")
      ->capture_default_str();
  report->add_option("--output", report_opts.output, "Write to this file instead of stdout");
  PrometheusClientFlags report_prometheus;
  add_prometheus_client_flags(report, report_prometheus);
  double report_now = 0;
  report->add_option("--now", report_now, "End of the period as unix time (reproducible output)");
  std::string report_min_history = "1h";
  report
      ->add_option("--min-history", report_min_history,
                   "Least span of samples a growth rate is fitted over")
      ->capture_default_str();

  std::vector<std::string> event_logs;
  auto* events = app.add_subcommand("events", "Work with checkpoint event logs");
  events->require_subcommand(1);
  auto* events_check =
      events->add_subcommand("check", "Validate event log files line by line (docs/events.md)");
  events_check->add_option("file", event_logs, "Event log files")->required();

  EmitArgs emit_args;
  auto* emit = app.add_subcommand("emit", "Append one checkpoint event to an event log");
  emit->add_option("--log", emit_args.log, "Event log file (created if missing)")->required();
  emit->add_option("event", emit_args.event, "Event type, e.g. checkpoint_start")->required();
  emit->add_option("--job", emit_args.job, "Job name")->required();
  struct EmitFlag {
    const char* flag;
    std::optional<std::string>* field;
    const char* help;
  };
  for (const EmitFlag& f : {
           EmitFlag{"--step", &emit_args.step, "Training step of the checkpoint"},
           EmitFlag{"--tier", &emit_args.tier, "Tier the event is about"},
           EmitFlag{"--rank", &emit_args.rank, "Rank that wrote the shard"},
           EmitFlag{"--path", &emit_args.path, "Shard or checkpoint path"},
           EmitFlag{"--bytes", &emit_args.bytes, "Bytes written, drained, restored or freed"},
           EmitFlag{"--files", &emit_args.files, "Files in the committed checkpoint"},
           EmitFlag{"--reason", &emit_args.reason, "Why a checkpoint failed"},
           EmitFlag{"--checksum", &emit_args.checksum, "Shard digest as algo:hex"},
           EmitFlag{"--ok", &emit_args.ok, "true or false"},
           EmitFlag{"--from-tier", &emit_args.from_tier, "Drain source tier"},
           EmitFlag{"--to-tier", &emit_args.to_tier, "Drain destination tier"},
           EmitFlag{"--start-ts", &emit_args.start_ts, "When the shard write began"},
           EmitFlag{"--ts", &emit_args.ts, "Event time (default now): unix seconds or RFC 3339"},
       }) {
    emit->add_option_function<std::string>(
        f.flag, [field = f.field](const std::string& v) { *field = v; }, f.help);
  }

  BurstArgs burst_args;
  auto* burst = add_burst_command(app, burst_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // burst promises exit code 2 for every kind of bad input.
    return rc != 0 && burst->parsed() ? 2 : rc;
  }
  log::init(*log::parse_level(log_level), *log::parse_format(log_format));

  if (*serve) {
    ServeOptions opts;
    opts.config_file = config_file;
    opts.listen_address = listen;
    opts.web_config_file = web_config_file;
    for (auto [flag, text, out] :
         {std::tuple{"--config.read-timeout", &config_read_timeout, &opts.config_read_timeout},
          std::tuple{"--web.read-header-timeout", &header_timeout, &limits.header_timeout},
          std::tuple{"--web.read-timeout", &read_timeout, &limits.read_timeout}}) {
      auto t = duration_flag("serve", flag, *text, std::chrono::milliseconds(10));
      if (!t) return 2;
      *out = *t;
    }
    opts.limits = limits;
    auto watch = duration_flag("serve", "--config.watch-interval", config_watch);
    if (!watch) return 2;
    opts.config_watch_interval = *watch;
    return cmd_serve(std::move(opts));
  }
  if (*check) return cmd_check_config(check_file);
  if (*alerts) {
    AlertingConfig alerting;
    if (!alerts_config.empty()) {
      LoadResult loaded = load_config_file(alerts_config);
      if (!loaded.config) {
        std::cerr << "ckptmon alerts: --config.file " << alerts_config << ":\n";
        for (const auto& e : loaded.errors) std::cerr << "  " << e.to_string() << "\n";
        return 2;
      }
      alerting = loaded.config->alerting;
    }
    if (alerts_format == "prometheus-rules") {
      std::cout << render_prometheus_rules(alerting);
    } else if (alerts_format == "runbook-index") {
      std::cout << render_runbook_index(alerting);
    } else {
      std::cout << render_alert_listing(alerting);
    }
    return 0;
  }
  if (*scan) {
    auto d = duration_flag("scan", "--partial-after", scan_partial_after);
    if (!d) return 2;
    scan_opts.partial_after = *d;
    if (scan->count("--now") > 0) scan_opts.now = scan_now;
    SystemClock clock;
    return run_scan_command(scan_opts, clock, std::cout, std::cerr);
  }
  if (*drill) {
    if (drill_step >= 0) drill_opts.step = drill_step;
    if (!drill_rate.empty()) {
      std::string_view text = drill_rate;
      if (text.ends_with("/s")) text.remove_suffix(2);
      auto rate = parse_byte_size(text);
      if (!rate || *rate == 0) {
        std::cerr << "ckptmon restore-drill: --rate: expected bytes per second such as "
                     "500MiB/s, got \""
                  << drill_rate << "\"\n";
        return 2;
      }
      drill_opts.rate_bytes_per_second = static_cast<double>(*rate);
    }
    if (!drill_objective.empty()) {
      auto d = duration_flag("restore-drill", "--objective", drill_objective);
      if (!d) return 2;
      drill_opts.objective_seconds = std::chrono::duration<double>(*d).count();
    }
    SystemClock clock;
    return run_restore_drill(drill_opts, clock, std::cout, std::cerr);
  }
  if (*plan) {
    if (plan->count("--now") > 0) plan_opts.now = plan_now;
    if (!prometheus_client_flags("plan", plan_prometheus, plan_opts.prometheus_client)) return 2;
    return run_plan_command(plan_opts, SystemClock(), std::cout, std::cerr);
  }
  if (*report) {
    if (report->count("--now") > 0) report_opts.now = report_now;
    if (!prometheus_client_flags("report", report_prometheus, report_opts.prometheus_client)) {
      return 2;
    }
    auto min_history = parse_duration(report_min_history);
    if (!min_history || min_history->count() <= 0) {
      std::cerr << "ckptmon report: --min-history: expected a duration such as 1h, got \""
                << report_min_history << "\"\n";
      return 2;
    }
    report_opts.min_history_seconds = to_seconds(*min_history);
    report_opts.progress = ::isatty(STDERR_FILENO) == 1;
    return run_report_command(report_opts, SystemClock(), std::cout, std::cerr);
  }
  if (*events_check) return check_event_logs(event_logs, std::cout, std::cerr);
  if (*emit) return emit_event(emit_args, SystemClock(), std::cerr);
  if (*burst) {
    return run_burst_command(burst_args, SystemClock(), ::isatty(STDOUT_FILENO) != 0, std::cout,
                             std::cerr);
  }
  if (*demo) {
    if (!exit_after.empty()) {
      auto d = duration_flag("demo", "--exit-after", exit_after);
      if (!d) return 2;
      demo_opts.exit_after = *d;
    }
    return run_demo(demo_opts);
  }
  return 2;
}

}  // namespace ckptmon
