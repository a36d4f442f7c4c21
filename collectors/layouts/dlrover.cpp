// DLRover flash checkpoint (dlrover/python/elastic_agent/torch/ckpt_saver.py).
//
// The agents persist shards from shared memory into the framework's own layout
// (or, with the temp-dir saver, into `._dlrover_ckpt_stage/<step>/`, moved into
// place on commit) and each writes a done file `._dlrover_ckpt_stage/<step>.done/<rank>`.
// Agent rank 0 commits when the done count equals the global shard count: it
// moves the staged data, removes `<step>.done` and writes `dlrover_latest.txt`
// (and the framework's tracker). A `<step>.done` directory that is still
// there is a commit that has not happened.

#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

constexpr std::string_view kStage = "._dlrover_ckpt_stage";

struct DoneDir {
  std::uint64_t done = 0;
  std::uint64_t expected = 0;  // 0 = unknown
};

// Done files are named by global rank (0..n-1), so the highest name bounds the
// shard count from below; a sibling checkpoint's rank count may tell more.
DoneDir count_done(const DirNode& done_dir, std::uint64_t hint) {
  DoneDir r;
  std::uint64_t highest = 0;
  for (const auto& f : done_dir.files) {
    ++r.done;
    if (auto rank = parse_uint(f.name))
      highest = std::max(highest, static_cast<std::uint64_t>(*rank) + 1);
  }
  r.expected = std::max({highest, hint, r.done});
  return r;
}

std::string describe(std::int64_t step, const DoneDir& dd) {
  return "DLRover commit of step " + std::to_string(step) + " pending: " + std::to_string(dd.done) +
         " of " + std::to_string(dd.expected) + " shards done";
}

// The largest rank count of committed checkpoints found under this scope.
std::uint64_t rank_hint(DirScope& s) {
  std::uint64_t hint = 0;
  auto& out = s.out();
  for (std::size_t i = s.first_found(); i < out.size(); ++i) {
    if (out[i].ckpt.state == CkptState::kCommitted) hint = std::max(hint, out[i].ranks);
  }
  return hint;
}

}  // namespace

void recognise_dlrover(DirScope& s) {
  const DirNode* stage = s.dir().dir(kStage);
  if (stage == nullptr) return;
  s.claim(kStage);
  // Staged data of the temp-dir saver: a checkpoint not yet moved into place.
  for (const auto& sub : stage->dirs) {
    auto step = parse_uint(sub.name);
    if (!step || sub.reused) continue;
    Found f;
    Checkpoint& c = f.ckpt;
    c.path = s.path_of(std::string(kStage) + "/" + sub.name);
    c.step = *step;
    c.framework = "dlrover";
    const double activity = tally_tree(c, sub, s.ctx());
    Verdict v;
    // finish_dlrover() adds the done count.
    v.pending = "staged in " + std::string(kStage) + ", not yet moved into place";
    decide(c, v, activity, s.ctx());
    s.emit(std::move(f));
  }
}

void finish_dlrover(DirScope& s) {
  const DirNode* stage = s.dir().dir(kStage);
  if (stage == nullptr) return;
  const std::uint64_t hint = rank_hint(s);
  for (const auto& sub : stage->dirs) {
    if (!sub.name.ends_with(".done") || sub.reused) continue;
    auto step = parse_uint(std::string_view(sub.name).substr(0, sub.name.size() - 5));
    if (!step) continue;
    const DoneDir dd = count_done(sub, hint);
    const std::string why = describe(*step, dd);
    bool matched = false;
    auto& out = s.out();
    const std::size_t end = out.size();
    for (std::size_t i = s.first_found(); i < end; ++i) {
      Checkpoint& c = out[i].ckpt;
      if (c.step != *step) continue;
      matched = true;
      if (c.framework == "dlrover") {
        c.reason +=
            "; " + std::to_string(dd.done) + " of " + std::to_string(dd.expected) + " shards done";
      } else {
        demote(c, why, s.ctx());
      }
    }
    if (matched) continue;
    // Shards written straight into a layout nothing here recognised: show the
    // pending commit on its own so the backlog is visible.
    Found f;
    Checkpoint& c = f.ckpt;
    c.path = s.path_of(std::string(kStage) + "/" + sub.name);
    c.step = *step;
    c.framework = "dlrover";
    c.expected_files = dd.expected;
    const double activity = tally_tree(c, sub, s.ctx());
    Verdict v;
    v.pending = why;
    decide(c, v, activity, s.ctx());
    s.emit(std::move(f));
  }
}

}  // namespace ckptmon::layouts
