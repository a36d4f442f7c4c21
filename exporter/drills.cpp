#include "exporter/drills.hpp"

#include "exporter/family.hpp"
#include "util/metric_labels.hpp"

namespace ckptmon {

void drill_families(const State& state, std::vector<prometheus::MetricFamily>& out) {
  using prometheus::MetricType;
  if (!state.drills || !state.config) return;
  FamilyBuilder seconds("ckpt_restore_drill_seconds",
                        "The last restore drill of the job on the tier, by phase: locate (walk "
                        "the tier, pick the version, read its own metadata), metadata (open and "
                        "stat every file), read (every byte, by the reader ranks) and total.",
                        MetricType::Gauge);
  FamilyBuilder when("ckpt_restore_drill_timestamp_seconds",
                     "When the last restore drill of the job on the tier finished.",
                     MetricType::Gauge);
  FamilyBuilder rate("ckpt_restore_drill_read_bytes_per_second",
                     "Bytes the last restore drill read over its read phase; absent when it read "
                     "nothing.",
                     MetricType::Gauge);
  FamilyBuilder bytes("ckpt_restore_drill_bytes", "Bytes the last restore drill read.",
                      MetricType::Gauge);
  FamilyBuilder step("ckpt_restore_drill_step", "The step the last restore drill read back.",
                     MetricType::Gauge);
  FamilyBuilder ok("ckpt_restore_drill_ok",
                   "1 when the last restore drill read every byte within the job's "
                   "recovery_time_objective (or read every byte and no objective is set), 0 when "
                   "it could not (an unreadable, vanished or short file, the deadline) or took "
                   "longer than the objective.",
                   MetricType::Gauge);
  FamilyBuilder runs("ckptmon_restore_drills_total",
                     "Scheduled restore drills since the daemon started, by outcome: ok, failed "
                     "(could not read it all, or over the objective), refused (nothing read: the "
                     "rate cap cannot finish in time, or nothing to read), deferred_saving (due, "
                     "but the job was saving).",
                     MetricType::Counter);
  for (const auto& [key, r] : state.drills->last) {
    if (!state.tiers.contains(key.first)) continue;  // removed by a reload
    const Labels tj{{"tier", key.first}, {kTrainingJobLabel, key.second}};
    const std::pair<const char*, double> phases[] = {{"locate", r.locate_seconds},
                                                     {"metadata", r.metadata_seconds},
                                                     {"read", r.read_seconds},
                                                     {"total", r.total_seconds()}};
    for (const auto& [phase, s] : phases) {
      Labels l = tj;
      l.emplace_back("phase", phase);
      seconds.add(l, s);
    }
    when.add(tj, r.finished_at);
    if (auto bps = r.read_bytes_per_second()) rate.add(tj, *bps);
    bytes.add(tj, static_cast<double>(r.bytes));
    step.add(tj, static_cast<double>(r.step));
    ok.add(tj, r.ok() ? 1 : 0);
  }
  // Every tier with drills on gets its counters from the start, at 0.
  for (const TierConfig& t : state.config->tiers) {
    if (!t.policy.restore_drill.enabled() || !state.tiers.contains(t.name)) continue;
    TierDrillCounts c;
    if (auto it = state.drills->tiers.find(t.name); it != state.drills->tiers.end()) c = it->second;
    const std::pair<const char*, std::uint64_t> outcomes[] = {
        {"ok", c.ok},
        {"failed", c.failed},
        {"refused", c.refused},
        {"deferred_saving", c.deferred_saving}};
    for (const auto& [outcome, n] : outcomes) {
      runs.add({{"tier", t.name}, {"outcome", outcome}}, static_cast<double>(n));
    }
  }
  for (auto* b : {&seconds, &when, &rate, &bytes, &step, &ok, &runs}) append(out, std::move(*b));
}

}  // namespace ckptmon
