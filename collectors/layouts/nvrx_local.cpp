// nvidia-resiliency-ext local checkpoints
// (src/nvidia_resiliency_ext/checkpointing/local/ckpt_managers/local_manager.py).
//
// Node-local storage: `<root>/<session_id>/<rank>/iter_{:07d}_{rank}_local.pt`.
// Each rank writes `..._local.dirty.pt` and renames it when done; with
// replication a rank directory also holds copies of other ranks' files. An
// iteration is valid when every rank's file exists. One checkpoint spans all
// rank directories, so its path is virtual: `<session>/iter_{:07d}`.

#include <map>
#include <set>

#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

struct LocalName {
  std::int64_t iteration = -1;
  std::int64_t rank = -1;
  bool dirty = false;
};

// "iter_0001000_3_local.pt" / "iter_0001000_3_local.dirty.pt".
std::optional<LocalName> parse_local(std::string_view name) {
  LocalName n;
  if (!name.starts_with("iter_")) return std::nullopt;
  if (name.ends_with("_local.dirty.pt")) {
    n.dirty = true;
    name.remove_suffix(15);
  } else if (name.ends_with("_local.pt")) {
    name.remove_suffix(9);
  } else {
    return std::nullopt;
  }
  name.remove_prefix(5);
  const auto us = name.find('_');
  if (us == std::string_view::npos) return std::nullopt;
  auto it = parse_uint(name.substr(0, us));
  auto rk = parse_uint(name.substr(us + 1));
  if (!it || !rk) return std::nullopt;
  n.iteration = *it;
  n.rank = *rk;
  return n;
}

std::string iter_name(std::int64_t iteration) {
  std::string digits = std::to_string(iteration);
  if (digits.size() < 7) digits.insert(0, 7 - digits.size(), '0');
  return "iter_" + digits;
}

struct Iteration {
  std::vector<std::pair<const DirNode*, const FileEntry*>> files;
  std::set<std::int64_t> done;   // ranks with a final file somewhere
  std::set<std::int64_t> dirty;  // ranks with a .dirty.pt
};

}  // namespace

void recognise_nvrx_local(DirScope& s) {
  const DirNode& d = s.dir();
  std::vector<const DirNode*> rank_dirs;
  bool evidence = false;
  for (const auto& child : d.dirs) {
    if (!is_digits(child.name) || child.reused) continue;
    bool ours = child.files.empty() && child.dirs.empty();
    for (const auto& f : child.files) {
      if (parse_local(f.name)) ours = evidence = true;
    }
    if (ours) rank_dirs.push_back(&child);
  }
  if (!evidence) return;

  std::map<std::int64_t, Iteration> iterations;
  std::set<std::int64_t> ranks;
  for (const DirNode* rd : rank_dirs) {
    s.claim(rd->name);
    ranks.insert(parse_uint(rd->name).value_or(-1));
    for (const auto& f : rd->files) {
      auto n = parse_local(f.name);
      if (!n) continue;
      Iteration& it = iterations[n->iteration];
      it.files.emplace_back(rd, &f);
      (n->dirty ? it.dirty : it.done).insert(n->rank);
    }
  }

  for (const auto& [iteration, it] : iterations) {
    Found found;
    Checkpoint& c = found.ckpt;
    c.path = s.path_of(iter_name(iteration));
    c.step = iteration;
    c.framework = "nvrx_local";
    found.ranks = ranks.size();
    double activity = 0;
    {
      Tally t(c, s.ctx());
      for (const DirNode* rd : rank_dirs) t.dir(*rd);
      for (const auto& [rd, f] : it.files)
        t.file(*f, rd->name + "/" + f->name, Component::kOther, true);
      activity = t.newest();
    }
    std::vector<std::int64_t> missing;
    for (std::int64_t r : ranks) {
      if (!it.done.count(r)) missing.push_back(r);
    }
    std::vector<std::int64_t> dirty(it.dirty.begin(), it.dirty.end());
    Verdict v;
    // No marker: an iteration is valid once every rank's file was renamed into place.
    v.has_marker = true;
    v.check_resave = false;
    if (!dirty.empty()) {
      v.pending =
          std::to_string(dirty.size()) + " *_local.dirty.pt files (rank " + rank_list(dirty) + ")";
    }
    if (!missing.empty()) {
      c.expected_files = ranks.size();
      const std::string m = "no " + iter_name(iteration) + "_{rank}_local.pt for rank " +
                            rank_list(missing) + " (" +
                            std::to_string(ranks.size() - missing.size()) + " of " +
                            std::to_string(ranks.size()) + " ranks)";
      v.pending = v.pending.empty() ? m : v.pending + "; " + m;
    }
    decide(c, v, activity, s.ctx());
    s.emit(std::move(found));
  }
}

}  // namespace ckptmon::layouts
