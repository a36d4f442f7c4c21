#include "api/web.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "http/http_server.hpp"
#include "model/checkpoint_skew.hpp"
#include "rules/estate.hpp"
#include "rules/inputs.hpp"
#include "rules/recovery.hpp"
#include "util/duration.hpp"
#include "util/label.hpp"
#include "util/text.hpp"
#include "util/time_format.hpp"
#include "util/version.hpp"

namespace ckptmon {

namespace {

// Firing alerts first thing on the page: what on-call opens it for.
std::string render_alerts_section(const Snapshot& snap) {
  std::string h = "<h2>Alerts</h2>\n";
  if (!snap.rules) return h + "<p>Rules not evaluated yet.</p>\n";
  std::size_t pending = 0;
  std::string pending_names;  // "CheckpointPartial (rapid, llama)", comma-separated
  std::string rows;
  for (const AlertInstance& a : snap.rules->active) {
    if (a.state != AlertState::kFiring) {
      ++pending;
      std::string where = a.labels.tier;
      if (!a.labels.job.empty()) {
        where += (where.empty() ? "" : ", ") + display_name(a.labels.job);
      }
      pending_names += (pending_names.empty() ? "" : ", ") + html_escape(a.labels.alertname) +
                       (where.empty() ? "" : " (" + html_escape(where) + ")");
      continue;
    }
    rows += "<tr><td class=\"down\">" + html_escape(a.labels.alertname) + "</td><td>" +
            html_escape(a.labels.severity) + "</td><td>" + html_escape(a.labels.tier) +
            "</td><td>" + html_escape(display_name(a.labels.job)) + "</td><td>" +
            html_escape(format_rfc3339(a.fired_at)) + "</td><td>" + html_escape(a.summary) +
            "</td></tr>\n";
  }
  const std::string pending_note =
      pending == 0 ? ""
                   : " " + std::to_string(pending) +
                         " pending (waiting for their for:): " + pending_names + ".";
  if (rows.empty()) return h + "<p>No alerts firing." + pending_note + "</p>\n";
  return h +
         "<table><tr><th>alert</th><th>severity</th><th>tier</th><th>job</th><th>firing "
         "since</th><th>summary</th></tr>\n" +
         rows + "</table>\n" + (pending_note.empty() ? "" : "<p>" + pending_note + "</p>\n");
}

std::string durable_cell(const JobRecoverySummary& r) {
  const DurabilityFigures& d = r.durability;
  if (!d.durable_known) return "<td colspan=\"3\">unknown: no durable tier watched here</td>";
  if (!d.durable.restorable) {
    return "<td class=\"down\" colspan=\"2\">nothing durable</td><td class=\"down\">" +
           (d.steps_at_risk ? std::to_string(*d.steps_at_risk) : std::string("all")) + "</td>";
  }
  const bool risk = d.steps_at_risk && *d.steps_at_risk > 0;
  return "<td>" + (d.durable.step >= 0 ? std::to_string(d.durable.step) : "-") + " on " +
         html_escape(d.durable.tier) + "</td><td>" +
         html_escape(format_rfc3339(d.durable.timestamp)) + "</td><td" +
         (risk ? " class=\"down\"" : "") + ">" +
         (d.steps_at_risk ? std::to_string(*d.steps_at_risk) : std::string("-")) + "</td>";
}

// Per job, the rules cycle's recovery points: the newest checkpoint that can
// be restored from any tier (ckpt_restorable_*) and from a durable one
// (ckpt_durable_restorable_*). Unknown before the first cycle.
std::string render_recovery_section(const Snapshot& snap) {
  std::string h = "<h2>Recovery point</h2>\n";
  if (snap.rules) {
    if (snap.rules->recovery.empty()) return h + "<p>No checkpoints found yet.</p>\n";
    h += "<table><tr><th>job</th><th>step</th><th>committed</th><th>tier</th><th>verified</th>"
         "<th>durable step</th><th>durable since</th><th>steps at risk</th></tr>\n";
    for (const auto& [job, r] : snap.rules->recovery) {
      const RecoveryPoint& p = r.any;
      h += "<tr><td>" + html_escape(display_name(job)) + "</td>";
      if (!p.restorable) {
        h += "<td class=\"down\" colspan=\"4\">nothing restorable</td>";
      } else {
        h += "<td>" + (p.step >= 0 ? std::to_string(p.step) : "-") + "</td><td>" +
             html_escape(format_rfc3339(p.timestamp)) + "</td><td>" + html_escape(p.tier) +
             "</td><td>" + (p.verified ? "yes" : "no") + "</td>";
      }
      h += durable_cell(r) + "</tr>\n";
    }
    return h + "</table>\n";
  }
  // Before the first cycle nothing is evaluated; the page does not evaluate
  // the rule itself (it would copy every catalog per request).
  return h + "<p>Not known yet: the first rules cycle has not run.</p>\n";
}

std::string seconds_cell(double s) {
  return format_duration(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)));
}

// Per (tier, job): the rules cycle's restore estimate (its source) and the
// last scheduled restore drill, against the recovery objective. Absent
// where neither is known.
std::string render_restore_section(const Snapshot& snap) {
  struct Row {
    const PlanRestore* estimate = nullptr;
    const DrillRecord* drill = nullptr;
  };
  std::map<std::pair<std::string, std::string>, Row> rows;
  if (snap.rules) {
    for (const PlanInputs& in : snap.rules->plan_inputs) {
      for (const PlanRestore& r : in.restores) rows[{in.tier, r.job}].estimate = &r;
    }
  }
  if (snap.state.drills) {
    for (const auto& [key, d] : snap.state.drills->last) {
      if (snap.state.tiers.contains(key.first)) rows[key].drill = &d;
    }
  }
  if (rows.empty()) return "";
  std::string h =
      "<h2>Restore</h2>\n<table><tr><th>tier</th><th>job</th><th>estimate</th><th>source</th>"
      "<th>objective</th><th>last drill</th><th>drill took</th><th>drill result</th></tr>\n";
  for (const auto& [key, row] : rows) {
    h += "<tr><td>" + html_escape(key.first) + "</td><td>" + html_escape(display_name(key.second)) +
         "</td>";
    const PlanRestore* e = row.estimate;
    const double objective = e != nullptr ? e->objective_seconds : 0;
    if (e != nullptr && e->estimated_seconds) {
      const bool over = objective > 0 && *e->estimated_seconds > objective;
      h += std::string("<td") + (over ? " class=\"down\"" : "") + ">" +
           seconds_cell(*e->estimated_seconds) + "</td><td>" + html_escape(e->read_source) +
           "</td>";
    } else {
      h += "<td>unknown</td><td>no read rate known</td>";
    }
    h += "<td>" + (objective > 0 ? seconds_cell(objective) : std::string("none")) + "</td>";
    if (const DrillRecord* d = row.drill) {
      const std::string result = d->ok()         ? "ok"
                                 : !d->read_ok() ? "failed: " + d->failure
                                                 : std::string("over the objective");
      h += "<td>step " + std::to_string(d->step) + ", " +
           html_escape(format_rfc3339(d->finished_at)) + "</td><td>" +
           seconds_cell(d->total_seconds()) + "</td><td" + (d->ok() ? "" : " class=\"down\"") +
           ">" + html_escape(result) + "</td>";
    } else {
      h += "<td colspan=\"3\">no drill (restore_drill not set, or none yet)</td>";
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

}  // namespace

std::string render_landing_page(const Snapshot& snap, bool ready, bool last_reload_ok) {
  const State& s = snap.state;
  std::string h;
  h += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ckptmon</title>\n";
  h += "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
       ".up{color:#070}.down{color:#b00;font-weight:bold}</style></head><body>\n";
  h += "<h1>ckptmon</h1>\n<p>Checkpoint storage monitor " + html_escape(kVersion) + " (revision " +
       html_escape(kRevision) + "). ";
  h += ready ? "Ready." : "Not ready yet: first collection running.";
  h += " Configuration: <code>" + html_escape(s.config ? s.config->source : "") + "</code>";
  h += last_reload_ok ? "" : " <span class=\"down\">(last reload failed; see the log)</span>";
  h += "</p>\n" + render_alerts_section(snap);
  h += "<h2>Tiers</h2>\n<table><tr><th>tier</th><th>role</th><th>path</th><th>state</th>"
       "<th>size</th><th>available</th><th>mount</th><th>fstype</th></tr>\n";
  for (const auto& [name, t] : s.tiers) {
    h += "<tr><td>" + html_escape(name) + "</td><td>" +
         html_escape(std::string(to_string(t.config.role))) +
         (t.config.drains_to.empty() ? "" : " &rarr; " + html_escape(t.config.drains_to)) +
         "</td><td><code>" + html_escape(t.config.path) + "</code></td>";
    if (t.up) {
      h += "<td class=\"up\">up</td>";
    } else {
      h += "<td class=\"down\">down: " + html_escape(t.down_reason) + "</td>";
    }
    if (t.has_stats) {
      h += "<td>" + human_bytes(t.stats.size_bytes) + "</td><td>" +
           human_bytes(t.stats.avail_bytes) + "</td><td><code>" + html_escape(t.stats.mountpoint) +
           "</code></td><td>" + html_escape(t.stats.fstype) + "</td>";
    } else {
      h += "<td></td><td></td><td></td><td></td>";
    }
    h += "</tr>\n";
  }
  h += "</table>\n<h2>Checkpoints</h2>\n<table><tr><th>tier</th><th>job</th><th>committed</th>"
       "<th>in progress</th><th>partial</th><th>newest committed step</th><th>stored</th></tr>\n";
  for (const auto& [tier, cat] : s.catalogs) {
    for (const auto& [job, r] : summarize_jobs(*cat)) {
      const std::uint64_t partial = r.count(CkptState::kPartial);
      const std::int64_t step = r.latest_committed_step();
      // Job names are directory names: '&', '#', '+', '%' or a space would
      // break the query, so the URL is encoded before it is HTML-escaped.
      h += "<tr><td>" + html_escape(tier) +
           "</td><td><a href=\"/api/v1/checkpoints?tier=" + html_escape(url_encode(tier)) +
           "&amp;job=" + html_escape(url_encode(job)) + "\">" + html_escape(display_name(job)) +
           "</a></td><td>" + std::to_string(r.count(CkptState::kCommitted)) + "</td><td>" +
           std::to_string(r.count(CkptState::kInProgress)) + "</td><td" +
           (partial > 0 ? " class=\"down\"" : "") + ">" + std::to_string(partial) + "</td><td>" +
           (step >= 0 ? std::to_string(step) : "-") + "</td><td>" +
           human_bytes(static_cast<double>(r.stored_bytes)) + "</td></tr>\n";
    }
  }
  h += "</table>\n" + render_recovery_section(snap) + render_restore_section(snap);
  if (snap.rules && !snap.rules->gpu_jobs.empty()) {
    // What the last checkpoint of each job cost its GPUs (docs/rules.md, "GPU cost").
    h += "<h2>GPU cost of checkpoints</h2>\n<table><tr><th>job</th><th>GPUs</th>"
         "<th>last step</th><th>utilisation during / before</th><th>drop</th>"
         "<th>GPU-seconds lost (last)</th><th>GPU-seconds lost (total)</th><th>unknown</th></tr>\n";
    auto pct = [](const std::optional<double>& v) {
      return v ? std::to_string(static_cast<int>(std::lround(*v * 100))) + "%" : std::string("-");
    };
    for (const auto& [job, g] : snap.rules->gpu_jobs) {
      h += "<tr><td>" + html_escape(display_name(job)) + "</td><td>" + std::to_string(g.gpus) +
           "</td><td>" + (g.last_step ? std::to_string(*g.last_step) : "-") + "</td><td>" +
           pct(g.last_during) + " / " + pct(g.last_baseline) + "</td><td>" + pct(g.last_drop) +
           "</td><td>" + (g.last_lost ? std::to_string(std::lround(*g.last_lost)) : "-") +
           "</td><td>" + std::to_string(std::lround(g.lost_total)) + "</td><td>" +
           std::to_string(g.unknown) + "</td></tr>\n";
    }
    h += "</table>\n";
  }
  h += "<h2>Endpoints</h2>\n<ul>\n"
       "<li><a href=\"/metrics\">/metrics</a>: Prometheus metrics</li>\n"
       "<li><a href=\"/api/v1/tiers\">/api/v1/tiers</a>: tiers as JSON</li>\n"
       "<li><a href=\"/api/v1/checkpoints\">/api/v1/checkpoints</a>: the catalog "
       "(<code>?tier=&amp;job=&amp;state=</code>)</li>\n"
       "<li><a href=\"/api/v1/jobs\">/api/v1/jobs</a>: per job summary</li>\n"
       "<li><a href=\"/api/v1/findings\">/api/v1/findings</a>: access audit</li>\n"
       "<li><code>/api/v1/versions?job=NAME</code>: a job's versions and their copies on every "
       "tier</li>\n"
       "<li><a href=\"/api/v1/alerts\">/api/v1/alerts</a>: pending and firing alerts as JSON</li>\n"
       "<li><a href=\"/api/v1/plan\">/api/v1/plan</a>: the sizing rule term by term per "
       "tier (<code>ckptmon plan</code>)</li>\n"
       "<li><a href=\"/api/v1/history\">/api/v1/history</a>: stored tier and job samples "
       "(<code>?tier=&amp;job=&amp;series=&amp;since=&amp;until=&amp;step=</code>)</li>\n"
       "<li><a href=\"/api/v1/report\">/api/v1/report</a>: the capacity trend review of the "
       "state database (<code>ckptmon report --from</code>; "
       "<code>?since=&amp;until=&amp;tier=&amp;job=&amp;min_history=&amp;series=1</code>)</li>\n"
       "<li><a href=\"/-/healthy\">/-/healthy</a>, <a href=\"/-/ready\">/-/ready</a></li>\n"
       "<li><code>POST /-/reload</code>: reload the configuration</li>\n</ul>\n";
  h += "</body></html>\n";
  return h;
}

namespace {

nlohmann::json opt(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json counts_json(const IntegrityCounts& c) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < kIntegrityResultCount; ++i) {
    j[std::string(to_string(static_cast<IntegrityResult>(i)))] = c.by_result[i];
  }
  return j;
}

nlohmann::json event_step_json(const EventStep& s) {
  nlohmann::json j;
  j["start_ts"] = opt(s.start_ts);
  j["commit_ts"] = opt(s.commit_ts);
  j["committed"] = s.committed;
  j["commit_files"] = s.commit_files;
  j["commit_bytes"] = s.commit_bytes;
  j["duration_seconds"] = s.duration() ? nlohmann::json(*s.duration()) : nlohmann::json();
  j["shards"] = s.shards;
  j["shard_bytes"] = s.shard_bytes;
  j["checksummed_shards"] = s.checksummed_shards;
  j["first_shard_start"] = opt(s.first_shard_start);
  j["first_shard_end"] = opt(s.first_shard_end);
  j["last_shard_end"] = opt(s.last_shard_end);
  j["completion_skew_seconds"] =
      s.completion_skew() ? nlohmann::json(*s.completion_skew()) : nlohmann::json();
  j["slowest_rank"] = s.last_rank >= 0 ? nlohmann::json(s.last_rank) : nlohmann::json();
  j["pauses"] = s.pauses;
  j["pause_max_seconds"] = s.pauses > 0 ? nlohmann::json(s.pause_max) : nlohmann::json();
  j["failed"] = s.failed;
  j["failure_reason"] = s.failed ? nlohmann::json(s.failure_reason) : nlohmann::json();
  j["failed_ts"] = opt(s.failed_ts);
  nlohmann::json drains = nlohmann::json::array();
  for (const auto& [key, d] : s.drains) {
    const auto gt = key.find('>');
    nlohmann::json o{{"from_tier", key.substr(0, gt)},
                     {"to_tier", gt == std::string::npos ? "" : key.substr(gt + 1)},
                     {"bytes", d.bytes},
                     {"shards", d.shards},
                     {"start_ts", opt(d.start_ts)},
                     {"done_ts", opt(d.done_ts)}};
    o["ok"] = d.ok ? nlohmann::json(*d.ok) : nlohmann::json();
    drains.push_back(std::move(o));
  }
  j["drains"] = std::move(drains);
  j["cleanups"] = s.cleanups;
  j["cleanup_bytes"] = s.cleanup_bytes;
  j["last_event_ts"] = opt(s.last_event_ts);
  return j;
}

// A ?job= filter: the raw name, the name as the API shows it
// (display_name) or its label value all select it.
bool name_matches(const std::string& raw, const std::string& wanted) {
  return wanted.empty() || raw == wanted || display_name(raw) == wanted ||
         label_value(raw) == wanted;
}

std::string query_value(const std::map<std::string, std::string>& q, const char* k) {
  auto it = q.find(k);
  return it == q.end() ? std::string() : it->second;
}

// "a, b or c": the values a query parameter accepts, for its error message.
std::string one_of(const std::vector<std::string_view>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += i + 1 == values.size() ? " or " : ", ";
    out += values[i];
  }
  return out;
}

}  // namespace

nlohmann::json checkpoint_json(const Checkpoint& c, const State* state) {
  nlohmann::json j;
  j["tier"] = c.tier;
  j["job"] = display_name(c.job);
  j["job_label"] = label_value(c.job);
  j["step"] = c.step >= 0 ? nlohmann::json(c.step) : nlohmann::json();
  j["framework"] = c.framework;
  j["state"] = std::string(to_string(c.state));
  j["reason"] = c.reason;
  j["path"] = display_name(c.path);
  j["files"] = c.files;
  j["bytes"] = c.bytes;
  j["allocated_bytes"] = c.allocated_bytes;
  j["first_write"] = c.first_write;
  j["last_write"] = c.last_write;
  j["completion_skew_seconds"] = c.completion_skew();
  j["marker_time"] = c.marker_time > 0 ? nlohmann::json(c.marker_time) : nlohmann::json();
  j["expected_files"] = c.expected_files > 0 ? nlohmann::json(c.expected_files) : nlohmann::json();
  nlohmann::json comp = nlohmann::json::object();
  for (std::size_t i = 0; i < kComponentCount; ++i) {
    if (c.component_bytes[i] > 0) {
      comp[std::string(to_string(static_cast<Component>(i)))] = c.component_bytes[i];
    }
  }
  j["component_bytes"] = comp;
  // Where they come from: the checkpoint's own metadata, or its file names
  // (with why the metadata could not be used, when there was one).
  j["component_source"] = c.metadata == "read" ? "metadata" : "names";
  if (!c.metadata.empty() && c.metadata != "read") j["metadata_note"] = c.metadata;
  if (c.save_start > 0 && c.save_end >= c.save_start) {
    j["save_duration_seconds"] = c.save_end - c.save_start;
  }
  if (c.first_seen > 0) j["first_seen"] = c.first_seen;
  if (c.last_seen > 0) j["last_seen"] = c.last_seen;
  // A record kept from an earlier walk: its directory cannot be read now.
  j["unreadable"] = c.unreadable;
  if (state != nullptr) {
    if (const EventStep* ev = state->event_step(c)) {
      j["events"] = event_step_json(*ev);
      j["completion_skew_seconds"] = completion_skew(c, ev);
      if (!j.contains("save_duration_seconds")) {
        if (auto d = ev->duration()) j["save_duration_seconds"] = *d;
      }
    }
    const bool failed = state->integrity_failed(c);
    j["integrity_failed"] = failed;
    j["restorable"] = c.state == CkptState::kCommitted && !failed;
  }
  return j;
}

namespace {

// What the storage path carried during the checkpoint's save window and why
// it was slow (rules/storage_path.hpp); null until the figures are settled
// (committed, and the counters covered the window or never will). Unknown
// figures are null, never 0.
nlohmann::json storage_path_json(const Checkpoint& c, const Snapshot& snap) {
  if (!snap.rules || !snap.rules->storage_path) return nullptr;
  auto it = snap.rules->storage_path->find(CheckpointKey{c.tier, c.path});
  if (it == snap.rules->storage_path->end() || !it->second.io) return nullptr;
  const WindowIo& io = *it->second.io;
  auto known = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
  };
  nlohmann::json j{
      {"window_start", io.window.start},
      {"window_end", io.window.end},
      {"window_source", std::string(to_string(io.window.source))},
      {"io_source", std::string(to_string(io.source))},
      {"write_bytes_per_second", known(io.write_bytes_per_second)},
      {"write_measure", io.write_bytes_per_second
                            ? nlohmann::json(std::string(to_string(io.write_measure)))
                            : nlohmann::json()},
      {"device_write_bytes_per_second", known(io.device_write_bytes_per_second)},
      {"sampling_interval_seconds", io.sampling_interval_seconds > 0
                                        ? nlohmann::json(io.sampling_interval_seconds)
                                        : nlohmann::json()},
      {"absorbed_by_dirty_memory", io.absorbed},
      {"dirty_rise_bytes", known(io.node.dirty_rise_bytes)},
      {"memory_full_pressure", known(io.node.memory_full_share)},
      {"io_full_pressure", known(io.node.io_full_share)},
      {"metadata_ops_per_second", known(io.metadata_ops_per_second)},
      {"slowest_metadata_op", io.slowest_op_latency_seconds
                                  ? nlohmann::json(std::string(to_string(io.slowest_op)))
                                  : nlohmann::json()},
      {"slowest_metadata_op_latency_seconds", known(io.slowest_op_latency_seconds)},
      {"network_utilisation", known(io.network_utilisation)},
      {"network_interface",
       io.network_utilisation ? nlohmann::json(io.network_interface) : nlohmann::json()}};
  nlohmann::json slow = nullptr;
  if (const auto& v = it->second.verdict; v && v->judged) {
    slow = {
        {"slow", v->slow},
        {"duration_seconds", v->duration_seconds},
        {"checkpoint_window_seconds",
         v->window_seconds > 0 ? nlohmann::json(v->window_seconds) : nlohmann::json()},
        {"median_limit_seconds",
         v->median_limit_seconds > 0 ? nlohmann::json(v->median_limit_seconds) : nlohmann::json()},
        {"missed", v->slow ? nlohmann::json(v->missed) : nlohmann::json()},
        {"cause", v->slow ? nlohmann::json(std::string(to_string(v->cause))) : nlohmann::json()},
        {"write_ratio", known(v->write_ratio)},
        {"skew_ratio", known(v->skew_ratio)},
        {"pressure_share", known(v->pressure_share)},
        {"pressure_resource",
         v->pressure_share ? nlohmann::json(v->pressure_resource) : nlohmann::json()},
        {"evidence", v->slow ? nlohmann::json(v->evidence) : nlohmann::json()}};
  }
  j["slow"] = std::move(slow);
  return j;
}

}  // namespace

bool render_checkpoints_json(const Snapshot& snap, const std::map<std::string, std::string>& query,
                             std::string* body, std::string* error) {
  const std::string tier = query_value(query, "tier");
  const std::string job = query_value(query, "job");
  const std::string state = query_value(query, "state");
  std::optional<CkptState> want;
  if (!state.empty()) {
    want = ckpt_state_from(state);
    if (!want) {
      std::vector<std::string_view> names;
      names.reserve(kAllCkptStates.size());
      for (CkptState st : kAllCkptStates) names.push_back(to_string(st));
      *error = "unknown state \"" + state + "\"; expected " + one_of(names);
      return false;
    }
  }
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& [name, cat] : snap.state.catalogs) {
    if (!tier.empty() && name != tier) continue;
    for (const auto& c : cat->checkpoints) {
      if (!name_matches(c.job, job)) continue;
      if (want && c.state != *want) continue;
      arr.push_back(checkpoint_json(c, &snap.state));
      arr.back()["storage_path"] = storage_path_json(c, snap);
    }
  }
  *body = arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return true;
}

bool render_versions_json(const Snapshot& snap, const std::map<std::string, std::string>& query,
                          std::string* body, std::string* error) {
  const std::string job = query_value(query, "job");
  if (job.empty()) {
    *error = "job is required: /api/v1/versions?job=NAME (a job of /api/v1/jobs)";
    return false;
  }
  // The job's checkpoints on every configured tier, joined as the rules
  // cycle joins them (rules/estate.hpp).
  std::vector<Checkpoint> mine;
  for (const auto& [name, cat] : snap.state.catalogs) {
    if (!snap.state.tiers.contains(name)) continue;
    for (const auto& c : cat->checkpoints) {
      if (name_matches(c.job, job)) mine.push_back(c);
    }
  }
  const CheckpointView view(mine);
  const Verifications verified = verifications_of(snap.state, view);
  const std::vector<Version> versions = join_versions(view, snap.state.tiers, verified);
  const EstatePolicy* estate = snap.state.config ? &snap.state.config->estate : nullptr;
  nlohmann::json arr = nlohmann::json::array();
  // Newest first: by step, or by commit time where the layout gives none.
  std::vector<const Version*> order;
  order.reserve(versions.size());
  for (const Version& v : versions) order.push_back(&v);
  std::stable_sort(order.begin(), order.end(), [](const Version* a, const Version* b) {
    if (a->job != b->job) return a->job < b->job;
    if (a->step != b->step) return a->step > b->step;
    return a->commit_time > b->commit_time;
  });
  for (const Version* v : order) {
    const std::string job_name(v->job);
    const std::int64_t required = estate ? estate->for_job(job_name).copies_required : 1;
    nlohmann::json copies = nlohmann::json::array();
    for (const EstateCopy& c : v->copies) {
      const Checkpoint& k = *c.checkpoint;
      auto it = verified.find(CheckpointKey{k.tier, k.path});
      copies.push_back(
          {{"tier", k.tier},
           {"path", display_name(k.path)},
           {"state", std::string(to_string(k.state))},
           {"bytes", k.bytes},
           {"files", k.files},
           {"first_write", k.first_write > 0 ? nlohmann::json(k.first_write) : nlohmann::json()},
           {"last_write", k.last_write > 0 ? nlohmann::json(k.last_write) : nlohmann::json()},
           {"durable", c.durable},
           {"deletion_queue", c.deletion},
           {"restorable", c.restorable()},
           {"mismatched", c.mismatched},
           // true passed, false failed, null not verified
           {"verified", it == verified.end() ? nlohmann::json() : nlohmann::json(it->second)}});
    }
    arr.push_back(
        {{"job", display_name(job_name)},
         {"job_label", label_value(job_name)},
         {"step", v->step >= 0 ? nlohmann::json(v->step) : nlohmann::json()},
         {"path",
          v->step < 0 ? nlohmann::json(display_name(std::string(v->path))) : nlohmann::json()},
         {"restorable", v->restorable},
         {"commit_time", v->commit_time > 0 ? nlohmann::json(v->commit_time) : nlohmann::json()},
         {"durable_copies", v->durable_copies},
         {"copies_required", required},
         {"copies", std::move(copies)}});
  }
  *body = arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return true;
}

bool render_findings_json(const Snapshot& snap, const std::map<std::string, std::string>& query,
                          std::string* body, std::string* error) {
  const std::string tier = query_value(query, "tier");
  const std::string kind_text = query_value(query, "kind");
  std::optional<FindingKind> kind;
  if (!kind_text.empty()) {
    kind = finding_kind_from(kind_text);
    if (!kind) {
      std::vector<std::string_view> names;
      names.reserve(kFindingKindCount);
      for (int k = 0; k < kFindingKindCount; ++k) {
        names.push_back(to_string(static_cast<FindingKind>(k)));
      }
      *error = "unknown kind \"" + kind_text + "\"; expected " + one_of(names);
      return false;
    }
  }
  nlohmann::json arr = nlohmann::json::array();
  auto add = [&](const std::vector<AccessFinding>& list, std::string_view source) {
    for (const auto& f : list) {
      if (kind && f.kind != *kind) continue;
      arr.push_back({{"tier", f.tier},
                     {"job", display_name(f.job)},
                     {"job_label", label_value(f.job)},
                     {"path", display_name(f.path)},
                     {"kind", std::string(to_string(f.kind))},
                     {"source", source},
                     {"detail", f.detail}});
    }
  };
  for (const auto& [name, cat] : snap.state.catalogs) {
    if ((!tier.empty() && name != tier) || !cat->findings) continue;
    add(*cat->findings, "walk");
  }
  // What only the estate sees: a copy outside its job's residencies.
  if (snap.rules) {
    for (const auto& [name, list] : snap.rules->estate_findings) {
      if ((!tier.empty() && name != tier) || !list) continue;
      add(*list, "estate");
    }
  }
  *body = arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return true;
}

namespace {

// What the event log knows of (tier, job): its kept steps, the newest, how
// many committed, the last event and the failures; null when it names none.
nlohmann::json job_events_json(const EventCatalog* events, const std::string& tier,
                               const std::string& job) {
  if (events == nullptr) return nullptr;
  std::uint64_t steps = 0, committed = 0;
  std::optional<std::int64_t> latest;
  double last_ts = 0;
  for (auto it = events->steps.lower_bound(
           StepKeyLess::View{tier, job, std::numeric_limits<std::int64_t>::min()});
       it != events->steps.end() && it->first.tier == tier && it->first.job == job; ++it) {
    ++steps;
    if (it->second.committed) ++committed;
    latest = std::max(latest.value_or(it->first.step), it->first.step);
    last_ts = std::max(last_ts, it->second.last_event_ts);
  }
  auto j = events->jobs.find({tier, job});
  if (steps == 0 && j == events->jobs.end()) return nullptr;
  return {{"steps", steps},
          {"committed_steps", committed},
          {"latest_step", latest ? nlohmann::json(*latest) : nlohmann::json()},
          {"last_event_ts", last_ts > 0 ? nlohmann::json(last_ts) : nlohmann::json()},
          {"failures", j != events->jobs.end() ? j->second.failures : 0}};
}

nlohmann::json recovery_json(const JobRecoverySummary& r) {
  const auto step = [](const RecoveryPoint& p) {
    return p.restorable && p.step >= 0 ? nlohmann::json(p.step) : nlohmann::json();
  };
  const auto point = [&](const RecoveryPoint& p) {
    if (!p.restorable) return nlohmann::json();
    return nlohmann::json{{"step", step(p)},
                          {"committed_at", format_rfc3339(p.timestamp)},
                          {"tier", p.tier},
                          {"path", display_name(p.path)}};
  };
  const DurabilityFigures& d = r.durability;
  nlohmann::json out{{"any", point(r.any)}};
  if (!d.durable_known) {
    // No durable tier watched here: unknown, not "none".
    out["durable"] = {{"known", false}};
    return out;
  }
  out["durable"] = {
      {"known", true},
      {"point", point(d.durable)},
      {"steps_at_risk", d.steps_at_risk ? nlohmann::json(*d.steps_at_risk) : nlohmann::json()},
      {"lag_seconds", d.durable_lag_seconds},
      {"durable_within_seconds", d.policy.durable_within_seconds},
      {"copies_required", d.policy.copies_required},
      {"versions", d.versions},
      {"versions_under_copied", d.versions_under_copied},
      {"copies_mismatched", d.mismatched_copies}};
  return out;
}

}  // namespace

std::string render_jobs_json(const Snapshot& snap) {
  // By (tier, job): the jobs of the catalogs, then those only the event log
  // names (no checkpoint on disk yet, or the tier not walked yet).
  std::map<std::pair<std::string, std::string>, nlohmann::json> rows;
  const EventCatalog* events = snap.state.events.get();
  for (const auto& [tier, cat] : snap.state.catalogs) {
    for (const auto& [job, r] : summarize_jobs(*cat)) {
      const std::int64_t step = r.latest_committed_step();
      nlohmann::json o{{"tier", tier},
                       {"job", display_name(job)},
                       {"job_label", label_value(job)},
                       {"checkpoints", r.checkpoints}};
      for (CkptState s : kAllCkptStates) o[std::string(to_string(s))] = r.count(s);
      o["stored_bytes"] = r.stored_bytes;
      o["unreadable"] = r.unreadable;
      o["latest_committed_step"] = step >= 0 ? nlohmann::json(step) : nlohmann::json();
      o["on_disk"] = true;
      o["events"] = job_events_json(events, tier, job);
      rows.emplace(std::pair{tier, job}, std::move(o));
    }
  }
  if (events != nullptr) {
    std::set<std::pair<std::string, std::string>> named;
    for (const auto& [key, _] : events->steps) named.emplace(key.tier, key.job);
    for (const auto& [key, _] : events->jobs) named.insert(key);
    for (const auto& [tier, job] : named) {
      if (rows.contains({tier, job})) continue;
      // Nothing of it on disk: zero where the tier's last walk is known,
      // unknown (null) before its first walk.
      auto c = snap.state.catalogs.find(tier);
      const bool walked = c != snap.state.catalogs.end() && c->second->scanned;
      const nlohmann::json zero = walked ? nlohmann::json(0) : nlohmann::json();
      nlohmann::json o{{"tier", tier},
                       {"job", display_name(job)},
                       {"job_label", label_value(job)},
                       {"checkpoints", zero}};
      for (CkptState s : kAllCkptStates) o[std::string(to_string(s))] = zero;
      o["stored_bytes"] = zero;
      o["unreadable"] = walked ? nlohmann::json(false) : nlohmann::json();
      o["latest_committed_step"] = nullptr;
      o["on_disk"] = false;
      o["events"] = job_events_json(events, tier, job);
      rows.emplace(std::pair{tier, job}, std::move(o));
    }
  }
  nlohmann::json arr = nlohmann::json::array();
  for (auto& [key, o] : rows) {
    const std::string& job = key.second;
    if (snap.rules) {
      // The job's recovery points (the same on each of its tiers' rows).
      if (auto r = snap.rules->recovery.find(job); r != snap.rules->recovery.end()) {
        o["recovery_point"] = recovery_json(r->second);
      }
      if (auto g = snap.rules->gpu_jobs.find(job); g != snap.rules->gpu_jobs.end()) {
        auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
        o["gpu"] = {{"gpus", g->second.gpus},
                    {"idle_gpu_seconds_total", g->second.lost_total},
                    {"checkpoints_joined", g->second.joined},
                    {"checkpoints_unknown", g->second.unknown},
                    {"last_step", opt(g->second.last_step)},
                    {"last_idle_gpu_seconds", opt(g->second.last_lost)},
                    {"last_utilization_ratio", opt(g->second.last_during)},
                    {"last_baseline_utilization_ratio", opt(g->second.last_baseline)},
                    {"last_drop_ratio", opt(g->second.last_drop)}};
      }
    }
    arr.push_back(std::move(o));
  }
  return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string render_tiers_json(const Snapshot& snap) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& [name, t] : snap.state.tiers) {
    nlohmann::json j;
    j["name"] = name;
    j["path"] = t.config.path;
    j["role"] = std::string(to_string(t.config.role));
    j["drains_to"] =
        t.config.drains_to.empty() ? nlohmann::json() : nlohmann::json(t.config.drains_to);
    j["partial_after_seconds"] = to_seconds(t.config.partial_after);
    if (snap.state.config) {
      j["scan_interval_seconds"] = to_seconds(snap.state.config->global.scan_interval);
    }
    j["up"] = t.up;
    j["down_reason"] = t.up ? nlohmann::json() : nlohmann::json(t.down_reason);
    j["last_success"] = t.last_success > 0 ? nlohmann::json(t.last_success) : nlohmann::json();
    j["not_probed_since"] =
        t.not_probed_since > 0 ? nlohmann::json(t.not_probed_since) : nlohmann::json();
    if (t.has_stats) {
      j["size_bytes"] = t.stats.size_bytes;
      j["avail_bytes"] = t.stats.avail_bytes;
      j["free_bytes"] = t.stats.free_bytes;
      j["files"] = t.stats.files;
      j["files_free"] = t.stats.files_free;
      j["readonly"] = t.stats.readonly;
      j["mountpoint"] = t.stats.mountpoint;
      j["fstype"] = t.stats.fstype;
      j["device"] = t.stats.device;
      // Detected, never configured (collectors/encryption.hpp).
      j["encryption"] = {{"at_rest", t.stats.encryption_at_rest},
                         {"in_transit", t.stats.encryption_in_transit},
                         {"detail", t.stats.encryption_detail}};
    }
    j["encryption_required"] = t.config.encryption_required;
    // What the storage path carried (collectors/tier_io.cpp): the source,
    // the devices read and the tiers sharing them; null until first read.
    j["io_source"] = nullptr;
    if (snap.state.io) {
      if (auto io = snap.state.io->tiers.find(name); io != snap.state.io->tiers.end()) {
        const TierIo& x = io->second;
        // Unknown (null) while the tier's mount was never resolved.
        if (x.source != IoSource::kNone || x.ok) j["io_source"] = std::string(to_string(x.source));
        j["io_devices"] = x.devices;
        j["io_shared_with"] = x.shared_with;
        j["io_ok"] = x.ok;
        j["io_error"] = x.ok ? nlohmann::json() : nlohmann::json(x.error);
      }
    }
    arr.push_back(std::move(j));
  }
  return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool render_events_summary_json(const Snapshot& snap,
                                const std::map<std::string, std::string>& query, std::string* body,
                                std::string* error) {
  const std::string tier = query_value(query, "tier");
  const std::string job = query_value(query, "job");
  std::size_t top = 5;
  if (const std::string t = query_value(query, "top"); !t.empty()) {
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), top);
    if (ec != std::errc() || p != t.data() + t.size() || top < 1 || top > 100) {
      *error = "top must be an integer from 1 to 100, got \"" + t + "\"";
      return false;
    }
  }
  nlohmann::json out;
  const State& st = snap.state;
  if (st.events) {
    const EventCatalog& ev = *st.events;
    nlohmann::json lines = nlohmann::json::object();
    for (std::size_t i = 0; i < ev.totals.lines.size(); ++i) {
      lines[std::string(line_status_label(static_cast<LineStatus>(i)))] = ev.totals.lines[i];
    }
    nlohmann::json errors = nlohmann::json::object();
    for (RejectReason r : kAllRejectReasons) {
      errors[std::string(reject_reason_label(r))] = ev.totals.errors[static_cast<std::size_t>(r)];
    }
    nlohmann::json changes = nlohmann::json::object();
    for (std::size_t i = 0; i < kFileChangeCount; ++i) {
      changes[std::string(to_string(static_cast<FileChange>(i)))] = ev.totals.file_changes[i];
    }
    out["lines"] = std::move(lines);
    out["errors"] = std::move(errors);
    out["file_changes"] = std::move(changes);
    out["read_bytes"] = ev.totals.bytes;
    out["stale_events"] = ev.totals.stale_events;
    nlohmann::json logs = nlohmann::json::array();
    for (const auto& [glob, t] : ev.tails) {
      logs.push_back({{"glob", glob},
                      {"files", t.files},
                      {"backlog_bytes", t.backlog_bytes},
                      {"refused", t.refused},
                      {"error", t.error.empty() ? nlohmann::json() : nlohmann::json(t.error)}});
    }
    out["logs"] = std::move(logs);
    nlohmann::json jobs = nlohmann::json::array();
    for (const auto& [key, j] : ev.jobs) {
      if ((!tier.empty() && key.first != tier) || !name_matches(key.second, job)) continue;
      std::uint64_t kept = 0, committed = 0, failed = 0;
      std::int64_t latest = -1;
      auto lo = ev.steps.lower_bound(
          StepKeyLess::View{key.first, key.second, std::numeric_limits<std::int64_t>::min()});
      for (auto it = lo;
           it != ev.steps.end() && it->first.tier == key.first && it->first.job == key.second;
           ++it) {
        ++kept;
        if (it->second.committed) {
          ++committed;
          latest = std::max(latest, it->first.step);
        }
        if (it->second.failed) ++failed;
      }
      nlohmann::json slow = nlohmann::json::array();
      for (const auto& [rank, n] : ev.slow_ranks(key.first, key.second, top)) {
        slow.push_back({{"rank", rank}, {"times_last", n}});
      }
      nlohmann::json recent = nlohmann::json::array();
      for (auto it = j.recent_failures.rbegin(); it != j.recent_failures.rend(); ++it) {
        recent.push_back({{"step", it->step}, {"ts", it->ts}, {"reason", it->reason}});
      }
      jobs.push_back(
          {{"tier", key.first},
           {"job", display_name(key.second)},
           {"job_label", label_value(key.second)},
           {"checkpoints", kept},
           {"committed", committed},
           {"failed", failed},
           {"latest_committed_step", latest >= 0 ? nlohmann::json(latest) : nlohmann::json()},
           {"failures_total", j.failures},
           {"recent_failures", std::move(recent)},
           {"slow_ranks", std::move(slow)},
           {"durations", {{"count", j.duration.count}, {"sum_seconds", j.duration.sum}}},
           {"pauses", {{"count", j.pause.count}, {"sum_seconds", j.pause.sum}}},
           {"cleanups", j.cleanups},
           {"cleanup_bytes", j.cleanup_bytes},
           {"last_event_ts", opt(j.last_event_ts)}});
    }
    out["jobs"] = std::move(jobs);
    nlohmann::json restores = nlohmann::json::array();
    for (const auto& [name, r] : ev.restores) {
      if (!name_matches(name, job)) continue;
      nlohmann::json o{
          {"job", display_name(name)},
          {"job_label", label_value(name)},
          {"restores", r.restores},
          {"failed", r.failed},
          {"last_ok_ts", opt(r.last_ok_ts)},
          {"durations", {{"count", r.duration.count}, {"sum_seconds", r.duration.sum}}}};
      if (r.last) {
        o["last"] = {{"step", r.last->step},
                     {"tier", r.last->tier},
                     {"ts", r.last->ts},
                     {"bytes", r.last->bytes},
                     {"ok", r.last->ok},
                     {"duration_seconds",
                      r.last->duration ? nlohmann::json(*r.last->duration) : nlohmann::json()}};
      } else {
        o["last"] = nullptr;
      }
      restores.push_back(std::move(o));
    }
    out["restores"] = std::move(restores);
  }
  if (st.integrity) {
    const IntegrityStatus& in = *st.integrity;
    nlohmann::json totals = nlohmann::json::object();
    for (const auto& [t, c] : in.totals) totals[t] = counts_json(c);
    nlohmann::json failed = nlohmann::json::array();
    for (const auto& [k, c] : in.steps) {
      if (!c.failed()) continue;
      failed.push_back({{"tier", k.tier},
                        {"job", display_name(k.job)},
                        {"step", k.step},
                        {"results", counts_json(c)}});
    }
    for (const auto& [k, c] : in.checkpoints) {
      if (!c.failed()) continue;
      failed.push_back(
          {{"tier", k.first}, {"path", display_name(k.second)}, {"results", counts_json(c)}});
    }
    out["integrity"] = {{"totals", std::move(totals)},
                        {"pending_shards", in.pending_shards},
                        {"failed", std::move(failed)}};
  }
  *body = out.is_null() ? std::string("{}")
                        : out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return true;
}

std::string render_event_checkpoints_json(const Snapshot& snap,
                                          const std::map<std::string, std::string>& query) {
  const std::string tier = query_value(query, "tier");
  const std::string job = query_value(query, "job");
  nlohmann::json arr = nlohmann::json::array();
  if (snap.state.events) {
    for (const auto& [k, s] : snap.state.events->steps) {
      if ((!tier.empty() && k.tier != tier) || !name_matches(k.job, job)) continue;
      nlohmann::json j = event_step_json(s);
      j["tier"] = k.tier;
      j["job"] = display_name(k.job);
      j["job_label"] = label_value(k.job);
      j["step"] = k.step;
      if (snap.state.integrity) {
        auto it = snap.state.integrity->steps.find(k);
        j["integrity"] =
            it == snap.state.integrity->steps.end() ? nlohmann::json() : counts_json(it->second);
      }
      arr.push_back(std::move(j));
    }
  }
  return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ckptmon

namespace ckptmon {

bool parse_history_query(const std::map<std::string, std::string>& query, double now,
                         const HistoryPolicy& policy, HistoryQuery* out, std::string* error) {
  HistoryQuery q;
  q.tier = query_value(query, "tier");
  q.job = query_value(query, "job");
  q.series = query_value(query, "series");
  if (!q.series.empty() && !is_history_series(q.series)) {
    std::vector<std::string_view> names(std::begin(kHistorySeriesNames),
                                        std::end(kHistorySeriesNames));
    *error = "series: unknown series \"" + q.series + "\"; expected " + one_of(names);
    return false;
  }
  if (!q.job.empty() && !q.series.empty() && q.series != "stored_bytes") {
    *error = "series: " + q.series + " is a tier series; with job= only stored_bytes exists";
    return false;
  }
  TimeRange range;
  if (parse_time_range(query, now, 86400, &range, error) != TimeRangeFault::kNone) return false;
  q.since = range.since;
  q.until = range.until;
  if (const std::string text = query_value(query, "step"); !text.empty()) {
    if (auto d = parse_duration(text)) {
      q.step = to_seconds(*d);
    } else {
      double v = -1;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v) || v < 0) {
        *error = "step: expected a duration (5m) or seconds >= 0, got \"" + text + "\"";
        return false;
      }
      q.step = v;
    }
  } else {
    // The oldest part of the range has the coarsest samples; asking finer
    // would only repeat them.
    auto r = history_resolution_at(q.since, now, policy);
    if (!r && !policy.levels.empty()) r = policy.levels.back().resolution_seconds;
    q.step = r.value_or(0);
  }
  *out = std::move(q);
  return true;
}

std::string render_history_json(const HistoryQuery& q, const HistoryResult& r, double now,
                                const HistoryPolicy& policy) {
  nlohmann::json out;
  out["since"] = q.since;
  out["until"] = q.until;
  out["step_seconds"] = q.step;
  // Which stored resolution covers which part of the range, oldest first.
  nlohmann::json parts = nlohmann::json::array();
  std::vector<std::pair<double, double>> edges;  // (start age, resolution)
  edges.emplace_back(policy.raw_retention_seconds, 0.0);
  for (const DownsampleLevel& l : policy.levels) {
    edges.emplace_back(l.retention_seconds, l.resolution_seconds);
  }
  double younger_age = 0;
  std::vector<nlohmann::json> rev;
  for (const auto& [older_age, res] : edges) {
    const double from = std::max(q.since, now - older_age);
    const double to = std::min(q.until, now - younger_age);
    if (from <= to) {
      rev.push_back(
          {{"from", from},
           {"to", to},
           {"resolution", res > 0 ? format_duration(Duration(static_cast<std::int64_t>(res * 1000)))
                                  : std::string("raw")}});
    }
    younger_age = std::max(younger_age, older_age);
  }
  for (auto it = rev.rbegin(); it != rev.rend(); ++it) parts.push_back(std::move(*it));
  out["resolutions"] = std::move(parts);
  out["points"] = r.points;
  nlohmann::json series = nlohmann::json::array();
  for (const HistorySeries& s : r.series) {
    nlohmann::json pts = nlohmann::json::array();
    for (const HistoryPoint& p : s.points) pts.push_back({p.t, p.v});
    series.push_back({{"tier", s.tier},
                      {"job", s.job.empty() ? nlohmann::json() : nlohmann::json(s.job)},
                      {"series", s.series},
                      {"points", std::move(pts)}});
  }
  out["series"] = std::move(series);
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ckptmon
