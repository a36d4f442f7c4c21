// PyTorch Lightning (src/lightning/pytorch/callbacks/model_checkpoint.py,
// src/lightning/fabric/strategies/fsdp.py) and NeMo on top of it.
//
// ModelCheckpoint writes `<dirpath>/<name>.ckpt`, by default
// `epoch={E}-step={S}.ckpt`, plus `last.ckpt` (a copy, or a symlink to the
// newest file). A single file is written to a temporary file by fsspec and
// moved into place. Sharded strategies (FSDP, ModelParallel) write a
// directory `<name>.ckpt/` of DCP files and, last, rank 0's `meta.pt`.
// NeMo creates `<name>-unfinished` before a save and removes it after; NeMo 2
// checkpoints are directories with `weights/` (DCP) and `context/`.

#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

constexpr std::string_view kUnfinished = "-unfinished";

std::string_view stem_of(std::string_view name) {
  for (std::string_view ext : {".ckpt", ".nemo"}) {
    if (cut_suffix(name, ext)) break;
  }
  return name;
}

const FileEntry* unfinished_marker(const DirNode& parent, std::string_view name) {
  const std::string stem = std::string(stem_of(name)) + std::string(kUnfinished);
  if (const FileEntry* m = parent.file(stem)) return m;
  return parent.file(std::string(name) + std::string(kUnfinished));
}

bool is_nemo2_dir(const DirNode& d) {
  const DirNode* weights = d.dir("weights");
  return weights != nullptr && d.dir("context") != nullptr;
}

}  // namespace

void recognise_lightning(DirScope& s) {
  const DirNode& d = s.dir();
  bool evidence = false;
  for (const auto& f : d.files) {
    if (f.name.ends_with(".ckpt") || f.name.ends_with(".nemo")) evidence = true;
  }
  for (const auto& sub : d.dirs) {
    if (sub.name.ends_with(".ckpt") || unfinished_marker(d, sub.name) != nullptr ||
        (sub.reused && sub.reused->framework == "lightning") ||
        (is_nemo2_dir(sub) && parse_step(sub.name) >= 0)) {
      evidence = true;
    }
  }
  if (!evidence) return;
  const LayoutContext& ctx = s.ctx();

  // Single-file checkpoints.
  for (const auto& f : d.files) {
    if (!f.name.ends_with(".ckpt") && !f.name.ends_with(".nemo")) continue;
    s.claim_file();
    if (f.type == FileEntry::Type::kSymlink) {
      // last.ckpt -> epoch=3-step=1200.ckpt: an alias of a file counted on its
      // own, unless its target is gone.
      if (f.link_target.empty()) continue;  // target unknown
      std::string_view target = f.link_target;
      if (target.starts_with("./")) target.remove_prefix(2);
      if (target.empty() || target.find('/') != std::string_view::npos)
        continue;  // outside: not checked
      if (d.file(target) != nullptr || d.dir(target) != nullptr) continue;
      Found found;
      Checkpoint& c = found.ckpt;
      c.path = s.path_of(f.name);
      c.step = parse_step(target);
      c.framework = "lightning";
      {
        Tally t(c, ctx);
        t.file(f, f.name, Component::kOther, true);
      }
      Verdict v;
      v.pending = f.name + " -> " + std::string(target) + ", target missing (dangling symlink)";
      decide(c, v, f.mtime, ctx);
      s.emit(std::move(found));
      continue;
    }
    Found found;
    Checkpoint& c = found.ckpt;
    c.path = s.path_of(f.name);
    c.step = parse_step(f.name);
    c.framework = "lightning";
    const FileEntry* unfinished = unfinished_marker(d, f.name);
    double activity = f.mtime;
    {
      Tally t(c, ctx);
      // One file holds model, optimizer and loop state together.
      t.file(f, f.name, Component::kOther, true);
      if (unfinished != nullptr) {
        t.file(*unfinished, unfinished->name, Component::kMetadata, false);
        activity = std::max(activity, unfinished->mtime);
      }
    }
    Verdict v;
    // The file is moved into place whole: its presence is the commit.
    v.has_marker = true;
    v.check_resave = false;
    if (unfinished != nullptr) {
      v.pending = "NeMo marker " + unfinished->name + " present";
    } else if (f.size == 0) {
      v.pending = "empty file";
    }
    decide(c, v, activity, ctx);
    s.emit(std::move(found));
  }

  // Sharded (directory) checkpoints.
  for (const auto& sub : d.dirs) {
    const FileEntry* unfinished = unfinished_marker(d, sub.name);
    const bool ckpt_dir = sub.name.ends_with(".ckpt");
    if (sub.reused) {
      if (sub.reused->framework == "lightning") {
        s.claim(sub.name);
        Found found = from_reused(sub, s.path_of(sub.name));
        if (unfinished != nullptr)
          demote(found.ckpt, "NeMo marker " + unfinished->name + " present", ctx);
        s.emit(std::move(found));
      }
      continue;
    }
    if (!ckpt_dir && unfinished == nullptr && !(is_nemo2_dir(sub) && parse_step(sub.name) >= 0))
      continue;
    s.claim(sub.name);
    Found found;
    Checkpoint& c = found.ckpt;
    c.path = s.path_of(sub.name);
    c.step = parse_step(sub.name);
    c.framework = "lightning";
    double activity = 0;
    {
      Tally t(c, ctx);
      t.tree(sub, "");
      if (unfinished != nullptr) t.file(*unfinished, unfinished->name, Component::kMetadata, false);
      activity = t.newest();
    }
    Verdict v;
    std::string issue;
    if (is_nemo2_dir(sub)) {
      const DcpEval e = evaluate_dcp_dir(*sub.dir("weights"));
      found.ranks = e.ranks;
      v.marker_name = "weights/.metadata";
      v.has_marker = e.marker != nullptr;
      if (e.marker != nullptr) c.marker_time = e.marker->mtime;
      if (!e.pending.empty()) issue = "weights: " + e.pending;
    } else {
      const DcpEval e = evaluate_dcp_dir(sub);
      found.ranks = e.ranks;
      const FileEntry* meta = sub.file("meta.pt");
      v.marker_name = "meta.pt";
      v.has_marker = meta != nullptr;
      if (meta != nullptr) c.marker_time = meta->mtime;
      if (!e.pending.empty()) {
        // meta.pt is saved by rank 0 after the DCP save returned.
        if (meta != nullptr) {
          v.broken = "meta.pt present but " + e.pending;
        } else {
          issue = e.pending;
        }
      }
    }
    if (unfinished != nullptr) {
      const std::string m = "NeMo marker " + unfinished->name + " present";
      issue = issue.empty() ? m : std::string(m).append("; ").append(issue);
    }
    v.pending = issue;
    decide(c, v, activity, ctx);
    s.emit(std::move(found));
  }
}

}  // namespace ckptmon::layouts
