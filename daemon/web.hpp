#pragma once
// The human and JSON views of a snapshot: the landing page and /api/v1/tiers.
// Pure functions of the snapshot.

#include <string>

#include "daemon/daemon.hpp"

namespace ckptmon {

std::string render_landing_page(const Snapshot& snap, bool ready, bool last_reload_ok);
std::string render_tiers_json(const Snapshot& snap);

}  // namespace ckptmon
