#pragma once
// What checkpoints cost the GPUs (docs/rules.md, "GPU cost"): for each
// checkpoint with a known blocking window, per GPU of its job the mean
// utilisation during the window and during a baseline of the same length just
// before it (other checkpoint windows left out), and the GPU-seconds lost,
// sum over the job's GPUs of max(0, baseline - during) x window seconds.
// Missing samples make a figure unknown, never 0. Pure functions and a tracker
// that remembers which checkpoints were joined; the tracker is not
// thread-safe (the rules cycle owns it on the loop thread).

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/catalog.hpp"
#include "model/events.hpp"
#include "model/gpu.hpp"
#include "model/policy.hpp"

namespace ckptmon {

// A window or baseline is known when samples cover at least this share of it.
inline constexpr double kGpuMinCoverage = 0.9;

struct Interval {
  double start = 0;
  double end = 0;
  double length() const { return end - start; }
};

// The blocking window of a checkpoint: the span of its matched pause_start /
// pause_end pairs, else checkpoint_start to checkpoint_commit; nullopt when
// neither is complete.
struct GpuWindow {
  Interval span;
  bool from_pause = false;  // false: start -> commit
};
std::optional<GpuWindow> blocking_window(const EventStep& s);

// Mean of `series` over the union of `parts` (disjoint), weighting each
// bucket by its overlap; nullopt when the buckets cover less than
// min_coverage of the parts' total length.
std::optional<double> mean_over(const GpuSeries& series, const std::vector<Interval>& parts,
                                double min_coverage = kGpuMinCoverage);

// `length` seconds of time just before `before`, walking back past the
// `excluded` intervals (any order, may overlap), never before `floor`. Fewer
// seconds when `floor` is reached first.
std::vector<Interval> baseline_parts(double before, double length, std::vector<Interval> excluded,
                                     double floor);

struct GpuCostPart {
  unsigned gpu = 0;
  std::optional<double> during;    // mean utilisation during the window
  std::optional<double> baseline;  // mean utilisation during the baseline
  std::optional<double> lost_seconds;
};

struct CheckpointGpuCost {
  std::string tier;
  std::string job;
  std::int64_t step = 0;
  GpuWindow window;
  std::vector<GpuCostPart> gpus;
  // Set only when every GPU of the job is known: one unknown GPU makes the
  // checkpoint's cost unknown rather than smaller.
  std::optional<double> during;    // mean over the job's GPUs
  std::optional<double> baseline;  // mean over the job's GPUs
  std::optional<double> lost_gpu_seconds;
  std::string unknown_reason;  // why the cost is unknown

  // (baseline - during) / baseline, 0 when the baseline is 0; nullopt when unknown.
  std::optional<double> drop_ratio() const;
};

// Joins one window with the samples of `gpus`. `excluded`: other checkpoint
// windows (the tracker passes those of every job), left out of the baseline.
CheckpointGpuCost join_window(const GpuWindow& window, const std::vector<unsigned>& gpus,
                              const GpuState& state, const std::vector<Interval>& excluded);

// How a job's GPUs were found (docs/rules.md, "GPU attribution").
enum class GpuAttribution { kJobMap, kMappingDir, kSourceLabels, kAllLocal };
std::string_view to_string(GpuAttribution a);

// The GPUs of `job` on this node: a GPU belongs to the job its first source
// names, in the order job_map, job mapping files, the source's own labels; a
// GPU no source maps belongs to every job that checkpoints. `how` is the
// strongest source that placed any of them.
std::vector<unsigned> gpus_of_job(const std::string& job, const GpuState& state,
                                  const std::map<unsigned, std::string>& job_map,
                                  GpuAttribution* how = nullptr);

// Buckets of ckpt_checkpoint_gpu_idle_seconds (GPU-seconds lost per checkpoint).
std::vector<double> gpu_idle_buckets();

// Everything the metrics, the API and the alerts know about one job's GPU cost.
struct GpuJobCost {
  std::uint64_t joined = 0;   // checkpoints with a known cost
  std::uint64_t unknown = 0;  // checkpoints whose cost stayed unknown
  double lost_total = 0;      // ckpt_checkpoint_gpu_idle_seconds_total
  HistogramData lost{gpu_idle_buckets()};
  std::optional<CheckpointGpuCost> last;  // the newest joined window, known or not
  GpuAttribution attribution = GpuAttribution::kAllLocal;
  std::size_t gpus = 0;  // GPUs attributed at the last join
  // The newest known costs, oldest first, at most kRecent: (window end, cost).
  std::deque<CheckpointGpuCost> recent;
  static constexpr std::size_t kRecent = 64;
};

class GpuCostTracker {
 public:
  // Joins every checkpoint of `events` whose window is over and whose samples
  // have arrived. A window still waiting for samples is retried each cycle
  // until `grace` seconds after its end, then counted unknown. Windows that
  // end before the ring's oldest bucket are skipped (they happened before
  // this source saw anything) and not counted.
  void update(const EventCatalog& events, const GpuState& gpu,
              const std::map<unsigned, std::string>& job_map, double grace, double now);

  const std::map<std::string, GpuJobCost>& jobs() const { return jobs_; }
  // The checkpoints joined (cost known or unknown) since the last call,
  // oldest first, for the state database (at most kMaxJoined kept between
  // calls).
  std::vector<CheckpointGpuCost> take_joined() { return std::exchange(joined_, {}); }
  static constexpr std::size_t kMaxJoined = 4096;
  // When the source's samples begin, for the goodput share (nullopt: none yet).
  std::optional<double> first_seen() const { return first_seen_; }

 private:
  std::set<std::pair<std::string, std::int64_t>> done_;  // (job, step) joined or skipped
  std::map<std::string, GpuJobCost> jobs_;
  std::optional<double> first_seen_;
  std::vector<CheckpointGpuCost> joined_;
};

// The alerts' view of one job (rules/alerts.cpp).
struct GpuJobFigures {
  std::string job;
  // The newest checkpoints whose cost is known, oldest first: their drop
  // ratios and the GPU-seconds each lost (same order, same length).
  std::vector<double> drops;
  std::vector<double> losses;
  double lost_in_window = 0;  // GPU-seconds lost by windows that ended within the goodput window
  double gpu_seconds_in_window = 0;  // the job's GPUs x the part of the window the source saw
  std::size_t gpus = 0;
  // The newest checkpoints in a row whose drop passed stalling.min_drop_ratio
  // and whose loss reached stalling.min_lost_gpu_seconds
  // (ckpt_checkpoint_gpu_stalled_streak; CheckpointStallingGPUs).
  std::size_t stalled_streak = 0;
  // lost_in_window / gpu_seconds_in_window; unknown while the source saw none
  // of the window (ckpt_checkpoint_gpu_lost_ratio; CheckpointGoodputLow).
  std::optional<double> lost_ratio;
};
// The newest entries of `drops`/`losses` (same order as GpuJobFigures') in a
// row past both of the rule's fire thresholds.
std::size_t stalled_streak(const std::vector<double>& drops, const std::vector<double>& losses,
                           const AlertRules::StallingGpus& rule);
// The figures of each job the tracker follows, judged by the GPU alerts'
// thresholds (alerting.rules: CheckpointStallingGPUs, CheckpointGoodputLow).
std::vector<GpuJobFigures> gpu_job_figures(const GpuCostTracker& tracker, double now,
                                           const AlertRules& rules);

}  // namespace ckptmon
