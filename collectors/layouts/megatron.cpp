// Megatron-LM (megatron/training/checkpointing.py, megatron/core/dist_checkpointing/).
//
// A save directory holds `latest_checkpointed_iteration.txt` (the tracker: an
// iteration number or `release`, rewritten by rank 0 after a barrier, after
// the checkpoint's own finalisation) and one directory per iteration,
// `iter_{:07d}` (or `release`).
//  - legacy format: `iter_N/mp_rank_{TP:02d}[_{PP:03d}][_{EP:03d}]/` with
//    `model_optim_rng.pt` and, with the distributed optimizer,
//    `distrib_optim.pt`. The tracker is the only commit marker.
//  - torch_dist format: `iter_N/` is a DCP directory (`__{rank}_{n}.distcp`,
//    `.metadata`) plus `metadata.json` ({"sharded_backend", "sharded_backend_version"})
//    written after the shards, and optionally `integrity.json`
//    ({"algorithm": "sha256", "files": {name: digest}}) after that.

#include <map>
#include <set>

#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

constexpr std::string_view kTracker = "latest_checkpointed_iteration.txt";

bool is_mp_dir(std::string_view name) {
  if (!name.starts_with("mp_rank_")) return false;
  std::string_view rest = name.substr(8);
  while (true) {
    const auto us = rest.find('_');
    if (!is_digits(rest.substr(0, us))) return false;
    if (us == std::string_view::npos) return true;
    rest = rest.substr(us + 1);
  }
}

bool is_iteration_dir(std::string_view name) {
  return name == "release" || (name.starts_with("iter_") && is_digits(name.substr(5)));
}

bool legacy_looks(const DirNode& d) {
  return std::any_of(d.dirs.begin(), d.dirs.end(),
                     [](const DirNode& m) { return is_mp_dir(m.name); });
}

bool dist_files_look(const DirNode& d) {
  if (megatron_dist_looks(d) || d.file(".metadata") != nullptr || d.file("common.pt") != nullptr) {
    return true;
  }
  return std::any_of(d.files.begin(), d.files.end(),
                     [](const FileEntry& f) { return f.name.ends_with(".distcp"); });
}

struct LegacyStats {
  std::uint64_t mp_dirs = 0;
  std::string issue;  // what is missing inside, "" when every mp_rank dir is whole
};

LegacyStats legacy_stats(const DirNode& d) {
  LegacyStats st;
  bool any_distrib = false;
  for (const auto& m : d.dirs) {
    if (is_mp_dir(m.name) && m.file("distrib_optim.pt") != nullptr) any_distrib = true;
  }
  for (const auto& m : d.dirs) {
    if (!is_mp_dir(m.name)) continue;
    ++st.mp_dirs;
    if (!st.issue.empty()) continue;
    if (m.file("model_optim_rng.pt") == nullptr) {
      st.issue = m.name + " has no model_optim_rng.pt";
    } else if (any_distrib && m.file("distrib_optim.pt") == nullptr) {
      st.issue = m.name + " has no distrib_optim.pt";
    }
  }
  return st;
}

}  // namespace

bool megatron_dist_looks(const DirNode& d) {
  const FileEntry* mj = d.file("metadata.json");
  if (mj == nullptr) return false;
  return d.file(".metadata") != nullptr ||
         std::any_of(d.files.begin(), d.files.end(),
                     [](const FileEntry& f) { return f.name.ends_with(".distcp"); });
}

void megatron_dist_verdict(const DirNode& d, const DcpEval& e, Verdict& v, Checkpoint& c) {
  v.marker_name = "metadata.json";
  const FileEntry* mj = d.file("metadata.json");
  if (mj == nullptr) {
    v.pending =
        e.pending.empty() ? std::string("no metadata.json") : e.pending + ", no metadata.json";
  } else {
    v.has_marker = true;
    c.marker_time = mj->mtime;
    std::string error;
    bool unread = false;
    auto j = parse_manifest_json(*mj, error, unread);
    if (!j && !unread) {
      v.broken = error;
    } else if (j && (json_member(*j, "sharded_backend") == nullptr ||
                     !json_member(*j, "sharded_backend")->is_string())) {
      v.broken = "metadata.json: no sharded_backend";
    } else if (!e.pending.empty()) {
      // metadata.json is written only after the DCP save finished.
      v.broken = "metadata.json present but " + e.pending;
    }
  }
  if (const FileEntry* ij = d.file("integrity.json")) {
    std::string error;
    bool unread = false;
    auto j = parse_manifest_json(*ij, error, unread);
    if (!j && !unread) {
      if (v.broken.empty()) v.broken = error;
      return;
    }
    if (!j) return;
    const nlohmann::json* files = json_member(*j, "files");
    if (files == nullptr || !files->is_object()) {
      if (v.broken.empty()) v.broken = "integrity.json: no \"files\" object";
      return;
    }
    std::vector<std::string> missing;
    for (auto it = files->begin(); it != files->end(); ++it) {
      if (d.file(it.key()) == nullptr) missing.push_back(it.key());
    }
    c.expected_files = files->size() + 1;  // the listed files and integrity.json itself
    if (!missing.empty() && v.broken.empty()) {
      v.broken = listed_missing("integrity.json", missing);
    }
  }
}

void recognise_megatron(DirScope& s) {
  const DirNode& d = s.dir();
  const FileEntry* tracker = d.file(kTracker);
  std::vector<const DirNode*> iters;
  bool evidence = tracker != nullptr;
  for (const auto& child : d.dirs) {
    if (!is_iteration_dir(child.name)) continue;
    iters.push_back(&child);
    if (child.reused) {
      evidence = evidence || child.reused->framework.starts_with("megatron");
    } else {
      evidence = evidence || legacy_looks(child) || dist_files_look(child);
    }
  }
  if (!evidence || iters.empty()) return;

  // The tracker: an iteration number, or `release`.
  std::optional<std::int64_t> tracked;
  bool release = false;
  std::string tracker_problem;
  if (tracker == nullptr) {
    tracker_problem = "no " + std::string(kTracker);
  } else {
    std::string error;
    bool unread = false;
    auto text = read_tracker(*tracker, error, unread);
    if (!text) {
      tracker_problem = unread ? std::string(kTracker) + " not read" : error;
    } else if (*text == "release") {
      release = true;
    } else if (auto n = parse_uint(*text)) {
      tracked = *n;
    } else {
      tracker_problem = std::string(kTracker) + ": not an iteration number";
    }
  }

  // The most mp_rank directories any iteration the tracker vouches for has.
  std::uint64_t ref_mp = 0;
  for (const DirNode* it : iters) {
    if (it->reused || !legacy_looks(*it)) continue;
    const auto iter =
        it->name == "release" ? std::optional<std::int64_t>() : parse_uint(it->name.substr(5));
    if (release || (tracked && iter && *iter <= *tracked)) {
      ref_mp = std::max(ref_mp, legacy_stats(*it).mp_dirs);
    }
  }

  for (const DirNode* it : iters) {
    s.claim(it->name);
    const bool is_release = it->name == "release";
    const std::int64_t iter = is_release ? -1 : parse_uint(it->name.substr(5)).value_or(-1);
    // Where the iteration stands against the tracker.
    enum class Rel { kUnknown, kOlder, kCurrent, kNewer } rel = Rel::kUnknown;
    if (release) {
      rel = is_release ? Rel::kCurrent : Rel::kOlder;
    } else if (tracked) {
      if (is_release || iter < *tracked) {
        rel = Rel::kOlder;
      } else if (iter == *tracked) {
        rel = Rel::kCurrent;
      } else {
        rel = Rel::kNewer;
      }
    }
    const std::string newer = "iteration " + std::to_string(iter) +
                              " is newer than the tracker's " +
                              (tracked ? std::to_string(*tracked) : std::string());

    if (it->reused) {
      Found f = from_reused(*it, s.path_of(it->name));
      if (rel == Rel::kNewer) {
        demote(f.ckpt, newer, s.ctx());
      } else if (rel == Rel::kUnknown && f.ckpt.framework == "megatron") {
        demote(f.ckpt, tracker_problem, s.ctx());
      }
      s.emit(std::move(f));
      continue;
    }

    Found f;
    Checkpoint& c = f.ckpt;
    c.path = s.path_of(it->name);
    c.step = iter;
    const double activity = tally_tree(c, *it, s.ctx());
    Verdict v;
    if (legacy_looks(*it) || !dist_files_look(*it)) {
      c.framework = "megatron";
      const LegacyStats st = legacy_stats(*it);
      std::string issue = st.issue;
      if (st.mp_dirs == 0) {
        issue = "no mp_rank_* directory";
      } else if (issue.empty() && ref_mp > st.mp_dirs && rel != Rel::kOlder &&
                 rel != Rel::kCurrent) {
        issue =
            std::to_string(st.mp_dirs) + " of " + std::to_string(ref_mp) + " mp_rank directories";
      }
      v.marker_name = std::string(kTracker);
      switch (rel) {
        case Rel::kOlder:
          // The barrier before the tracker moved past it vouched for it.
          v.has_marker = true;
          v.check_resave = false;
          if (!st.issue.empty()) v.broken = st.issue;
          break;
        case Rel::kCurrent:
          v.has_marker = true;
          c.marker_time = tracker->mtime;
          if (!st.issue.empty() || st.mp_dirs == 0) {
            v.broken = "tracker names " +
                       (is_release ? std::string("release") : std::to_string(iter)) + " but " +
                       issue;
          }
          break;
        case Rel::kNewer:
          v.pending = issue.empty() ? newer : std::string(newer).append("; ").append(issue);
          break;
        case Rel::kUnknown:
          v.pending = issue.empty() ? tracker_problem
                                    : std::string(tracker_problem).append("; ").append(issue);
          break;
      }
    } else {
      c.framework = "megatron_torch_dist";
      const DcpEval e = evaluate_dcp_dir(*it);
      megatron_dist_verdict(*it, e, v, c);
      apply_dcp_metadata(*it, e, c, v);
      if (rel == Rel::kNewer && v.broken.empty()) {
        v.pending = v.pending.empty() ? newer : newer + "; " + v.pending;
      } else if ((rel == Rel::kOlder || rel == Rel::kCurrent) && v.broken.empty() &&
                 !v.pending.empty()) {
        // The tracker is written after metadata.json.
        v.broken = "tracker is at " +
                   (tracked ? std::to_string(*tracked) : std::string("release")) + " but " +
                   v.pending;
      }
      // Without a readable tracker a torch_dist directory still commits itself
      // through metadata.json (copied checkpoints rarely bring the tracker).
    }
    decide(c, v, activity, s.ctx());
    s.emit(std::move(f));
  }
}

}  // namespace ckptmon::layouts
