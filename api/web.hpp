#pragma once
// The human and JSON views of a snapshot: the landing page and /api/v1/tiers.
// Pure functions of the snapshot.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/snapshot.hpp"

namespace ckptmon {

std::string render_landing_page(const Snapshot& snap, bool ready, bool last_reload_ok);
std::string render_tiers_json(const Snapshot& snap);

// One checkpoint as `ckptmon scan --format json` and /api/v1/checkpoints show
// it; with `state`, merged with what the event log and the integrity verifier
// say about it (save duration and skew from events when present).
nlohmann::json checkpoint_json(const Checkpoint& c, const State* state = nullptr);

// /api/v1/checkpoints?tier=&job=&state= : every filter optional. Returns false
// with `error` for an unknown state value.
bool render_checkpoints_json(const Snapshot& snap, const std::map<std::string, std::string>& query,
                             std::string* body, std::string* error);

// /api/v1/versions?job= : the job's versions (job, step), newest first, each
// with its copies on every tier (rules/estate.hpp). Returns false with
// `error` when job is missing.
bool render_versions_json(const Snapshot& snap, const std::map<std::string, std::string>& query,
                          std::string* body, std::string* error);

// /api/v1/findings?tier=&kind= : the access audit's findings with paths, and
// the estate's (source "estate": a copy outside its job's residencies).
bool render_findings_json(const Snapshot& snap, const std::map<std::string, std::string>& query,
                          std::string* body, std::string* error);

// /api/v1/jobs: per (tier, job) counts, bytes and the newest committed step.
std::string render_jobs_json(const Snapshot& snap);

// /api/v1/events/summary?tier=&job=&top= : line totals, tailed logs, per
// (tier, job) failures and the ranks that finish last most often (top-k),
// restores, integrity results. Returns false with `error` for a bad `top`.
bool render_events_summary_json(const Snapshot& snap,
                                const std::map<std::string, std::string>& query, std::string* body,
                                std::string* error);

// /api/v1/events/checkpoints?tier=&job= : every checkpoint the event logs
// describe, step by step (the newest 64 per tier and job).
std::string render_event_checkpoints_json(const Snapshot& snap,
                                          const std::map<std::string, std::string>& query);

}  // namespace ckptmon

#include "api/time_range.hpp"
#include "store/history.hpp"

namespace ckptmon {

// /api/v1/history?tier=&job=&series=&since=&until=&step= into a query, as of
// `now`: since and until as parse_time_range() takes them (since defaults to
// 1d before now, until to now), step to the coarsest
// resolution the stored history has over the range (0, every sample, when
// the range is all raw). Returns false with `error` naming the parameter.
bool parse_history_query(const std::map<std::string, std::string>& query, double now,
                         const HistoryPolicy& policy, HistoryQuery* out, std::string* error);

// The answer of query_history() as JSON (docs/operations.md#history-api);
// `policy` and `now` give the resolution of each part of the range.
std::string render_history_json(const HistoryQuery& q, const HistoryResult& r, double now,
                                const HistoryPolicy& policy);

}  // namespace ckptmon
