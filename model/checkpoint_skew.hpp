#pragma once
// The one definition of a checkpoint's completion skew, used by
// ckpt_last_checkpoint_completion_skew_seconds, CheckpointCompletionSkewHigh
// and /api/v1/checkpoints: the spread of its shards' end times from the event
// log when the log has its shards (exact), otherwise the spread of its files'
// mtimes (Checkpoint::completion_skew).

#include "model/checkpoint.hpp"
#include "model/events.hpp"

namespace ckptmon {

// `ev`: the event log's record of `c` (State::event_step), or null.
inline double completion_skew(const Checkpoint& c, const EventStep* ev) {
  if (ev != nullptr) {
    if (auto skew = ev->completion_skew()) return *skew;
  }
  return c.completion_skew();
}

// The same, looked up in `events` (null: no event log).
inline double completion_skew(const Checkpoint& c, const EventCatalog* events) {
  return completion_skew(
      c, events != nullptr && c.step >= 0 ? events->find(c.tier, c.job, c.step) : nullptr);
}

}  // namespace ckptmon
