// DeepSpeed (deepspeed/runtime/engine.py, save_checkpoint).
//
// A save directory holds `latest` (a text file with the tag, default
// `global_step{N}`) and one directory per tag with
// `mp_rank_{MP:02d}_model_states.pt`, `[bf16_]zero_pp_rank_{DP}_mp_rank_{MP:02d}_optim_states.pt`,
// ZeRO-3 `zero_pp_rank_{DP}_mp_rank_{MP:02d}_model_states.pt`, pipeline
// `layer_{idx:02d}-model_{MP:02d}-model_states.pt`, MoE `expp_rank_*`/`layer_*_expert_*`.
// Global rank 0 rewrites `latest` after its own shards and the engine's
// commit, with the barrier only after it: `latest` can name a tag whose other
// ranks are still writing. Tags older than the one `latest` names were whole
// when it moved on.

#include <map>
#include <set>

#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

// "bf16_zero_pp_rank_12_mp_rank_00_optim_states.pt" -> ("12", "00").
bool zero_ranks(std::string_view name, std::string& dp, std::string& mp) {
  auto z = name.find("zero_pp_rank_");
  if (z == std::string_view::npos) return false;
  std::string_view rest = name.substr(z + 13);
  auto us = rest.find('_');
  if (us == std::string_view::npos || !is_digits(rest.substr(0, us))) return false;
  dp = std::string(rest.substr(0, us));
  auto m = rest.find("mp_rank_");
  if (m != std::string_view::npos) {
    std::string_view r = rest.substr(m + 8);
    std::size_t n = 0;
    while (n < r.size() && r[n] >= '0' && r[n] <= '9') ++n;
    mp = std::string(r.substr(0, n));
  }
  return true;
}

struct TagInfo {
  const DirNode* dir = nullptr;
  DsTag stats;
  std::int64_t step = -1;
  double newest = 0;  // newest mtime in the tag: its activity, and the order of tags without a step
  std::uint64_t files = 0;
  Found found;  // the tag's checkpoint, figures filled; emitted after the verdict
};

bool tag_before(const TagInfo& a, const TagInfo& b) {
  if (a.step != b.step) return a.step < b.step;
  return a.newest < b.newest;
}

}  // namespace

DsTag deepspeed_tag(const DirNode& d) {
  DsTag t;
  std::set<std::string> dps;
  std::set<std::string> mps;
  std::map<std::string, std::vector<const FileEntry*>> optim_by_mp;
  for (const auto& f : d.files) {
    const bool optim = f.name.ends_with("_optim_states.pt");
    const bool model = f.name.ends_with("_model_states.pt");
    if (!optim && !model) continue;
    optim ? ++t.optim : ++t.model;
    std::string dp, mp;
    if (zero_ranks(f.name, dp, mp)) {
      dps.insert(dp);
      mps.insert(mp);
      if (optim) optim_by_mp[mp].push_back(&f);
    } else if (auto m = f.name.find("mp_rank_"); m != std::string::npos) {
      mps.insert(f.name.substr(m + 8, 2));
    }
  }
  t.looks = t.model + t.optim > 0;
  if (t.looks) {
    t.ranks = std::max<std::uint64_t>(dps.size(), 1) * std::max<std::uint64_t>(mps.size(), 1);
  }
  // ZeRO partitions the optimizer state into equal flat slices per data-
  // parallel rank: a shard far shorter than its peers was cut off.
  for (const auto& [mp, files] : optim_by_mp) {
    std::uint64_t largest = 0;
    for (const FileEntry* f : files) largest = std::max(largest, f->size);
    if (largest < (1u << 20)) continue;
    for (const FileEntry* f : files) {
      if (static_cast<double>(f->size) < 0.9 * static_cast<double>(largest)) {
        t.short_optim = f->name + " holds " + std::to_string(f->size) + " of its peers' " +
                        std::to_string(largest) + " bytes";
        return t;
      }
    }
  }
  return t;
}

DsLatest read_ds_latest(const DirNode& d) {
  DsLatest r;
  r.file = d.file("latest");
  if (r.file != nullptr) r.tag = read_tracker(*r.file, r.error, r.unread);
  return r;
}

std::string ds_missing_tag(const std::string& tag) {
  return "latest names " + tag + ", which does not exist";
}

std::string ds_optim_count(std::uint64_t optim, std::uint64_t ref_optim) {
  return std::to_string(optim) + " of " + std::to_string(ref_optim) + " optimizer shards";
}

std::string ds_tag_issue(const std::string& tag_name, const DsTag& t, std::uint64_t ref_optim) {
  if (ref_optim > t.optim) {
    return "latest names " + tag_name + " with " + ds_optim_count(t.optim, ref_optim);
  }
  if (!t.short_optim.empty()) return "latest names " + tag_name + " but " + t.short_optim;
  return {};
}

void recognise_deepspeed(DirScope& s) {
  const DirNode& d = s.dir();
  const DsLatest ds_latest = read_ds_latest(d);
  const FileEntry* latest = ds_latest.file;
  const std::optional<std::string>& tag = ds_latest.tag;
  std::string latest_problem;
  if (latest == nullptr) {
    latest_problem = "no latest file";
  } else if (!tag) {
    latest_problem = ds_latest.unread ? std::string("latest not read") : ds_latest.error;
  }

  std::vector<TagInfo> tags;
  std::vector<const DirNode*> stubs;
  bool evidence = false;
  for (const auto& child : d.dirs) {
    if (child.reused) {
      if (child.reused->framework == "deepspeed") {
        stubs.push_back(&child);
        evidence = true;
      }
      continue;
    }
    TagInfo info;
    info.stats = deepspeed_tag(child);
    const bool named = (tag && child.name == *tag) ||
                       (child.name.starts_with("global_step") && parse_step(child.name) >= 0);
    if (!info.stats.looks && !named) continue;
    evidence = evidence || info.stats.looks;
    info.dir = &child;
    info.step = parse_step(child.name);
    Checkpoint& c = info.found.ckpt;
    c.path = s.path_of(child.name);
    c.step = info.step;
    c.framework = "deepspeed";
    info.found.ranks = info.stats.ranks;
    info.newest = tally_tree(c, child, s.ctx());
    info.files = c.files;
    tags.push_back(std::move(info));
  }
  if (!evidence) return;

  // Where `latest` points. The tag it names may be a stub or absent.
  const TagInfo* current = nullptr;
  const std::int64_t current_step = tag ? parse_step(*tag) : -1;
  if (tag) {
    for (const auto& t : tags) {
      if (t.dir->name == *tag) current = &t;
    }
  }
  auto relation = [&](const TagInfo& self) -> int {  // -1 older, 0 current, 1 newer
    if (&self == current) return 0;
    if (!tag) return 1;
    if (current != nullptr) return tag_before(self, *current) ? -1 : 1;
    return (self.step >= 0 && current_step >= 0 && self.step < current_step) ? -1 : 1;
  };

  // The reference shard count: the most optimizer shards of a tag `latest`
  // vouches for (other than the one judged).
  auto reference = [&](const TagInfo& self) -> const TagInfo* {
    const TagInfo* ref = nullptr;
    for (const auto& t : tags) {
      if (&t == &self || relation(t) > 0) continue;
      if (ref == nullptr || t.stats.optim > ref->stats.optim) ref = &t;
    }
    return ref;
  };

  const std::string missing_tag =
      tag && d.dir(*tag) == nullptr ? ds_missing_tag(*tag) : std::string();

  for (auto& t : tags) {
    s.claim(t.dir->name);
    Checkpoint& c = t.found.ckpt;
    Verdict v;
    v.marker_name = "latest";
    // Other ranks legitimately finish after rank 0 rewrote `latest`.
    v.check_resave = false;
    const TagInfo* ref = reference(t);
    const std::uint64_t ref_optim = ref != nullptr ? ref->stats.optim : 0;
    const bool short_count = ref_optim > t.stats.optim;
    if (short_count) c.expected_files = ref->files;
    const int rel = relation(t);
    if (!latest_problem.empty()) {
      v.pending = latest_problem;
    } else if (rel == 0) {
      v.has_marker = true;
      c.marker_time = latest->mtime;
      if (!t.stats.looks) {
        v.pending = "latest names " + *tag + ", which holds no model or optimizer shards";
      } else {
        v.pending = ds_tag_issue(*tag, t.stats, ref_optim);
      }
    } else if (rel < 0) {
      v.has_marker = true;
      if (!t.stats.looks) {
        v.broken = t.dir->name + " holds no model or optimizer shards";
      } else if (short_count) {
        v.broken = t.dir->name + " holds " + ds_optim_count(t.stats.optim, ref_optim);
      } else if (!t.stats.short_optim.empty()) {
        v.broken = t.stats.short_optim;
      }
    } else {
      v.pending =
          !missing_tag.empty() ? missing_tag : "newer than the tag latest names (" + *tag + ")";
    }
    decide(c, v, t.newest, s.ctx());
    s.emit(std::move(t.found));
  }

  for (const DirNode* stub : stubs) {
    s.claim(stub->name);
    Found f = from_reused(*stub, s.path_of(stub->name));
    const std::int64_t step = f.ckpt.step;
    const std::int64_t ref_step = current != nullptr ? current->step : current_step;
    const bool is_current = tag && stub->name == *tag;
    const bool older = step >= 0 && ref_step >= 0 && step < ref_step;
    if (!latest_problem.empty()) {
      demote(f.ckpt, latest_problem, s.ctx());
    } else if (!is_current && !older) {
      demote(f.ckpt,
             missing_tag.empty() ? "newer than the tag latest names (" + *tag + ")" : missing_tag,
             s.ctx());
    }
    s.emit(std::move(f));
  }
}

}  // namespace ckptmon::layouts
