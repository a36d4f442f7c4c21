#pragma once
// How schemas 2 to 6 of the state database kept event aggregates (tables
// event_steps, event_jobs, event_restores): JSON objects. Read only by the
// migration to schema 7 (store/store.cpp), which re-encodes every row in the
// binary form of store/event_codec.hpp. Nothing writes this form any more;
// the API's JSON is api/web.cpp's.

#include <nlohmann/json_fwd.hpp>

#include "model/events.hpp"

namespace ckptmon::legacy {

// Each throws nlohmann::json::exception on a value of the wrong type.
EventStep event_step_from_json(const nlohmann::json& j);
EventJob event_job_from_json(const nlohmann::json& j);
EventRestores event_restores_from_json(const nlohmann::json& j);

}  // namespace ckptmon::legacy

namespace ckptmon::sql {
class Db;
}

namespace ckptmon::legacy {

// Schema 6 to 7, inside the caller's transaction: rebuilds event_steps,
// event_jobs and event_restores with a BLOB data column and every JSON row
// re-encoded (store/event_codec.hpp). A row that is not the JSON of its type
// is copied as it was, logged, and counted in the return value (loading it
// later counts it again, as unreadable): unreadable is not deleted.
std::uint64_t reencode_event_rows(sql::Db& db);

}  // namespace ckptmon::legacy
