#pragma once
// The human and JSON views of a snapshot: the landing page and /api/v1/tiers.
// Pure functions of the snapshot.

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/daemon.hpp"

namespace ckptmon {

std::string render_landing_page(const Snapshot& snap, bool ready, bool last_reload_ok);
std::string render_tiers_json(const Snapshot& snap);

// One checkpoint as `ckptmon scan --format json` and /api/v1/checkpoints show it.
nlohmann::json checkpoint_json(const Checkpoint& c);

// /api/v1/checkpoints?tier=&job=&state= : every filter optional. Returns false
// with `error` for an unknown state value.
bool render_checkpoints_json(const Snapshot& snap, const std::map<std::string, std::string>& query,
                             std::string* body, std::string* error);

// /api/v1/findings?tier=&kind= : the access audit's findings with paths.
bool render_findings_json(const Snapshot& snap, const std::map<std::string, std::string>& query,
                          std::string* body, std::string* error);

// /api/v1/jobs: per (tier, job) counts, bytes and the newest committed step.
std::string render_jobs_json(const Snapshot& snap);

}  // namespace ckptmon
