#pragma once
// Label names ckptmon's series and alerts share.

namespace ckptmon {

// The training job, on every metric and alert (ckpt_alert, pushed and served
// alerts). Not "job": that is Prometheus' own target label, and a series
// carrying it would force honor_labels on every scrape config. JSON field
// names of the HTTP API (/api/v1/checkpoints, ...) stay "job".
inline constexpr const char* kTrainingJobLabel = "training_job";

}  // namespace ckptmon
