#pragma once
// Retention and cleanup: which checkpoints the policy says should be gone but
// still exist (the deletion queue), and the failed-run residue. Reports only;
// nothing here deletes. Pure functions; thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/checkpoint_view.hpp"
#include "model/events.hpp"
#include "model/policy.hpp"
#include "util/saturating.hpp"

namespace ckptmon {

enum class RetentionKind {
  kKeptNewest,     // the newest committed checkpoint: never expires
  kKeptLast,       // one of the newest keep_last committed
  kKeptMilestone,  // a milestone (step % keep_every == 0) outside keep_last
  kExpired,        // committed, and the policy says it should be gone
  kResidue,        // partial, older than the partial window: failed-run residue
  kNotDue,         // in progress, or partial within its window
};

struct RetentionDecision {
  const Checkpoint* checkpoint = nullptr;
  RetentionKind kind = RetentionKind::kNotDue;
  // For kExpired and kResidue: when it became due for deletion (unix seconds).
  double due_since = 0;
};

// Every checkpoint of one (tier, job), oldest first: committed ones in their
// retention order, then partial and in-progress ones by last write.
std::vector<RetentionDecision> decide_retention(const CheckpointView& all, const std::string& tier,
                                                const std::string& job,
                                                const RetentionPolicy& policy, double now);
// The same over the checkpoints of one (tier, job) already picked out.
std::vector<RetentionDecision> decide_retention(std::span<const Checkpoint* const> job,
                                                const RetentionPolicy& policy, double now);

// The deletion queue and what stays, for one (tier, job).
struct RetentionFigures {
  std::string tier;
  std::string job;
  std::uint64_t retained_checkpoints = 0;  // committed and kept
  std::uint64_t retained_bytes = 0;
  std::uint64_t milestone_checkpoints = 0;  // of which kept only as milestones
  std::uint64_t expired_checkpoints = 0;
  std::uint64_t expired_bytes = 0;
  std::uint64_t residue_checkpoints = 0;
  std::uint64_t residue_bytes = 0;
  // When the oldest entry of the deletion queue became due; 0 = queue empty.
  double oldest_due_since = 0;
  // Paths (relative to the tier root) of the deletion queue, oldest due first.
  std::vector<std::string> pending_paths;

  std::uint64_t pending_checkpoints() const { return expired_checkpoints + residue_checkpoints; }
  std::uint64_t pending_bytes() const { return sat_add(expired_bytes, residue_bytes); }
};

// One entry per job that has any checkpoint on `tier`, sorted by job.
std::vector<RetentionFigures> evaluate_retention(const CheckpointView& all, const std::string& tier,
                                                 const RetentionPolicy& policy, double now);

// How long the oldest entry of the tier's deletion queue has waited
// (ckpt_cleanup_oldest_age_seconds{tier}); 0 when the queue is empty, never
// negative (a clock that jumped back makes it 0, not a negative age).
double cleanup_oldest_age(std::span<const RetentionFigures> tier_figures, double now);

// A role: deletion tier is a deletion queue: everything on it is on its way
// out, whatever its state, and no retention policy applies.
struct DeletionQueueFigures {
  std::string tier;
  std::uint64_t checkpoints = 0;
  std::uint64_t bytes = 0;
  // How long the entry the walk first saw earliest has been there; 0 when
  // the queue is empty, never negative (a clock stepped back gives 0).
  double oldest_age_seconds = 0;
  std::string oldest_path;  // tier-relative; empty when the queue is empty
};
DeletionQueueFigures evaluate_deletion_queue(const CheckpointView& all, const std::string& tier,
                                             double now);

// `cleanup` events whose checkpoint the walk still finds on their tier
// cleanup_verify_after later: a removal the job reported that did not
// happen (or not yet). One entry per (tier, job) with any, sorted.
struct UnverifiedCleanup {
  std::string path;  // tier-relative
  std::int64_t step = 0;
  std::uint64_t bytes = 0;  // the catalog's
  double cleaned_at = 0;    // the step's last event in the log (the cleanup, or later)
};
struct UnverifiedCleanupFigures {
  std::string tier;
  std::string job;
  std::uint64_t checkpoints = 0;
  std::uint64_t bytes = 0;                 // the catalog's bytes of those checkpoints
  std::vector<UnverifiedCleanup> entries;  // by step
};
// `events`: the event log's steps (a step's cleanup time is its last event,
// which is the cleanup unless an event for that step followed it); null: none.
// `verify_after_seconds(tier)`: the tier's cleanup_verify_after.
std::vector<UnverifiedCleanupFigures> evaluate_cleanup_verification(
    const CheckpointView& all, const EventCatalog* events,
    const std::function<double(const std::string&)>& verify_after_seconds, double now);

// ckpt_cleanup_unverified_total: each checkpoint counts once when it is first
// judged unverified, and again only after a cycle where it was not (the walk
// no longer found it, or a later event for its step made its cleanup too
// recent to judge). Kept by the rules cycle across cycles; bounded by the
// checkpoints judged unverified now plus one total per (tier, job) ever seen.
class UnverifiedCleanupCounter {
 public:
  void observe(const std::vector<UnverifiedCleanupFigures>& now);
  // Per (tier, job) that ever had one, sorted.
  const std::map<std::pair<std::string, std::string>, std::uint64_t>& totals() const {
    return totals_;
  }

 private:
  std::set<std::tuple<std::string, std::string, std::string>> open_;  // (tier, job, path)
  std::map<std::pair<std::string, std::string>, std::uint64_t> totals_;
};

}  // namespace ckptmon
