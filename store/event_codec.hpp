#pragma once
// How the state database keeps event aggregates (tables event_steps,
// event_jobs, event_restores): JSON that round-trips every field, internal
// ones included. A persistence format, not the API's: /api/v1 renders steps
// in daemon/web.cpp.

#include <nlohmann/json_fwd.hpp>

#include "model/events.hpp"

namespace ckptmon {

nlohmann::json to_json(const EventStep& s);
EventStep event_step_from_json(const nlohmann::json& j);
nlohmann::json to_json(const EventJob& j);
EventJob event_job_from_json(const nlohmann::json& j);
nlohmann::json to_json(const EventRestores& r);
EventRestores event_restores_from_json(const nlohmann::json& j);

}  // namespace ckptmon
