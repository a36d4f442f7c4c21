#pragma once
// `ckptmon plan` and GET /api/v1/plan: the sizing rule term by term per tier
// (rules/plan.hpp), from a running daemon (--from), its state directory
// (--state-dir, read-only), the fleet's Prometheus (--prometheus, the
// newest samples of ckptmon's series) or a one-shot scan of a configuration's tiers
// (--config.file), with what-ifs. The JSON of /api/v1/plan and of
// `plan --format json` is one shape (docs/rules.md#plan).

#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "api/plan.hpp"
#include "model/checkpoint_view.hpp"
#include "model/http_client_config.hpp"
#include "model/settings.hpp"

#include <nlohmann/json.hpp>

#include "rules/evaluate.hpp"
#include "rules/plan.hpp"
#include "util/clock.hpp"

namespace ckptmon {

// The what-if flags as typed; empty = not given.
struct PlanFlags {
  std::string retain, jobs, replicas, window, growth, temp_allowance;
  std::string model_params, bytes_per_param, precision, optimizer;
  std::string nodes, gpus_per_node;
};
// Checks every flag (range and form) and fills `out`. Returns false with
// `error` naming the flag ("--replicas: ...").
bool parse_plan_flags(const PlanFlags& flags, PlanWhatIfs* out, std::string* error);

struct PlanCommandOptions {
  std::string from;                    // http://host:port of a running daemon
  std::string state_dir;               // the daemon's state directory, read-only
  std::string prometheus;              // http://host:9090 of a Prometheus that scraped ckptmon
  HttpClientConfig prometheus_client;  // --prometheus.* (TLS, credentials, headers)
  std::string config_file;             // policy (with state_dir) or tiers to scan (alone)
  std::vector<std::string> tiers;      // only these; empty = all
  std::string format = "table";        // table | json | markdown
  PlanFlags flags;
  std::optional<double> now;
  double timeout_seconds = 30;  // --from
};

// The configuration `file` as a one-shot command's policy: false with
// `error` ("--config.file FILE:", then each error on a line of its own) when
// it does not load.
bool load_policy(const std::string& file, std::optional<Config>* cfg, std::string* error);

// The plan inputs of a state directory (read-only) as of `now`, with the
// policy of `config_file` when not empty. nullopt with `error` naming the
// source when it cannot be read.
std::optional<std::vector<PlanInputs>> plan_inputs_from_state_dir(const std::string& state_dir,
                                                                  const std::string& config_file,
                                                                  double now, std::string* error);

// Writes the plan to `out`, problems to `err`; exit code 0, or 2 for bad
// flags and unusable sources.
int run_plan_command(const PlanCommandOptions& opts, const Clock& clock, std::ostream& out,
                     std::ostream& err);

}  // namespace ckptmon
